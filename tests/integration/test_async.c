/* SPDX-License-Identifier: BSD-3-Clause */
/* test_async.c -- the async API: many operations in flight, exactly one
 * callback per accepted call (also when the client is freed meanwhile),
 * the external-loop mode, and the RL_EMISUSE rules for blocking calls
 * (STYLE 3.2, 3.5, 3.11.1). Callbacks only record; the main thread
 * asserts (cmocka is not thread-safe). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ev.h>

#include "fixture.h"

#define NODES 3
#define MAX_OPS 200

/* One record per operation: what its callback saw. */
struct rec {
    atomic_int calls;
    rl_status st;
    rl_lock *lock;
    bool on_main_thread;
    int seq;                   /* global callback order */
    rl_status inner_acquire;   /* blocking calls made inside the callback */
    rl_status inner_extend;
    char err[256];             /* rl_last_error() inside the callback */
};

static struct rec recs[MAX_OPS];
static struct rec rel_recs[MAX_OPS];
static atomic_int done;
static atomic_int rel_done;
static atomic_int seq;
static pthread_t main_thread;

static void reset_recs(void)
{
    for (int i = 0; i < MAX_OPS; i++) {
        rl_lock_free(recs[i].lock);
        memset(&recs[i], 0, sizeof(recs[i]));
        memset(&rel_recs[i], 0, sizeof(rel_recs[i]));
    }
    atomic_store(&done, 0);
    atomic_store(&rel_done, 0);
    atomic_store(&seq, 0);
}

static void cleanup(struct fixture *f)
{
    (void)f;
    reset_recs();
}

/* Servers and a client running its own loop thread, or (external) one
 * on a loop of ours that the test runs. */
static int setup(struct fixture *f)
{
    (void)f;
    main_thread = pthread_self();
    reset_recs();
    return 0;
}

static const struct fixture_opts owned = { .nodes = NODES, .setup = setup,
                                           .cleanup = cleanup };
static const struct fixture_opts external = { .nodes = NODES,
                                              .external_loop = true,
                                              .setup = setup,
                                              .cleanup = cleanup };

/* ---- Callbacks: record, never assert ---- */

/* What every callback records in r: its status, thread, order and
 * rl_last_error(); then it counts the call in r and in *counter. */
static void record(struct rec *r, rl_status st, atomic_int *counter)
{
    r->st = st;
    r->on_main_thread = pthread_equal(pthread_self(), main_thread);
    r->seq = atomic_fetch_add(&seq, 1);
    snprintf(r->err, sizeof(r->err), "%s", rl_last_error());
    atomic_fetch_add(&r->calls, 1);
    atomic_fetch_add(counter, 1);
}

static void acq_cb(rl_client *c, rl_status st, rl_lock *lock, void *privdata)
{
    struct rec *r = privdata;

    (void)c;
    r->lock = lock;
    record(r, st, &done);
}

static void rel_cb(rl_client *c, rl_status st, void *privdata)
{
    (void)c;
    record(privdata, st, &rel_done);
}

static void ext_cb(rl_lock *l, rl_status st, void *privdata)
{
    (void)l;
    record(privdata, st, &done);
}

/* Inside a callback: blocking calls are misuse, async ones are fine. */
static void acq_cb_calls_blocking(rl_client *c, rl_status st, rl_lock *lock,
                                  void *privdata)
{
    struct rec *r = privdata;
    rl_lock *other = NULL;
    rl_acquire_opts o = { 0 };

    r->inner_acquire = rl_acquire(c, "async:inner", &o, &other);
    if (other != NULL)
        rl_lock_free(other);
    if (lock != NULL) {
        r->inner_extend = rl_extend(lock, 0);
        if (rl_release_async(lock, rel_cb, &rel_recs[0]) != RL_OK)
            r->lock = lock;
    }
    record(r, st, &done);
}

/* Wait (owned loop: sleep; external loop: run it) until *counter >= want. */
static bool wait_for(struct fixture *f, atomic_int *counter, int want, int64_t ms)
{
    int64_t deadline = harness_now_ms() + harness_scale_ms(ms);

    while (atomic_load(counter) < want && harness_now_ms() < deadline) {
        if (f->loop != NULL)
            ev_run(f->loop, EVRUN_NOWAIT);
        harness_sleep_ms(1);
    }
    return atomic_load(counter) >= want;
}

/* Async acquires of prefix0 .. prefix<n-1> with ttl_ms, recorded in
 * recs[0..n). */
static void start_acquires(struct fixture *f, const char *prefix, int n,
                           uint32_t ttl_ms)
{
    rl_acquire_opts o = { 0 };
    char name[32];

    o.ttl_ms = ttl_ms;
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "%s%d", prefix, i);
        assert_int_equal(rl_acquire_async(f->c, name, &o, acq_cb, &recs[i]),
                         RL_OK);
    }
}

/* Acquire n distinct resources async, wait, check each call and Redis. */
static void acquire_many(struct fixture *f, int n, uint32_t ttl_ms)
{
    char name[32];

    start_acquires(f, "async:", n, ttl_ms);
    assert_true(wait_for(f, &done, n, 10000));
    for (int i = 0; i < n; i++) {
        assert_int_equal(atomic_load(&recs[i].calls), 1);
        if (recs[i].st != RL_OK)
            fprintf(stderr, "op %d: %s: %s\n", i, rl_status_name(recs[i].st),
                    recs[i].err);
        assert_int_equal(recs[i].st, RL_OK);
        assert_non_null(recs[i].lock);
        assert_int_equal(recs[i].on_main_thread, f->loop != NULL);
        snprintf(name, sizeof(name), "async:%d", i);
        assert_true(fixture_all_hold(f, name, rl_lock_token(recs[i].lock), 0,
                                     0));
    }
}

/* Release recs[0..n) async and wait until each was answered once. With
 * the fixture's own loop, they are all made in one loop iteration (none
 * leaves before the loop runs). */
static void release_async_all(struct fixture *f, int n)
{
    for (int i = 0; i < n; i++) {
        rl_lock *l = recs[i].lock;

        recs[i].lock = NULL;
        assert_int_equal(rl_release_async(l, rel_cb, &rel_recs[i]), RL_OK);
    }
    assert_true(wait_for(f, &rel_done, n, 10000));
    for (int i = 0; i < n; i++)
        assert_int_equal(atomic_load(&rel_recs[i].calls), 1);
}

/* Release recs[0..n) async, wait, check each call and Redis. */
static void release_many(struct fixture *f, int n)
{
    release_async_all(f, n);
    for (int i = 0; i < n; i++) {
        assert_int_equal(rel_recs[i].st, RL_OK);
        assert_int_equal(rel_recs[i].on_main_thread, f->loop != NULL);
    }
    assert_true(harness_all_empty(f->r, NODES));
}

/* Retry a blocking extend until it succeeds (nodes reconnected). */
static bool extend_until_ok(rl_lock *l, int64_t ms)
{
    int64_t deadline = harness_now_ms() + harness_scale_ms(ms);
    rl_status st;

    do {
        st = rl_extend(l, 0);
        if (st == RL_OK)
            return true;
        harness_sleep_ms(50);
    } while (harness_now_ms() < deadline);
    fprintf(stderr, "  extend: %s: %s\n", rl_status_name(st),
            rl_last_error());
    return false;
}

/* ---- Tests ---- */

static void test_200_acquires_in_flight_each_call_back_once(void **state)
{
    struct fixture *f = *state;

    acquire_many(f, MAX_OPS, 10000);
    release_many(f, MAX_OPS);
    /* No late or duplicate callbacks. */
    harness_sleep_ms(100);
    assert_int_equal(atomic_load(&done), MAX_OPS);
    assert_int_equal(atomic_load(&rel_done), MAX_OPS);
}

static void test_client_free_with_ops_in_flight_calls_each_back_once(
    void **state)
{
    struct fixture *f = *state;
    int ok = 0;
    int canceled = 0;

    start_acquires(f, "async:free:", 100, 2000);
    rl_client_free(f->c);
    f->c = NULL;
    /* Every callback ran before rl_client_free returned. */
    assert_int_equal(atomic_load(&done), 100);
    harness_sleep_ms(100);
    assert_int_equal(atomic_load(&done), 100);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(atomic_load(&recs[i].calls), 1);
        assert_true(recs[i].st == RL_OK || recs[i].st == RL_ECANCELED);
        if (recs[i].st == RL_OK) {
            assert_non_null(recs[i].lock);
            ok++;
        } else {
            assert_null(recs[i].lock);
            canceled++;
        }
    }
    fprintf(stderr, "  %d completed, %d canceled\n", ok, canceled);
    /* Handles outlive the client; reset_recs frees them. */
}

static void test_release_async_without_callback_still_releases(void **state)
{
    struct fixture *f = *state;
    rl_lock *l = fixture_acquire(f->c, "async:fire-forget", 10000);

    assert_int_equal(rl_release_async(l, NULL, NULL), RL_OK);
    assert_true(harness_all_empty_within(f->r, NODES, 1000));
}

static void test_extend_async_refreshes_and_a_second_one_is_misuse(
    void **state)
{
    struct fixture *f = *state;
    int64_t t0 = harness_now_ms();
    rl_lock *l = fixture_acquire(f->c, "async:extend", 3000);

    /* The acquire returned at a majority: a late node's SET landing after
     * the extend would keep the 3 s. Every node holds it first. */
    assert_true(fixture_all_hold(f, "async:extend", rl_lock_token(l), t0,
                                 3000));
    t0 = harness_now_ms();
    assert_int_equal(rl_extend_async(l, 9000, ext_cb, &recs[0]), RL_OK);
    assert_true(wait_for(f, &done, 1, 5000));
    if (recs[0].st != RL_OK)
        fprintf(stderr, "  extend_async: %s: %s\n",
                rl_status_name(recs[0].st), recs[0].err);
    assert_int_equal(recs[0].st, RL_OK);
    assert_false(recs[0].on_main_thread);
    assert_true(fixture_all_hold(f, "async:extend", rl_lock_token(l), t0,
                                 9000));
    assert_true(fixture_validity_from(l, t0, 9000 - 90 - 2));

    /* With every node paused the first extend surely is still in flight
     * when the second one is asked for. */
    fixture_pause_all(f);
    assert_int_equal(rl_extend_async(l, 9000, ext_cb, &recs[1]), RL_OK);
    assert_int_equal(rl_extend_async(l, 9000, ext_cb, &recs[2]),
                     RL_EMISUSE);
    assert_true(wait_for(f, &done, 2, 5000));
    fixture_resume_all(f);
    assert_int_equal(atomic_load(&recs[1].calls), 1);
    assert_int_equal(recs[1].st, RL_ENOQUORUM);
    assert_int_equal(atomic_load(&recs[2].calls), 0);
    /* The client may have dropped the stuck connections: once it is back
     * (an extend succeeds again), the lock is still ours. */
    assert_true(extend_until_ok(l, 3000));
    assert_int_equal(rl_release(l), RL_OK);
    assert_true(harness_all_empty_within(f->r, NODES, 1000));
}

static void test_release_async_cancels_an_extend_in_flight_first(
    void **state)
{
    struct fixture *f = *state;
    rl_lock *l = fixture_acquire(f->c, "async:ext-rel", 5000);

    fixture_pause_all(f);
    assert_int_equal(rl_extend_async(l, 9000, ext_cb, &recs[0]), RL_OK);
    assert_int_equal(rl_release_async(l, rel_cb, &rel_recs[0]), RL_OK);
    assert_true(wait_for(f, &done, 1, 5000));
    assert_true(wait_for(f, &rel_done, 1, 5000));
    fixture_resume_all(f);
    assert_int_equal(atomic_load(&recs[0].calls), 1);
    assert_int_equal(recs[0].st, RL_ECANCELED);
    assert_int_equal(atomic_load(&rel_recs[0].calls), 1);
    assert_true(recs[0].seq < rel_recs[0].seq);
    /* Paused nodes: the release itself cannot reach a quorum (what is
     * left on the nodes then is test_node_failures' business). */
    assert_int_equal(rel_recs[0].st, RL_ENOQUORUM);
}

static void test_blocking_calls_inside_a_callback_are_misuse(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = { 0 };

    o.ttl_ms = 5000;
    assert_int_equal(rl_acquire_async(f->c, "async:cb", &o,
                                      acq_cb_calls_blocking, &recs[0]),
                     RL_OK);
    assert_true(wait_for(f, &done, 1, 5000));
    assert_int_equal(recs[0].st, RL_OK);
    assert_int_equal(recs[0].inner_acquire, RL_EMISUSE);
    assert_int_equal(recs[0].inner_extend, RL_EMISUSE);
    /* The async release issued from the callback went through. */
    assert_true(wait_for(f, &rel_done, 1, 5000));
    assert_int_equal(rel_recs[0].st, RL_OK);
    assert_true(harness_all_empty_within(f->r, NODES, 1000));
}

static void test_failed_async_acquire_reports_detail_in_the_callback(
    void **state)
{
    struct fixture *f = *state;
    rl_lock *l = fixture_acquire(f->c, "async:held", 5000);
    rl_acquire_opts o = { 0 };

    o.ttl_ms = 5000;
    assert_int_equal(
        rl_acquire_async(f->c, "async:held", &o, acq_cb, &recs[0]), RL_OK);
    assert_true(wait_for(f, &done, 1, 5000));
    assert_int_equal(recs[0].st, RL_ENOTACQUIRED);
    assert_null(recs[0].lock);
    fprintf(stderr, "  in callback: %s\n", recs[0].err);
    assert_true(recs[0].err[0] != '\0');
    assert_true(fixture_all_hold(f, "async:held", rl_lock_token(l), 0, 0));
    assert_int_equal(rl_release(l), RL_OK);
    assert_true(harness_all_empty(f->r, NODES));
}

static void test_external_loop_runs_callbacks_on_the_callers_thread(
    void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = { 0 };
    rl_lock *l = NULL;
    int64_t t0;

    o.ttl_ms = 5000;
    assert_int_equal(rl_acquire(f->c, "async:ext-loop", &o, &l),
                     RL_EMISUSE);
    assert_null(l);
    acquire_many(f, 20, 10000);
    assert_int_equal(rl_extend(recs[0].lock, 0), RL_EMISUSE);
    t0 = harness_now_ms();
    assert_int_equal(rl_extend_async(recs[0].lock, 8000, ext_cb,
                                     &recs[MAX_OPS - 1]),
                     RL_OK);
    assert_true(wait_for(f, &done, 21, 5000));
    assert_int_equal(recs[MAX_OPS - 1].st, RL_OK);
    assert_true(recs[MAX_OPS - 1].on_main_thread);
    assert_true(fixture_all_hold(f, "async:0", rl_lock_token(recs[0].lock), t0,
                                 8000));
    release_many(f, 20);
}

static void test_external_loop_client_free_cancels_pending_ops(void **state)
{
    struct fixture *f = *state;

    start_acquires(f, "async:ext-free:", 10, 2000);
    /* The loop never ran: the callbacks run inside rl_client_free. */
    rl_client_free(f->c);
    f->c = NULL;
    assert_int_equal(atomic_load(&done), 10);
    for (int i = 0; i < 10; i++) {
        assert_int_equal(atomic_load(&recs[i].calls), 1);
        assert_true(recs[i].on_main_thread);
        assert_true(recs[i].st == RL_OK || recs[i].st == RL_ECANCELED);
        assert_true((recs[i].st == RL_OK) == (recs[i].lock != NULL));
    }
    ev_run(f->loop, EVRUN_NOWAIT);
    assert_int_equal(atomic_load(&done), 10);
}

/* The field of cmd ("script": EVALSHA and EVAL together) in node k's
 * commandstats. */
static long long command_stat(const struct fixture *f, int k, const char *cmd,
                              const char *field)
{
    if (strcmp(cmd, "script") != 0)
        return fixture_command_stat(&f->r[k], cmd, field);
    return fixture_command_stat(&f->r[k], "evalsha", field) +
           fixture_command_stat(&f->r[k], "eval", field);
}

/* command_stat once it has grown by want from before, or when a scaled
 * 5 s have passed: a release's callback comes at the answer that
 * settles its outcome (release.c), so a slower node may still be
 * running its part -- and with the test's own loop, only while the
 * test runs that loop (a NOSCRIPT's EVAL resend is sent from it). The
 * caller asserts the growth is exactly want. */
static long long stat_growth(const struct fixture *f, int k, const char *cmd,
                             const char *field, long long before,
                             long long want)
{
    int64_t deadline = harness_now_ms() + harness_scale_ms(5000);
    long long grown;

    while ((grown = command_stat(f, k, cmd, field) - before) < want &&
           harness_now_ms() < deadline) {
        if (f->loop != NULL)
            ev_run(f->loop, EVRUN_NOWAIT);
        harness_sleep_ms(1);
    }
    return grown;
}

/* Releases made in one loop iteration leave as one script call per node
 * (release-batch), each compared with its own token and answered on its
 * own: the lock whose key holds another token everywhere is refused and
 * its key left there; the others' keys are deleted. */
static void test_one_iterations_releases_are_one_call_per_node(void **state)
{
    static const char other[] = "fedcba9876543210fedcba9876543210000000a1";
    struct fixture *f = *state;
    long long before[NODES];

    acquire_many(f, 4, 10000);
    for (int k = 0; k < NODES; k++) {
        assert_int_equal(
            harness_ok(harness_cmd(&f->r[k], "SET async:2 %s PX 60000", other)), 1);
        before[k] = command_stat(f, k, "script", "calls");
    }
    release_async_all(f, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(rel_recs[i].st, i == 2 ? RL_ENOTACQUIRED : RL_OK);
    for (int k = 0; k < NODES; k++) {
        assert_int_equal(
            stat_growth(f, k, "script", "calls", before[k], 1), 1);
        assert_true(harness_key_holds(&f->r[k], "async:2", other));
        assert_int_equal(harness_dbsize(&f->r[k]), 1);
    }
}

/* A release-batch call that every node refuses fails each release it
 * carries, as a refused release does: nobody can tell (RL_ENOQUORUM)
 * and every key stays. */
static void test_a_refused_batch_call_fails_each_release(void **state)
{
    struct fixture *f = *state;
    long long before[NODES];
    char name[32], tokens[3][128];

    acquire_many(f, 3, 10000);
    for (int i = 0; i < 3; i++)
        snprintf(tokens[i], sizeof(tokens[i]), "%s",
                 rl_lock_token(recs[i].lock));
    for (int k = 0; k < NODES; k++) {
        assert_int_equal(harness_ok(harness_cmd(
                             &f->r[k], "ACL SETUSER default -evalsha -eval")),
                         1);
        before[k] = command_stat(f, k, "script", "rejected_calls");
    }
    release_async_all(f, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(rel_recs[i].st, RL_ENOQUORUM);
    for (int k = 0; k < NODES; k++) {
        assert_int_equal(
            stat_growth(f, k, "script", "rejected_calls", before[k], 1), 1);
        assert_int_equal(harness_dbsize(&f->r[k]), 3);
    }
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "async:%d", i);
        assert_true(fixture_all_hold(f, name, tokens[i], 0, 0));
    }
}

/* After SCRIPT FLUSH a release-batch call meets NOSCRIPT: nothing ran,
 * and each release goes again alone (as EVAL) and is answered on its
 * own. */
static void test_a_batch_after_script_flush_releases_each_lock(void **state)
{
    struct fixture *f = *state;
    long long before[NODES];

    /* A first round of releases: the handshake's script loads have
     * landed (they may follow the first acquires' replies). */
    acquire_many(f, 3, 10000);
    release_async_all(f, 3);
    reset_recs();
    acquire_many(f, 3, 10000);
    for (int k = 0; k < NODES; k++) {
        assert_int_equal(harness_ok(harness_cmd(&f->r[k], "SCRIPT FLUSH")),
                         1);
        before[k] = command_stat(f, k, "eval", "calls");
    }
    release_async_all(f, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(rel_recs[i].st, RL_OK);
    for (int k = 0; k < NODES; k++)
        assert_int_equal(stat_growth(f, k, "eval", "calls", before[k], 3), 3);
    assert_true(harness_all_empty(f->r, NODES));
}

/* Every node holds key with token and a PTTL above min_pttl (a renewal
 * landed), looked at until a scaled ms have passed. */
static bool all_renewed_within(const struct fixture *f, const char *key,
                               const char *token, long long min_pttl,
                               int64_t ms)
{
    int64_t deadline = harness_now_ms() + harness_scale_ms(ms);
    int k = 0;

    while (k < NODES) {
        if (harness_key_holds_ttl(&f->r[k], key, token, min_pttl, LLONG_MAX))
            k++;
        else if (harness_now_ms() < deadline)
            harness_sleep_ms(10);
        else
            return false;
    }
    return true;
}

/* A loop that stood still past op_timeout_ms (its thread kept off the
 * CPU on a loaded machine) wakes to sockets holding the replies that came
 * meanwhile and to request timers due in the same iteration: the replies
 * count, no node is failed for a timeout. The servers are paused while
 * the extension is sent, so nothing can be read before the stall; each
 * node has extended the key (seen from outside) before the loop runs
 * again. */
static void test_external_loop_stalled_past_op_timeout_reads_the_replies(
    void **state)
{
    struct fixture *f = *state;
    const char *token;
    int64_t sent;

    start_acquires(f, "async:stalled", 1, 2000);
    assert_true(wait_for(f, &done, 1, 5000));
    assert_int_equal(recs[0].st, RL_OK);
    token = rl_lock_token(recs[0].lock);
    for (int k = 0; k < NODES; k++)
        assert_int_equal(harness_pause(&f->r[k]), 0);
    assert_int_equal(rl_extend_async(recs[0].lock, 10000, ext_cb, &recs[1]),
                     RL_OK);
    for (int i = 0; i < 3; i++) /* started, then written */
        ev_run(f->loop, EVRUN_NOWAIT);
    sent = harness_now_ms();
    for (int k = 0; k < NODES; k++)
        assert_int_equal(harness_resume(&f->r[k]), 0);
    assert_true(all_renewed_within(f, "async:stalled0", token, 2001, 5000));
    while (harness_now_ms() - sent <= 2 * harness_scale_ms(150))
        harness_sleep_ms(10);
    assert_true(wait_for(f, &done, 2, 5000));
    if (recs[1].st != RL_OK)
        fprintf(stderr, "  extend after the stall: %s: %s\n",
                rl_status_name(recs[1].st), recs[1].err);
    assert_int_equal(recs[1].st, RL_OK);
    recs[1].lock = NULL;
    release_many(f, 1);
}

/* No coalescing window: a renewal leaves when due, not before; its
 * request's deadline (op timeout) comes after the lock's margin, so only
 * the watchdog's timer is due when the loop runs again (a request timer
 * due then reads the replies first itself). */
static void due_renewals(rl_config *cfg)
{
    cfg->renew_window_pct = 0;
    cfg->op_timeout_ms = 8000;
}

static const struct fixture_opts external_due = { .nodes = NODES,
                                                  .external_loop = true,
                                                  .tune = due_renewals,
                                                  .setup = setup,
                                                  .cleanup = cleanup };

/* Run the loop until harness_now_ms() reaches at. */
static void run_until(struct fixture *f, int64_t at)
{
    while (harness_now_ms() < at) {
        ev_run(f->loop, EVRUN_NOWAIT);
        harness_sleep_ms(1);
    }
}

/* The same stall past a watched lock's safety margin: its renewal was
 * sent, every node renewed the key, and the reply waits in the sockets
 * when the loop runs again past the margin (before the validity ends).
 * The watchdog reads it before judging the lock: renewed, not lost. A
 * 10 s TTL: renewal due 3.3 s in, margin 1 s before the validity ends. */
static void test_external_loop_stalled_past_the_margin_reads_the_renewal(
    void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = { 0 };
    rl_totals tot;
    const char *token;
    int64_t t0 = harness_now_ms(), acquired, v;

    o.ttl_ms = 10000;
    o.auto_extend = true;
    assert_int_equal(rl_acquire_async(f->c, "async:margin", &o, acq_cb,
                                      &recs[0]),
                     RL_OK);
    assert_true(wait_for(f, &done, 1, 5000));
    acquired = harness_now_ms();
    assert_int_equal(recs[0].st, RL_OK);
    token = rl_lock_token(recs[0].lock);
    /* The renewal leaves 3333 ms after the acquisition (no window: between
     * t0 and `acquired`) while the servers are paused; the loop runs for
     * less than the connect timeout a paused node's periodic check may
     * wait. */
    run_until(f, t0 + 3250);
    for (int k = 0; k < NODES; k++)
        assert_int_equal(harness_pause(&f->r[k]), 0);
    run_until(f, acquired + 3400);
    for (int k = 0; k < NODES; k++)
        assert_int_equal(harness_resume(&f->r[k]), 0);
    /* Renewed on every node (an unrenewed key has < 6.6 s left now). */
    assert_true(all_renewed_within(f, "async:margin", token, 7000, 2000));
    /* Past the margin, before the validity ends: the loop stood still. */
    while ((v = rl_lock_validity_ms(recs[0].lock)) > 800)
        harness_sleep_ms(10);
    fprintf(stderr, "  the loop runs again with %lld ms of validity left\n",
            (long long)v);
    if (v <= 200) {
        fprintf(stderr, "SKIP: this thread overslept the margin (loaded "
                        "machine)\n");
        skip();
    }
    ev_run(f->loop, EVRUN_NOWAIT);
    ev_run(f->loop, EVRUN_NOWAIT);
    assert_int_equal(rl_client_totals(f->c, &tot), RL_OK);
    fprintf(stderr, "  lost %d, renewals %llu, validity %lld ms\n",
            rl_lock_lost(recs[0].lock), (unsigned long long)tot.renewals,
            (long long)rl_lock_validity_ms(recs[0].lock));
    assert_false(rl_lock_lost(recs[0].lock));
    assert_int_equal(tot.renewals, 1);
    assert_true(rl_lock_validity_ms(recs[0].lock) > 2000); /* a new one */
    release_many(f, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_200_acquires_in_flight_each_call_back_once),
        cmocka_unit_test(
            test_client_free_with_ops_in_flight_calls_each_back_once),
        cmocka_unit_test(test_release_async_without_callback_still_releases),
        cmocka_unit_test(
            test_extend_async_refreshes_and_a_second_one_is_misuse),
        cmocka_unit_test(test_release_async_cancels_an_extend_in_flight_first),
        cmocka_unit_test(test_blocking_calls_inside_a_callback_are_misuse),
        cmocka_unit_test(
            test_failed_async_acquire_reports_detail_in_the_callback),
        FIXTURE_TEST(
            test_external_loop_runs_callbacks_on_the_callers_thread, &external),
        FIXTURE_TEST(
            test_external_loop_client_free_cancels_pending_ops, &external),
        FIXTURE_TEST(test_one_iterations_releases_are_one_call_per_node,
                     &external),
        FIXTURE_TEST(test_a_refused_batch_call_fails_each_release,
                     &external),
        FIXTURE_TEST(test_a_batch_after_script_flush_releases_each_lock,
                     &external),
        FIXTURE_TEST(
            test_external_loop_stalled_past_op_timeout_reads_the_replies,
            &external),
        FIXTURE_TEST(
            test_external_loop_stalled_past_the_margin_reads_the_renewal,
            &external_due),
    };

    return FIXTURE_RUN("async", &owned, tests);
}
