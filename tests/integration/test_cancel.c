/* SPDX-License-Identifier: BSD-3-Clause */
/* test_cancel.c -- rl_cancel: a waiting acquire of every kind (mutex,
 * several resources, semaphore, reader, writer waiting for readers) ends
 * with RL_EABORTED when its token fires on another thread, and leaves no
 * key of its own on any node (checked in Redis); a cancel racing the
 * grant, many times over every kind, leaves nothing behind either way; an
 * async acquire on an external loop is canceled from the loop's thread;
 * a token fired before the call sends nothing. */
#include <ev.h>
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

#define NODES 3
#define RACE_ROUNDS 300

/* The waiter's client f->c (on f->loop with external) and the holders'
 * f->c2, holding f->locks. Writer intents live 2 x (delay + jitter) +
 * 100 ms: long enough to see one that a canceled writer failed to
 * clear. */
static void slow_retries(rl_config *cfg)
{
    cfg->retry_delay_ms = 1000;
    cfg->retry_jitter_ms = 10;
}

static const struct fixture_opts owned = { .nodes = NODES,
                                           .second_client = true,
                                           .tune = slow_retries };
static const struct fixture_opts external = { .nodes = NODES,
                                              .second_client = true,
                                              .external_loop = true,
                                              .tune = slow_retries };

/* ---- A waiting acquire, canceled from another thread --------------------- */

/* Keys on node r now (DBSIZE), polled up to 3 s (scaled): releases may
 * be in flight. */
static bool dbsize_becomes(const struct rl_redis *r, long long want)
{
    int64_t deadline = harness_now_ms() + harness_scale_ms(3000);

    while (harness_dbsize(r) != want && harness_now_ms() < deadline)
        harness_sleep_ms(5);
    if (harness_dbsize(r) == want)
        return true;
    harness_print_keys(r);
    return false;
}

/* A wait to cancel: holders that f->c2 takes first, and the waiter. */
struct wait_case {
    const char *held;             /* the holders' resource */
    int holders;                  /* how many take it, one key each */
    rl_acquire_opts holder;       /* their options */
    const char *const *wanted;    /* the waiter's resources */
    size_t count;
    rl_acquire_opts waiter;       /* its options (wait, TTL, token added) */
};

/* The holders of w take their locks (f->locks); then a forever-waiting
 * acquire of w's resources on a thread, whose token is fired once it
 * waits: it must end with RL_EABORTED, and each node must hold only the
 * holders' keys. */
static void cancel_a_wait(struct fixture *f, const struct wait_case *w)
{
    struct fixture_acquirer a = { .c = f->c, .resources = w->wanted,
                                  .count = w->count, .o = w->waiter };
    int i;

    for (i = 0; i < w->holders; i++)
        assert_int_equal(rl_acquire(f->c2, w->held, &w->holder,
                                    &f->locks[i]),
                         RL_OK);
    a.o.wait_ms = RL_WAIT_FOREVER;
    a.o.ttl_ms = 30000;
    a.o.cancel = rl_cancel_new();
    assert_non_null(a.o.cancel);
    fixture_acquirer_start(&a);
    /* Waiting: an attempt has been refused. */
    assert_true(FIXTURE_WAIT_TOTAL(f->c, contended, 1, 5000));
    assert_int_equal(atomic_load(&a.done), 0);
    assert_int_equal(rl_cancel_fire(a.o.cancel), RL_OK);
    assert_int_equal(rl_cancel_fire(a.o.cancel), RL_OK); /* idempotent */
    assert_true(rl_cancel_fired(a.o.cancel));
    assert_true(harness_wait_count(&a.done, 1, 5000));
    fixture_acquirer_join(&a);
    rl_cancel_free(a.o.cancel);
    assert_int_equal(a.st, RL_EABORTED);
    assert_null(a.lock);
    assert_non_null(strstr(a.err, "canceled"));
    for (i = 0; i < NODES; i++)
        assert_true(dbsize_becomes(&f->r[i], w->holders));
}

/* The holders' locks go; then every node must be empty. */
static void release_holders(struct fixture *f)
{
    size_t i;

    for (i = 0; i < 4; i++) {
        if (f->locks[i] != NULL)
            assert_int_equal(rl_release(f->locks[i]), RL_OK);
        f->locks[i] = NULL;
    }
    assert_true(harness_all_empty_within(f->r, NODES, 1000));
}

static void test_canceled_mutex_wait_leaves_no_key(void **state)
{
    struct fixture *f = *state;
    const char *r = "cancel:mutex";
    const struct wait_case w = { .held = r, .holders = 1, .wanted = &r,
                                 .count = 1 };

    cancel_a_wait(f, &w);
    assert_true(harness_key_holds(&f->r[0], r, rl_lock_token(f->locks[0])));
    release_holders(f);
}

static void test_canceled_multi_resource_wait_leaves_no_key(void **state)
{
    const char *rs[] = {"cancel:multi:a", "cancel:multi:b"};
    /* b is held: a would be free, but all or none on each node. */
    const struct wait_case w = { .held = rs[1], .holders = 1, .wanted = rs,
                                 .count = 2 };

    cancel_a_wait(*state, &w);
    release_holders(*state);
}

static void test_canceled_semaphore_wait_leaves_no_key(void **state)
{
    const char *r = "cancel:sem";
    const struct wait_case w = { .held = r, .holders = 2,
                                 .holder = { .limit = 2 }, .wanted = &r,
                                 .count = 1, .waiter = { .limit = 2 } };

    cancel_a_wait(*state, &w);
    release_holders(*state);
}

static void test_canceled_reader_wait_leaves_no_key(void **state)
{
    const char *r = "cancel:reader";
    const struct wait_case w = { .held = r, .holders = 1, .wanted = &r,
                                 .count = 1,
                                 .waiter = { .mode = RL_MODE_SHARED } };

    cancel_a_wait(*state, &w);
    release_holders(*state);
}

/* A writer refused by readers marks its intent; canceled, it clears it
 * (else the intent would keep new readers out for 2 s). */
static void test_canceled_writer_clears_its_intent(void **state)
{
    struct fixture *f = *state;
    const char *r = "cancel:writer";
    const struct wait_case w = { .held = r, .holders = 1,
                                 .holder = { .mode = RL_MODE_SHARED },
                                 .wanted = &r, .count = 1 };

    cancel_a_wait(f, &w);
    assert_true(harness_key_absent(&f->r[0], "cancel:writer:wintent"));
    release_holders(f);
}

/* ---- Cancel racing the grant ---------------------------------------------- */

/* Round i's attempt, on f->c with a token of its own: one resource, two,
 * a semaphore or a reader, by turns. */
static void race_attempt(struct fixture_acquirer *x, struct fixture *f,
                         const char *const *rs, int round)
{
    memset(x, 0, sizeof(*x));
    x->c = f->c;
    x->resources = rs;
    x->count = 1;
    x->o.ttl_ms = 30000;
    switch (round % 4) {
    case 1:
        x->count = 2;
        break;
    case 2:
        x->o.limit = 3;
        break;
    case 3:
        x->o.mode = RL_MODE_SHARED;
        break;
    }
    x->o.cancel = rl_cancel_new();
    assert_non_null(x->o.cancel);
}

/* Fire the token anywhere from before the request is sent to after the
 * grant: the outcome is either a lock (released here) or RL_EABORTED,
 * and no key of the attempt survives on any node. */
static void test_cancel_racing_the_grant_leaves_no_key(void **state)
{
    struct fixture *f = *state;
    int granted = 0, aborted = 0;
    unsigned seed = 12345;
    char name[2][64];
    const char *rs[2] = {name[0], name[1]};
    struct fixture_acquirer x;
    int i, spin;

    for (i = 0; i < RACE_ROUNDS; i++) {
        snprintf(name[0], sizeof(name[0]), "race:%d", i);
        snprintf(name[1], sizeof(name[1]), "race:%d:b", i);
        race_attempt(&x, f, rs, i);
        fixture_acquirer_start(&x);
        while (atomic_load(&x.started) == 0)
            ;
        seed = seed * 1103515245u + 12345u;
        for (spin = (int)((seed >> 16) % 20000); spin > 0; spin--)
            atomic_signal_fence(memory_order_seq_cst);
        rl_cancel_fire(x.o.cancel);
        fixture_acquirer_join(&x);
        rl_cancel_free(x.o.cancel);
        if (x.st == RL_OK) {
            granted++;
            assert_int_equal(rl_release(x.lock), RL_OK);
        } else {
            assert_int_equal(x.st, RL_EABORTED);
            assert_null(x.lock);
            aborted++;
        }
    }
    print_message("cancel race: %d granted, %d aborted\n", granted,
                  aborted);
    assert_true(harness_all_empty_within(f->r, NODES, 1000));
}

/* ---- Async, on an external loop --------------------------------------- */

static void run_loop_until(struct fixture *f, atomic_int *calls, int64_t ms)
{
    int64_t deadline = harness_now_ms() + harness_scale_ms(ms);

    while (atomic_load(calls) == 0 && harness_now_ms() < deadline) {
        ev_run(f->loop, EVRUN_NOWAIT);
        harness_sleep_ms(1);
    }
}

static void test_async_acquire_canceled_on_the_loop_thread(void **state)
{
    struct fixture *f = *state;
    const char *r = "cancel:async";
    struct fixture_rec a = {0};
    rl_acquire_opts o = {0};

    assert_int_equal(rl_acquire(f->c2, r, &o, &f->locks[0]), RL_OK);
    o.wait_ms = RL_WAIT_FOREVER;
    o.cancel = rl_cancel_new();
    assert_non_null(o.cancel);
    assert_int_equal(rl_acquire_async(f->c, r, &o, fixture_rec_acquired, &a),
                     RL_OK);
    run_loop_until(f, &a.calls, 300);
    assert_int_equal(atomic_load(&a.calls), 0); /* still waiting */
    /* On the loop's thread: the callback comes on a later iteration. */
    assert_int_equal(rl_cancel_fire(o.cancel), RL_OK);
    assert_int_equal(atomic_load(&a.calls), 0);
    run_loop_until(f, &a.calls, 2000);
    assert_int_equal(atomic_load(&a.calls), 1);
    assert_int_equal(a.st, RL_EABORTED);
    assert_null(a.lock);
    /* A fired token: refused at once, no callback, nothing sent. */
    assert_int_equal(rl_acquire_async(f->c, "cancel:async2", &o,
                                      fixture_rec_acquired, &a),
                     RL_EABORTED);
    run_loop_until(f, &a.calls, 50);
    assert_int_equal(atomic_load(&a.calls), 1);
    rl_cancel_free(o.cancel);
    assert_true(harness_key_holds(&f->r[1], r, rl_lock_token(f->locks[0])));
    rl_lock_free(f->locks[0]);
    f->locks[0] = NULL;
    for (int i = 0; i < NODES; i++) {
        assert_int_equal(harness_dbsize(&f->r[i]), 1);
        assert_true(harness_key_absent(&f->r[i], "cancel:async2"));
    }
}

/* ---- Arguments ------------------------------------------------------------ */

static void test_fired_token_refuses_blocking_acquire(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = {0};
    rl_lock *l = NULL;

    o.cancel = rl_cancel_new();
    assert_non_null(o.cancel);
    assert_false(rl_cancel_fired(o.cancel));
    assert_int_equal(rl_cancel_fire(o.cancel), RL_OK);
    assert_int_equal(rl_acquire(f->c, "cancel:fired", &o, &l), RL_EABORTED);
    assert_null(l);
    assert_non_null(strstr(rl_last_error(), "already fired"));
    rl_cancel_free(o.cancel);
    assert_int_equal(rl_cancel_fire(NULL), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "cancel"));
    assert_false(rl_cancel_fired(NULL));
    rl_cancel_free(NULL);
    assert_true(harness_all_empty(f->r, NODES));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_canceled_mutex_wait_leaves_no_key),
        cmocka_unit_test(test_canceled_multi_resource_wait_leaves_no_key),
        cmocka_unit_test(test_canceled_semaphore_wait_leaves_no_key),
        cmocka_unit_test(test_canceled_reader_wait_leaves_no_key),
        cmocka_unit_test(test_canceled_writer_clears_its_intent),
        cmocka_unit_test(test_cancel_racing_the_grant_leaves_no_key),
        FIXTURE_TEST(test_async_acquire_canceled_on_the_loop_thread, &external),
        cmocka_unit_test(test_fired_token_refuses_blocking_acquire),
    };

    return FIXTURE_RUN("tests", &owned, tests);
}
