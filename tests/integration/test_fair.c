/* SPDX-License-Identifier: BSD-3-Clause */
/* test_fair.c -- the fair queue (docs/fair-queue.md) on three real
 * redis-server nodes: the scripts' rules run as the library sends them
 * (only the head is granted, in the same step as the SET; the fast path
 * only where nobody queues; lapsed entries are purged wherever they
 * stand; a rollback keeps the entry, a release and a leave remove it and
 * announce the next head), the library's fair acquire waits behind a
 * queued entry, leaves no entry when it gives up, and refuses what it
 * does not support, and rl_resource_queue reports what a majority
 * holds; a semaphore (limit) queues at its base key and hands its
 * permits out in queue order, never to more than limit holders. The CLI tests (tests/cli/test_cli_fair.py) check the
 * order across processes. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"
#include "queue.h"
#include "scripts.h"

#define N 3

static const struct fixture_opts fx = { .nodes = N };

/* EVAL of script id over key with the arguments (NULL-terminated) on
 * node i. */
static redisReply *eval(struct fixture *f, int i, enum script_id id,
                        const char *key, ...)
{
    const char *argv[12] = {"EVAL", script_get(id)->source, "1", key};
    int argc = 4;
    const char *a;
    va_list ap;

    va_start(ap, key);
    while ((a = va_arg(ap, const char *)) != NULL && argc < 12)
        argv[argc++] = a;
    va_end(ap);
    return harness_cmd_argv(&f->r[i], argc, argv);
}

/* fair-acquire's first element (1 granted, 0 refused), -1 on error. */
static long long granted(redisReply *r)
{
    long long g = r != NULL && r->type == REDIS_REPLY_ARRAY &&
                          r->elements >= 4 &&
                          r->element[0]->type == REDIS_REPLY_INTEGER
                      ? r->element[0]->integer
                      : -1;

    if (r != NULL)
        freeReplyObject(r);
    return g;
}

/* Node 0's fair-acquire of key by token (PX 5000, its entry's 10000) with
 * ticket as its score ("": a first attempt): 1 granted, 0 refused. */
static long long fair_try(struct fixture *f, const char *key,
                          const char *token, const char *ticket)
{
    return granted(eval(f, 0, SCRIPT_FAIR_ACQUIRE, key, token, "5000",
                        "10000", ticket, ticket, NULL));
}

/* Node 0's fair-release of key by token: its integer reply. */
static long long fair_release(struct fixture *f, const char *key,
                              const char *token)
{
    return harness_int(eval(f, 0, SCRIPT_FAIR_RELEASE, key, token, NULL), -9);
}

/* token registers in key's queue on node 0 with ticket (its entry lives
 * 60 s: longer than any entry a test lets lapse, at every scale). */
static void queue_enter(struct fixture *f, const char *key,
                        const char *token, const char *ticket)
{
    harness_int(eval(f, 0, SCRIPT_QUEUE_ENTER, key, token, "60000", ticket,
                     ticket, NULL), 0);
}

/* K:qt on node i (0 when absent). */
static long long counter(struct fixture *f, int i, const char *key)
{
    char k[64];
    char *v;
    long long n;

    snprintf(k, sizeof(k), "redlock:qt:%s", key);
    v = harness_get(&f->r[i], k);
    n = v != NULL ? atoll(v) : 0;
    free(v);
    return n;
}

static long long zcard(struct fixture *f, int i, const char *key)
{
    return harness_int(harness_cmd(&f->r[i], "ZCARD %s", key), -1);
}

/* The key is free but kept for the queue's entitled waiters (scripts.h
 * QUEUE_RESERVED): no plain SET NX takes it. */
static bool reserved(struct fixture *f, int i, const char *key)
{
    return harness_key_holds(&f->r[i], key, QUEUE_RESERVED);
}

/* A plain client's SET NX PX of key on node i is refused. */
static bool set_nx_refused(struct fixture *f, int i, const char *key)
{
    redisReply *r = harness_cmd(&f->r[i], "SET %s plain NX PX 5000", key);
    bool nil = r != NULL && r->type == REDIS_REPLY_NIL;

    if (r != NULL)
        freeReplyObject(r);
    return nil;
}

static void test_only_the_head_is_granted(void **state)
{
    struct fixture *f = *state;

    /* a registers first (ticket 1), b second (ticket 2). */
    assert_int_equal(fair_try(f, "h", "a", "1"), 1);
    assert_int_equal(fair_release(f, "h", "a"), 1);
    queue_enter(f, "h", "a", "1");
    queue_enter(f, "h", "b", "2");
    /* The lock is free, but b is not the head: refused; the key is kept
     * for the queue, so a plain SET NX is refused too. */
    assert_int_equal(fair_try(f, "h", "b", "2"), 0);
    assert_true(reserved(f, 0, "h"));
    assert_true(set_nx_refused(f, 0, "h"));
    /* A newcomer's fast path is refused while anybody queues. */
    assert_int_equal(fair_try(f, "h", "c", ""), 0);
    /* The head is granted; its entry stays while it holds. */
    assert_int_equal(fair_try(f, "h", "a", "1"), 1);
    assert_true(harness_key_holds(&f->r[0], "h", "a"));
    assert_int_equal(zcard(f, 0, "redlock:q:h"), 2);
    /* A rollback keeps a's place; a release gives it up. */
    assert_int_equal(harness_int(eval(f, 0, SCRIPT_FAIR_ROLLBACK, "h", "a",
                                      NULL), -9),
                     1);
    assert_int_equal(zcard(f, 0, "redlock:q:h"), 2);
    assert_int_equal(fair_try(f, "h", "a", "1"), 1);
    assert_int_equal(fair_release(f, "h", "a"), 1);
    assert_int_equal(zcard(f, 0, "redlock:q:h"), 1);
    assert_int_equal(fair_try(f, "h", "b", "2"), 1);
    /* Plain clients yield to the queue: the key stays reserved while
     * anybody waits, and is theirs to take once nobody does. */
    assert_int_equal(fair_release(f, "h", "b"), 1);
    queue_enter(f, "h", "d", "3");
    assert_true(set_nx_refused(f, 0, "h"));
    assert_int_equal(harness_int(eval(f, 0, SCRIPT_QUEUE_LEAVE, "h", "d",
                                      NULL), -9),
                     1);
    assert_true(harness_key_absent(&f->r[0], "h"));
    assert_true(harness_ok(harness_cmd(&f->r[0], "SET h plain NX PX 5000")));
}

/* fair-acquire's counter element (qt), -1 on error. */
static long long counter_read(redisReply *r)
{
    long long qt = r != NULL && r->type == REDIS_REPLY_ARRAY &&
                           r->elements >= 4 &&
                           r->element[1]->type == REDIS_REPLY_STRING
                       ? atoll(r->element[1]->str)
                       : -1;

    if (r != NULL)
        freeReplyObject(r);
    return qt;
}

/* Newcomers refused one after another read increasing counters, before
 * any of them registered (a burst is served in arrival order, not in
 * token order); a counter with no queue lapses with an entry. */
static void test_refused_first_attempts_read_increasing_counters(
    void **state)
{
    struct fixture *f = *state;
    long long pttl;

    assert_true(harness_ok(harness_cmd(&f->r[0], "SET fn plain PX 60000")));
    assert_int_equal(counter_read(eval(f, 0, SCRIPT_FAIR_ACQUIRE, "fn", "a",
                                       "5000", "1500", "", "", NULL)),
                     0);
    assert_int_equal(counter_read(eval(f, 0, SCRIPT_FAIR_ACQUIRE, "fn", "b",
                                       "5000", "1500", "", "", NULL)),
                     1);
    assert_int_equal(counter(f, 0, "fn"), 2);
    pttl = harness_int(harness_cmd(&f->r[0], "PTTL redlock:qt:fn"), -9);
    assert_true(pttl > 0 && pttl <= 1500);
    /* b registers with its ticket (2): a, taking 1, still goes first. */
    queue_enter(f, "fn", "b", "2");
    queue_enter(f, "fn", "a", "1");
    assert_int_equal(harness_int(harness_cmd(&f->r[0],
                                             "ZRANK redlock:q:fn a"), -1),
                     0);
    /* A granted first attempt counts nothing. */
    assert_true(harness_int(harness_cmd(&f->r[0], "DEL fn redlock:q:fn "
                                        "redlock:qx:fn redlock:qt:fn "
                                        "redlock:qw:fn redlock:qm:fn"),
                            -1) > 0);
    assert_int_equal(harness_int(eval(f, 0, SCRIPT_FAIR_ACQUIRE, "fn", "c",
                                      "5000", "1500", "", "", NULL), -9),
                     1);
    assert_int_equal(counter(f, 0, "fn"), 0);
}

/* Where nobody queues, a first attempt (no score) is a bare SET NX with
 * an integer reply and a release a compare-and-delete: neither touches
 * a queue key (a refused one counts itself: the counter alone, which
 * lapses). With an entry queued, the same call takes the queue's path
 * (its array reply) and is refused though the lock is free. */
static void test_the_fast_path_is_a_set_nx_where_nobody_queues(void **state)
{
    struct fixture *f = *state;
    static const char *const queue_keys[] = {"redlock:q:fp", "redlock:qx:fp",
                                             "redlock:qt:fp"};
    size_t i;

    assert_int_equal(harness_int(eval(f, 0, SCRIPT_FAIR_ACQUIRE, "fp", "a",
                                      "5000", "10000", "", "", NULL), -9),
                     1);
    assert_true(harness_key_holds(&f->r[0], "fp", "a"));
    assert_int_equal(fair_try(f, "fp", "b", ""), 0);
    assert_int_equal(harness_int(harness_cmd(&f->r[0], "DEL redlock:qt:fp"),
                                 -1),
                     1);
    assert_int_equal(fair_release(f, "fp", "b"), -1);
    assert_true(harness_key_holds(&f->r[0], "fp", "a"));
    assert_int_equal(fair_release(f, "fp", "a"), 1);
    assert_true(harness_key_absent(&f->r[0], "fp"));
    for (i = 0; i < sizeof(queue_keys) / sizeof(queue_keys[0]); i++)
        assert_true(harness_key_absent(&f->r[0], queue_keys[i]));
    queue_enter(f, "fp", "w", "1");
    assert_int_equal(fair_try(f, "fp", "b", ""), 0);
    assert_true(reserved(f, 0, "fp"));
}

/* Wait until node i's clock passes ms (its TIME, in ms). */
static void until_server_ms(struct fixture *f, int i, long long ms)
{
    int64_t until = harness_now_ms() + harness_scale_ms(5000);
    redisReply *r;
    long long now;

    do {
        r = harness_cmd(&f->r[i], "TIME");
        assert_non_null(r);
        now = atoll(r->element[0]->str) * 1000 +
              atoll(r->element[1]->str) / 1000;
        freeReplyObject(r);
        if (now > ms)
            return;
        harness_sleep_ms(5);
    } while (harness_now_ms() < until);
    fail_msg("node %d: TIME stayed below %lld", i, ms);
}

/* The expiry of token's entry in key's queue on node i (server ms). */
static long long entry_expiry(struct fixture *f, int i, const char *key,
                              const char *token)
{
    redisReply *r =
        harness_cmd(&f->r[i], "ZSCORE redlock:qx:%s %s", key, token);
    long long ms;

    assert_true(r != NULL && r->type == REDIS_REPLY_STRING);
    ms = atoll(r->str);
    freeReplyObject(r);
    return ms;
}

/* Calls of command cmd node i has run (INFO commandstats), -1 on
 * error. */
static long long calls(struct fixture *f, int i, const char *cmd)
{
    char field[64], buf[256];
    const char *c;

    snprintf(field, sizeof(field), "cmdstat_%s", cmd);
    if (harness_info_field(&f->r[i], "commandstats", field, buf,
                           sizeof(buf)) != 0)
        return 0; /* never called */
    c = strstr(buf, "calls=");
    return c != NULL ? atoll(c + 6) : -1;
}

/* An uncontended fair acquire costs what a plain one does: on every node
 * its one attempt is plain acquire's SET NX PX, no script (before the
 * queue reserved the free key, it was fair-acquire's EVALSHA, about 2.6
 * us more per node: docs/fair-queue.md 2.0). */
static void test_an_uncontended_fair_acquire_is_a_set_nx(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = {.ttl_ms = 5000, .fair = 1};
    long long set0[N], eval0[N];
    rl_lock *l = NULL;
    int i;

    /* Warm: the client's connections and script loads are done. A call
     * returns once a majority answered: the counts are read once its
     * acquire and release have landed on every node (each node runs a
     * client's commands in order: the key there, then gone). */
    assert_int_equal(rl_acquire(f->c, "un0", &o, &l), RL_OK);
    for (i = 0; i < N; i++)
        assert_true(harness_key_holds(&f->r[i], "un0", rl_lock_token(l)));
    assert_int_equal(rl_release(l), RL_OK);
    for (i = 0; i < N; i++) {
        assert_true(harness_key_absent(&f->r[i], "un0"));
        set0[i] = calls(f, i, "set");
        eval0[i] = calls(f, i, "evalsha");
    }
    assert_int_equal(rl_acquire(f->c, "un1", &o, &l), RL_OK);
    for (i = 0; i < N; i++) {
        assert_true(harness_key_holds(&f->r[i], "un1", rl_lock_token(l)));
        assert_int_equal(calls(f, i, "set"), set0[i] + 1);
        assert_int_equal(calls(f, i, "evalsha"), eval0[i]);
    }
    assert_int_equal(rl_release(l), RL_OK);
    for (i = 0; i < N; i++)
        assert_true(harness_key_absent(&f->r[i], "un1"));
}

/* The reservation lives as long as the queue's entries: a dead waiter's
 * lapses with its entry (nothing runs on the queue to remove it), and a
 * queue that empties gives the key back at once. */
static void test_the_reservation_lives_as_long_as_the_queue(void **state)
{
    struct fixture *f = *state;
    long long pttl;

    harness_int(eval(f, 0, SCRIPT_QUEUE_ENTER, "rv", "dead", "300", "1",
                     "1", NULL), 0);
    assert_true(reserved(f, 0, "rv"));
    pttl = harness_pttl(&f->r[0], "rv");
    assert_true(pttl > 0 && pttl <= 300);
    assert_true(harness_key_absent(&f->r[0], "rv"));
    assert_true(harness_key_absent(&f->r[0], "redlock:q:rv"));
    assert_false(set_nx_refused(f, 0, "rv"));
    assert_int_equal(harness_int(harness_cmd(&f->r[0], "DEL rv"), -1), 1);
    harness_int(eval(f, 0, SCRIPT_QUEUE_ENTER, "rv", "w", "60000", "2",
                     "2", NULL), 0);
    assert_true(reserved(f, 0, "rv"));
    assert_int_equal(harness_int(eval(f, 0, SCRIPT_QUEUE_LEAVE, "rv", "w",
                                      NULL), -9),
                     1);
    assert_int_equal(harness_int(harness_cmd(&f->r[0], "EXISTS rv"), -1), 0);
}

/* Each attempt of one acquisition has its own token (token.h): its
 * entry is the acquisition's, so a retry after a split vote is still the
 * head, and its release takes the one entry away. With the entry named by
 * the attempt's token, the retry queued a second entry behind the first
 * and waited for it to lapse. */
static void test_every_attempt_of_an_acquisition_is_one_entry(void **state)
{
    struct fixture *f = *state;
    const char *first = "0123456789abcdef0123456789abcdef00000001.me";
    const char *retry = "0123456789abcdef0123456789abcdef00000002.me";
    const char *other = "fedcba9876543210fedcba9876543210000000a1";

    queue_enter(f, "m", first, "1");
    queue_enter(f, "m", other, "2");
    assert_int_equal(harness_int(eval(f, 0, SCRIPT_FAIR_ROLLBACK, "m",
                                      first, NULL), -9),
                     0);
    assert_int_equal(fair_try(f, "m", retry, "1"), 1);
    assert_true(harness_key_holds(&f->r[0], "m", retry));
    assert_int_equal(zcard(f, 0, "redlock:q:m"), 2);
    assert_int_equal(fair_release(f, "m", retry), 1);
    assert_int_equal(zcard(f, 0, "redlock:q:m"), 1);
    assert_int_equal(fair_try(f, "m", other, "2"), 1);
}

static void test_a_lapsed_entry_is_purged_wherever_it_stands(void **state)
{
    struct fixture *f = *state;
    char lapse[24];

    /* a (head) and m (middle) lapse soon, but not before the other two
     * entered (a loaded machine took over 50 ms for the four calls); z
     * lives on. */
    snprintf(lapse, sizeof(lapse), "%lld",
             (long long)harness_scale_ms(1000));
    harness_int(eval(f, 0, SCRIPT_QUEUE_ENTER, "p", "a", lapse, "1", "1",
                     NULL), 0);
    harness_int(eval(f, 0, SCRIPT_QUEUE_ENTER, "p", "m", lapse, "3", "3",
                     NULL), 0);
    queue_enter(f, "p", "b", "2");
    queue_enter(f, "p", "z", "4");
    assert_int_equal(zcard(f, 0, "redlock:q:p"), 4);
    until_server_ms(f, 0, entry_expiry(f, 0, "p", "m"));
    /* b's refresh purges both, the middle one too, and b heads; they
     * leave the writers' set and the records too. */
    queue_enter(f, "p", "b", "2");
    assert_int_equal(zcard(f, 0, "redlock:q:p"), 2);
    assert_int_equal(zcard(f, 0, "redlock:qw:p"), 2);
    assert_int_equal(harness_int(harness_cmd(&f->r[0], "HLEN redlock:qm:p"),
                                 -1),
                     2);
    assert_int_equal(fair_try(f, "p", "b", "2"), 1);
    /* The counter holds the largest ticket entered. */
    assert_int_equal(counter(f, 0, "p"), 4);
}

static void test_a_fair_acquire_waits_behind_the_head_and_leaves(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = {0};
    rl_lock *l = NULL;
    int i;

    /* A foreign waiter heads the queue on every node for 60 s. */
    for (i = 0; i < N; i++)
        harness_int(eval(f, i, SCRIPT_QUEUE_ENTER, "w", "other", "60000",
                         "1", "1", NULL), 0);
    o.ttl_ms = 5000;
    o.fair = 1;
    o.wait_ms = harness_scale_ms(800);
    assert_int_equal(rl_acquire(f->c, "w", &o, &l), RL_ENOTACQUIRED);
    assert_null(l);
    assert_true(reserved(f, 0, "w"));
    /* It registered behind it, and left every node before returning. */
    for (i = 0; i < N; i++) {
        assert_int_equal(zcard(f, i, "redlock:q:w"), 1);
        assert_int_equal(counter(f, i, "w"), 2);
    }
    /* A plain acquire yields to the queue as well. */
    o.fair = 0;
    o.wait_ms = 0;
    assert_int_equal(rl_acquire(f->c, "w", &o, &l), RL_ENOTACQUIRED);
    /* Once the head leaves, a fair acquire is granted. */
    for (i = 0; i < N; i++)
        harness_int(eval(f, i, SCRIPT_QUEUE_LEAVE, "w", "other", NULL), 0);
    o.fair = 1;
    assert_int_equal(rl_acquire(f->c, "w", &o, &l), RL_OK);
    assert_int_equal(rl_release(l), RL_OK);
    for (i = 0; i < N; i++)
        assert_int_equal(zcard(f, i, "redlock:q:w"), 0);
}

static void test_the_queue_a_majority_holds_is_reported_in_order(void **state)
{
    struct fixture *f = *state;
    rl_queue_entry q[4];
    char high[24];
    size_t n = 9, minority = 9;
    int i;

    /* priority 3, ticket 7: (255 - 3) << 44 | 7 (src/queue.c) */
    snprintf(high, sizeof(high), "%llu",
             (unsigned long long)((UINT64_C(252) << 44) + 7));
    for (i = 0; i < N; i++) {
        harness_int(eval(f, i, SCRIPT_QUEUE_ENTER, "v", "low.me", "60000",
                         "4486007441326081", "1", NULL), 0);
        harness_int(eval(f, i, SCRIPT_QUEUE_ENTER, "v", "high", "60000",
                         high, "7", NULL), 0);
    }
    /* On one node only: not the majority's. */
    harness_int(eval(f, 0, SCRIPT_QUEUE_ENTER, "v", "alone", "60000", "5",
                     "5", NULL), 0);
    assert_int_equal(rl_resource_queue(f->c, "v", q, 4, &n, &minority),
                     RL_OK);
    assert_int_equal(n, 2);
    assert_int_equal(minority, 1);
    assert_string_equal(q[0].token, "high");
    assert_int_equal(q[0].priority, 3);
    assert_int_equal(q[0].ticket, 7);
    assert_int_equal(q[0].nodes, N);
    assert_true(q[0].expires_in_ms > 0 && q[0].expires_in_ms <= 60000);
    assert_string_equal(q[1].token, "low.me");
    assert_string_equal(q[1].owner, "");
    assert_int_equal(q[1].priority, 0);
    assert_int_equal(q[1].ticket, 1);
    /* cap 1: the head only; NULL out with cap 0 counts nothing. */
    assert_int_equal(rl_resource_queue(f->c, "v", q, 1, &n, NULL), RL_OK);
    assert_int_equal(n, 1);
    assert_string_equal(q[0].token, "high");
    assert_int_equal(rl_resource_queue(f->c, "v", NULL, 1, &n, NULL),
                     RL_EINVAL);
    assert_int_equal(rl_resource_queue(f->c, "redlock:q:v", q, 1, &n, NULL),
                     RL_EINVAL);
}

/* More entries than fit a short reply (a node delivered 16 elements of
 * an array, 5 entries of queue-inspect): all of them are reported. */
static void test_a_long_queue_is_reported_whole(void **state)
{
    struct fixture *f = *state;
    rl_queue_entry q[RL_QUEUE_READ_MAX];
    char tok[16], score[16];
    size_t n = 0;
    int i, k;

    for (k = 1; k <= 20; k++) {
        snprintf(tok, sizeof(tok), "e%02d", k);
        snprintf(score, sizeof(score), "%d", k);
        for (i = 0; i < N; i++)
            harness_int(eval(f, i, SCRIPT_QUEUE_ENTER, "lq", tok, "60000",
                             score, score, k % 2 ? "s" : "x", NULL), 0);
    }
    assert_int_equal(rl_resource_queue(f->c, "lq", q, RL_QUEUE_READ_MAX, &n,
                                       NULL),
                     RL_OK);
    assert_int_equal(n, 20);
    assert_string_equal(q[19].token, "e20");
    assert_int_equal(q[18].mode, RL_MODE_SHARED);
    assert_int_equal(q[19].mode, RL_MODE_EXCLUSIVE);
}

/* Which of a and b returned first (waits up to harness_scale_ms(ms)), or
 * NULL. */
static struct fixture_acquirer *first_done(struct fixture_acquirer *a,
                                           struct fixture_acquirer *b,
                                           int64_t ms)
{
    int64_t deadline = harness_now_ms() + harness_scale_ms(ms);

    do {
        if (atomic_load(&a->done))
            return a;
        if (atomic_load(&b->done))
            return b;
        harness_sleep_ms(5);
    } while (harness_now_ms() < deadline);
    return NULL;
}

static void expect_queue_totals(rl_client *c, uint64_t registrations,
                                uint64_t waiters, uint64_t granted,
                                uint64_t leaves)
{
    rl_totals t;

    assert_int_equal(rl_client_totals(c, &t), RL_OK);
    assert_int_equal(t.queue_registrations, registrations);
    assert_int_equal(t.queue_waiters, waiters);
    assert_int_equal(t.queue_wait_count, granted);
    assert_int_equal(t.queue_leaves, leaves);
}

/* A fixed amount of fair work, counted exactly: a fair holder granted at
 * once (no registration), two fair waiters that register behind it and
 * are granted in turn, one that registers and times out, one that
 * registers and is cancelled. */
static void test_the_metrics_count_registrations_waits_and_leaves(
    void **state)
{
    struct fixture *f = *state;
    static const char *const res[] = {"qm"};
    struct fixture_acquirer w[4] = {{0}};
    struct fixture_acquirer *first, *second;
    const int64_t give_up_ms = harness_scale_ms(400);
    int64_t t0 = harness_now_ms();
    rl_acquire_opts o = {0};
    rl_stats *s = malloc(sizeof(*s));
    char *text = malloc(64 * 1024);
    size_t needed;
    rl_totals t;
    int i;

    assert_non_null(s);
    assert_non_null(text);
    o.ttl_ms = 30000;
    o.fair = 1;
    assert_int_equal(rl_acquire(f->c, "qm", &o, &f->l), RL_OK);
    expect_queue_totals(f->c, 0, 0, 0, 0);
    for (i = 0; i < 4; i++) {
        w[i].c = f->c;
        w[i].resources = res;
        w[i].count = 1;
        w[i].o = o;
        w[i].o.wait_ms = i == 2 ? (uint32_t)give_up_ms
                                : (uint32_t)harness_scale_ms(30000);
    }
    w[3].o.cancel = rl_cancel_new();
    assert_non_null(w[3].o.cancel);
    for (i = 0; i < 3; i++) {
        fixture_acquirer_start(&w[i]);
        /* One at a time: each is refused and registers. */
        assert_true(FIXTURE_WAIT_TOTAL(f->c, queue_registrations,
                                       (uint64_t)i + 1, 5000));
        expect_queue_totals(f->c, (uint64_t)i + 1, (uint64_t)i + 1, 0, 0);
    }
    /* The third gives up while the lock is held: it left (counted before
     * its acquire returned), the others still wait. */
    fixture_acquirer_join(&w[2]);
    assert_int_equal(w[2].st, RL_ENOTACQUIRED);
    expect_queue_totals(f->c, 3, 2, 0, 1);
    /* The fourth registers and is cancelled. */
    fixture_acquirer_start(&w[3]);
    assert_true(FIXTURE_WAIT_TOTAL(f->c, queue_registrations, 4, 5000));
    assert_int_equal(rl_cancel_fire(w[3].o.cancel), RL_OK);
    fixture_acquirer_join(&w[3]);
    rl_cancel_free(w[3].o.cancel);
    assert_int_equal(w[3].st, RL_EABORTED);
    expect_queue_totals(f->c, 4, 2, 0, 2);
    /* The release hands the lock to one waiter, its release to the next. */
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
    first = first_done(&w[0], &w[1], 10000);
    assert_non_null(first);
    fixture_acquirer_join(first);
    assert_int_equal(first->st, RL_OK);
    expect_queue_totals(f->c, 4, 1, 1, 2);
    second = first == &w[0] ? &w[1] : &w[0];
    assert_int_equal(rl_release(first->lock), RL_OK);
    fixture_acquirer_join(second);
    assert_int_equal(second->st, RL_OK);
    assert_int_equal(rl_release(second->lock), RL_OK);
    expect_queue_totals(f->c, 4, 0, 2, 2);
    /* Both waited from before the third started until after it gave up;
     * neither longer than the case. */
    assert_int_equal(rl_client_totals(f->c, &t), RL_OK);
    assert_true(t.queue_wait_ms_total >= 2 * (uint64_t)give_up_ms);
    assert_true(t.queue_wait_ms_total <=
                2 * (uint64_t)(harness_now_ms() - t0));
    /* The same in the full snapshot and its Prometheus text. */
    assert_int_equal(rl_client_stats(f->c, s), RL_OK);
    assert_int_equal(s->queue_waiters, 0);
    assert_int_equal(s->queue_wait_count, 2);
    assert_int_equal(s->queue_leaves, 2);
    assert_int_equal(s->queue_wait_ms_total, t.queue_wait_ms_total);
    assert_int_equal(rl_stats_format_prometheus(s, NULL, 0, text, 64 * 1024,
                                                &needed),
                     RL_OK);
    assert_non_null(strstr(text, "\nredlock_queue_registrations_total 4\n"));
    assert_non_null(strstr(text, "\nredlock_queue_waiters 0\n"));
    assert_non_null(strstr(text, "\nredlock_queue_waits_total 2\n"));
    assert_non_null(strstr(text, "\nredlock_queue_leaves_total 2\n"));
    free(text);
    free(s);
}


/* Wait until the queue of key has count entries on each of the first
 * `nodes` nodes (N: every node). */
static bool queued_on(struct fixture *f, const char *key, long long count,
                      int nodes)
{
    char q[64];
    int64_t until = harness_now_ms() + harness_scale_ms(10000);
    int i, ok;

    snprintf(q, sizeof(q), "redlock:q:%s", key);
    do {
        for (i = 0, ok = 0; i < nodes; i++)
            ok += zcard(f, i, q) == count;
        if (ok == nodes)
            return true;
        harness_sleep_ms(5);
    } while (harness_now_ms() < until);
    return false;
}

/* A PING of every node: once the paused node i timed out, the client
 * knows it down (it fails requests at once until a handshake succeeds,
 * which a paused server cannot complete). */
static bool known_down(struct fixture *f, size_t i)
{
    rl_node_info info[N];
    size_t count = 0;

    rl_client_ping(f->c, info, N, &count);
    return count == N && !info[i].reachable;
}

/* A fair waiter takes its ticket from a quorum of replies, even when a
 * known-down node makes the refused attempt certain after one refusal
 * (it never registered, and the holder's next acquire found the queue
 * empty: chaos fair lost the order whenever a minority was down). */
static void test_a_waiter_queues_while_a_node_is_down(void **state)
{
    struct fixture *f = *state;
    static const char *const res[] = {"po"};
    struct fixture_acquirer w = {0};
    rl_acquire_opts o = {0};
    rl_lock *again = NULL;

    o.ttl_ms = 30000;
    o.fair = 1;
    assert_int_equal(rl_acquire(f->c, "po", &o, &f->l), RL_OK);
    assert_int_equal(harness_pause(&f->r[2]), 0);
    assert_true(known_down(f, 2));
    w.c = f->c;
    w.resources = res;
    w.count = 1;
    w.o = o;
    w.o.wait_ms = (uint32_t)harness_scale_ms(30000);
    fixture_acquirer_start(&w);
    /* Registered (counted when the ticket is taken), and its entry on
     * the two nodes up: a quorum. */
    assert_true(FIXTURE_WAIT_TOTAL(f->c, queue_registrations, 1, 5000));
    assert_true(queued_on(f, "po", 1, 2));
    /* The holder releases and comes back at once: behind the waiter. */
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
    o.wait_ms = 0;
    assert_int_equal(rl_acquire(f->c, "po", &o, &again), RL_ENOTACQUIRED);
    fixture_acquirer_join(&w);
    assert_int_equal(w.st, RL_OK);
    assert_int_equal(rl_release(w.lock), RL_OK);
    assert_int_equal(harness_resume(&f->r[2]), 0);
}

/* The kind redlock:qm notes for entry tok of key's queue on node 0
 * ('x', 's', 'h' a semaphore's permit holder), 0 when absent. */
static int entry_kind(struct fixture *f, const char *key, const char *tok)
{
    char qm[64];
    redisReply *r;
    int kind = 0;

    snprintf(qm, sizeof(qm), "redlock:qm:%s", key);
    r = harness_cmd(&f->r[0], "HGET %s %s", qm, tok);
    if (r != NULL && r->type == REDIS_REPLY_STRING && r->len > 0)
        kind = r->str[0];
    if (r != NULL)
        freeReplyObject(r);
    return kind;
}

/* fair-acquire of slot 1 of the semaphore ss (2 permits) on node 0 for
 * tok with ticket (its score; '' a first attempt): 1 granted, 0 not. */
static long long slot_try(struct fixture *f, const char *tok,
                          const char *ticket)
{
    return granted(eval(f, 0, SCRIPT_FAIR_ACQUIRE, "ss:slot:1", tok, "5000",
                        "60000", ticket, ticket, "", "ss", "2", NULL));
}

/* A semaphore's slot scripts use its base key's queue: a queued waiter
 * takes a slot only with fewer non-holders ahead of it than slots free
 * on the node (a holder that got its permit without queueing is not in
 * the queue, so rank < limit alone would let the second waiter pass the
 * first); a release removes the holder's entry, a rollback keeps it. */
static void test_a_semaphore_slot_goes_to_the_first_waiters(void **state)
{
    struct fixture *f = *state;

    /* A plain holder on slot 0; a then b queue at the base key. */
    assert_true(harness_ok(harness_cmd(&f->r[0], "SET ss:slot:0 x PX 60000")));
    harness_int(eval(f, 0, SCRIPT_QUEUE_ENTER, "ss", "a", "60000", "1", "1",
                     "x", "2", NULL), 0);
    harness_int(eval(f, 0, SCRIPT_QUEUE_ENTER, "ss", "b", "60000", "2", "2",
                     "x", "2", NULL), 0);
    assert_int_equal(zcard(f, 0, "redlock:q:ss"), 2);
    /* One slot free: b (rank 1 < limit 2) is still refused, a is not. */
    assert_int_equal(slot_try(f, "b", "2"),
                     0);
    assert_true(harness_key_absent(&f->r[0], "ss:slot:1"));
    /* A newcomer's fast path is refused while anybody queues. */
    assert_int_equal(slot_try(f, "c", ""),
                     0);
    assert_int_equal(slot_try(f, "a", "1"),
                     1);
    assert_true(harness_key_holds(&f->r[0], "ss:slot:1", "a"));
    /* a holds: its entry stays, marked as a holder for status. */
    assert_int_equal(entry_kind(f, "ss", "a"), 'h');
    /* Both slots taken: the queue says no slot is free here. */
    {
        redisReply *r = eval(f, 0, SCRIPT_QUEUE_ENTER, "ss", "b", "60000",
                             "2", "2", "x", "2", NULL);

        assert_true(r != NULL && r->type == REDIS_REPLY_ARRAY &&
                    r->elements == 4);
        assert_int_equal(r->element[0]->integer, 1); /* b's rank */
        assert_int_equal(r->element[1]->integer, 0); /* no slot free */
        freeReplyObject(r);
    }
    /* a's rollback keeps its place: b is refused again. */
    assert_int_equal(harness_int(eval(f, 0, SCRIPT_FAIR_ROLLBACK,
                                      "ss:slot:1", "a", "ss", "2", NULL),
                                 -9),
                     1);
    assert_int_equal(zcard(f, 0, "redlock:q:ss"), 2);
    assert_int_equal(entry_kind(f, "ss", "a"), 'x');
    assert_int_equal(slot_try(f, "b", "2"),
                     0);
    assert_int_equal(slot_try(f, "a", "1"),
                     1);
    /* a's release takes its entry from the base key's queue: b's turn. */
    assert_int_equal(harness_int(eval(f, 0, SCRIPT_FAIR_RELEASE,
                                      "ss:slot:1", "a", "ss", "2", NULL),
                                 -9),
                     1);
    assert_int_equal(zcard(f, 0, "redlock:q:ss"), 1);
    assert_int_equal(slot_try(f, "b", "2"),
                     1);
    /* No queue of the slot's own was made. */
    assert_int_equal(harness_count_keys(&f->r[0], "redlock:q*:ss:slot:*"), 0);
}

/* The one of w[0..n) not served yet that is done, waiting up to ms;
 * NULL if none or more than one. */
static struct fixture_acquirer *the_one_done(struct fixture_acquirer *w,
                                             const bool *served, int n,
                                             int64_t ms)
{
    int64_t deadline = harness_now_ms() + harness_scale_ms(ms);
    struct fixture_acquirer *one = NULL;
    int i, done;

    do {
        for (i = 0, done = 0; i < n; i++) {
            if (!served[i] && atomic_load(&w[i].done)) {
                done++;
                one = &w[i];
            }
        }
        if (done > 0)
            return done == 1 ? one : NULL;
        harness_sleep_ms(5);
    } while (harness_now_ms() < deadline);
    return NULL;
}

/* Two holders take both permits of a semaphore (limit 2), then four fair
 * waiters register one after another and a priority one last: as permits
 * are released, the priority waiter is served first, then the others in
 * their order, one per released permit, and never more than two hold. */
static void test_a_fair_semaphore_serves_its_queue_in_order(void **state)
{
    struct fixture *f = *state;
    static const char *const res[] = {"fs"};
    struct fixture_acquirer w[5] = {{0}};
    struct fixture_acquirer *next;
    rl_lock *h[2] = {NULL};
    bool served[5] = {false};
    /* Who is served after each release. */
    static const int order[5] = {4, 0, 1, 2, 3};
    rl_acquire_opts o = {0};
    rl_queue_entry q[8];
    rl_lock *release;
    size_t n;
    int i, k;

    o.ttl_ms = 30000;
    o.limit = 2;
    o.fair = 1;
    for (i = 0; i < 2; i++)
        assert_int_equal(rl_acquire(f->c, "fs", &o, &h[i]), RL_OK);
    for (i = 0; i < 5; i++) {
        w[i].c = f->c;
        w[i].resources = res;
        w[i].count = 1;
        w[i].o = o;
        w[i].o.wait_ms = (uint32_t)harness_scale_ms(30000);
        if (i == 4)
            w[i].o.priority = 5;
        fixture_acquirer_start(&w[i]);
        /* Registered on every node before the next one starts. */
        assert_true(queued_on(f, "fs", i + 1, N));
    }
    release = h[0];
    for (k = 0; k < 5; k++) {
        assert_int_equal(rl_release(release), RL_OK);
        next = the_one_done(w, served, 5, 10000);
        assert_non_null(next);
        fixture_acquirer_join(next);
        assert_int_equal(next->st, RL_OK);
        assert_ptr_equal(next, &w[order[k]]);
        assert_true(rl_lock_slot(next->lock) >= 0);
        /* The queue lists the waiters only: the one just granted keeps
         * its entry a while (1.5 s), but it holds. */
        assert_int_equal(rl_resource_queue(f->c, "fs", q, 8, &n, NULL),
                         RL_OK);
        assert_int_equal(n, (size_t)(4 - k));
        /* Never more than the two permits on any node. */
        for (i = 0; i < N; i++)
            assert_true(harness_count_keys(&f->r[i], "fs:slot:*") <= 2);
        /* Alternately the newest holder's permit and the older one's. */
        release = k == 2 ? h[1] : next->lock;
        if (k == 2)
            h[1] = next->lock;
        served[next - w] = true;
    }
    assert_int_equal(rl_release(w[order[4]].lock), RL_OK);
    assert_int_equal(rl_release(h[1]), RL_OK);
    for (i = 0; i < N; i++) {
        assert_int_equal(harness_count_keys(&f->r[i], "fs:slot:*"), 0);
        assert_int_equal(harness_count_keys(&f->r[i], "redlock:q*:fs:slot*"),
                         0);
    }
}

/* A fair semaphore waiter that gives up leaves its entry on no node. */
static void test_a_fair_semaphore_waiter_that_gives_up_leaves(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = {0};
    rl_lock *h[2] = {NULL}, *l = NULL;
    rl_totals t;
    int i;

    o.ttl_ms = 30000;
    o.limit = 2;
    for (i = 0; i < 2; i++)
        assert_int_equal(rl_acquire(f->c, "fg", &o, &h[i]), RL_OK);
    o.fair = 1;
    o.wait_ms = harness_scale_ms(600);
    assert_int_equal(rl_acquire(f->c, "fg", &o, &l), RL_ENOTACQUIRED);
    assert_null(l);
    assert_int_equal(rl_client_totals(f->c, &t), RL_OK);
    assert_int_equal(t.queue_registrations, 1);
    assert_int_equal(t.queue_leaves, 1);
    for (i = 0; i < N; i++) {
        assert_int_equal(harness_count_keys(&f->r[i], "redlock:q*:fg"), 0);
        assert_int_equal(harness_count_keys(&f->r[i], "fg:slot:*"), 2);
    }
    /* Once a permit is free, a fair acquire takes it at once. */
    assert_int_equal(rl_release(h[0]), RL_OK);
    o.wait_ms = 0;
    assert_int_equal(rl_acquire(f->c, "fg", &o, &l), RL_OK);
    assert_int_equal(rl_release(l), RL_OK);
    assert_int_equal(rl_release(h[1]), RL_OK);
}

/* A cancelled fair semaphore waiter takes its entry off every node
 * before the entry could have lapsed on its own. */
static void test_a_cancelled_fair_semaphore_waiter_leaves(void **state)
{
    struct fixture *f = *state;
    static const char *const res[] = {"fc"};
    struct fixture_acquirer w = {0};
    rl_acquire_opts o = {0};
    rl_lock *h[2] = {NULL};
    redisReply *r;
    long long expiry = 0, e, now;
    int i;

    o.ttl_ms = 30000;
    o.limit = 2;
    for (i = 0; i < 2; i++)
        assert_int_equal(rl_acquire(f->c, "fc", &o, &h[i]), RL_OK);
    w.c = f->c;
    w.resources = res;
    w.count = 1;
    w.o = o;
    w.o.fair = 1;
    w.o.wait_ms = (uint32_t)harness_scale_ms(30000);
    w.o.cancel = rl_cancel_new();
    assert_non_null(w.o.cancel);
    fixture_acquirer_start(&w);
    assert_true(queued_on(f, "fc", 1, N));
    for (i = 0; i < N; i++) {
        r = harness_cmd(&f->r[i], "ZRANGE redlock:qx:fc 0 0 WITHSCORES");
        assert_true(r != NULL && r->type == REDIS_REPLY_ARRAY &&
                    r->elements == 2);
        e = atoll(r->element[1]->str);
        expiry = e > expiry ? e : expiry;
        freeReplyObject(r);
    }
    assert_int_equal(rl_cancel_fire(w.o.cancel), RL_OK);
    fixture_acquirer_join(&w);
    rl_cancel_free(w.o.cancel);
    assert_int_equal(w.st, RL_EABORTED);
    assert_true(queued_on(f, "fc", 0, N));
    /* Removed, not lapsed: a refresh after the read above only pushes
     * the lapse later. */
    r = harness_cmd(&f->r[0], "TIME");
    assert_non_null(r);
    now = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    freeReplyObject(r);
    assert_true(now < expiry);
    for (i = 0; i < 2; i++)
        assert_int_equal(rl_release(h[i]), RL_OK);
}

struct mixed_sem {
    rl_client *c;
    atomic_int inside;
    atomic_int over;             /* times more than the limit held */
    atomic_int failures;
    const struct fixture *f;
};

/* Fair and plain holders on one semaphore: count who is inside, and the
 * slot keys on every node while inside. */
static void *mixed_worker(void *arg)
{
    struct fixture_worker *w = arg;
    struct mixed_sem *m = w->shared;
    rl_acquire_opts o = {0};
    rl_lock *l = NULL;
    int i, j;

    o.ttl_ms = 10000;
    o.limit = 2;
    o.fair = (uint32_t)(w->id % 2);
    o.wait_ms = harness_scale_ms(30000);
    for (i = 0; i < 6; i++) {
        if (rl_acquire(m->c, "fm", &o, &l) != RL_OK) {
            atomic_fetch_add(&m->failures, 1);
            continue;
        }
        if (atomic_fetch_add(&m->inside, 1) >= 2)
            atomic_fetch_add(&m->over, 1);
        for (j = 0; j < N; j++)
            if (harness_count_keys(&m->f->r[j], "fm:slot:*") > 2)
                atomic_fetch_add(&m->over, 1);
        harness_sleep_ms(5);
        atomic_fetch_sub(&m->inside, 1);
        if (rl_release(l) != RL_OK)
            atomic_fetch_add(&m->failures, 1);
    }
    return NULL;
}

/* ---- Readers and writers ------------------------------------------------ */

/* Nodes where "HEXISTS key token" answers 1: readers holding (safe from
 * any thread: harness_cmd connects per call). */
static int readers_holding(struct fixture *f, const char *key,
                           const char *token)
{
    int i, n = 0;

    for (i = 0; i < N; i++)
        n += harness_int(harness_cmd(&f->r[i], "HEXISTS %s %s", key, token),
                         0) == 1;
    return n;
}


/* The member at rank i of key's queue on node 0 (freed by the caller). */
static char *queue_member(struct fixture *f, const char *key, int rank)
{
    redisReply *r = harness_cmd(&f->r[0], "ZRANGE redlock:q:%s %d %d", key,
                                rank, rank);
    char *m = NULL;

    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 1)
        m = strdup(r->element[0]->str);
    if (r != NULL)
        freeReplyObject(r);
    assert_non_null(m);
    return m;
}

/* Wait until member's entry was refreshed on every node after the
 * expiries in before[] were read: its waiter has since learnt where it
 * stands there (a refresh reply), so it would have tried if told to. */
static bool refreshed_everywhere(struct fixture *f, const char *key,
                                 const char *member, const long long *before)
{
    int64_t until = harness_now_ms() + harness_scale_ms(10000);
    int i, ok;

    do {
        for (i = 0, ok = 0; i < N; i++)
            ok += entry_expiry(f, i, key, member) > before[i];
        if (ok == N)
            return true;
        harness_sleep_ms(5);
    } while (harness_now_ms() < until);
    return false;
}

/* The rules inside the scripts, on one node: a reader may take its turn
 * once no exclusive entry is ahead of it, the fast path of a reader only
 * where no exclusive entry queues; redlock:qw:K holds the exclusive
 * entries, redlock:qm:K every entry's kind and registration. */
static void test_a_reader_takes_its_turn_once_no_writer_is_ahead(
    void **state)
{
    struct fixture *f = *state;
    redisReply *r;

    harness_int(eval(f, 0, SCRIPT_QUEUE_ENTER, "rs", "r1", "10000", "1",
                     "1", "s", NULL), 0);
    harness_int(eval(f, 0, SCRIPT_QUEUE_ENTER, "rs", "w", "10000", "2",
                     "2", "x", NULL), 0);
    harness_int(eval(f, 0, SCRIPT_QUEUE_ENTER, "rs", "r2", "10000", "3",
                     "3", "s", NULL), 0);
    assert_int_equal(zcard(f, 0, "redlock:qw:rs"), 1);
    r = harness_cmd(&f->r[0], "HGET redlock:qm:rs r2");
    assert_true(r != NULL && r->type == REDIS_REPLY_STRING &&
                strncmp(r->str, "s ", 2) == 0);
    freeReplyObject(r);
    /* A newcomer reader's fast path: refused, a writer queues. */
    assert_int_equal(granted(eval(f, 0, SCRIPT_FAIR_READER_ACQUIRE, "rs",
                                  "n", "5000", "10000", "", "", NULL)),
                     0);
    /* r1 heads: granted; r2 is behind w: refused though readers hold. */
    assert_int_equal(granted(eval(f, 0, SCRIPT_FAIR_READER_ACQUIRE, "rs",
                                  "r1", "5000", "10000", "1", "1", NULL)),
                     1);
    assert_int_equal(granted(eval(f, 0, SCRIPT_FAIR_READER_ACQUIRE, "rs",
                                  "r2", "5000", "10000", "3", "3", NULL)),
                     0);
    assert_int_equal(harness_int(harness_cmd(&f->r[0], "HLEN rs"), -1), 1);
    /* w is not the head while r1's entry stands. */
    assert_int_equal(fair_try(f, "rs", "w", "2"), 0);
    /* r1's release takes its entry: w heads and takes the key, kept
     * for the queue since the last reader left. */
    assert_int_equal(harness_int(eval(f, 0, SCRIPT_FAIR_READER_RELEASE,
                                      "rs", "r1", NULL), -9),
                     1);
    assert_true(reserved(f, 0, "rs"));
    assert_int_equal(fair_try(f, "rs", "w", "2"), 1);
    assert_int_equal(granted(eval(f, 0, SCRIPT_FAIR_READER_ACQUIRE, "rs",
                                  "r2", "5000", "10000", "3", "3", NULL)),
                     0);
    assert_int_equal(fair_release(f, "rs", "w"), 1);
    assert_int_equal(zcard(f, 0, "redlock:qw:rs"), 0);
    assert_int_equal(granted(eval(f, 0, SCRIPT_FAIR_READER_ACQUIRE, "rs",
                                  "r2", "5000", "10000", "3", "3", NULL)),
                     1);
    /* Its release empties the queue: every key of it goes. */
    assert_int_equal(harness_int(eval(f, 0, SCRIPT_FAIR_READER_RELEASE,
                                      "rs", "r2", NULL), -9),
                     1);
    assert_int_equal(harness_count_keys(&f->r[0], "redlock:q*:rs"), 0);
}

static void start_waiter(struct fixture_acquirer *a, rl_client *c,
                         const char *const *res, enum rl_mode mode)
{
    memset(a, 0, sizeof(*a));
    a->c = c;
    a->resources = res;
    a->count = 1;
    a->o.ttl_ms = 30000;
    a->o.fair = 1;
    a->o.mode = mode;
    a->o.wait_ms = (uint32_t)harness_scale_ms(30000);
    fixture_acquirer_start(a);
}

/* R1, then W, then R2 and R3 wait (each registered on every node before
 * the next starts) while a writer holds: R1 is served at its release, W
 * only after R1 released, R2 and R3 only after W, together. Without the
 * writer rule R2 and R3 share with R1 (they are readers, R1 is one). */
static void test_a_writer_is_served_between_the_readers_around_it(
    void **state)
{
    struct fixture *f = *state;
    static const char *const res[] = {"rw"};
    struct fixture_acquirer r1, w, r2, r3;
    rl_queue_entry q[4];
    size_t n = 0;
    long long before[N];
    char *m2;
    int i;

    f->l = NULL;
    {
        rl_acquire_opts o = {0};

        o.ttl_ms = 30000;
        o.fair = 1;
        assert_int_equal(rl_acquire(f->c, "rw", &o, &f->l), RL_OK);
    }
    start_waiter(&r1, f->c, res, RL_MODE_SHARED);
    assert_true(queued_on(f, "rw", 1, N));
    start_waiter(&w, f->c, res, RL_MODE_EXCLUSIVE);
    assert_true(queued_on(f, "rw", 2, N));
    start_waiter(&r2, f->c, res, RL_MODE_SHARED);
    assert_true(queued_on(f, "rw", 3, N));
    start_waiter(&r3, f->c, res, RL_MODE_SHARED);
    assert_true(queued_on(f, "rw", 4, N));
    /* status: the kinds in order, each waiting since it registered. */
    assert_int_equal(rl_resource_queue(f->c, "rw", q, 4, &n, NULL), RL_OK);
    assert_int_equal(n, 4);
    assert_int_equal(q[0].mode, RL_MODE_SHARED);
    assert_int_equal(q[1].mode, RL_MODE_EXCLUSIVE);
    assert_int_equal(q[2].mode, RL_MODE_SHARED);
    assert_int_equal(q[3].mode, RL_MODE_SHARED);
    for (i = 0; i < 4; i++)
        assert_true(q[i].waited_ms >= 0 && q[i].waited_ms < 60000);
    assert_true(q[0].waited_ms >= q[3].waited_ms);
    m2 = queue_member(f, "rw", 2);

    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
    fixture_acquirer_join(&r1);
    assert_int_equal(r1.st, RL_OK);
    /* R2 refreshed on every node since: it knows where it stands, and
     * stays out (as W and R3) while R1 reads alone. */
    for (i = 0; i < N; i++)
        before[i] = entry_expiry(f, i, "rw", m2);
    assert_true(refreshed_everywhere(f, "rw", m2, before));
    assert_false(atomic_load(&r2.done));
    assert_false(atomic_load(&r3.done));
    assert_false(atomic_load(&w.done));
    for (i = 0; i < N; i++)
        assert_true(harness_int(harness_cmd(&f->r[i], "HLEN rw"), -1) <= 1);

    assert_int_equal(rl_release(r1.lock), RL_OK);
    fixture_acquirer_join(&w);
    assert_int_equal(w.st, RL_OK);
    assert_true(harness_holders(f->r, N, "rw", rl_lock_token(w.lock),
                                NULL) >= N / 2 + 1);
    assert_false(atomic_load(&r2.done));
    assert_false(atomic_load(&r3.done));

    assert_int_equal(rl_release(w.lock), RL_OK);
    fixture_acquirer_join(&r2);
    fixture_acquirer_join(&r3);
    assert_int_equal(r2.st, RL_OK);
    assert_int_equal(r3.st, RL_OK);
    /* Both read at once. */
    assert_true(readers_holding(f, "rw", rl_lock_token(r2.lock)) >=
                N / 2 + 1);
    assert_true(readers_holding(f, "rw", rl_lock_token(r3.lock)) >=
                N / 2 + 1);
    assert_int_equal(rl_release(r2.lock), RL_OK);
    assert_int_equal(rl_release(r3.lock), RL_OK);
    free(m2);
}

/* A fair writer refused at its turn by a reader marks its intent there;
 * granted once the reader left, it clears the intent wherever its
 * attempts may have marked it (queue.c fair_intent_nodes: a writer
 * granted at its first turn marked none, and clears nowhere). Its retry
 * delay makes the intent live 20 s: gone sooner, it was cleared. */
static void test_a_fair_writer_clears_the_intent_it_marked(void **state)
{
    struct fixture *f = *state;
    static const char *const res[] = {"fwi"};
    struct fixture_acquirer w;
    rl_acquire_opts o = {0};
    rl_client *wc;

    /* Connected first: a node still connecting would fail an attempt
     * instead of refusing it. */
    wc = fixture_patient_client(&f->hn, 10000);
    o.ttl_ms = 30000;
    o.mode = RL_MODE_SHARED;
    assert_int_equal(rl_acquire(f->c, "fwi", &o, &f->l), RL_OK);
    start_waiter(&w, wc, res, RL_MODE_EXCLUSIVE);
    /* At the head (its first refresh finds it there), refused by the
     * reader: marked on a majority at least (a loaded node may have
     * missed the registration, and sees the next poll 10 s later). */
    assert_true(harness_key_count_within(f->r, N, "fwi:wintent", N, 5000) >=
                N / 2 + 1);
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
    fixture_acquirer_join(&w);
    assert_int_equal(w.st, RL_OK);
    assert_true(harness_key_gone_within(f->r, N, "fwi:wintent", 5000));
    assert_int_equal(rl_release(w.lock), RL_OK);
    rl_client_free(wc);
}

/* While a reader holds and a writer queues, a fair reader stays out
 * (a plain one, which ignores the queue, gets in); once the writer's
 * entry leaves, the fair reader shares with the holder. The queued
 * writer is a bare entry (no intent key): the queue alone refuses. */
static void test_a_fair_reader_does_not_pass_a_queued_writer(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = {0};
    rl_lock *plain = NULL, *fair = NULL;
    int i;

    o.ttl_ms = 30000;
    o.mode = RL_MODE_SHARED;
    assert_int_equal(rl_acquire(f->c, "pw", &o, &f->l), RL_OK);
    for (i = 0; i < N; i++)
        harness_int(eval(f, i, SCRIPT_QUEUE_ENTER, "pw", "writer", "60000",
                         "1", "1", "x", NULL), 0);
    o.fair = 1;
    o.wait_ms = harness_scale_ms(800);
    assert_int_equal(rl_acquire(f->c, "pw", &o, &fair), RL_ENOTACQUIRED);
    assert_null(fair);
    for (i = 0; i < N; i++)
        assert_int_equal(harness_int(harness_cmd(&f->r[i], "HLEN pw"), -1),
                         1);
    o.fair = 0;
    assert_int_equal(rl_acquire(f->c, "pw", &o, &plain), RL_OK);
    assert_int_equal(rl_release(plain), RL_OK);
    for (i = 0; i < N; i++)
        harness_int(eval(f, i, SCRIPT_QUEUE_LEAVE, "pw", "writer", NULL), 0);
    o.fair = 1;
    assert_int_equal(rl_acquire(f->c, "pw", &o, &fair), RL_OK);
    assert_true(readers_holding(f, "pw", rl_lock_token(fair)) >= N / 2 + 1);
    assert_true(readers_holding(f, "pw", rl_lock_token(f->l)) >= N / 2 + 1);
    assert_int_equal(rl_release(fair), RL_OK);
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
}

struct mixed {
    struct fixture *f;
    enum rl_mode mode;
    uint32_t fair;
    atomic_int *readers, *writers, *bad;
    int sections;
};

static void *mixed_main(void *arg)
{
    struct mixed *m = arg;
    rl_acquire_opts o = {0};
    rl_lock *l;
    int k, in;

    o.ttl_ms = 10000;
    o.mode = m->mode;
    o.fair = m->fair;
    o.wait_ms = (uint32_t)harness_scale_ms(60000);
    for (k = 0; k < 4; k++) {
        l = NULL;
        if (rl_acquire(m->f->c, "mx", &o, &l) != RL_OK) {
            atomic_fetch_add(m->bad, 1);
            continue;
        }
        if (m->mode == RL_MODE_SHARED) {
            atomic_fetch_add(m->readers, 1);
            /* Nobody writes: its field is in the hash on a majority. */
            in = readers_holding(m->f, "mx", rl_lock_token(l));
            if (atomic_load(m->writers) != 0 || in < N / 2 + 1)
                atomic_fetch_add(m->bad, 1);
            harness_sleep_ms(5); /* a read, not a synchronisation */
            atomic_fetch_sub(m->readers, 1);
        } else {
            in = atomic_fetch_add(m->writers, 1);
            /* Alone: its string is the key on a majority. */
            if (in != 0 || atomic_load(m->readers) != 0 ||
                harness_holders(m->f->r, N, "mx", rl_lock_token(l), NULL) <
                    N / 2 + 1)
                atomic_fetch_add(m->bad, 1);
            harness_sleep_ms(5);
            atomic_fetch_sub(m->writers, 1);
        }
        m->sections++;
        rl_release(l);
    }
    return NULL;
}

static void test_fair_and_plain_never_exceed_the_limit(void **state)
{
    struct fixture *f = *state;
    struct mixed_sem m = {.c = f->c, .f = f};
    int i;

    fixture_run_workers(6, mixed_worker, &m);
    assert_int_equal(atomic_load(&m.failures), 0);
    assert_int_equal(atomic_load(&m.over), 0);
    for (i = 0; i < N; i++)
        assert_int_equal(harness_count_keys(&f->r[i], "fm:slot:*"), 0);
}

/* Plain and fair readers and writers on one resource: a writer is never
 * in with anybody, in the process and in Redis. */
static void test_fair_and_plain_readers_and_writers_never_overlap(
    void **state)
{
    struct fixture *f = *state;
    atomic_int readers = 0, writers = 0, bad = 0;
    struct mixed m[6];
    pthread_t t[6];
    int i, total = 0;

    for (i = 0; i < 6; i++) {
        m[i] = (struct mixed){f, i % 2 ? RL_MODE_EXCLUSIVE : RL_MODE_SHARED,
                              i < 4, &readers, &writers, &bad, 0};
        assert_int_equal(pthread_create(&t[i], NULL, mixed_main, &m[i]), 0);
    }
    for (i = 0; i < 6; i++) {
        pthread_join(t[i], NULL);
        total += m[i].sections;
    }
    assert_int_equal(atomic_load(&bad), 0);
    assert_int_equal(total, 24);
}

static void test_unsupported_fair_options_are_refused(void **state)
{
    struct fixture *f = *state;
    const char *two[2] = {"fo:a", "fo:b"};
    rl_acquire_opts o = {0};
    rl_lock *l = NULL;

    o.fair = 1;
    assert_int_equal(rl_acquire_multi(f->c, two, 2, &o, &l), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "one resource"));
    o.fair = 2;
    assert_int_equal(rl_acquire(f->c, "fo:a", &o, &l), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "fair 2"));
    o.fair = 0;
    o.priority = RL_MAX_PRIORITY + 1;
    assert_int_equal(rl_acquire(f->c, "fo:a", &o, &l), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "priority 256"));
    o.priority = 0;
    /* The queues live in the reserved namespace: no resource names one,
     * and a resource may end in ':q' (a queue of the user's own). */
    assert_int_equal(rl_acquire(f->c, "redlock:q:fo", &o, &l), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "reserved namespace"));
    o.fair = 1;
    assert_int_equal(rl_acquire(f->c, "fo:q", &o, &l), RL_OK);
    assert_int_equal(rl_release(l), RL_OK);
    l = NULL;
    assert_null(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_only_the_head_is_granted),
        cmocka_unit_test(
            test_refused_first_attempts_read_increasing_counters),
        cmocka_unit_test(test_the_fast_path_is_a_set_nx_where_nobody_queues),
        cmocka_unit_test(test_an_uncontended_fair_acquire_is_a_set_nx),
        cmocka_unit_test(test_the_reservation_lives_as_long_as_the_queue),
        cmocka_unit_test(test_every_attempt_of_an_acquisition_is_one_entry),
        cmocka_unit_test(test_a_lapsed_entry_is_purged_wherever_it_stands),
        cmocka_unit_test(test_a_fair_acquire_waits_behind_the_head_and_leaves),
        cmocka_unit_test(
            test_the_queue_a_majority_holds_is_reported_in_order),
        cmocka_unit_test(
            test_the_metrics_count_registrations_waits_and_leaves),
        cmocka_unit_test(test_a_waiter_queues_while_a_node_is_down),
        cmocka_unit_test(test_a_semaphore_slot_goes_to_the_first_waiters),
        cmocka_unit_test(test_a_fair_semaphore_serves_its_queue_in_order),
        cmocka_unit_test(test_a_fair_semaphore_waiter_that_gives_up_leaves),
        cmocka_unit_test(test_a_cancelled_fair_semaphore_waiter_leaves),
        cmocka_unit_test(test_fair_and_plain_never_exceed_the_limit),
        cmocka_unit_test(test_a_long_queue_is_reported_whole),
        cmocka_unit_test(test_a_reader_takes_its_turn_once_no_writer_is_ahead),
        cmocka_unit_test(
            test_a_writer_is_served_between_the_readers_around_it),
        cmocka_unit_test(test_a_fair_writer_clears_the_intent_it_marked),
        cmocka_unit_test(test_a_fair_reader_does_not_pass_a_queued_writer),
        cmocka_unit_test(
            test_fair_and_plain_readers_and_writers_never_overlap),
        cmocka_unit_test(test_unsupported_fair_options_are_refused),
    };

    return FIXTURE_RUN("fair", &fx, tests);
}
