/* SPDX-License-Identifier: BSD-3-Clause */
/* test_stress.c -- object lifetimes under fire, on real redis-server nodes
 * (issue 10, "Tests"). Written against include/redlock.h only, so it
 * holds for any core that keeps the documented contract.
 *
 * Each case hammers one kind of race for a bounded time (STRESS_MS,
 * scaled by RL_TEST_TIMEOUT_MULTIPLIER, capped at three times the base;
 * fewer threads under valgrind) and then checks what the header promises:
 *   1. releases, async releases and rl_lock_free at random moments while
 *      watchdog renewals (every 1-3 ms, TTL 40 ms) start: every status is
 *      a documented one, a released lock is gone from a majority at once,
 *      and no key outlives its handle by more than a TTL;
 *   2. reentrant acquires racing the release of the last hold (an async
 *      release by the same thread, or a release handed to another thread)
 *      while other threads contend for the same resource: never two
 *      holders at once (an in-memory occupancy count and a non-atomic
 *      counter), and every handle a thread gets really holds Redis;
 *   3. rl_client_free with blocking callers on several threads, async
 *      operations, watched locks and concurrent rl_lock_free calls in
 *      flight; and, with an external loop, from inside an acquire, extend
 *      or release callback: no crash, every blocked caller returns
 *      RL_ECANCELED, every accepted operation calls back exactly once.
 * A use-after-free or data race shows up under ASan or TSan (tools/test.sh
 * runs this file under both); a wrong result fails the assertions in any
 * build. Callbacks and worker threads only record; the main thread
 * asserts (cmocka is not thread-safe). */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <ev.h>

#include "fixture.h"

#define NODES 3
#define QUORUM 2
#define STRESS_MS 2000
#define MAX_THREADS 8

/* The first unexpected outcome, kept for the report. */
struct first_error {
    atomic_int set;
    char text[256];
};

static void note(struct first_error *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void note(struct first_error *e, const char *fmt, ...)
{
    int expected = 0;
    va_list ap;

    if (!atomic_compare_exchange_strong(&e->set, &expected, 1))
        return;
    va_start(ap, fmt);
    vsnprintf(e->text, sizeof(e->text), fmt, ap);
    va_end(ap);
}

static void report(const struct first_error *e)
{
    if (atomic_load(&e->set))
        fprintf(stderr, "  first unexpected outcome: %s\n", e->text);
}

static bool under_valgrind(void)
{
    return getenv("RL_TEST_UNDER_VALGRIND") != NULL;
}

/* How long a stress loop runs: scaled for slow builds, but never more
 * than three times the base (valgrind's x10 would take minutes). */
static int64_t stress_ms(void)
{
    int64_t ms = harness_scale_ms(STRESS_MS);

    return ms < 3 * STRESS_MS ? ms : 3 * STRESS_MS;
}

/* A stress loop also runs until its minimum of work was done (so a slow
 * machine runs longer instead of failing), but stops at this deadline;
 * the test's assertions on that minimum then fail. */
static int64_t stress_deadline_ms(void)
{
    return harness_scale_ms(10 * STRESS_MS);
}

static int threads_for(int n)
{
    return under_valgrind() ? (n + 1) / 2 : n;
}

/* xorshift32: cheap per-thread randomness; never seeded with 0. */
static uint32_t rnd(uint32_t *s)
{
    uint32_t x = *s;

    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

static void sleep_us(uint32_t us)
{
    struct timespec ts = { us / 1000000u, (long)(us % 1000000u) * 1000L };

    nanosleep(&ts, NULL);
}

/* Contended resources: quick retries, bounded by opts.wait_ms. */
static void quick_retries(rl_config *cfg)
{
    cfg->retry_delay_ms = 2;
    cfg->retry_jitter_ms = 1;
}

/* Servers only (the test makes its clients), or with a client. */
static const struct fixture_opts servers = { .nodes = NODES,
                                             .no_client = true };
static const struct fixture_opts with_client = { .nodes = NODES,
                                                 .tune = quick_retries };

/* One blocking connection per node, for one thread. */
struct conns {
    redisContext *rc[NODES];
};

static bool conns_open(struct conns *k, const struct fixture *f)
{
    for (int i = 0; i < NODES; i++) {
        k->rc[i] = harness_connect(&f->r[i]);
        if (k->rc[i] == NULL)
            return false;
    }
    return true;
}

static void conns_close(struct conns *k)
{
    for (int i = 0; i < NODES; i++) {
        if (k->rc[i] != NULL)
            redisFree(k->rc[i]);
        k->rc[i] = NULL;
    }
}

/* Nodes where key exists (token NULL) or holds token; -1 on an I/O
 * error. */
static int nodes_with(struct conns *k, const char *key, const char *token)
{
    int n = 0;

    for (int i = 0; i < NODES; i++) {
        redisReply *rep = redisCommand(k->rc[i], "GET %s", key);

        if (rep == NULL)
            return -1;
        if (rep->type == REDIS_REPLY_STRING &&
            (token == NULL || strcmp(rep->str, token) == 0))
            n++;
        freeReplyObject(rep);
    }
    return n;
}

static uint64_t stat_renewals(rl_client *c)
{
    rl_stats s;

    assert_int_equal(rl_client_stats(c, &s), RL_OK);
    return s.renewals;
}

/* Wait for the one callback of an operation whose record lives on this
 * stack frame; if it never comes the frame cannot be left (the callback
 * would write into it later), so the program stops here. */
static void rec_wait(struct fixture_rec *r, const char *what)
{
    if (harness_wait_count(&r->calls, 1, 5000))
        return;
    fprintf(stderr, "  %s: no callback within 5 s\n", what);
    abort();
}

/* One round of a thread of test 1 or 2, with that thread's connections. */
typedef void stress_round_fn(struct fixture_worker *w, struct conns *k,
                             long i);

/* The body of every thread of tests 1 and 2: with connections of its own
 * to every node (a failure is counted in *redis_errors), round(w, k, i)
 * for i = 0, 1, ... until stress_ms() has passed and enough(w) says the
 * minimum of work was done, or until the deadline. */
static void stress_rounds(struct fixture_worker *w, const struct fixture *f,
                          atomic_long *redis_errors, stress_round_fn *round,
                          bool (*enough)(struct fixture_worker *w))
{
    int64_t t0 = harness_now_ms();
    int64_t end = t0 + stress_ms();
    int64_t deadline = t0 + stress_deadline_ms();
    struct conns k = { { NULL } };

    if (!conns_open(&k, f)) {
        atomic_fetch_add(redis_errors, 1);
    } else {
        for (long i = 0; (harness_now_ms() < end || !enough(w)) &&
                         harness_now_ms() < deadline;
             i++)
            round(w, &k, i);
    }
    conns_close(&k);
}

/* ==== 1. Releases and frees racing watchdog renewals ==================== */

#define S1_THREADS 4
#define S1_TTL_MS 40

struct s1_shared {
    struct fixture *f;
    atomic_long acquired;
    atomic_long acquire_failed;  /* RL_ENOQUORUM / RL_ETIMEOUT: allowed */
    atomic_long released_ok;
    atomic_long released_lost;   /* RL_ELOST: allowed (40 ms TTL) */
    atomic_long released_noq;    /* RL_ENOQUORUM: allowed */
    atomic_long freed;
    atomic_long stopped_first;   /* rl_watchdog_stop, then rl_release */
    atomic_long async_released;
    atomic_long lost_calls;
    atomic_long still_on_majority; /* RL_OK, but a majority kept the key */
    atomic_long unexpected;
    atomic_long redis_errors;
    struct first_error err;
    uint32_t seed[MAX_THREADS];  /* each thread's rnd() state */
};

/* Reads the borrowed handle: a callback on a freed handle is a
 * use-after-free under ASan. */
static void s1_lost(rl_lock *l, void *privdata)
{
    struct s1_shared *sh = privdata;

    if (rl_lock_token(l) == NULL || rl_lock_validity_ms(l) > 60000)
        atomic_fetch_add(&sh->unexpected, 1);
    atomic_fetch_add(&sh->lost_calls, 1);
}

/* Sort a release status; on RL_OK a majority must have no key now. */
static void s1_released(struct s1_shared *sh, struct conns *k,
                        const char *name, rl_status st, const char *how)
{
    int n;

    switch (st) {
    case RL_OK:
        atomic_fetch_add(&sh->released_ok, 1);
        n = nodes_with(k, name, NULL);
        if (n < 0) {
            atomic_fetch_add(&sh->redis_errors, 1);
        } else if (n > NODES - QUORUM) {
            atomic_fetch_add(&sh->still_on_majority, 1);
            note(&sh->err, "%s of %s said RL_OK but %d nodes hold the key",
                 how, name, n);
        }
        break;
    case RL_ELOST:
        atomic_fetch_add(&sh->released_lost, 1);
        break;
    case RL_ENOQUORUM:
        atomic_fetch_add(&sh->released_noq, 1);
        break;
    default:
        atomic_fetch_add(&sh->unexpected, 1);
        note(&sh->err, "%s of %s: %s: %s", how, name, rl_status_name(st),
             rl_last_error());
    }
}

/* The minimum of work a run of test 1 must do (asserted at its end):
 * locks taken and released, and renewed meanwhile. */
#define S1_MIN_ACQUIRED 20
#define S1_MIN_RENEWALS 10

static bool s1_enough(struct fixture_worker *w)
{
    struct s1_shared *sh = w->shared;
    rl_stats s;

    return atomic_load(&sh->acquired) >= S1_MIN_ACQUIRED &&
           atomic_load(&sh->released_ok) >= 1 &&
           rl_client_stats(sh->f->c, &s) == RL_OK &&
           s.renewals >= S1_MIN_RENEWALS;
}

/* A watched lock st1:<thread>:<i>, renewed every 1-3 ms, then released,
 * freed, stopped and released, or released async, at a random moment. */
static void s1_round(struct fixture_worker *w, struct conns *k, long i)
{
    struct s1_shared *sh = w->shared;
    rl_acquire_opts o = { 0 };
    struct fixture_rec a = { 0 };
    rl_lock *l = NULL;
    rl_status st;
    uint32_t r = rnd(&sh->seed[w->id]);
    char name[64];

    snprintf(name, sizeof(name), "st1:%d:%ld", w->id, i);
    o.ttl_ms = (uint32_t)harness_scale_ms(S1_TTL_MS);
    o.auto_extend = true;
    o.extend_interval_ms = 1 + r % 3;
    o.lost_cb = s1_lost;
    o.lost_privdata = sh;
    st = rl_acquire(sh->f->c, name, &o, &l);
    if (st == RL_ENOQUORUM || st == RL_ETIMEOUT) {
        atomic_fetch_add(&sh->acquire_failed, 1);
        return;
    }
    if (st != RL_OK) {
        atomic_fetch_add(&sh->unexpected, 1);
        note(&sh->err, "acquire %s: %s: %s", name, rl_status_name(st),
             rl_last_error());
        return;
    }
    atomic_fetch_add(&sh->acquired, 1);
    /* Land somewhere in the first few renewal periods. */
    if ((r >> 4) % 4 != 0)
        sleep_us((r >> 8) % 4000);
    switch ((r >> 20) % 8) {
    case 0: case 1: case 2:
        s1_released(sh, k, name, rl_release(l), "release");
        break;
    case 3: case 4:
        rl_lock_free(l);
        atomic_fetch_add(&sh->freed, 1);
        break;
    case 5:
        rl_watchdog_stop(l);
        atomic_fetch_add(&sh->stopped_first, 1);
        s1_released(sh, k, name, rl_release(l), "stop+release");
        break;
    default:
        st = rl_release_async(l, fixture_rec_released, &a);
        if (st != RL_OK) {
            atomic_fetch_add(&sh->unexpected, 1);
            note(&sh->err, "release_async %s: %s: %s", name,
                 rl_status_name(st), rl_last_error());
            rl_lock_free(l);
            break;
        }
        rec_wait(&a, "release_async");
        atomic_fetch_add(&sh->async_released, 1);
        s1_released(sh, k, name, a.st, "release_async");
        /* Exactly once: nothing more may come. */
        sleep_us(200);
        if (atomic_load(&a.calls) != 1) {
            atomic_fetch_add(&sh->unexpected, 1);
            note(&sh->err, "release_async %s: %d callbacks", name,
                 atomic_load(&a.calls));
        }
    }
}

static void *s1_main(void *arg)
{
    struct fixture_worker *w = arg;
    struct s1_shared *sh = w->shared;

    stress_rounds(w, sh->f, &sh->redis_errors, s1_round, s1_enough);
    return NULL;
}

static void test_releases_and_frees_racing_watchdog_renewals(void **state)
{
    struct fixture *f = *state;
    struct s1_shared shared;
    struct s1_shared *sh = &shared;
    int nt = threads_for(S1_THREADS);
    int64_t t0 = harness_now_ms();
    uint64_t renewals;

    memset(sh, 0, sizeof(*sh));
    sh->f = f;
    for (int i = 0; i < nt; i++)
        sh->seed[i] = 0x9e3779b9u ^ (uint32_t)(i * 7919 + 1);
    fixture_run_workers(nt, s1_main, sh);
    renewals = stat_renewals(f->c);
    fprintf(stderr,
            "  %d threads, %lld ms: %ld acquired (%ld refused), released "
            "RL_OK %ld / RL_ELOST %ld / RL_ENOQUORUM %ld (%ld async, %ld "
            "after rl_watchdog_stop), %ld freed, %ld lost callbacks, %llu "
            "renewals\n",
            nt, (long long)(harness_now_ms() - t0),
            atomic_load(&sh->acquired), atomic_load(&sh->acquire_failed),
            atomic_load(&sh->released_ok), atomic_load(&sh->released_lost),
            atomic_load(&sh->released_noq), atomic_load(&sh->async_released),
            atomic_load(&sh->stopped_first), atomic_load(&sh->freed),
            atomic_load(&sh->lost_calls), (unsigned long long)renewals);
    report(&sh->err);
    assert_int_equal(atomic_load(&sh->unexpected), 0);
    assert_int_equal(atomic_load(&sh->redis_errors), 0);
    assert_int_equal(atomic_load(&sh->still_on_majority), 0);
    /* The race was really run: locks taken and renewed meanwhile. */
    assert_true(atomic_load(&sh->acquired) >= S1_MIN_ACQUIRED);
    assert_true(atomic_load(&sh->released_ok) >= 1);
    assert_true(renewals >= S1_MIN_RENEWALS);
    /* Released keys are gone; freed ones are no longer renewed, so they
     * expire within a TTL: nothing is left after a few. */
    assert_true(harness_all_empty_within(
        f->r, NODES, 5 * S1_TTL_MS + 500));
}

/* ==== 2. Reentrant acquires racing releases on other threads ============ */

#define S2_RESOURCE "st2:res"
#define S2_TTL_MS 3000

enum s2_role {
    S2_ASYNC_RELEASE,  /* release_async of the last hold, re-enter at once */
    S2_HANDOFF,        /* hand the last hold to the releaser, re-enter */
    S2_RELEASER,       /* releases what S2_HANDOFF hands it */
    S2_NESTED,         /* plain contender: two holds, two releases */
};

static const enum s2_role s2_roles[] = {
    S2_ASYNC_RELEASE, S2_HANDOFF, S2_RELEASER, S2_NESTED,
    S2_ASYNC_RELEASE, S2_NESTED,
};
#define S2_THREADS (int)(sizeof(s2_roles) / sizeof(s2_roles[0]))
/* The minimum of sections a run of test 2 must do (asserted at its end). */
#define S2_MIN_SECTIONS 20

struct s2_shared {
    struct fixture *f;
    long mem_counter;             /* plain: guarded by the lock only */
    atomic_int inside;            /* holders in the section now */
    atomic_long overlaps;
    atomic_long sections;
    atomic_long not_held;         /* section with no majority in Redis */
    atomic_long expired;          /* section with validity <= 0 */
    atomic_long token_mismatch;   /* nested acquire got another lock */
    atomic_long acquire_failed;
    atomic_long unexpected;
    atomic_long redis_errors;
    atomic_long handoffs;
    atomic_int contending;        /* threads of the other roles running */
    _Atomic(rl_lock *) mailbox;   /* S2_HANDOFF -> S2_RELEASER */
    atomic_int releaser_busy;
    struct first_error err;
};

static void s2_opts(rl_acquire_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->ttl_ms = S2_TTL_MS;
    o->wait_ms = harness_scale_ms(10000);
    o->reentrant = true;
}

static void s2_section(struct s2_shared *sh, struct conns *k, rl_lock *l)
{
    long v;
    int n;

    if (atomic_fetch_add(&sh->inside, 1) != 0)
        atomic_fetch_add(&sh->overlaps, 1);
    v = sh->mem_counter;
    n = nodes_with(k, S2_RESOURCE, rl_lock_token(l));
    if (n < 0) {
        atomic_fetch_add(&sh->redis_errors, 1);
    } else if (n < QUORUM) {
        atomic_fetch_add(&sh->not_held, 1);
        note(&sh->err, "a handle from rl_acquire is held on %d nodes", n);
    }
    if (rl_lock_validity_ms(l) <= 0)
        atomic_fetch_add(&sh->expired, 1);
    sched_yield();
    sh->mem_counter = v + 1;
    atomic_fetch_add(&sh->sections, 1);
    atomic_fetch_sub(&sh->inside, 1);
}

static bool s2_acquire(struct s2_shared *sh, rl_lock **l, const char *what)
{
    rl_acquire_opts o;
    rl_status st;

    s2_opts(&o);
    *l = NULL;
    st = rl_acquire(sh->f->c, S2_RESOURCE, &o, l);
    if (st == RL_OK)
        return true;
    atomic_fetch_add(&sh->acquire_failed, 1);
    note(&sh->err, "%s: %s: %s", what, rl_status_name(st), rl_last_error());
    return false;
}

static void s2_release(struct s2_shared *sh, rl_lock *l, const char *what)
{
    rl_status st = rl_release(l);

    if (st != RL_OK) {
        atomic_fetch_add(&sh->unexpected, 1);
        note(&sh->err, "%s: %s: %s", what, rl_status_name(st),
             rl_last_error());
    }
}

static void s2_async_round(struct s2_shared *sh, struct conns *k)
{
    struct fixture_rec a = { 0 };
    rl_lock *l;
    rl_lock *again;
    rl_status st;

    if (!s2_acquire(sh, &l, "acquire"))
        return;
    s2_section(sh, k, l);
    st = rl_release_async(l, fixture_rec_released, &a);
    if (st != RL_OK) {
        atomic_fetch_add(&sh->unexpected, 1);
        note(&sh->err, "release_async: %s", rl_status_name(st));
        rl_lock_free(l);
        return;
    }
    /* l is consumed; the release of the last hold is running. */
    if (s2_acquire(sh, &again, "re-acquire after release_async")) {
        s2_section(sh, k, again);
        s2_release(sh, again, "release of the re-acquired lock");
    }
    rec_wait(&a, "release_async");
    if (a.st != RL_OK) {
        atomic_fetch_add(&sh->unexpected, 1);
        note(&sh->err, "release_async called back with %s",
             rl_status_name(a.st));
    }
}

static void s2_handoff_round(struct s2_shared *sh, struct conns *k)
{
    rl_lock *l;
    rl_lock *again;

    if (!s2_acquire(sh, &l, "acquire"))
        return;
    s2_section(sh, k, l);
    atomic_store(&sh->releaser_busy, 1);
    atomic_store(&sh->mailbox, l);
    if (s2_acquire(sh, &again, "re-acquire after a hand-off")) {
        s2_section(sh, k, again);
        s2_release(sh, again, "release of the re-acquired lock");
    }
    atomic_fetch_add(&sh->handoffs, 1);
    while (atomic_load(&sh->releaser_busy))
        sleep_us(100);
}

/* Serves the hand-offs until every other thread is done. */
static void s2_releaser(struct s2_shared *sh)
{
    while (atomic_load(&sh->contending) > 0 ||
           atomic_load(&sh->mailbox) != NULL) {
        rl_lock *l = atomic_exchange(&sh->mailbox, NULL);

        if (l == NULL) {
            sleep_us(50);
            continue;
        }
        s2_release(sh, l, "release by another thread");
        atomic_store(&sh->releaser_busy, 0);
    }
}

static void s2_nested_round(struct s2_shared *sh, struct conns *k)
{
    rl_lock *l;
    rl_lock *inner;

    if (!s2_acquire(sh, &l, "acquire"))
        return;
    if (s2_acquire(sh, &inner, "nested acquire")) {
        /* Same thread, resource and client: the same lock. */
        if (strcmp(rl_lock_token(l), rl_lock_token(inner)) != 0)
            atomic_fetch_add(&sh->token_mismatch, 1);
        s2_section(sh, k, inner);
        s2_release(sh, inner, "release of the inner hold");
    }
    s2_section(sh, k, l);
    s2_release(sh, l, "release of the outer hold");
}

/* A round of thread w's role. */
static void s2_round(struct fixture_worker *w, struct conns *k, long i)
{
    struct s2_shared *sh = w->shared;

    (void)i;
    if (s2_roles[w->id] == S2_ASYNC_RELEASE)
        s2_async_round(sh, k);
    else if (s2_roles[w->id] == S2_HANDOFF)
        s2_handoff_round(sh, k);
    else
        s2_nested_round(sh, k);
}

static bool s2_enough(struct fixture_worker *w)
{
    struct s2_shared *sh = w->shared;

    return atomic_load(&sh->sections) >= S2_MIN_SECTIONS;
}

static void *s2_main(void *arg)
{
    struct fixture_worker *w = arg;
    struct s2_shared *sh = w->shared;

    if (s2_roles[w->id] == S2_RELEASER) {
        s2_releaser(sh);
        return NULL;
    }
    stress_rounds(w, sh->f, &sh->redis_errors, s2_round, s2_enough);
    /* The releaser serves hand-offs until the last contender is done. */
    atomic_fetch_sub(&sh->contending, 1);
    return NULL;
}

static void test_reentrant_acquires_racing_releases(void **state)
{
    struct fixture *f = *state;
    struct s2_shared shared;
    struct s2_shared *sh = &shared;
    int64_t t0 = harness_now_ms();

    memset(sh, 0, sizeof(*sh));
    sh->f = f;
    for (int i = 0; i < S2_THREADS; i++) {
        if (s2_roles[i] != S2_RELEASER)
            atomic_fetch_add(&sh->contending, 1);
    }
    fixture_run_workers(S2_THREADS, s2_main, sh);
    fprintf(stderr,
            "  %d threads, %lld ms: %ld sections (%ld hand-offs), memory "
            "counter %ld, %ld overlaps, %ld not held in Redis, %ld failed "
            "acquires\n",
            S2_THREADS, (long long)(harness_now_ms() - t0),
            atomic_load(&sh->sections), atomic_load(&sh->handoffs),
            sh->mem_counter, atomic_load(&sh->overlaps),
            atomic_load(&sh->not_held), atomic_load(&sh->acquire_failed));
    report(&sh->err);
    assert_int_equal(atomic_load(&sh->overlaps), 0);
    assert_int_equal(atomic_load(&sh->not_held), 0);
    assert_int_equal(atomic_load(&sh->expired), 0);
    assert_int_equal(atomic_load(&sh->token_mismatch), 0);
    assert_int_equal(atomic_load(&sh->redis_errors), 0);
    assert_int_equal(atomic_load(&sh->unexpected), 0);
    assert_int_equal(atomic_load(&sh->acquire_failed), 0);
    assert_int_equal(sh->mem_counter, atomic_load(&sh->sections));
    assert_true(atomic_load(&sh->sections) >= S2_MIN_SECTIONS);
    /* Every hold was released: no key left. */
    assert_true(harness_key_gone_within(f->r, NODES, S2_RESOURCE, 500));
}

/* ==== 3. Client frees with operations in flight ========================= */

#define S3_HELD "st3:held"
#define S3_BLOCKERS 4
#define S3_WATCHED 6
#define S3_ASYNC 12
#define S3_TTL_MS 60

struct s3_round {
    rl_client *c;
    atomic_int ready;                 /* blockers about to block */
    rl_status blocked_st[MAX_THREADS];
    _Atomic(rl_lock *) watched[S3_WATCHED];
    atomic_int freer_go;
};

struct s3_blocker {
    struct s3_round *rd;
    int id;
};

static int s3_body(rl_lock *l, void *arg)
{
    (void)l;
    (void)arg;
    return 0;
}

/* One blocking call that cannot succeed (S3_HELD is held by another
 * client for longer than the test) and waits forever: only the client's
 * free can end it. */
static void *s3_blocker_main(void *arg)
{
    struct s3_blocker *b = arg;
    struct s3_round *rd = b->rd;
    const char *multi[] = { "st3:free-one", S3_HELD };
    rl_acquire_opts o = { 0 };
    rl_lock *l = NULL;
    rl_status st;

    o.ttl_ms = 1000;
    o.wait_ms = RL_WAIT_FOREVER;
    atomic_fetch_add(&rd->ready, 1);
    switch (b->id % 3) {
    case 0:
        st = rl_acquire(rd->c, S3_HELD, &o, &l);
        break;
    case 1:
        st = rl_acquire_multi(rd->c, multi, 2, &o, &l);
        break;
    default:
        st = rl_with_lock(rd->c, S3_HELD, &o, s3_body, NULL, NULL);
    }
    rd->blocked_st[b->id] = st;
    rl_lock_free(l);
    return NULL;
}

/* Frees half of the watched locks while the client is being freed. */
static void *s3_freer_main(void *arg)
{
    struct s3_round *rd = arg;

    while (!atomic_load(&rd->freer_go))
        sleep_us(50);
    for (int i = 0; i < S3_WATCHED; i += 2)
        rl_lock_free(atomic_exchange(&rd->watched[i], NULL));
    return NULL;
}

static bool s3_status_ok(rl_status st)
{
    return st == RL_OK || st == RL_ECANCELED || st == RL_ENOQUORUM ||
           st == RL_ENOTACQUIRED || st == RL_ELOST || st == RL_ETIMEOUT;
}

/* One round: a fresh client, everything in flight, then rl_client_free
 * from the main thread while another thread frees watched locks. */
static void s3_round(struct fixture *f, int round, uint32_t *seed)
{
    struct s3_round rd;
    struct s3_blocker b[MAX_THREADS];
    pthread_t bt[MAX_THREADS];
    pthread_t ft;
    struct fixture_rec acq[S3_ASYNC];
    struct fixture_rec ext[S3_WATCHED];
    struct fixture_rec rel[S3_WATCHED];
    bool acq_ok[S3_ASYNC] = { false };
    bool ext_ok[S3_WATCHED] = { false };
    bool rel_ok[S3_WATCHED] = { false };
    rl_lock *plain[S3_WATCHED] = { NULL };
    int nb = threads_for(S3_BLOCKERS);
    rl_config cfg;
    char name[64];

    memset(&rd, 0, sizeof(rd));
    memset(acq, 0, sizeof(acq));
    memset(ext, 0, sizeof(ext));
    memset(rel, 0, sizeof(rel));
    fixture_config(&cfg, &f->hn);
    cfg.retry_delay_ms = 5;
    cfg.retry_jitter_ms = 2;
    rd.c = fixture_client(&cfg);
    assert_non_null(rd.c);

    /* Watched locks renewed every 1-3 ms, and plain ones for the async
     * extends and releases. */
    for (int i = 0; i < S3_WATCHED; i++) {
        rl_acquire_opts o = { 0 };
        rl_lock *l = NULL;

        o.ttl_ms = (uint32_t)harness_scale_ms(S3_TTL_MS);
        o.auto_extend = true;
        o.extend_interval_ms = 1 + rnd(seed) % 3;
        snprintf(name, sizeof(name), "st3:w:%d:%d", round, i);
        if (rl_acquire(rd.c, name, &o, &l) == RL_OK)
            atomic_store(&rd.watched[i], l);
        o.auto_extend = false;
        o.extend_interval_ms = 0;
        o.ttl_ms = 2000;
        snprintf(name, sizeof(name), "st3:p:%d:%d", round, i);
        if (rl_acquire(rd.c, name, &o, &l) == RL_OK)
            plain[i] = l;
    }
    for (int i = 0; i < nb; i++) {
        b[i].rd = &rd;
        b[i].id = i;
        assert_int_equal(
            pthread_create(&bt[i], NULL, s3_blocker_main, &b[i]), 0);
    }
    assert_int_equal(pthread_create(&ft, NULL, s3_freer_main, &rd), 0);
    for (int i = 0; i < S3_ASYNC; i++) {
        rl_acquire_opts o = { 0 };

        o.ttl_ms = 1000;
        o.wait_ms = i % 2 == 0 ? RL_WAIT_FOREVER : 0;
        snprintf(name, sizeof(name), "st3:a:%d:%d", round, i);
        acq_ok[i] = rl_acquire_async(rd.c, i % 3 == 0 ? S3_HELD : name, &o,
                                     fixture_rec_acquired, &acq[i]) == RL_OK;
    }
    for (int i = 0; i < S3_WATCHED; i++) {
        if (plain[i] == NULL)
            continue;
        if (i % 2 == 0) {
            ext_ok[i] = rl_extend_async(plain[i], 0, fixture_rec_extended,
                                        &ext[i]) == RL_OK;
        } else {
            rel_ok[i] = rl_release_async(plain[i], fixture_rec_released,
                                         &rel[i]) == RL_OK;
            if (rel_ok[i])
                plain[i] = NULL;
        }
    }
    /* The blockers are inside their calls once they have said so and a
     * moment (scaled: valgrind runs one thread at a time) has passed. */
    while (atomic_load(&rd.ready) < nb)
        sleep_us(100);
    sleep_us((uint32_t)(harness_scale_ms(10) * 1000 + rnd(seed) % 20000));
    atomic_store(&rd.freer_go, 1);
    rl_client_free(rd.c);

    /* Callbacks ran before rl_client_free returned, exactly once. */
    for (int i = 0; i < S3_ASYNC; i++) {
        if (!acq_ok[i])
            continue;
        assert_int_equal(atomic_load(&acq[i].calls), 1);
        assert_true(s3_status_ok(acq[i].st));
        assert_true((acq[i].st == RL_OK) == (acq[i].lock != NULL));
        rl_lock_free(acq[i].lock);
    }
    for (int i = 0; i < S3_WATCHED; i++) {
        if (ext_ok[i]) {
            assert_int_equal(atomic_load(&ext[i].calls), 1);
            assert_true(s3_status_ok(ext[i].st));
        }
        if (rel_ok[i]) {
            assert_int_equal(atomic_load(&rel[i].calls), 1);
            assert_true(s3_status_ok(rel[i].st));
        }
    }
    for (int i = 0; i < nb; i++) {
        pthread_join(bt[i], NULL);
        if (rd.blocked_st[i] != RL_ECANCELED)
            fprintf(stderr, "  round %d blocker %d: %s\n", round, i,
                    rl_status_name(rd.blocked_st[i]));
        assert_int_equal(rd.blocked_st[i], RL_ECANCELED);
    }
    pthread_join(ft, NULL);
    /* Handles outlive their client and are freed afterwards. */
    for (int i = 0; i < S3_WATCHED; i++) {
        rl_lock_free(atomic_exchange(&rd.watched[i], NULL));
        rl_lock_free(plain[i]);
    }
}

/* Keys matching pattern on every node: gone within ms (scaled)? */
static bool keys_gone_within(const struct fixture *f, const char *pattern,
                             int64_t ms)
{
    int64_t deadline = harness_now_ms() + harness_scale_ms(ms);
    long long n;

    do {
        n = 0;
        for (int i = 0; i < NODES; i++)
            n += harness_count_keys(&f->r[i], pattern);
        if (n == 0)
            return true;
        harness_sleep_ms(10);
    } while (harness_now_ms() < deadline);
    fprintf(stderr, "  %lld keys '%s' left\n", n, pattern);
    return false;
}

static void test_client_free_with_operations_in_flight(void **state)
{
    struct fixture *f = *state;
    rl_config cfg;
    rl_acquire_opts o = { 0 };
    rl_client *holder;
    rl_lock *held = NULL;
    uint32_t seed = 0x2545f491u;
    int64_t end = harness_now_ms() + stress_ms();
    int rounds = 0;

    /* Another client holds S3_HELD for the whole test. */
    fixture_config(&cfg, &f->hn);
    holder = fixture_client(&cfg);
    assert_non_null(holder);
    o.ttl_ms = 60000;
    assert_int_equal(rl_acquire(holder, S3_HELD, &o, &held), RL_OK);
    do {
        s3_round(f, rounds, &seed);
        rounds++;
    } while (harness_now_ms() < end && rounds < 50);
    fprintf(stderr, "  %d rounds of create / load / free\n", rounds);
    assert_int_equal(rl_release(held), RL_OK);
    rl_client_free(holder);
    /* No watchdog outlived its client: the watched keys expire. */
    assert_true(keys_gone_within(f, "st3:w:*", 5 * S3_TTL_MS + 500));
}

/* ---- rl_client_free from inside a callback, external loop -------------- */

enum s3_kind { FREE_IN_ACQUIRE, FREE_IN_EXTEND, FREE_IN_RELEASE };

struct s3_ext {
    rl_client *c;
    enum s3_kind kind;
    bool freed;              /* the client was freed in a callback */
    bool accepted;           /* ... and the free was accepted */
    struct fixture_rec acq[S3_ASYNC];
    bool acq_ok[S3_ASYNC];
    struct fixture_rec ext;
    bool ext_ok;
    struct fixture_rec rel;
    bool rel_ok;
    atomic_int total;        /* callbacks of all kinds */
};

static struct s3_ext *g_ext;

/* rl_client_free inside a callback is refused (it would free the stack
 * below us): it must return at once, say so, and leave the client working;
 * the test frees it after the loop. */
static bool free_from_callback(rl_client *c)
{
    rl_client_free(c);
    assert_non_null(strstr(rl_last_error(), "callback"));
    return false;
}

static void s3_ext_maybe_free(struct s3_ext *x, enum s3_kind kind)
{
    if (x->kind != kind || x->freed)
        return;
    x->freed = true;
    x->accepted = free_from_callback(x->c);
}

static void s3_ext_acquire_cb(rl_client *c, rl_status st, rl_lock *lock,
                              void *privdata)
{
    fixture_rec_acquired(c, st, lock, privdata);
    atomic_fetch_add(&g_ext->total, 1);
    s3_ext_maybe_free(g_ext, FREE_IN_ACQUIRE);
}

static void s3_ext_extend_cb(rl_lock *l, rl_status st, void *privdata)
{
    fixture_rec_extended(l, st, privdata);
    atomic_fetch_add(&g_ext->total, 1);
    s3_ext_maybe_free(g_ext, FREE_IN_EXTEND);
}

static void s3_ext_release_cb(rl_client *c, rl_status st, void *privdata)
{
    fixture_rec_released(c, st, privdata);
    atomic_fetch_add(&g_ext->total, 1);
    s3_ext_maybe_free(g_ext, FREE_IN_RELEASE);
}

static void s3_ext_cb_for_setup(rl_client *c, rl_status st, rl_lock *lock,
                                void *privdata)
{
    (void)c;
    (void)st;
    *(rl_lock **)privdata = lock;
}

static void run_until(struct ev_loop *loop, rl_lock **slot, int64_t ms)
{
    int64_t deadline = harness_now_ms() + harness_scale_ms(ms);

    while (*slot == NULL && harness_now_ms() < deadline) {
        ev_run(loop, EVRUN_NOWAIT);
        sleep_us(200);
    }
}

static void free_in_callback_round(struct fixture *f, enum s3_kind kind, int round)
{
    struct ev_loop *loop = ev_loop_new(0);
    struct s3_ext *x = calloc(1, sizeof(*x));
    rl_lock *target_ext = NULL;
    rl_lock *target_rel = NULL;
    rl_acquire_opts o = { 0 };
    rl_config cfg;
    int accepted = 0;
    int64_t deadline;
    char name[64];

    assert_non_null(loop);
    assert_non_null(x);
    g_ext = x;
    x->kind = kind;
    fixture_config(&cfg, &f->hn);
    cfg.loop = loop;
    x->c = fixture_client(&cfg);
    assert_non_null(x->c);
    o.ttl_ms = 5000;
    snprintf(name, sizeof(name), "st3x:e:%d", round);
    assert_int_equal(rl_acquire_async(x->c, name, &o, s3_ext_cb_for_setup,
                                      &target_ext), RL_OK);
    run_until(loop, &target_ext, 2000);
    snprintf(name, sizeof(name), "st3x:r:%d", round);
    assert_int_equal(rl_acquire_async(x->c, name, &o, s3_ext_cb_for_setup,
                                      &target_rel), RL_OK);
    run_until(loop, &target_rel, 2000);
    assert_non_null(target_ext);
    assert_non_null(target_rel);

    /* Everything in flight at once; the first callback of `kind` frees
     * the client. */
    for (int i = 0; i < S3_ASYNC; i++) {
        snprintf(name, sizeof(name), "st3x:a:%d:%d", round, i);
        x->acq_ok[i] = rl_acquire_async(x->c, name, &o, s3_ext_acquire_cb,
                                        &x->acq[i]) == RL_OK;
        accepted += x->acq_ok[i];
    }
    x->ext_ok = rl_extend_async(target_ext, 0, s3_ext_extend_cb,
                                &x->ext) == RL_OK;
    x->rel_ok = rl_release_async(target_rel, s3_ext_release_cb,
                                 &x->rel) == RL_OK;
    accepted += x->ext_ok + x->rel_ok;
    assert_true(x->ext_ok);
    assert_true(x->rel_ok);

    deadline = harness_now_ms() + harness_scale_ms(3000);
    while (atomic_load(&x->total) < accepted &&
           harness_now_ms() < deadline) {
        ev_run(loop, EVRUN_NOWAIT);
        sleep_us(200);
    }
    if (!x->freed || !x->accepted)
        rl_client_free(x->c);
    x->c = NULL;
    /* Whatever remains pending comes now, and nothing more after. */
    for (int i = 0; i < 20; i++) {
        ev_run(loop, EVRUN_NOWAIT);
        sleep_us(500);
    }
    fprintf(stderr, "  free in %s callback: %d accepted, %d callbacks\n",
            kind == FREE_IN_ACQUIRE ? "an acquire"
            : kind == FREE_IN_EXTEND ? "an extend" : "a release",
            accepted, atomic_load(&x->total));
    assert_true(x->freed);
    assert_int_equal(atomic_load(&x->total), accepted);
    for (int i = 0; i < S3_ASYNC; i++) {
        if (!x->acq_ok[i])
            continue;
        assert_int_equal(atomic_load(&x->acq[i].calls), 1);
        assert_true(s3_status_ok(x->acq[i].st));
        rl_lock_free(x->acq[i].lock);
    }
    assert_int_equal(atomic_load(&x->ext.calls), 1);
    assert_true(s3_status_ok(x->ext.st));
    assert_int_equal(atomic_load(&x->rel.calls), 1);
    assert_true(s3_status_ok(x->rel.st));
    rl_lock_free(target_ext);
    /* The freed client left nothing on the loop that keeps it alive. */
    assert_int_equal(ev_run(loop, EVRUN_NOWAIT), 0);
    ev_loop_destroy(loop);
    g_ext = NULL;
    free(x);
}

static void test_client_free_inside_callbacks_external_loop(void **state)
{
    struct fixture *f = *state;
    int reps = under_valgrind() ? 1 : 5;

    for (int i = 0; i < reps; i++) {
        free_in_callback_round(f, FREE_IN_ACQUIRE, 3 * i);
        free_in_callback_round(f, FREE_IN_EXTEND, 3 * i + 1);
        free_in_callback_round(f, FREE_IN_RELEASE, 3 * i + 2);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_releases_and_frees_racing_watchdog_renewals),
        cmocka_unit_test(test_reentrant_acquires_racing_releases),
        FIXTURE_TEST(test_client_free_with_operations_in_flight, &servers),
        FIXTURE_TEST(test_client_free_inside_callbacks_external_loop, &servers),
    };

    return FIXTURE_RUN("stress", &with_client, tests);
}
