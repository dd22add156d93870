/* SPDX-License-Identifier: BSD-3-Clause */
/* test_reentrancy.c -- reentrant locks (DESIGN §5.8; issue 3 item 6)
 * against real redis-server processes.
 *
 * With opts.reentrant the same thread acquiring the same resource on the
 * same client gets the same rl_lock back, counted; Redis is written only
 * by the first acquire and the last release. Checked in Redis: the key's
 * PTTL is not refreshed by a nested acquire, the write commands counted by
 * INFO commandstats do not move, the key stays after an inner release and
 * is gone after the outer one. Another thread, another client or a
 * non-reentrant acquire is an ordinary contender. */
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

static const struct fixture_opts fx = { .nodes = NODES };

/* Every acquire here: reentrant, or not. */
static const rl_acquire_opts reentrant = { .ttl_ms = 10000,
                                           .reentrant = true };
static const rl_acquire_opts plain = { .ttl_ms = 10000 };

/* Sum of calls= of the commands that write a lock key (INFO
 * commandstats), over every node. */
static long long write_calls(struct fixture *f)
{
    static const char *const cmds[] = { "cmdstat_set:", "cmdstat_eval:",
                                        "cmdstat_evalsha:",
                                        "cmdstat_pexpire:",
                                        "cmdstat_pexpireat:", "cmdstat_del:",
                                        "cmdstat_fcall:", "cmdstat_unlink:" };
    long long sum = 0;

    for (int i = 0; i < NODES; i++) {
        redisReply *rep = harness_cmd(&f->r[i], "INFO commandstats");

        assert_non_null(rep);
        assert_int_equal(rep->type, REDIS_REPLY_STRING);
        for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++) {
            const char *p = strstr(rep->str, cmds[k]);

            if (p != NULL) {
                p = strstr(p, "calls=");
                if (p != NULL)
                    sum += strtoll(p + 6, NULL, 10);
            }
        }
        freeReplyObject(rep);
    }
    return sum;
}

/* Nodes where key holds token with PTTL > 0; also the largest PTTL. */
static int holders(struct fixture *f, const char *key, const char *token,
                   long long *max_pttl)
{
    return harness_holders(f->r, NODES, key, token, max_pttl);
}

static bool key_gone(struct fixture *f, const char *key)
{
    return harness_key_gone(f->r, NODES, key);
}

static void test_same_thread_gets_same_lock_and_redis_is_not_touched(
    void **state)
{
    struct fixture *f = *state;
    rl_lock *l1 = NULL;
    rl_lock *l2 = NULL;
    long long calls0;
    long long calls1;
    long long pttl;
    char token[200];

    assert_int_equal(rl_acquire(f->c, "re:one", &reentrant, &l1), RL_OK);
    f->locks[0] = l1;
    snprintf(token, sizeof(token), "%s", rl_lock_token(l1));
    /* The acquire returned at a majority: the minority's writes are
     * awaited before the commands are counted. */
    assert_true(fixture_all_hold(f, "re:one", token, 0, 0));
    calls0 = write_calls(f);
    harness_sleep_ms(500); /* time passes: a refresh would show in PTTL */

    assert_int_equal(rl_acquire(f->c, "re:one", &reentrant, &l2), RL_OK);
    if (l2 != l1)
        f->locks[1] = l2;
    assert_ptr_equal(l2, l1);
    assert_string_equal(rl_lock_token(l2), token);
    /* Not refreshed: no SET/PEXPIRE went out (a call that wrote would
     * have returned only once a majority had counted it). */
    assert_int_equal(holders(f, "re:one", token, &pttl), NODES);
    fprintf(stderr, "  PTTL after nested acquire: %lld\n", pttl);
    assert_true(pttl <= 9600);
    calls1 = write_calls(f);
    assert_int_equal(calls1, calls0);

    /* Inner release: the lock stays, in Redis too. */
    assert_int_equal(rl_release(l2), RL_OK);
    assert_int_equal(holders(f, "re:one", token, NULL), NODES);
    assert_int_equal(write_calls(f), calls0);
    assert_false(rl_lock_lost(l1));
    assert_true(rl_lock_validity_ms(l1) > 0);
    /* Outer release: gone. */
    f->locks[0] = NULL;
    assert_int_equal(rl_release(l1), RL_OK);
    assert_true(key_gone(f, "re:one"));
    assert_true(write_calls(f) > calls0);
}

static void test_three_deep_releases_only_on_the_last(void **state)
{
    struct fixture *f = *state;
    rl_lock *l[3] = { NULL, NULL, NULL };
    char token[200];

    for (int i = 0; i < 3; i++) {
        assert_int_equal(rl_acquire(f->c, "re:deep", &reentrant, &l[i]),
                         RL_OK);
        if (i > 0 && l[i] != l[0])
            f->locks[2 + (i - 1)] = l[i];
        if (i == 0) {
            f->locks[0] = l[0];
            snprintf(token, sizeof(token), "%s", rl_lock_token(l[0]));
        }
        assert_ptr_equal(l[i], l[0]);
    }
    /* Another resource on the same thread is another lock. */
    assert_int_equal(rl_acquire(f->c, "re:deep2", &reentrant, &f->locks[1]),
                     RL_OK);
    assert_ptr_not_equal(f->locks[1], l[0]);
    /* Every node holds it (the acquire returned at a majority); an inner
     * release that deleted would return once a majority had. */
    assert_true(fixture_all_hold(f, "re:deep", token, 0, 0));
    for (int i = 2; i >= 1; i--) {
        assert_int_equal(rl_release(l[i]), RL_OK);
        assert_int_equal(holders(f, "re:deep", token, NULL), NODES);
    }
    f->locks[0] = NULL;
    assert_int_equal(rl_release(l[0]), RL_OK);
    assert_true(key_gone(f, "re:deep"));
    assert_int_equal(rl_release(f->locks[1]), RL_OK);
    f->locks[1] = NULL;
    assert_true(key_gone(f, "re:deep2"));
}

/* A reentrant acquire of resource on f->c from another thread: its
 * status; its lock in *lock. */
static rl_status acquire_on_another_thread(struct fixture *f,
                                           const char *resource,
                                           rl_lock **lock)
{
    struct fixture_acquirer t = { .c = f->c, .resources = &resource,
                                  .count = 1, .o = reentrant };

    fixture_acquirer_start(&t);
    fixture_acquirer_join(&t);
    *lock = t.lock;
    return t.st;
}

static void test_other_thread_is_an_ordinary_contender(void **state)
{
    struct fixture *f = *state;
    char token[200];

    assert_int_equal(rl_acquire(f->c, "re:thr", &reentrant, &f->locks[0]),
                     RL_OK);
    snprintf(token, sizeof(token), "%s", rl_lock_token(f->locks[0]));
    /* Every node holds it before a contender can reach a late one. */
    assert_true(fixture_all_hold(f, "re:thr", token, 0, 0));
    assert_int_equal(acquire_on_another_thread(f, "re:thr", &f->locks[1]),
                     RL_ENOTACQUIRED);
    assert_null(f->locks[1]);
    /* The other thread can take another resource. */
    assert_int_equal(
        acquire_on_another_thread(f, "re:thr-other", &f->locks[2]), RL_OK);
    assert_ptr_not_equal(f->locks[2], f->locks[0]);
    assert_int_equal(holders(f, "re:thr", token, NULL), NODES);
    assert_int_equal(rl_release(f->locks[2]), RL_OK);
    f->locks[2] = NULL;
    assert_int_equal(rl_release(f->locks[0]), RL_OK);
    f->locks[0] = NULL;
    assert_true(key_gone(f, "re:thr"));
}

static void test_non_reentrant_or_other_client_on_same_thread_contends(
    void **state)
{
    struct fixture *f = *state;
    rl_lock *l = NULL;
    char token[200];

    assert_int_equal(rl_acquire(f->c, "re:plain", &reentrant, &f->locks[0]),
                     RL_OK);
    snprintf(token, sizeof(token), "%s", rl_lock_token(f->locks[0]));
    /* Every node holds it before a contender can reach a late one. */
    assert_true(fixture_all_hold(f, "re:plain", token, 0, 0));
    /* Same thread, same client, but not reentrant. */
    assert_int_equal(rl_acquire(f->c, "re:plain", &plain, &l),
                     RL_ENOTACQUIRED);
    assert_null(l);
    /* Same thread, reentrant, but another client. */
    f->c2 = fixture_fast_client(&f->hn);
    assert_non_null(f->c2);
    assert_int_equal(rl_acquire(f->c2, "re:plain", &reentrant, &l),
                     RL_ENOTACQUIRED);
    assert_null(l);
    assert_int_equal(holders(f, "re:plain", token, NULL), NODES);
    assert_int_equal(rl_release(f->locks[0]), RL_OK);
    f->locks[0] = NULL;
    assert_true(key_gone(f, "re:plain"));
    /* Without reentrant, the same thread gets no second handle either. */
    assert_int_equal(rl_acquire(f->c, "re:plain", &plain, &f->locks[0]),
                     RL_OK);
    assert_int_equal(rl_acquire(f->c, "re:plain", &plain, &l),
                     RL_ENOTACQUIRED);
    assert_null(l);
    assert_int_equal(rl_release(f->locks[0]), RL_OK);
    f->locks[0] = NULL;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_same_thread_gets_same_lock_and_redis_is_not_touched),
        cmocka_unit_test(test_three_deep_releases_only_on_the_last),
        cmocka_unit_test(test_other_thread_is_an_ordinary_contender),
        cmocka_unit_test(
            test_non_reentrant_or_other_client_on_same_thread_contends),
    };

    return FIXTURE_RUN("reentrancy", &fx, tests);
}
