/* SPDX-License-Identifier: BSD-3-Clause */
/* test_stats.c -- rl_client_stats (issue 3 item 7) against real
 * redis-server processes: client counters (acquired, contended, lost,
 * renewals, fences) match what the test did; per-node counters (requests,
 * votes, latency percentiles) are filled in; a killed node shows up as
 * disconnected with failed requests; argument and external-loop errors;
 * rl_client_totals and rl_client_node_stats read the same counters in
 * small pieces. */
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ev.h>

#include "fixture.h"

#define NODES 5

static const struct fixture_opts fx = { .nodes = NODES };

static void print_node(const rl_node_stats *n)
{
    fprintf(stderr, "  %-22s conn %d vote %d req %llu err %llu to %llu "
                    "down %llu for %llu against %llu p50 %u p90 %u p99 %u "
                    "max %u us\n",
            n->name, n->connected, n->voting,
            (unsigned long long)n->requests, (unsigned long long)n->errors,
            (unsigned long long)n->timeouts, (unsigned long long)n->down,
            (unsigned long long)n->votes_for,
            (unsigned long long)n->votes_against, n->latency_p50_us,
            n->latency_p90_us, n->latency_p99_us, n->latency_max_us);
}

/* Snapshot c's counters into *s once every node has counted a vote for
 * and the nodes together at least min_against votes against: a call
 * returns at a majority, and the minority's replies are counted when
 * they arrive. Polled up to harness_scale_ms(3000); the last snapshot
 * stays in *s either way. */
static void stats_once_voted(rl_client *c, rl_stats *s, uint64_t min_against)
{
    int64_t deadline = harness_now_ms() + harness_scale_ms(3000);

    for (;;) {
        uint64_t against = 0;
        bool all_for = true;

        assert_int_equal(rl_client_stats(c, s), RL_OK);
        for (size_t i = 0; i < s->node_count; i++) {
            all_for = all_for && s->nodes[i].votes_for > 0;
            against += s->nodes[i].votes_against;
        }
        if ((all_for && against >= min_against) ||
            harness_now_ms() >= deadline)
            return;
        harness_sleep_ms(10);
    }
}

static void test_counters_match_what_was_done(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = { 0 };
    rl_stats s;
    uint64_t against = 0;
    char name[64];
    char port[16];

    /* A fresh client has counted nothing yet. */
    assert_int_equal(rl_client_stats(f->c, &s), RL_OK);
    assert_int_equal(s.acquired, 0);
    assert_int_equal(s.contended, 0);
    assert_int_equal(s.lost, 0);
    assert_int_equal(s.renewals, 0);
    assert_int_equal(s.fences, 0);

    o.ttl_ms = 5000;
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof(name), "st:a:%d", i);
        assert_int_equal(rl_acquire(f->c, name, &o, &f->l), RL_OK);
        assert_int_equal(rl_release(f->l), RL_OK);
        f->l = NULL;
    }
    o.fencing = true;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(rl_acquire(f->c, "st:fence", &o, &f->l), RL_OK);
        assert_true(rl_lock_fence(f->l) > 0);
        assert_int_equal(rl_release(f->l), RL_OK);
        f->l = NULL;
    }
    o.fencing = false;
    /* Three refused attempts (retry_count 0: one attempt each). */
    f->c2 = fixture_client_on(f, NULL);
    assert_non_null(f->c2);
    assert_int_equal(rl_acquire(f->c2, "st:busy", &o, &f->l2), RL_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(rl_acquire(f->c, "st:busy", &o, &f->l),
                         RL_ENOTACQUIRED);
    assert_int_equal(rl_release(f->l2), RL_OK);
    f->l2 = NULL;
    /* Two extensions. */
    assert_int_equal(rl_acquire(f->c, "st:ext", &o, &f->l), RL_OK);
    assert_int_equal(rl_extend(f->l, 6000), RL_OK);
    assert_int_equal(rl_extend(f->l, 0), RL_OK);
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;

    stats_once_voted(f->c, &s, 3);
    fprintf(stderr, "  acquired %llu contended %llu lost %llu renewals %llu "
                    "fences %llu\n",
            (unsigned long long)s.acquired,
            (unsigned long long)s.contended, (unsigned long long)s.lost,
            (unsigned long long)s.renewals, (unsigned long long)s.fences);
    assert_int_equal(s.acquired, 8);
    assert_int_equal(s.contended, 3);
    assert_int_equal(s.lost, 0);
    assert_int_equal(s.renewals, 2);
    assert_int_equal(s.fences, 2);
    assert_int_equal(s.node_count, NODES);
    for (size_t i = 0; i < NODES; i++) {
        const rl_node_stats *n = &s.nodes[i];

        print_node(n);
        snprintf(port, sizeof(port), ":%d", f->r[i].port);
        assert_non_null(strstr(n->name, port));
        assert_true(n->connected);
        assert_true(n->voting);
        /* 8 acquires + 2 fence writes + 3 refused + 2 extends + 8
         * releases, at the least. */
        assert_true(n->requests >= 20);
        assert_true(n->votes_for > 0);
        assert_int_equal(n->errors, 0);
        assert_int_equal(n->timeouts, 0);
        assert_int_equal(n->down, 0);
        assert_true(n->latency_p50_us > 0);
        assert_true(n->latency_p50_us <= n->latency_p90_us);
        assert_true(n->latency_p90_us <= n->latency_p99_us);
        assert_true(n->latency_p99_us <= n->latency_max_us);
        against += n->votes_against;
    }
    /* The refused attempts were refused by nodes. */
    assert_true(against >= 3);
    /* The holder's client counted its own acquisition only. */
    assert_int_equal(rl_client_stats(f->c2, &s), RL_OK);
    assert_int_equal(s.acquired, 1);
    assert_int_equal(s.contended, 0);
}

static void test_killed_node_shows_disconnected_and_failed(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = { 0 };
    rl_stats s;
    int64_t deadline;
    char name[64];

    o.ttl_ms = 5000;
    assert_int_equal(rl_acquire(f->c, "st:before", &o, &f->l), RL_OK);
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
    harness_kill(&f->r[4]);
    deadline = harness_now_ms() + harness_scale_ms(2000);
    do {
        for (int i = 0; i < 3; i++) {
            snprintf(name, sizeof(name), "st:after:%d", i);
            assert_int_equal(rl_acquire(f->c, name, &o, &f->l), RL_OK);
            assert_in_range(rl_lock_nodes_ok(f->l), 3, 4);
            assert_int_equal(rl_release(f->l), RL_OK);
            f->l = NULL;
        }
        assert_int_equal(rl_client_stats(f->c, &s), RL_OK);
    } while (s.nodes[4].connected && harness_now_ms() < deadline);
    for (size_t i = 0; i < NODES; i++)
        print_node(&s.nodes[i]);
    assert_false(s.nodes[4].connected);
    assert_false(s.nodes[4].voting);
    assert_true(s.nodes[4].down + s.nodes[4].timeouts > 0);
    assert_true(s.nodes[4].votes_against > 0);
    for (size_t i = 0; i < 4; i++) {
        assert_true(s.nodes[i].connected);
        assert_true(s.nodes[i].voting);
        assert_int_equal(s.nodes[i].down, 0);
    }
    assert_true(s.acquired >= 4);
}

static void test_lost_lock_is_counted(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = { 0 };
    struct pollfd p;
    rl_stats s;

    o.ttl_ms = 600;
    o.auto_extend = true;
    o.max_renewals = 1;
    assert_int_equal(rl_acquire(f->c, "st:lost", &o, &f->l), RL_OK);
    p.fd = rl_lock_lost_fd(f->l);
    p.events = POLLIN;
    assert_true(p.fd >= 0);
    assert_int_equal(poll(&p, 1, (int)harness_scale_ms(3000)), 1);
    assert_true(rl_lock_lost(f->l));
    assert_int_equal(rl_client_stats(f->c, &s), RL_OK);
    assert_int_equal(s.lost, 1);
    assert_int_equal(s.renewals, 1);
    assert_int_equal(s.acquired, 1);
    rl_lock_free(f->l);
    f->l = NULL;
}

static void test_stats_rejects_bad_arguments_and_external_loop(void **state)
{
    struct fixture *f = *state;
    rl_stats s;
    rl_client *ext;

    assert_int_equal(rl_client_stats(NULL, &s), RL_EINVAL);
    assert_int_equal(rl_client_stats(f->c, NULL), RL_EINVAL);
    assert_int_equal(rl_client_stats(NULL, NULL), RL_EINVAL);
    f->loop = ev_loop_new(0);
    assert_non_null(f->loop);
    ext = fixture_client_on(f, f->loop);
    assert_non_null(ext);
    assert_int_equal(rl_client_stats(ext, &s), RL_EMISUSE);
    fprintf(stderr, "  external loop: %s\n", rl_last_error());
    rl_client_free(ext);
}

/* The small statistics calls give what rl_client_stats gives. */
static void test_totals_and_one_node_match_the_whole_snapshot(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = { 0 };
    rl_stats *s = malloc(sizeof(*s));
    rl_node_stats n;
    rl_totals t;

    assert_non_null(s);
    o.ttl_ms = 5000;
    o.fencing = true;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(rl_acquire(f->c, "st:small", &o, &f->l), RL_OK);
        assert_int_equal(rl_extend(f->l, 0), RL_OK);
        assert_int_equal(rl_release(f->l), RL_OK);
        f->l = NULL;
    }
    assert_int_equal(rl_client_stats(f->c, s), RL_OK);
    assert_int_equal(rl_client_totals(f->c, &t), RL_OK);
    assert_int_equal(t.acquired, 3);
    assert_int_equal(t.acquired, s->acquired);
    assert_int_equal(t.contended, s->contended);
    assert_int_equal(t.lost, s->lost);
    assert_int_equal(t.renewals, 3);
    assert_int_equal(t.renewals, s->renewals);
    assert_int_equal(t.fences, 3);
    assert_int_equal(t.fences, s->fences);
    assert_int_equal(t.overload_refused, s->overload_refused);
    assert_int_equal(t.renewals_waiting, s->renewals_waiting);
    assert_int_equal(t.renewals_early, s->renewals_early);
    assert_int_equal(t.queue_waiters, s->queue_waiters);
    assert_int_equal(t.queue_wait_ms_total, s->queue_wait_ms_total);
    assert_int_equal(t.queue_wait_count, s->queue_wait_count);
    assert_int_equal(t.queue_leaves, s->queue_leaves);
    assert_int_equal(t.queue_registrations,
                     s->queue_waiters + s->queue_wait_count +
                         s->queue_leaves);
    assert_int_equal(t.node_count, NODES);
    for (size_t i = 0; i < NODES; i++) {
        assert_int_equal(rl_client_node_stats(f->c, i, &n), RL_OK);
        assert_string_equal(n.name, s->nodes[i].name);
        assert_int_equal(n.connected, s->nodes[i].connected);
        assert_int_equal(n.voting, s->nodes[i].voting);
        /* Counters only grow (a background ping may come in between). */
        assert_true(n.requests >= s->nodes[i].requests);
        assert_true(n.votes_for >= s->nodes[i].votes_for);
        assert_int_equal(n.errors, s->nodes[i].errors);
        assert_int_equal(n.twin_of, s->nodes[i].twin_of);
    }
    free(s);
}

static void test_small_stats_calls_reject_bad_arguments(void **state)
{
    struct fixture *f = *state;
    rl_node_stats n;
    rl_totals t;
    rl_client *ext;

    assert_int_equal(rl_client_totals(NULL, &t), RL_EINVAL);
    assert_int_equal(rl_client_totals(f->c, NULL), RL_EINVAL);
    assert_int_equal(rl_client_node_stats(NULL, 0, &n), RL_EINVAL);
    assert_int_equal(rl_client_node_stats(f->c, 0, NULL), RL_EINVAL);
    assert_int_equal(rl_client_node_stats(f->c, NODES, &n), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "node 5"));
    /* With an external loop the totals are still readable (atomic); a
     * node's counters live on that loop's thread. */
    f->loop = ev_loop_new(0);
    assert_non_null(f->loop);
    ext = fixture_client_on(f, f->loop);
    assert_non_null(ext);
    assert_int_equal(rl_client_totals(ext, &t), RL_OK);
    assert_int_equal(t.node_count, NODES);
    assert_int_equal(t.acquired, 0);
    assert_int_equal(rl_client_node_stats(ext, 0, &n), RL_EMISUSE);
    rl_client_free(ext);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counters_match_what_was_done),
        cmocka_unit_test(test_killed_node_shows_disconnected_and_failed),
        cmocka_unit_test(test_lost_lock_is_counted),
        cmocka_unit_test(test_stats_rejects_bad_arguments_and_external_loop),
        cmocka_unit_test(test_totals_and_one_node_match_the_whole_snapshot),
        cmocka_unit_test(test_small_stats_calls_reject_bad_arguments),
    };

    return FIXTURE_RUN("stats", &fx, tests);
}
