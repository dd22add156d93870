/* SPDX-License-Identifier: BSD-3-Clause */
/* uri.h -- parse one node address (the URI forms listed
 * above rl_config.nodes); resolver.h turns its host name into a numeric
 * address. */
#ifndef REDLOCK_URI_H
#define REDLOCK_URI_H

#include <stdbool.h>

#include "common.h"

enum addr_kind {
    ADDR_TCP,
    ADDR_UNIX,
};

/* Every string is owned by the struct (free with node_addr_clear). */
struct node_addr {
    enum addr_kind kind;
    char *host;     /* TCP: host as written, without [] for IPv6 */
    char *ip;       /* TCP: numeric address after uri_resolve, else NULL */
    int port;       /* TCP: 1..65535 */
    char *path;     /* UNIX: socket path */
    int db;         /* 0..INT_MAX (the server may allow fewer) */
    char *user;     /* ACL user name, or NULL */
    char *password; /* or NULL; never printed */
    char *display;  /* "host:port", "[v6]:port" or "unix:/path" (+ "/db")
                       for messages: never contains the password */
    bool tls;       /* TCP: rediss:// (TLS for this node) */
};

/* Parse uri into *out (zeroed first). Accepted forms:
 *   redis://[[user]:password@]host[:port][/db]
 *   rediss://[[user]:password@]host[:port][/db]    (TLS: a->tls)
 *   unix:///absolute/path[?db=N]
 *   host:port   and   [v6addr]:port
 * user and password are percent-decoded; the user info ends at the last
 * '@'. On error returns RL_EINVAL with a message in err that quotes the URI
 * as rl_uri_describe() shows it (no password), and leaves
 * *out empty; RL_ENOMEM on allocation failure. */
rl_status uri_parse(const char *uri, struct node_addr *out, char *err,
                    size_t errlen);

/* A TCP node given by host name (not an IP literal): worth resolving
 * again when it stops answering. */
bool uri_host_is_name(const struct node_addr *a);

/* True when both name the same endpoint (ip/port or path) and db. */
bool node_addr_same(const struct node_addr *a, const struct node_addr *b);

/* The AUTH command for a (AUTH [user] password) into argv; returns its
 * argument count, 0 when a has no password. */
static inline int node_addr_auth_argv(const struct node_addr *a,
                                      const char *argv[3])
{
    int argc = 0;

    if (a->password == NULL)
        return 0;
    argv[argc++] = "AUTH";
    if (a->user != NULL)
        argv[argc++] = a->user;
    argv[argc++] = a->password;
    return argc;
}

/* A one-line message (control characters become '?') into err, unless
 * err is NULL or errlen 0; returns st. */
rl_status uri_error(char *err, size_t errlen, rl_status st,
                    const char *fmt, ...) RL_PRINTF(4, 5);

/* Free the strings and zero *a. NULL is a no-op. */
void node_addr_clear(struct node_addr *a);

#endif
