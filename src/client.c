/* client.c -- rl_client_new / rl_client_free: the top layer that builds
 * and tears down everything below it (DESIGN §3).
 *
 * Build: validated config -> loop -> nodes and the notification
 * connections -> holder registry; then the loop thread starts the
 * connections, and rl_client_new waits (bounded by connect_timeout_ms)
 * for the first handshakes.
 *
 * Tear-down (rl_client_free): the loop is closed to new submissions;
 * then, on the loop thread (or, with an external loop, right there):
 * queued and started operations are canceled (each reports RL_ECANCELED
 * exactly once), held locks stop renewing and their handles are orphaned,
 * the notification connections close, each node writes what was queued in
 * this iteration (the last releases) and closes -- hiredis then calls
 * every pending callback with NULL, which node-owned request records
 * absorb. Locks left in Redis expire by themselves. rl_client_free is
 * refused from inside any callback of the library: the stack below it
 * (hiredis, the node, the operation) would be freed under its feet. */
#include <stdio.h>

#include "holder.h"
#include "inspect.h"
#include "notify.h"

/* Before the loop blocks: every command queued during the iteration
 * leaves in one write per node. */
static void flush_nodes(void *arg)
{
    rl_client *c = arg;
    size_t i;

    for (i = 0; i < c->node_count; i++) {
        if (c->nodes[i] != NULL)
            node_flush(c->nodes[i]);
    }
}

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
     * nodes a majority decision did not wait for) still leave. */
    flush_nodes(c);
    free_nodes(c);
}

static void client_destroy(rl_client *c)
{
    free_nodes(c);
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
    if (st != RL_OK)
        return st;
    st = loop_new(c->cfg.loop, &c->loop);
    if (st != RL_OK)
        return st;
    c->nodes = calloc(c->cfg.node_count, sizeof(*c->nodes));
    if (c->nodes == NULL)
        return rl_fail(RL_ENOMEM, "out of memory for the client");
    c->notify = notify_new(loop_ev(c->loop), &c->cfg);
    if (c->notify == NULL)
        return rl_fail(RL_ENOMEM, "out of memory for notifications");
    c->node_count = c->cfg.node_count;
    for (i = 0; i < c->node_count; i++) {
        c->nodes[i] = node_new(loop_ev(c->loop), &c->cfg, i);
        if (c->nodes[i] == NULL)
            return rl_fail(RL_ENOMEM, "out of memory for node %zu", i);
    }
    loop_set_flush(c->loop, flush_nodes, c);
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
        inspect_wait_connected(c);
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
