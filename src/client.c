/* SPDX-License-Identifier: BSD-3-Clause */
/* client.c -- rl_client_new / rl_client_free: the top layer that builds
 * and tears down everything below it.
 *
 * Build: validated config -> TLS context (every file checked now) and one
 * TLS target per TLS node -> loop -> nodes and the notification
 * connections -> holder registry; then the loop thread starts the
 * connections, and rl_client_new waits (bounded by connect_timeout_ms)
 * for the first handshakes.
 *
 * Tear-down (rl_client_free): the loop is closed to new submissions;
 * then, on the loop thread (or, with an external loop, right there):
 * queued and started operations are canceled (each reports RL_ECANCELED
 * exactly once), held locks stop renewing and their handles are orphaned,
 * the notification connections close, each node writes what was queued in
 * this iteration (the last releases) and closes -- the connection then
 * answers every pending request with NULL, which node-owned request
 * records absorb; the TLS targets and context go last. Locks left in
 * Redis expire by themselves. rl_client_free is refused from inside any
 * callback of the library: the stack below it (the connection, the node,
 * the operation) would be freed under its feet. */
#include <stdio.h>
#include <string.h>

#include "holder.h"
#include "inspect.h"
#include "notify.h"
#include "tls.h"

static void start_nodes(void *arg)
{
    rl_client *c = arg;
    size_t i;

    for (i = 0; i < c->node_count; i++)
        node_start(c->nodes[i]);
}

static void free_nodes(rl_client *c)
{
    size_t i;

    notify_free(c->notify);
    c->notify = NULL;
    for (i = 0; c->nodes != NULL && i < c->node_count; i++) {
        node_free(c->nodes[i]);
        c->nodes[i] = NULL;
    }
}

/* Loop thread: end everything, then close the connections. */
static void shutdown_on_loop(void *arg)
{
    rl_client *c = arg;

    loop_cancel_all(c->loop);
    holders_shutdown(c);
    /* Commands queued in this iteration (e.g. the last releases to the
     * nodes a majority decision did not wait for) still leave: node_free
     * writes them before closing. */
    free_nodes(c);
}

/* After the connections: what they borrowed. */
static void free_tls(rl_client *c)
{
    size_t i;

    for (i = 0; c->tls_targets != NULL && i < c->cfg.node_count; i++)
        tls_target_free(c->tls_targets[i]);
    free(c->tls_targets);
    c->tls_targets = NULL;
    tls_ctx_free(c->tls);
    c->tls = NULL;
}

/* The TLS context (every file checked: RL_EINVAL naming the file) and a
 * target per TLS node, which keeps its session across reconnects. */
static rl_status tls_setup(rl_client *c)
{
    struct tls_config tc;
    char err[RL_ERRLEN];
    size_t i;
    rl_status st;

    if (!c->cfg.tls_wanted)
        return RL_OK;
    memset(&tc, 0, sizeof(tc));
    tc.ca_file = c->cfg.tls_ca_file;
    tc.ca_dir = c->cfg.tls_ca_dir;
    tc.cert_file = c->cfg.tls_cert_file;
    tc.key_file = c->cfg.tls_key_file;
    tc.server_name = c->cfg.tls_server_name;
    tc.insecure = c->cfg.tls_insecure;
    st = tls_ctx_new(&tc, &c->tls, err, sizeof(err));
    if (st != RL_OK)
        return rl_fail(st, "%s", err);
    c->tls_targets = calloc(c->cfg.node_count, sizeof(*c->tls_targets));
    if (c->tls_targets == NULL)
        return rl_fail(RL_ENOMEM, "out of memory for TLS");
    for (i = 0; i < c->cfg.node_count; i++) {
        if (!c->cfg.addrs[i].tls)
            continue;
        c->tls_targets[i] = tls_target_new(c->tls, c->cfg.addrs[i].host);
        if (c->tls_targets[i] == NULL)
            return rl_fail(RL_ENOMEM, "out of memory for TLS");
    }
    return RL_OK;
}

static struct tls_target *node_tls(const rl_client *c, size_t i)
{
    return c->tls_targets != NULL ? c->tls_targets[i] : NULL;
}

static void client_destroy(rl_client *c)
{
    free_nodes(c);
    free_tls(c);
    loop_free(c->loop);
    holders_free(c);
    free(c->nodes);
    config_clear(&c->cfg);
    free(c);
}

static rl_status client_setup(rl_client *c)
{
    size_t i;
    rl_status st;

    st = holders_new(c);
    if (st == RL_OK)
        st = tls_setup(c);
    if (st != RL_OK)
        return st;
    st = loop_new(c->cfg.loop, &c->loop);
    if (st != RL_OK)
        return st;
    c->nodes = calloc(c->cfg.node_count, sizeof(*c->nodes));
    if (c->nodes == NULL)
        return rl_fail(RL_ENOMEM, "out of memory for the client");
    c->notify = notify_new(loop_ev(c->loop), &c->cfg, c->tls_targets);
    if (c->notify == NULL)
        return rl_fail(RL_ENOMEM, "out of memory for notifications");
    c->node_count = c->cfg.node_count;
    for (i = 0; i < c->node_count; i++) {
        c->nodes[i] = node_new(loop_ev(c->loop), &c->cfg, c->nodes, i,
                               node_tls(c, i), c->notify);
        if (c->nodes[i] == NULL)
            return rl_fail(RL_ENOMEM, "out of memory for node %zu", i);
    }
    if (!loop_is_owned(c->loop)) {
        start_nodes(c);
        return RL_OK;
    }
    return loop_run_thread(c->loop, start_nodes, c);
}

rl_client *rl_client_new(const rl_config *cfg, rl_status *st)
{
    rl_client *c;
    rl_status s;

    rl_error_clear();
    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        s = rl_fail(RL_ENOMEM, "out of memory for the client");
        goto out;
    }
    c->rng = mono_now_us() | 1u;
    s = config_load(cfg, &c->cfg);
    if (s == RL_OK)
        s = client_setup(c);
    if (s != RL_OK) { /* nothing was started yet */
        client_destroy(c);
        c = NULL;
        goto out;
    }
    /* Wait (bounded by connect_timeout_ms) for the first handshakes, so
     * the first acquire does not race the connections. */
    if (loop_is_owned(c->loop))
        s = inspect_wait_connected(c);
    if (s != RL_OK) { /* two entries are one server: refused */
        char why[RL_ERRLEN];

        snprintf(why, sizeof(why), "%s", rl_last_error());
        rl_client_free(c);
        c = NULL;
        rl_fail(s, "%s", why);
        goto out;
    }
    rl_error_clear();
out:
    if (st != NULL)
        *st = s;
    return c;
}

void rl_client_free(rl_client *c)
{
    if (c == NULL)
        return;
    if (in_callback() || loop_on_thread(c->loop)) {
        rl_fail(RL_EMISUSE, "rl_client_free called from a callback");
        return;
    }
    loop_close(c->loop);
    loop_shutdown(c->loop, shutdown_on_loop, c);
    client_destroy(c);
}
