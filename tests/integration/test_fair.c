/* test_fair.c -- the fair queue (docs/fair-queue.md) on three real
 * redis-server nodes: the scripts' rules run as the library sends them
 * (only the head is granted, in the same step as the SET; the fast path
 * only where nobody queues; lapsed entries are purged wherever they
 * stand; a rollback keeps the entry, a release and a leave remove it and
 * announce the next head), the library's fair acquire waits behind a
 * queued entry, leaves no entry when it gives up, and refuses what it
 * does not support, and rl_resource_queue reports what a majority
 * holds. The CLI tests (tests/cli/test_cli_fair.py) check the
 * order across processes. */
#include <setjmp.h>
#include <stdarg.h>
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

static void test_only_the_head_is_granted(void **state)
{
    struct fixture *f = *state;

    /* a registers first (ticket 1), b second (ticket 2). */
    assert_int_equal(granted(eval(f, 0, SCRIPT_FAIR_ACQUIRE, "h", "a",
                                  "5000", "10000", "1", "1", NULL)),
                     1);
    assert_int_equal(harness_int(eval(f, 0, SCRIPT_FAIR_RELEASE, "h", "a",
                                      NULL), -9),
                     1);
    harness_int(eval(f, 0, SCRIPT_QUEUE_ENTER, "h", "a", "10000", "1", "1",
                     NULL), 0);
    harness_int(eval(f, 0, SCRIPT_QUEUE_ENTER, "h", "b", "10000", "2", "2",
                     NULL), 0);
    /* The lock is free, but b is not the head: refused, nothing set. */
    assert_int_equal(granted(eval(f, 0, SCRIPT_FAIR_ACQUIRE, "h", "b",
                                  "5000", "10000", "2", "2", NULL)),
                     0);
    assert_true(harness_key_absent(&f->r[0], "h"));
    /* A newcomer's fast path is refused while anybody queues. */
    assert_int_equal(granted(eval(f, 0, SCRIPT_FAIR_ACQUIRE, "h", "c",
                                  "5000", "10000", "", "", NULL)),
                     0);
    /* The head is granted; its entry stays while it holds. */
    assert_int_equal(granted(eval(f, 0, SCRIPT_FAIR_ACQUIRE, "h", "a",
                                  "5000", "10000", "1", "1", NULL)),
                     1);
    assert_true(harness_key_holds(&f->r[0], "h", "a"));
    assert_int_equal(zcard(f, 0, "redlock:q:h"), 2);
    /* A rollback keeps a's place; a release gives it up. */
    assert_int_equal(harness_int(eval(f, 0, SCRIPT_FAIR_ROLLBACK, "h", "a",
                                      NULL), -9),
                     1);
    assert_int_equal(zcard(f, 0, "redlock:q:h"), 2);
    assert_int_equal(granted(eval(f, 0, SCRIPT_FAIR_ACQUIRE, "h", "a",
                                  "5000", "10000", "1", "1", NULL)),
                     1);
    assert_int_equal(harness_int(eval(f, 0, SCRIPT_FAIR_RELEASE, "h", "a",
                                      NULL), -9),
                     1);
    assert_int_equal(zcard(f, 0, "redlock:q:h"), 1);
    assert_int_equal(granted(eval(f, 0, SCRIPT_FAIR_ACQUIRE, "h", "b",
                                  "5000", "10000", "2", "2", NULL)),
                     1);
    /* Plain clients ignore the queue: only the key refuses them. */
    assert_int_equal(harness_int(eval(f, 0, SCRIPT_FAIR_RELEASE, "h", "b",
                                      NULL), -9),
                     1);
    harness_int(eval(f, 0, SCRIPT_QUEUE_ENTER, "h", "d", "10000", "3", "3",
                     NULL), 0);
    assert_true(harness_ok(harness_cmd(&f->r[0], "SET h plain NX PX 5000")));
}

/* Where nobody queues, a first attempt (no score) is a bare SET NX with
 * an integer reply and a release a compare-and-delete: neither touches
 * a queue key. With an entry queued, the same call takes the queue's
 * path (its array reply) and is refused though the lock is free. */
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
    assert_int_equal(harness_int(eval(f, 0, SCRIPT_FAIR_ACQUIRE, "fp", "b",
                                      "5000", "10000", "", "", NULL), -9),
                     0);
    assert_int_equal(harness_int(eval(f, 0, SCRIPT_FAIR_RELEASE, "fp", "b",
                                      NULL), -9),
                     -1);
    assert_true(harness_key_holds(&f->r[0], "fp", "a"));
    assert_int_equal(harness_int(eval(f, 0, SCRIPT_FAIR_RELEASE, "fp", "a",
                                      NULL), -9),
                     1);
    assert_true(harness_key_absent(&f->r[0], "fp"));
    for (i = 0; i < sizeof(queue_keys) / sizeof(queue_keys[0]); i++)
        assert_true(harness_key_absent(&f->r[0], queue_keys[i]));
    harness_int(eval(f, 0, SCRIPT_QUEUE_ENTER, "fp", "w", "10000", "1", "1",
                     NULL), 0);
    assert_int_equal(granted(eval(f, 0, SCRIPT_FAIR_ACQUIRE, "fp", "b",
                                  "5000", "10000", "", "", NULL)),
                     0);
    assert_true(harness_key_absent(&f->r[0], "fp"));
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

    harness_int(eval(f, 0, SCRIPT_QUEUE_ENTER, "m", first, "10000", "1",
                     "1", NULL), 0);
    harness_int(eval(f, 0, SCRIPT_QUEUE_ENTER, "m", other, "10000", "2",
                     "2", NULL), 0);
    assert_int_equal(harness_int(eval(f, 0, SCRIPT_FAIR_ROLLBACK, "m",
                                      first, NULL), -9),
                     0);
    assert_int_equal(granted(eval(f, 0, SCRIPT_FAIR_ACQUIRE, "m", retry,
                                  "5000", "10000", "1", "1", NULL)),
                     1);
    assert_true(harness_key_holds(&f->r[0], "m", retry));
    assert_int_equal(zcard(f, 0, "redlock:q:m"), 2);
    assert_int_equal(harness_int(eval(f, 0, SCRIPT_FAIR_RELEASE, "m", retry,
                                      NULL), -9),
                     1);
    assert_int_equal(zcard(f, 0, "redlock:q:m"), 1);
    assert_int_equal(granted(eval(f, 0, SCRIPT_FAIR_ACQUIRE, "m", other,
                                  "5000", "10000", "2", "2", NULL)),
                     1);
}

static void test_a_lapsed_entry_is_purged_wherever_it_stands(void **state)
{
    struct fixture *f = *state;

    /* a (head) and m (middle) lapse after 50 ms; z lives on. */
    harness_int(eval(f, 0, SCRIPT_QUEUE_ENTER, "p", "a", "50", "1", "1",
                     NULL), 0);
    harness_int(eval(f, 0, SCRIPT_QUEUE_ENTER, "p", "m", "50", "3", "3",
                     NULL), 0);
    harness_int(eval(f, 0, SCRIPT_QUEUE_ENTER, "p", "b", "10000", "2", "2",
                     NULL), 0);
    harness_int(eval(f, 0, SCRIPT_QUEUE_ENTER, "p", "z", "10000", "4", "4",
                     NULL), 0);
    assert_int_equal(zcard(f, 0, "redlock:q:p"), 4);
    until_server_ms(f, 0, entry_expiry(f, 0, "p", "m"));
    /* b's refresh purges both, the middle one too, and b heads. */
    harness_int(eval(f, 0, SCRIPT_QUEUE_ENTER, "p", "b", "10000", "2", "2",
                     NULL), 0);
    assert_int_equal(zcard(f, 0, "redlock:q:p"), 2);
    assert_int_equal(granted(eval(f, 0, SCRIPT_FAIR_ACQUIRE, "p", "b",
                                  "5000", "10000", "2", "2", NULL)),
                     1);
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
    assert_true(harness_key_absent(&f->r[0], "w"));
    /* It registered behind it, and left every node before returning. */
    for (i = 0; i < N; i++) {
        assert_int_equal(zcard(f, i, "redlock:q:w"), 1);
        assert_int_equal(counter(f, i, "w"), 2);
    }
    /* A plain acquire ignores the queue. */
    o.fair = 0;
    assert_int_equal(rl_acquire(f->c, "w", &o, &l), RL_OK);
    assert_int_equal(rl_release(l), RL_OK);
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
    assert_true(FIXTURE_WAIT_TOTAL(f->c, queue_registrations, 1, 5000));
    assert_int_equal(zcard(f, 0, "redlock:q:po"), 1);
    assert_int_equal(zcard(f, 1, "redlock:q:po"), 1);
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

static void test_unsupported_fair_options_are_refused(void **state)
{
    struct fixture *f = *state;
    const char *two[2] = {"fo:a", "fo:b"};
    rl_acquire_opts o = {0};
    rl_lock *l = NULL;

    o.fair = 1;
    assert_int_equal(rl_acquire_multi(f->c, two, 2, &o, &l), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "one resource"));
    o.limit = 2;
    assert_int_equal(rl_acquire(f->c, "fo:a", &o, &l), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "semaphore"));
    o.limit = 0;
    o.mode = RL_MODE_SHARED;
    assert_int_equal(rl_acquire(f->c, "fo:a", &o, &l), RL_EINVAL);
    o.mode = RL_MODE_EXCLUSIVE;
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
        cmocka_unit_test(test_the_fast_path_is_a_set_nx_where_nobody_queues),
        cmocka_unit_test(test_every_attempt_of_an_acquisition_is_one_entry),
        cmocka_unit_test(test_a_lapsed_entry_is_purged_wherever_it_stands),
        cmocka_unit_test(test_a_fair_acquire_waits_behind_the_head_and_leaves),
        cmocka_unit_test(
            test_the_queue_a_majority_holds_is_reported_in_order),
        cmocka_unit_test(
            test_the_metrics_count_registrations_waits_and_leaves),
        cmocka_unit_test(test_a_waiter_queues_while_a_node_is_down),
        cmocka_unit_test(test_unsupported_fair_options_are_refused),
    };

    return FIXTURE_RUN("fair", &fx, tests);
}
