/* SPDX-License-Identifier: BSD-3-Clause */
/* config.c -- rl_config defaults, validation and the owned copy.
 *
 * Everything the caller passes is checked here, once, with a message that
 * names the field or the URI (never the password), and copied, so the
 * caller may free its strings as soon as rl_client_new returns. Host names
 * are resolved here, on the caller's thread: hiredis 0.14 would otherwise
 * call getaddrinfo inside the event loop at every reconnect. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "abi.h"
#include "clock.h"
#include "config.h"
#include "resolver.h"

/* The TLS fields were carved out of the reserved tail: the struct keeps
 * its size (tests/unit/test_config.c checks it). */
_Static_assert(offsetof(rl_config, reserved_) -
                       offsetof(rl_config, tls_ca_file) <=
                   6 * sizeof(uint64_t),
               "the TLS fields take at most the 6 words carved out of "
               "rl_config.reserved_");
_Static_assert(offsetof(rl_node_info, reserved_) -
                       offsetof(rl_node_info, tls) <=
                   12 * sizeof(uint64_t),
               "rl_node_info.tls, the clock fields and the node's facts "
               "take the 12 words carved out of reserved_");

void rl_config_init(rl_config *cfg)
{
    if (cfg == NULL)
        return;
    memset(cfg, 0, sizeof(*cfg));
    cfg->connect_timeout_ms = 200;
    cfg->op_timeout_ms = 50;
    cfg->drift_factor = 0.01;
    cfg->retry_count = 3;
    cfg->retry_delay_ms = 200;
    cfg->retry_jitter_ms = 100;
    cfg->max_ttl_ms = 60000;
    cfg->renew_window_pct = RL_DEFAULT_RENEW_WINDOW_PCT;
    cfg->log_level = RL_LOG_WARN;
}

static rl_status check_range(const char *field, uint32_t v, uint32_t lo,
                             uint32_t hi)
{
    if (v < lo || v > hi)
        return rl_fail(RL_EINVAL, "%s must be %u..%u, got %u", field, lo, hi,
                       v);
    return RL_OK;
}

static rl_status check_numbers(const rl_config *in)
{
    rl_status st;

    st = check_range("connect_timeout_ms", in->connect_timeout_ms, 1, 60000);
    if (st == RL_OK)
        st = check_range("op_timeout_ms", in->op_timeout_ms, 1, 60000);
    if (st == RL_OK)
        st = check_range("retry_count", in->retry_count, 0, 1000000);
    if (st == RL_OK)
        st = check_range("retry_delay_ms", in->retry_delay_ms, 1, 3600000);
    if (st == RL_OK)
        st = check_range("retry_jitter_ms", in->retry_jitter_ms, 0,
                         in->retry_delay_ms);
    if (st == RL_OK)
        st = check_range("max_ttl_ms", in->max_ttl_ms, 1, INT32_MAX);
    if (st == RL_OK)
        st = check_range("renew_window_pct", in->renew_window_pct, 0,
                         RL_MAX_RENEW_WINDOW_PCT);
    if (st == RL_OK)
        st = check_range("restart_trust", in->restart_trust, RL_RESTART_AUTO,
                         RL_RESTART_TRUST);
    if (st != RL_OK)
        return st;
    if (in->trust_restarted_nodes &&
        in->restart_trust == RL_RESTART_QUARANTINE)
        return rl_fail(RL_EINVAL, "trust_restarted_nodes contradicts "
                       "restart_trust %u (quarantine): set one of them",
                       (unsigned)in->restart_trust);
    /* Written so that NaN fails too. */
    if (!(in->drift_factor >= 0.0 && in->drift_factor <= 0.1))
        return rl_fail(RL_EINVAL, "drift_factor must be in [0, 0.1], got %g",
                       in->drift_factor);
    if (in->log_level < RL_LOG_ERROR || in->log_level > RL_LOG_DEBUG)
        return rl_fail(RL_EINVAL, "log_level must be %d..%d, got %d",
                       RL_LOG_ERROR, RL_LOG_DEBUG, in->log_level);
    return RL_OK;
}

/* Parse, resolve and de-duplicate the node list into out->addrs. */
static rl_status load_nodes(const rl_config *in, struct config *out)
{
    char err[RL_ERRLEN];
    size_t i, j;
    rl_status st;

    if (in->nodes == NULL || in->node_count == 0)
        return rl_fail(RL_EINVAL, "nodes: at least one node is required");
    if (in->node_count > RL_MAX_NODES)
        return rl_fail(RL_EINVAL, "nodes: at most %d nodes, got %zu",
                       RL_MAX_NODES, in->node_count);
    out->addrs = calloc(in->node_count, sizeof(*out->addrs));
    out->unresolved = calloc(in->node_count, sizeof(*out->unresolved));
    if (out->addrs == NULL || out->unresolved == NULL)
        return rl_fail(RL_ENOMEM, "out of memory for %zu nodes",
                       in->node_count);
    out->node_count = in->node_count;
    for (i = 0; i < in->node_count; i++) {
        struct node_addr *a = &out->addrs[i];

        if (in->nodes[i] == NULL)
            return rl_fail(RL_EINVAL, "nodes[%zu] is NULL", i);
        st = uri_parse(in->nodes[i], a, err, sizeof(err));
        if (st != RL_OK)
            return rl_fail(st, "nodes[%zu]: %s", i, err);
        /* A name missing from DNS (a stopped container's) is a node that
         * is down, not a bad configuration: the others may be a quorum. */
        st = resolve_addr(a, out->unresolved[i], sizeof(out->unresolved[i]));
        if (st == RL_ENOMEM)
            return rl_fail(st, "nodes[%zu]: %s", i, out->unresolved[i]);
        if (a->password == NULL && in->password != NULL) {
            a->password = rl_strdup(in->password);
            if (a->password == NULL)
                return rl_fail(RL_ENOMEM, "out of memory");
        }
        if (in->tls && a->kind == ADDR_TCP)
            a->tls = true;
        if (a->tls)
            out->tls_wanted = true;
        for (j = 0; j < i; j++) {
            if (node_addr_same(&out->addrs[j], a))
                return rl_fail(RL_EINVAL,
                               "nodes[%zu] '%s' duplicates nodes[%zu]", i,
                               a->display, j);
        }
    }
    return RL_OK;
}

/* Copy one optional TLS string (a file name or the server name). */
static rl_status copy_tls(const char *field, const char *in, char **out)
{
    if (in == NULL)
        return RL_OK;
    if (in[0] == '\0')
        return rl_fail(RL_EINVAL, "%s is empty (NULL means unset)", field);
    *out = rl_strdup(in);
    if (*out == NULL)
        return rl_fail(RL_ENOMEM, "out of memory");
    return RL_OK;
}

static rl_status load_tls(const rl_config *in, struct config *out)
{
    rl_status st;

    st = copy_tls("tls_ca_file", in->tls_ca_file, &out->tls_ca_file);
    if (st == RL_OK)
        st = copy_tls("tls_ca_dir", in->tls_ca_dir, &out->tls_ca_dir);
    if (st == RL_OK)
        st = copy_tls("tls_cert_file", in->tls_cert_file,
                      &out->tls_cert_file);
    if (st == RL_OK)
        st = copy_tls("tls_key_file", in->tls_key_file, &out->tls_key_file);
    if (st == RL_OK)
        st = copy_tls("tls_server_name", in->tls_server_name,
                      &out->tls_server_name);
    if (st != RL_OK) {
        config_clear(out);
        return st;
    }
    out->tls_insecure = in->tls_insecure;
    if (in->tls || in->tls_insecure || out->tls_ca_file != NULL ||
        out->tls_ca_dir != NULL || out->tls_cert_file != NULL ||
        out->tls_key_file != NULL || out->tls_server_name != NULL)
        out->tls_wanted = true;
    return RL_OK;
}

rl_status config_load(const rl_config *in, struct config *out)
{
    rl_status st;

    memset(out, 0, sizeof(*out));
    if (in == NULL)
        return rl_fail(RL_EINVAL, "cfg is NULL");
    st = abi_check(ABI_CONFIG, in);
    if (st != RL_OK)
        return st;
    st = check_numbers(in);
    if (st != RL_OK)
        return st;
    if (in->prefix != NULL && strlen(in->prefix) > RL_MAX_RESOURCE_LEN)
        return rl_fail(RL_EINVAL, "prefix is longer than %d bytes",
                       RL_MAX_RESOURCE_LEN);
    if (in->prefix != NULL &&
        strncmp(in->prefix, RL_RESERVED_PREFIX,
                strlen(RL_RESERVED_PREFIX)) == 0)
        return rl_fail(RL_EINVAL, "prefix must not start with '%s'",
                       RL_RESERVED_PREFIX);
    out->prefix = rl_strdup(in->prefix != NULL ? in->prefix : "");
    if (out->prefix == NULL)
        return rl_fail(RL_ENOMEM, "out of memory");
    out->prefix_len = strlen(out->prefix);
    st = load_nodes(in, out);
    if (st != RL_OK) {
        config_clear(out);
        return st;
    }
    out->connect_timeout_ms = in->connect_timeout_ms;
    out->op_timeout_ms = in->op_timeout_ms;
    out->drift_factor = in->drift_factor;
    out->retry_count = in->retry_count;
    out->retry_delay_ms = in->retry_delay_ms;
    out->retry_jitter_ms = in->retry_jitter_ms;
    out->max_ttl_ms = in->max_ttl_ms;
    out->restart_trust = in->trust_restarted_nodes ? RL_RESTART_TRUST
                                                   : in->restart_trust;
    out->allow_evicting_nodes = in->allow_evicting_nodes;
    out->clock_guard = !in->no_clock_guard;
    out->renew_window_pct = in->renew_window_pct;
    out->log = in->log;
    out->log_privdata = in->log_privdata;
    out->log_level = in->log_level;
    out->loop = in->loop;
    return load_tls(in, out);
}

void config_clear(struct config *cfg)
{
    size_t i;

    if (cfg == NULL)
        return;
    for (i = 0; i < cfg->node_count; i++)
        node_addr_clear(&cfg->addrs[i]);
    free(cfg->addrs);
    free(cfg->unresolved);
    free(cfg->prefix);
    free(cfg->tls_ca_file);
    free(cfg->tls_ca_dir);
    free(cfg->tls_cert_file);
    free(cfg->tls_key_file);
    free(cfg->tls_server_name);
    memset(cfg, 0, sizeof(*cfg));
}

void config_log(const struct config *cfg, int level, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    if (cfg->log == NULL || level > cfg->log_level)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    callback_enter();
    cfg->log(level, msg, cfg->log_privdata);
    callback_leave();
}

rl_status config_check_resource(const struct config *cfg,
                                const char *resource, const char *what)
{
    size_t len, plen = strlen(RL_RESERVED_PREFIX);

    if (resource == NULL)
        return rl_fail(RL_EINVAL, "%s is NULL", what);
    len = strnlen(resource, RL_MAX_RESOURCE_LEN + 1);
    if (len == 0)
        return rl_fail(RL_EINVAL, "%s is empty", what);
    if (len > RL_MAX_RESOURCE_LEN)
        return rl_fail(RL_EINVAL, "%s is longer than %d bytes", what,
                       RL_MAX_RESOURCE_LEN);
    if (strncmp(resource, RL_RESERVED_PREFIX, plen) == 0)
        return rl_fail(RL_EINVAL, "%s '%s' uses the reserved namespace '%s'",
                       what, resource, RL_RESERVED_PREFIX);
    /* The prefix alone is never reserved, but prefix "red" + resource
     * "lock:fence:x" would name a fence counter. */
    if (cfg->prefix_len < plen &&
        strncmp(cfg->prefix, RL_RESERVED_PREFIX, cfg->prefix_len) == 0 &&
        strncmp(resource, RL_RESERVED_PREFIX + cfg->prefix_len,
                plen - cfg->prefix_len) == 0)
        return rl_fail(RL_EINVAL,
                       "prefix + %s '%s%s' is in the reserved namespace "
                       "'%s'",
                       what, cfg->prefix, resource, RL_RESERVED_PREFIX);
    return RL_OK;
}

rl_status config_effective_ttl(const struct config *cfg, uint32_t ttl_ms,
                               uint32_t *out)
{
    uint32_t ttl = ttl_ms;

    if (ttl == 0)
        ttl = RL_DEFAULT_TTL_MS < cfg->max_ttl_ms ? RL_DEFAULT_TTL_MS
                                                  : cfg->max_ttl_ms;

    if (ttl > cfg->max_ttl_ms)
        return rl_fail(RL_EINVAL, "ttl_ms %u is above max_ttl_ms %u", ttl,
                       cfg->max_ttl_ms);
    if (validity_deadline(ttl, cfg->drift_factor, 0) == 0)
        return rl_fail(RL_EINVAL,
                       "ttl_ms %u is too short: the drift allowance "
                       "(ttl * %g + 2 ms) leaves no validity",
                       ttl, cfg->drift_factor);
    *out = ttl;
    return RL_OK;
}
