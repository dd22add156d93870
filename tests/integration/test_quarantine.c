/* SPDX-License-Identifier: BSD-3-Clause */
/* test_quarantine.c -- restart quarantine (DESIGN §5.7; issue 3 item 4)
 * against real redis-server processes.
 *
 * A node whose uptime is below max_ttl_ms may have lost keys, so it gets
 * every command but its vote does not count until it is old enough;
 * rl_client_ping and rl_client_stats show it reachable/connected but not
 * voting. trust_restarted_nodes = true (nodes with appendfsync always)
 * turns this off. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

#define NODES 3
#define MAX_TTL_MS 3000
/* The trusting client's max_ttl_ms: a restarted node that waited out its
 * quarantine could not vote before this, far beyond the scaled bound on a
 * trusted vote (at most half of it). */
#define TRUST_MAX_TTL_MS 30000

static const struct fixture_opts fx = { .nodes = NODES, .no_client = true };

/* A fast client with max_ttl_ms MAX_TTL_MS; trust: trust_restarted_nodes
 * and max_ttl_ms TRUST_MAX_TTL_MS. */
static void start_client(struct fixture *f, bool trust)
{
    rl_config cfg;

    fixture_config(&cfg, &f->hn);
    cfg.max_ttl_ms = trust ? TRUST_MAX_TTL_MS : MAX_TTL_MS;
    cfg.trust_restarted_nodes = trust;
    f->c = fixture_client(&cfg);
    assert_non_null(f->c);
}

static void ping(struct fixture *f, rl_node_info *info, rl_status want)
{
    size_t count = 0;

    assert_int_equal(rl_client_ping(f->c, info, NODES, &count), want);
    assert_int_equal(count, NODES);
}

static void stats(struct fixture *f, rl_stats *s)
{
    assert_int_equal(rl_client_stats(f->c, s), RL_OK);
    assert_int_equal(s->node_count, NODES);
}

/* One lock on key, released at once. */
static void acquire_release(struct fixture *f, const char *key,
                            const rl_acquire_opts *o)
{
    assert_int_equal(rl_acquire(f->c, key, o, &f->l), RL_OK);
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
}

/* Node 0 restarts empty, node 1 dies: a quorum needs node 0. Returns when
 * node 0 was restarted (harness_now_ms). */
static int64_t restart_0_kill_1(struct fixture *f)
{
    int64_t t_restart;

    assert_int_equal(harness_restart(&f->r[0]), 0);
    t_restart = harness_now_ms();
    harness_kill(&f->r[1]);
    return t_restart;
}

/* f->l was taken with node 0's vote (2 nodes): release it; node 0 votes
 * in rl_client_ping and rl_client_stats too (info, s left for more
 * checks). */
static void node0_voted(struct fixture *f, rl_node_info *info, rl_stats *s)
{
    assert_int_equal(rl_lock_nodes_ok(f->l), 2);
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
    ping(f, info, RL_OK);
    assert_true(info[0].voting);
    stats(f, s);
    assert_true(s->nodes[0].voting);
}

static void test_restarted_node_does_not_vote_until_max_ttl(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = { 0 };
    rl_node_info info[NODES];
    rl_stats s;
    rl_status st = RL_ENOQUORUM;
    int64_t t_restart;
    int64_t t_voting;
    int attempts = 0;

    start_client(f, false);
    o.ttl_ms = 2000;
    /* Fresh servers: reachable, younger than max_ttl_ms, not voting. */
    ping(f, info, RL_ENOQUORUM);
    for (int i = 0; i < NODES; i++) {
        assert_true(info[i].reachable);
        assert_false(info[i].voting);
        assert_in_range(info[i].uptime_ms, 0, MAX_TTL_MS);
    }
    assert_int_equal(rl_acquire(f->c, "q:res", &o, &f->l), RL_ENOQUORUM);
    /* The error says every node is quarantined, how long until enough
     * vote, and how to opt out. */
    fprintf(stderr, "  fresh nodes: %s\n", rl_last_error());
    assert_non_null(strstr(rl_last_error(), "3 quarantined"));
    assert_non_null(strstr(rl_last_error(), "enough vote in"));
    assert_non_null(strstr(rl_last_error(), "--quarantine off"));
    /* uptime_in_seconds is within 1 s of the real uptime and the client
     * counts from the latest possible start: + 3 s is surely enough. */
    assert_true(harness_wait_uptime(f->r, NODES, MAX_TTL_MS / 1000 + 3));
    ping(f, info, RL_OK);
    for (int i = 0; i < NODES; i++)
        assert_true(info[i].voting);
    acquire_release(f, "q:res", &o);

    t_restart = restart_0_kill_1(f);
    harness_sleep_ms(1000);
    assert_int_equal(rl_acquire(f->c, "q:res", &o, &f->l), RL_ENOQUORUM);
    fprintf(stderr, "  1 s after restart: %s\n", rl_last_error());
    assert_null(f->l);
    /* (give a slow reconnect as long as node 0 is surely young: the
     * checks below are about a node younger than max_ttl_ms) */
    do {
        ping(f, info, RL_ENOQUORUM);
        if (!info[0].reachable)
            harness_sleep_ms(50);
    } while (!info[0].reachable &&
             harness_now_ms() - t_restart < MAX_TTL_MS - 500);
    fprintf(stderr, "  ping node 0: reachable %d voting %d uptime %lld ms\n",
            info[0].reachable, info[0].voting, (long long)info[0].uptime_ms);
    assert_true(info[0].reachable);
    assert_false(info[0].voting);
    assert_in_range(info[0].uptime_ms, 0, MAX_TTL_MS - 1);
    assert_false(info[1].reachable);
    assert_true(info[2].reachable);
    assert_true(info[2].voting);
    stats(f, &s);
    assert_true(s.nodes[0].connected);
    assert_false(s.nodes[0].voting);
    assert_false(s.nodes[1].connected);
    assert_false(s.nodes[1].voting);
    assert_true(s.nodes[2].voting);
    /* It is sent the commands all the same (§5.7): the refused attempt
     * left nothing behind there. */
    assert_int_equal(harness_dbsize(&f->r[0]), 0);

    /* Poll until it votes again. */
    st = fixture_acquire_until_ok(f->c, "q:res", &o, &f->l, t_restart,
                                  harness_scale_ms(MAX_TTL_MS + 5000), 50,
                                  &attempts);
    t_voting = harness_now_ms() - t_restart;
    fprintf(stderr, "  restarted node votes again %lld ms after restart "
                    "(%d attempts)\n",
            (long long)t_voting, attempts);
    assert_int_equal(st, RL_OK);
    /* The server started a few ms before t_restart was taken. */
    assert_true(t_voting >= MAX_TTL_MS - 200);
    node0_voted(f, info, &s);
    assert_true(info[0].uptime_ms >= MAX_TTL_MS - 200);
    assert_true(s.nodes[0].connected);
}

static void test_trusted_restarted_node_votes_at_once(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = { 0 };
    rl_node_info info[NODES];
    rl_stats s;
    rl_status st;
    int64_t t_restart;
    int64_t t_ok;
    int64_t bound = harness_scale_ms(2000);

    start_client(f, true);
    o.ttl_ms = 2000;
    /* Fresh servers vote at once. */
    ping(f, info, RL_OK);
    for (int i = 0; i < NODES; i++) {
        assert_true(info[i].voting);
        assert_in_range(info[i].uptime_ms, 0, TRUST_MAX_TTL_MS);
    }
    acquire_release(f, "q:trust", &o);
    if (bound > TRUST_MAX_TTL_MS / 2)
        bound = TRUST_MAX_TTL_MS / 2;

    t_restart = restart_0_kill_1(f);
    /* Only the reconnect to node 0 is waited for. */
    st = fixture_acquire_until_ok(f->c, "q:trust", &o, &f->l, t_restart,
                                  bound, 20, NULL);
    t_ok = harness_now_ms() - t_restart;
    fprintf(stderr, "  trusted restarted node voted %lld ms after restart\n",
            (long long)t_ok);
    assert_int_equal(st, RL_OK);
    assert_true(t_ok < bound);
    node0_voted(f, info, &s);
    assert_true(info[0].uptime_ms < TRUST_MAX_TTL_MS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_restarted_node_does_not_vote_until_max_ttl),
        cmocka_unit_test(test_trusted_restarted_node_votes_at_once),
    };

    return FIXTURE_RUN("quarantine", &fx, tests);
}
