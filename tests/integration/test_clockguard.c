/* SPDX-License-Identifier: BSD-3-Clause */
/* test_clockguard.c -- the clock guard (issue 15) against real
 * redis-server processes whose clock libfaketime runs fast, slow or steps.
 *
 * Bounds checked (docs/guide/guarantees.md, "Clock guard"): a node at x5 is clock-suspect
 * from the first lock operation after rl_client_new; at x1.5 and x0.5
 * within a few round trips of lock traffic (asserted generously: 2 s of
 * operations every 5 ms); a step is seen at the next sample. A suspect
 * node's YES is not a vote (an acquire that needs it fails), it votes
 * again once its clock behaved for max_ttl_ms, and a lock whose key
 * vanishes early on a node is LOST at the renewal that shows it when too
 * few nodes still hold it (not at its safety margin).
 *
 * Servers under libfaketime: LD_PRELOAD of libfaketime plus libc (it
 * recurses with jemalloc otherwise), FAKETIME="+0 xR" for a rate, or
 * FAKETIME_TIMESTAMP_FILE + FAKETIME_NO_CACHE for steps driven by a
 * file. Without libfaketime the tests print SKIP. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "clockguard.h"
#include "fixture.h"

#define FAKETIME_LIB "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
#define NODES 3
#define ODD 2 /* the node with the odd clock */

/* The offset file of the node with the odd clock ("" when none). */
static char tsfile[HARNESS_DIR_MAX + 16];

static void remove_tsfile(struct fixture *f)
{
    (void)f;
    if (tsfile[0] != '\0')
        unlink(tsfile);
    tsfile[0] = '\0';
}

/* No servers: each test starts its own (start). */
static const struct fixture_opts fx = { .cleanup = remove_tsfile };

static void set_offset(const char *offset)
{
    FILE *fp = fopen(tsfile, "w");

    assert_non_null(fp);
    fprintf(fp, "%s\n", offset);
    assert_int_equal(fclose(fp), 0);
}

/* Nodes 0 and 1 plain; node ODD under libfaketime: rate (e.g. "5") or,
 * when rate is NULL, its offset read from a file (set_offset). */
static struct fixture *start(void **state, const char *rate)
{
    struct fixture *f = *state;
    char spec[32];
    int i, rc = 0;

    if (access(FAKETIME_LIB, R_OK) != 0) {
        printf("SKIP: libfaketime not installed (%s)\n", FAKETIME_LIB);
        exit(77);
    }
    for (i = 0; i < NODES && rc == 0; i++) {
        if (i != ODD) {
            rc = harness_start(&f->r[i], NULL);
            continue;
        }
        setenv("LD_PRELOAD", FAKETIME_LIB " libc.so.6", 1);
        if (rate != NULL) {
            snprintf(spec, sizeof(spec), "+0 x%s", rate);
            setenv("FAKETIME", spec, 1);
        } else {
            snprintf(tsfile, sizeof(tsfile), "/tmp/rl-faketime-%d",
                     (int)getpid());
            set_offset("+0");
            setenv("FAKETIME_TIMESTAMP_FILE", tsfile, 1);
            setenv("FAKETIME_NO_CACHE", "1", 1);
        }
        rc = harness_start(&f->r[i], NULL);
        unsetenv("LD_PRELOAD");
        unsetenv("FAKETIME");
        unsetenv("FAKETIME_TIMESTAMP_FILE");
        unsetenv("FAKETIME_NO_CACHE");
    }
    assert_int_equal(rc, 0);
    harness_nodes_fill(&f->hn, f->r, NODES);
    return f;
}

static void client(struct fixture *f, uint32_t max_ttl_ms, bool guard)
{
    rl_config cfg;

    fixture_config(&cfg, &f->hn);
    cfg.max_ttl_ms = max_ttl_ms;
    cfg.no_clock_guard = !guard;
    f->c = fixture_client(&cfg);
    assert_non_null(f->c);
}

static rl_node_stats node_stats(struct fixture *f, int i)
{
    static rl_stats s;

    assert_int_equal(rl_client_stats(f->c, &s), RL_OK);
    return s.nodes[i];
}

/* Acquire (and release) a fresh resource that node 0 holds for someone
 * else: it takes the votes of node 1 and node ODD. */
static rl_status cycle(struct fixture *f, uint32_t ttl_ms)
{
    static int seq;
    rl_acquire_opts o = {0};
    char name[64];
    rl_status st;

    o.ttl_ms = ttl_ms;
    snprintf(name, sizeof(name), "clock:%d:%d", (int)getpid(), seq++);
    assert_true(harness_ok(harness_cmd(&f->r[0], "SET %s foreign PX 10000",
                                       name)));
    st = rl_acquire(f->c, name, &o, &f->l);
    if (st == RL_OK) {
        /* Node ODD may turn suspect while the lock is held (its sample
         * can ride this very acquire): node 1's vote alone is then no
         * quorum, and the release says so. Either way l is consumed. */
        rl_status rst = rl_release(f->l);

        assert_true(rst == RL_OK || rst == RL_ELOST);
        f->l = NULL;
    }
    return st;
}

/* Lock traffic every 5 ms until node ODD is suspect or limit_ms passed;
 * the time it took, or -1. */
static int64_t until_suspect(struct fixture *f, int64_t limit_ms)
{
    int64_t t0 = harness_now_ms();

    while (harness_now_ms() - t0 < harness_scale_ms(limit_ms)) {
        cycle(f, 1000);
        if (node_stats(f, ODD).clock_state == RL_CLOCK_SUSPECT)
            return harness_now_ms() - t0;
        harness_sleep_ms(5);
    }
    return -1;
}

static void test_x5_node_does_not_vote_from_the_first_acquire(void **state)
{
    struct fixture *f = start(state, "5");
    rl_node_stats s;

    client(f, 60000, true);
    /* The first acquire's own reply shows it: its YES is no vote. */
    assert_int_not_equal(cycle(f, 1000), RL_OK);
    s = node_stats(f, ODD);
    assert_int_equal(s.clock_state, RL_CLOCK_SUSPECT);
    assert_true(s.clock_rate > 1.5);
    assert_int_equal(s.clock_incidents, 1);
    assert_false(s.voting);
    assert_int_equal(node_stats(f, 0).clock_state, RL_CLOCK_OK);
    /* Traffic never clears it: the clock keeps running fast. */
    for (int i = 0; i < 20; i++)
        assert_int_not_equal(cycle(f, 1000), RL_OK);
    assert_int_equal(node_stats(f, ODD).clock_state, RL_CLOCK_SUSPECT);
}

/* A fast clock also counts uptime fast: while the node is suspect its
 * INFO uptime is not trusted for the restart quarantine. */
static void test_x5_node_uptime_is_not_trusted(void **state)
{
    struct fixture *f = start(state, "5");
    rl_node_info info[NODES];
    rl_config cfg;
    size_t count = 0;

    harness_sleep_ms(1500); /* 7.5 s of its own uptime */
    fixture_config(&cfg, &f->hn);
    cfg.max_ttl_ms = 4000;
    cfg.trust_restarted_nodes = false;
    f->c = fixture_client(&cfg);
    assert_non_null(f->c);
    rl_client_ping(f->c, info, NODES, &count);
    assert_int_equal(info[ODD].clock_state, RL_CLOCK_SUSPECT);
    assert_false(info[ODD].voting);
    /* Counted from this connection's handshake (a scaled 1 s bound for
     * the client's creation and the ping), not from its INFO (7.5 s and
     * more): at most 5 s, to tell the two apart on a slow machine. */
    assert_true(info[ODD].uptime_ms <
                (harness_scale_ms(1000) < 5000 ? harness_scale_ms(1000)
                                               : 5000));
}

static void test_x5_node_votes_without_the_guard(void **state)
{
    struct fixture *f = start(state, "5");

    client(f, 60000, false);
    assert_int_equal(cycle(f, 1000), RL_OK);
    assert_int_equal(node_stats(f, ODD).clock_state, RL_CLOCK_OFF);
}

static void rate_is_caught(void **state, const char *rate, bool fast)
{
    struct fixture *f = start(state, rate);
    int64_t took;
    rl_node_stats s;

    client(f, 60000, true);
    took = until_suspect(f, 2000);
    printf("x%s: clock-suspect after %lld ms of lock traffic\n", rate,
           (long long)took);
    assert_true(took >= 0);
    /* The rate shown is measured since the connection began: give it a
     * baseline much longer than the round trips. */
    for (int i = 0; i < 10; i++) {
        harness_sleep_ms(10);
        cycle(f, 1000);
    }
    s = node_stats(f, ODD);
    assert_true(fast ? s.clock_rate > 1.1 : s.clock_rate < 0.9);
    assert_int_not_equal(cycle(f, 1000), RL_OK);
}

static void test_x1_5_node_is_caught(void **state)
{
    rate_is_caught(state, "1.5", true);
}

static void test_x0_5_node_is_caught(void **state)
{
    rate_is_caught(state, "0.5", false);
}

/* A step forward or backward shows at the next sample; after max_ttl of
 * good behaviour the node votes again. */
static void step(void **state, const char *offset)
{
    struct fixture *f = start(state, NULL);
    int64_t t0;
    int i;

    client(f, 500, true);
    for (i = 0; i < 5; i++)
        assert_int_equal(cycle(f, 200), RL_OK);
    assert_int_equal(node_stats(f, ODD).clock_state, RL_CLOCK_OK);
    set_offset(offset);
    /* The next request that carries a sample (one per
     * CLOCK_SAMPLE_INTERVAL_US at most). */
    harness_sleep_ms(CLOCK_SAMPLE_INTERVAL_US / 1000 + 5);
    /* The incident is dated during this cycle, so the 500 ms count from
     * no earlier than here (under valgrind the cycle itself can take
     * longer than the sample's slack). */
    t0 = harness_now_ms();
    assert_int_not_equal(cycle(f, 200), RL_OK);
    assert_int_equal(node_stats(f, ODD).clock_state, RL_CLOCK_SUSPECT);
    /* It behaves from now on: back after 500 ms of samples, not before
     * (a generous bound on the way back: 5 s). */
    while (node_stats(f, ODD).clock_state == RL_CLOCK_SUSPECT &&
           harness_now_ms() - t0 < harness_scale_ms(5000)) {
        cycle(f, 200);
        harness_sleep_ms(20);
    }
    printf("step %s: votes again after %lld ms\n", offset,
           (long long)(harness_now_ms() - t0));
    assert_true(harness_now_ms() - t0 >= 500);
    assert_int_equal(node_stats(f, ODD).clock_state, RL_CLOCK_OK);
    assert_int_equal(cycle(f, 200), RL_OK);
    assert_int_equal(node_stats(f, ODD).clock_incidents, 1);
}

static void test_step_forward_is_caught_and_recovers(void **state)
{
    step(state, "+5");
}

static void test_step_backward_is_caught_and_recovers(void **state)
{
    step(state, "-5");
}

/* Node 0 holds someone else's key, so our lock stands on nodes 1 and
 * ODD, a bare quorum; node 0 then dies. The key vanishes early on ODD
 * (guard on: its clock jumps past the TTL; guard off: it is deleted).
 * The next extension hears "absent" from ODD: that vote is withdrawn at
 * once and the lock is LOST (RL_ELOST, flag, fd), where counting answers
 * alone would only say "no quorum" and leave it HELD until its margin. */
static void vanish(void **state, bool guard)
{
    struct fixture *f = start(state, NULL);
    rl_acquire_opts o = {0};
    char name[64];
    redisReply *rp;

    client(f, 60000, guard);
    snprintf(name, sizeof(name), "clock:vanish:%d", (int)getpid());
    rp = harness_cmd(&f->r[0], "SET %s foreign PX 60000", name);
    assert_true(harness_ok(rp));
    o.ttl_ms = 5000;
    assert_int_equal(rl_acquire(f->c, name, &o, &f->l), RL_OK);
    assert_int_equal(rl_lock_nodes_ok(f->l), 2);
    harness_kill(&f->r[0]);
    if (guard) {
        set_offset("+10");
        harness_sleep_ms(5); /* the extension carries a sample */
    } else {
        rp = harness_cmd(&f->r[ODD], "DEL %s", name);
        assert_non_null(rp);
        freeReplyObject(rp);
    }
    assert_int_equal(rl_extend(f->l, 0), RL_ELOST);
    printf("%s\n", rl_last_error());
    assert_true(rl_lock_lost(f->l));
    assert_true(rl_lock_lost_fd(f->l) >= 0);
    assert_true(harness_key_holds(&f->r[1], name, rl_lock_token(f->l)));
}

static void on_lost(rl_lock *l, void *privdata)
{
    (void)l;
    atomic_fetch_add((atomic_int *)privdata, 1);
}

/* The same with the watchdog (a touch-batch per node): the lock is LOST,
 * lost_cb and all, at the first renewal after the key vanished -- with a
 * 5 s TTL and renewals every 300 ms, long before its margin (4.5 s). */
static void test_watchdog_loses_the_lock_at_the_renewal(void **state)
{
    struct fixture *f = start(state, NULL);
    rl_acquire_opts o = {0};
    static atomic_int lost;
    char name[64];
    int64_t t0;

    client(f, 60000, true);
    snprintf(name, sizeof(name), "clock:watch:%d", (int)getpid());
    assert_true(harness_ok(harness_cmd(&f->r[0], "SET %s foreign PX 60000",
                                       name)));
    atomic_store(&lost, 0);
    o.ttl_ms = 5000;
    o.auto_extend = true;
    o.extend_interval_ms = 300;
    o.lost_cb = on_lost;
    o.lost_privdata = &lost;
    assert_int_equal(rl_acquire(f->c, name, &o, &f->l), RL_OK);
    harness_kill(&f->r[0]);
    harness_sleep_ms(700); /* renewed twice on nodes 1 and ODD */
    assert_false(rl_lock_lost(f->l));
    t0 = harness_now_ms();
    set_offset("+10");
    assert_true(harness_wait_count(&lost, 1, 2500));
    printf("lost %lld ms after the jump\n",
           (long long)(harness_now_ms() - t0));
    assert_true(rl_lock_lost(f->l));
}

/* A server that refuses TIME fails the handshake with a message that
 * says so; with the guard off it works. */
static void test_a_server_without_time_needs_the_guard_off(void **state)
{
    static const char *const no_time[] = {"--rename-command", "TIME", "",
                                          NULL};
    struct harness_opts ho = {0};
    struct fixture *f = *state;
    rl_node_info info[NODES];
    rl_acquire_opts o = {0};
    size_t count = 0;

    ho.extra_args = no_time;
    assert_int_equal(harness_cluster_start_nodes(f->r, NODES, &ho, &f->hn),
                     0);
    client(f, 60000, true);
    assert_int_equal(rl_client_ping(f->c, info, NODES, &count),
                     RL_ENOQUORUM);
    assert_non_null(strstr(info[0].error, "TIME failed"));
    rl_client_free(f->c);
    client(f, 60000, false);
    o.ttl_ms = 1000;
    assert_int_equal(rl_acquire(f->c, "clock:no-time", &o, &f->l), RL_OK);
}

static void test_key_vanishing_on_a_stepped_node_loses_the_lock(void **state)
{
    vanish(state, true);
}

static void test_key_vanishing_loses_the_lock_without_guard(void **state)
{
    vanish(state, false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_x5_node_does_not_vote_from_the_first_acquire),
        cmocka_unit_test(test_x5_node_uptime_is_not_trusted),
        cmocka_unit_test(test_x5_node_votes_without_the_guard),
        cmocka_unit_test(test_x1_5_node_is_caught),
        cmocka_unit_test(test_x0_5_node_is_caught),
        cmocka_unit_test(test_step_forward_is_caught_and_recovers),
        cmocka_unit_test(test_step_backward_is_caught_and_recovers),
        cmocka_unit_test(test_key_vanishing_on_a_stepped_node_loses_the_lock),
        cmocka_unit_test(test_key_vanishing_loses_the_lock_without_guard),
        cmocka_unit_test(test_watchdog_loses_the_lock_at_the_renewal),
        cmocka_unit_test(test_a_server_without_time_needs_the_guard_off),
    };

    return FIXTURE_RUN("tests", &fx, tests);
}
