/* SPDX-License-Identifier: BSD-3-Clause */
/* config.h -- the client's validated, owned copy of rl_config. */
#ifndef REDLOCK_CONFIG_H
#define REDLOCK_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "uri.h"

#define RL_MAX_NODES 64
#define RL_MAX_RESOURCE_LEN 512
#define RL_MAX_RESOURCES 64
#define RL_RESERVED_PREFIX "redlock:"

struct config {
    struct node_addr *addrs;     /* node_count parsed + resolved addresses
                                    (a TCP ip NULL: its name did not
                                    resolve; node.c looks it up again) */
    char (*unresolved)[RL_ERRLEN]; /* per node: why its name did not
                                      resolve at load, "" when it did */
    size_t node_count;
    char *prefix;                /* never NULL ("" when none) */
    size_t prefix_len;
    uint32_t connect_timeout_ms;
    uint32_t op_timeout_ms;
    double drift_factor;
    uint32_t retry_count;
    uint32_t retry_delay_ms;
    uint32_t retry_jitter_ms;
    uint32_t max_ttl_ms;
    uint8_t restart_trust;       /* enum rl_restart_trust */
    bool allow_evicting_nodes;
    bool clock_guard;            /* see rl_config.no_clock_guard */
    uint8_t renew_window_pct;    /* see rl_config */
    rl_log_fn log;
    void *log_privdata;
    int log_level;
    struct ev_loop *loop;        /* external loop, or NULL */
    /* TLS settings (copies; NULL when not set): see rl_config. */
    char *tls_ca_file;
    char *tls_ca_dir;
    char *tls_cert_file;
    char *tls_key_file;
    char *tls_server_name;
    bool tls_insecure;
    bool tls_wanted;             /* a node uses TLS or a TLS setting was
                                    given: client.c makes the context */
};

/* Validate in and fill *out with owned copies; resolves host names
 * (blocking). A name that does not resolve is not an error: that node is
 * down until it does (out->unresolved says why). rl_config.tls sets
 * addrs[i].tls on every TCP node. The TLS files are checked where the TLS
 * context is made (client.c). RL_EINVAL names the bad field or URI in
 * rl_last_error(). */
rl_status config_load(const rl_config *in, struct config *out);
void config_clear(struct config *cfg);

/* Log through cfg->log when level <= cfg->log_level. */
void config_log(const struct config *cfg, int level, const char *fmt, ...)
    RL_PRINTF(3, 4);

/* Check a resource name: non-NULL, 1..RL_MAX_RESOURCE_LEN bytes, and
 * neither it nor prefix + it in the reserved namespace. what names the
 * argument in the message. */
rl_status config_check_resource(const struct config *cfg,
                                const char *resource, const char *what);

/* rl_config.renew_window_pct: the default, and the largest value (the
 * window must stay below the watchdog's retry pause, interval / 4, so a
 * tick never renews a lock twice). */
#define RL_DEFAULT_RENEW_WINDOW_PCT 12
#define RL_MAX_RENEW_WINDOW_PCT 24

/* ttl 0 selects RL_DEFAULT_TTL_MS; above max_ttl_ms is RL_EINVAL. */
rl_status config_effective_ttl(const struct config *cfg, uint32_t ttl_ms,
                               uint32_t *out);

#endif
