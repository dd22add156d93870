/* SPDX-License-Identifier: BSD-3-Clause */
/* tls.h -- OpenSSL client contexts and per-target TLS state.
 * conn.c is the only user of the per-connection half; the configuration
 * layer creates a tls_ctx per configuration and a tls_target per node. */
#ifndef REDLOCK_TLS_H
#define REDLOCK_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include "common.h"

/* Settings of one TLS client context; every field may be NULL/false. */
struct tls_config {
    const char *ca_file;     /* PEM CA bundle; with ca_dir NULL and this
                                NULL the system trust store is used */
    const char *ca_dir;      /* hashed CA directory (c_rehash) */
    const char *cert_file;   /* client certificate (chain) for mutual TLS */
    const char *key_file;    /* its private key (unencrypted PEM) */
    const char *server_name; /* SNI and the name verified, instead of the
                                node's host */
    bool insecure;           /* no certificate verification at all */
};

struct tls_ctx;
struct tls_target;

/* A client context (TLS 1.2 minimum). Every file is checked now: a
 * missing or unreadable file, a certificate without its key (or the
 * other way round), or a key that does not match its certificate is
 * RL_EINVAL with a message in err naming the file (never key material).
 * RL_ENOMEM on allocation failure. Any thread. */
rl_status tls_ctx_new(const struct tls_config *cfg, struct tls_ctx **out,
                      char *err, size_t errlen);
/* NULL is a no-op. Every target made from ctx must be freed first. */
void tls_ctx_free(struct tls_ctx *ctx);

/* What one connection target (a node) keeps across reconnects: the name
 * to send as SNI and to verify (ctx's server_name, else host: a DNS name,
 * or an IPv4/IPv6 literal checked against the IP SANs and sent without
 * SNI) and the last session, for resumption. host is copied. NULL on
 * OOM. */
struct tls_target *tls_target_new(struct tls_ctx *ctx, const char *host);
void tls_target_free(struct tls_target *t);

/* ---- For conn.c: one connection ---- */

struct ssl_st;

/* A client SSL on the connected socket fd: SNI, the name to verify, the
 * target's last session, and a BIO that writes with MSG_NOSIGNAL (no
 * SIGPIPE). Sessions the server issues on it are kept in t, which must
 * outlive the SSL. NULL with a message in err on failure. */
struct ssl_st *tls_ssl_new(struct tls_target *t, int fd, char *err,
                           size_t errlen);
/* Why an SSL_* call on ssl failed (ret its return value, ssl_error what
 * SSL_get_error said): the verification result (unknown CA, host-name
 * mismatch, expired...), else OpenSSL's reason with a hint (a plaintext
 * port, a client certificate required), else errno. early: nothing was
 * received after the handshake yet (a TLS 1.3 server rejects a missing
 * client certificate only then, often by a reset). Drains this thread's
 * OpenSSL error queue. */
void tls_error_text(struct ssl_st *ssl, int ret, int ssl_error, bool early,
                    char *buf, size_t len);

#endif
