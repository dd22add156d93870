/* SPDX-License-Identifier: BSD-3-Clause */
/* test_admin.c -- rl_resource_force_unlock (issue 14 §3) against real
 * redis-server processes.
 *
 * What is proved here:
 *   - a held lock's key is deleted on every node whatever its token, and
 *     each node reports the token and PTTL it removed; the holder's own
 *     release then says RL_ELOST;
 *   - a free resource reports nothing removed (RL_OK, *removed 0); stale
 *     keys on a minority are removed and reported, per node, with their
 *     different tokens;
 *   - the removed token is published on redlock:release:<key> (the
 *     release notification), and a waiter gets the lock long before the
 *     holder's TTL could have run out;
 *   - a holder renewed by the watchdog is reported LOST (callback, flag,
 *     fd) after a force unlock;
 *   - readers of a read-write lock are removed too, each node counting
 *     them, and they learn it (RL_ELOST) when they release;
 *   - with a majority down: RL_ENOQUORUM, keys removed where reachable;
 *   - fence counters and reserved keys are never touched; bad arguments
 *     and the external loop are refused. */
#include <poll.h>
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
#include <ev.h>

#include "fixture.h"

#define NODES 5

static const struct fixture_opts fx = { .nodes = NODES, .second_client = true };

static rl_status force(struct fixture *f, const char *resource,
                       rl_holder_info *out, size_t *removed)
{
    size_t count = 0;
    rl_status st;

    st = rl_resource_force_unlock(f->c, resource, out, NODES, &count,
                                  removed);
    if (st != RL_OK)
        fprintf(stderr, "  force unlock: %s: %s\n", rl_status_name(st),
                rl_last_error());
    assert_int_equal(count, NODES);
    return st;
}

/* Every node's report in out: reachable, voting, no error, and the key
 * it found: token ("" for none) with a PTTL in min_pttl..max_pttl. */
static void every_node_reports(const rl_holder_info *out, const char *token,
                               long long min_pttl, long long max_pttl)
{
    for (int i = 0; i < NODES; i++) {
        assert_true(out[i].reachable);
        assert_true(out[i].voting);
        assert_string_equal(out[i].error, "");
        assert_string_equal(out[i].token, token);
        assert_true(out[i].pttl_ms >= min_pttl &&
                    out[i].pttl_ms <= max_pttl);
    }
}

/* Replace f->c by a client whose keys have this prefix. */
static void use_prefix(struct fixture *f, const char *prefix)
{
    rl_config cfg;

    rl_client_free(f->c);
    fixture_config(&cfg, &f->hn);
    cfg.prefix = prefix;
    f->c = fixture_client(&cfg);
    assert_non_null(f->c);
}

static void test_a_held_lock_is_removed_on_every_node(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = {0};
    rl_holder_info out[NODES];
    size_t removed = 99;
    char token[160];

    o.ttl_ms = 20000;
    assert_int_equal(rl_acquire(f->c2, "admin:held", &o, &f->l), RL_OK);
    snprintf(token, sizeof(token), "%s", rl_lock_token(f->l));
    /* The acquire returns at the quorum: let every node get the key. */
    assert_true(fixture_all_hold(f, "admin:held", token, 0, 0));
    assert_int_equal(force(f, "admin:held", out, &removed), RL_OK);
    assert_int_equal(removed, NODES);
    every_node_reports(out, token, 1, 20000);
    assert_true(harness_key_gone(f->r, NODES, "admin:held"));
    /* The holder is told the truth when it releases. */
    assert_int_equal(rl_release(f->l), RL_ELOST);
    f->l = NULL;
}

static void test_a_free_resource_reports_nothing_removed(void **state)
{
    struct fixture *f = *state;
    rl_holder_info out[NODES];
    size_t removed = 99;

    assert_int_equal(force(f, "admin:free", out, &removed), RL_OK);
    assert_int_equal(removed, 0);
    every_node_reports(out, "", -2, -2);
    /* removed may be NULL. */
    assert_int_equal(rl_resource_force_unlock(f->c, "admin:free", out, 1,
                                              &(size_t){0}, NULL),
                     RL_OK);
}

static void test_stale_keys_on_a_minority_are_removed(void **state)
{
    struct fixture *f = *state;
    rl_holder_info out[NODES];
    size_t removed = 0;

    assert_true(harness_ok(harness_cmd(&f->r[1], "SET admin:stale tokA")));
    assert_true(harness_ok(
        harness_cmd(&f->r[3], "SET admin:stale tokB PX 60000")));
    assert_int_equal(force(f, "admin:stale", out, &removed), RL_OK);
    assert_int_equal(removed, 2);
    assert_string_equal(out[1].token, "tokA");
    assert_int_equal(out[1].pttl_ms, -1);
    assert_string_equal(out[3].token, "tokB");
    assert_true(out[3].pttl_ms > 0);
    assert_string_equal(out[0].token, "");
    assert_true(harness_key_gone(f->r, NODES, "admin:stale"));
}

static void test_the_prefix_is_applied(void **state)
{
    struct fixture *f = *state;
    rl_holder_info out[NODES];
    size_t removed = 0;

    use_prefix(f, "app:");
    assert_true(harness_ok(harness_cmd(&f->r[0], "SET app:job t1")));
    assert_true(harness_ok(harness_cmd(&f->r[0], "SET job t2")));
    assert_int_equal(force(f, "job", out, &removed), RL_OK);
    assert_int_equal(removed, 1);
    assert_string_equal(out[0].token, "t1");
    assert_true(harness_key_absent(&f->r[0], "app:job"));
    assert_true(harness_key_holds_ttl(&f->r[0], "job", "t2", -1, -1));
}

static void test_the_removed_token_is_published(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = {0};
    rl_holder_info out[NODES];
    redisContext *sub;
    redisReply *rep;
    size_t removed;
    void *msg = NULL;

    o.ttl_ms = 20000;
    assert_int_equal(rl_acquire(f->c2, "admin:pub", &o, &f->l), RL_OK);
    assert_true(harness_key_holds(&f->r[2], "admin:pub",
                                  rl_lock_token(f->l)));
    sub = harness_connect(&f->r[2]);
    assert_non_null(sub);
    rep = redisCommand(sub, "SUBSCRIBE redlock:release:admin:pub");
    assert_non_null(rep);
    freeReplyObject(rep);
    assert_int_equal(force(f, "admin:pub", out, &removed), RL_OK);
    assert_int_equal(redisGetReply(sub, &msg), REDIS_OK);
    rep = msg;
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_int_equal(rep->elements, 3);
    assert_string_equal(rep->element[0]->str, "message");
    assert_string_equal(rep->element[1]->str, "redlock:release:admin:pub");
    assert_string_equal(rep->element[2]->str, rl_lock_token(f->l));
    freeReplyObject(rep);
    redisFree(sub);
}

struct waiter_arg {
    rl_client *c;
    rl_lock *l;
    rl_status st;
    int64_t done_ms;
};

static void *wait_for_lock(void *p)
{
    struct waiter_arg *w = p;
    rl_acquire_opts o = {0};

    o.ttl_ms = 5000;
    o.wait_ms = harness_scale_ms(30000);
    w->st = rl_acquire(w->c, "admin:handoff", &o, &w->l);
    w->done_ms = harness_now_ms();
    return NULL;
}

static void test_a_waiter_gets_the_lock_after_a_force_unlock(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = {0};
    rl_holder_info out[NODES];
    struct waiter_arg w = {0};
    rl_client *c3 = fixture_fast_client(&f->hn);
    pthread_t t;
    size_t removed;
    int64_t forced_ms;

    assert_non_null(c3);
    o.ttl_ms = 20000;
    assert_int_equal(rl_acquire(f->c2, "admin:handoff", &o, &f->l), RL_OK);
    /* Every node holds it before the waiter can reach a late one. */
    assert_true(fixture_all_hold(f, "admin:handoff", rl_lock_token(f->l), 0,
                                 0));
    w.c = c3;
    assert_int_equal(pthread_create(&t, NULL, wait_for_lock, &w), 0);
    /* The waiter has been refused (and waits). */
    assert_true(FIXTURE_WAIT_TOTAL(c3, contended, 1, 5000));
    forced_ms = harness_now_ms();
    assert_int_equal(force(f, "admin:handoff", out, &removed), RL_OK);
    assert_int_equal(removed, NODES);
    pthread_join(t, NULL);
    assert_int_equal(w.st, RL_OK);
    /* Long before the holder's 20 s TTL would have freed it. */
    assert_true(w.done_ms - forced_ms < harness_scale_ms(5000));
    assert_true(harness_holders(f->r, NODES, "admin:handoff",
                                rl_lock_token(w.l), NULL) >= 3);
    assert_int_equal(rl_release(w.l), RL_OK);
    rl_client_free(c3);
}

/* What the lost callback saw (it runs on the loop thread: no asserts). */
struct lost_rec {
    atomic_int calls;
    bool flag;            /* rl_lock_lost() inside the callback */
    int64_t validity_ms;  /* rl_lock_validity_ms() inside the callback */
};

static void on_lost(rl_lock *l, void *privdata)
{
    struct lost_rec *r = privdata;

    r->flag = rl_lock_lost(l);
    r->validity_ms = rl_lock_validity_ms(l);
    atomic_fetch_add(&r->calls, 1);
}

static void test_a_watchdog_holder_is_reported_lost(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = {0};
    rl_holder_info out[NODES];
    struct lost_rec rec = {0};
    struct pollfd p;
    size_t removed;

    o.ttl_ms = 3000;
    o.auto_extend = true;
    o.lost_cb = on_lost;
    o.lost_privdata = &rec;
    assert_int_equal(rl_acquire(f->c2, "admin:watched", &o, &f->l), RL_OK);
    /* Renewed at least once, and on every node, before the force. */
    assert_true(FIXTURE_WAIT_TOTAL(f->c2, renewals, 1, 5000));
    assert_true(fixture_all_hold(f, "admin:watched", rl_lock_token(f->l), 0,
                                 0));
    assert_false(rl_lock_lost(f->l));
    assert_int_equal(force(f, "admin:watched", out, &removed), RL_OK);
    assert_int_equal(removed, NODES);
    /* Next renewal (every ttl/3 = 1 s) finds the key gone on every node. */
    assert_true(harness_wait_count(&rec.calls, 1, 5000));
    assert_true(rec.flag);
    assert_true(rl_lock_lost(f->l));
    p.fd = rl_lock_lost_fd(f->l);
    p.events = POLLIN;
    assert_int_equal(poll(&p, 1, 0), 1);
    /* It was told before its validity ended. */
    fprintf(stderr, "  lost reported with %lld ms of validity left\n",
            (long long)rec.validity_ms);
    assert_true(rec.validity_ms > 0);
    harness_sleep_ms(200);
    assert_int_equal(atomic_load(&rec.calls), 1);
    /* Gone stays gone: the watchdog did not recreate the key. */
    assert_true(harness_key_gone(f->r, NODES, "admin:watched"));
}

static void test_no_quorum_with_a_majority_down(void **state)
{
    struct fixture *f = *state;
    rl_holder_info out[NODES];
    size_t removed = 0;
    int i;

    for (i = 0; i < NODES; i++)
        assert_true(harness_ok(harness_cmd(&f->r[i], "SET admin:nq tok")));
    harness_kill(&f->r[0]);
    harness_kill(&f->r[1]);
    harness_kill(&f->r[2]);
    assert_int_equal(force(f, "admin:nq", out, &removed), RL_ENOQUORUM);
    assert_non_null(strstr(rl_last_error(), "only 2 of 5"));
    assert_int_equal(removed, 2);
    for (i = 0; i < 3; i++) {
        assert_false(out[i].reachable);
        assert_true(out[i].error[0] != '\0');
    }
    assert_string_equal(out[3].token, "tok");
    assert_true(harness_key_absent(&f->r[3], "admin:nq"));
    assert_true(harness_key_absent(&f->r[4], "admin:nq"));
}

static void test_fence_counters_and_reserved_keys_are_never_touched(
    void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = {0};
    rl_holder_info out[NODES];
    size_t removed = 0;
    size_t count = 0;
    char *fence;
    int i;

    o.ttl_ms = 20000;
    o.fencing = true;
    assert_int_equal(rl_acquire(f->c2, "admin:fenced", &o, &f->l), RL_OK);
    assert_true(rl_lock_fence(f->l) > 0);
    assert_int_equal(force(f, "admin:fenced", out, &removed), RL_OK);
    assert_true(removed >= 3);
    for (i = 0; i < NODES; i++) {
        fence = harness_get(&f->r[i], "redlock:fence");
        if (fence != NULL) {
            assert_true(strtoull(fence, NULL, 10) >= rl_lock_fence(f->l));
            free(fence);
        }
    }
    assert_true(harness_key_count(f->r, NODES, "redlock:fence") >= 3);
    /* Reserved names: directly, and through the prefix. */
    assert_int_equal(rl_resource_force_unlock(f->c,
                                              "redlock:fence:admin:fenced",
                                              out, NODES, &count, &removed),
                     RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "reserved"));
    use_prefix(f, "red");
    assert_int_equal(rl_resource_force_unlock(f->c, "lock:fence:admin:fenced",
                                              out, NODES, &count, &removed),
                     RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "reserved"));
    assert_true(harness_key_count(f->r, NODES, "redlock:fence") >= 3);
}

/* HLEN key == n on every node, looked at until a scaled 3 s have passed. */
static bool every_node_has_readers(struct fixture *f, const char *key,
                                   long long n)
{
    int64_t end = harness_now_ms() + harness_scale_ms(3000);
    long long len = -1;
    int i = 0;

    while (i < NODES) {
        redisReply *rep = harness_cmd(&f->r[i], "HLEN %s", key);

        len = rep != NULL && rep->type == REDIS_REPLY_INTEGER ? rep->integer
                                                              : -1;
        if (rep != NULL)
            freeReplyObject(rep);
        if (len == n)
            i++;
        else if (harness_now_ms() > end)
            break;
        else
            harness_sleep_ms(10);
    }
    if (i < NODES)
        fprintf(stderr, "  %s: HLEN %lld on node %d, want %lld\n", key, len,
                i, n);
    return i == NODES;
}

static void test_readers_are_removed_and_counted(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = {0};
    rl_holder_info out[NODES];
    rl_lock *readers[2];
    size_t removed = 0;
    int i;

    o.ttl_ms = 20000;
    o.mode = RL_MODE_SHARED;
    for (i = 0; i < 2; i++)
        assert_int_equal(rl_acquire(f->c2, "admin:rw", &o, &readers[i]),
                         RL_OK);
    /* The acquires return at the quorum: let every node get both. */
    assert_true(every_node_has_readers(f, "admin:rw", 2));
    assert_int_equal(force(f, "admin:rw", out, &removed), RL_OK);
    assert_int_equal(removed, NODES);
    every_node_reports(out, "", 1, 20000);
    for (i = 0; i < NODES; i++)
        assert_int_equal(out[i].readers, 2);
    assert_true(harness_key_gone(f->r, NODES, "admin:rw"));
    /* The readers are told the truth when they release. */
    for (i = 0; i < 2; i++)
        assert_int_equal(rl_release(readers[i]), RL_ELOST);
    o.mode = RL_MODE_EXCLUSIVE;
    assert_int_equal(rl_acquire(f->c2, "admin:rw", &o, &f->l), RL_OK);
}

static void test_a_key_that_is_not_a_string_is_left_alone(void **state)
{
    struct fixture *f = *state;
    rl_holder_info out[NODES];
    size_t removed = 0;
    redisReply *rep = harness_cmd(&f->r[0], "LPUSH admin:list x");

    assert_non_null(rep);
    assert_int_equal(rep->integer, 1);
    freeReplyObject(rep);
    assert_int_equal(force(f, "admin:list", out, &removed), RL_OK);
    assert_int_equal(removed, 0);
    assert_false(out[0].reachable);
    assert_non_null(strstr(out[0].error, "WRONGTYPE"));
    assert_int_equal(harness_key_count(f->r, NODES, "admin:list"), 1);
}

static void test_bad_arguments_are_refused(void **state)
{
    struct fixture *f = *state;
    rl_holder_info out[NODES];
    size_t count = 0;
    size_t removed = 7;
    rl_config cfg;
    rl_client *ext;

    assert_int_equal(rl_resource_force_unlock(NULL, "x", out, NODES, &count,
                                              &removed),
                     RL_EINVAL);
    assert_int_equal(removed, 0);
    assert_int_equal(rl_resource_force_unlock(f->c, NULL, out, NODES, &count,
                                              NULL),
                     RL_EINVAL);
    assert_int_equal(rl_resource_force_unlock(f->c, "", out, NODES, &count,
                                              NULL),
                     RL_EINVAL);
    assert_int_equal(rl_resource_force_unlock(f->c, "x", NULL, NODES, &count,
                                              NULL),
                     RL_EINVAL);
    assert_int_equal(rl_resource_force_unlock(f->c, "x", out, NODES, NULL,
                                              NULL),
                     RL_EINVAL);
    assert_int_equal(rl_resource_force_unlock(f->c, "x", out, 0, &count,
                                              NULL),
                     RL_EINVAL);
    f->loop = ev_loop_new(EVFLAG_AUTO);
    assert_non_null(f->loop);
    fixture_config(&cfg, &f->hn);
    cfg.loop = f->loop;
    ext = fixture_client(&cfg);
    assert_non_null(ext);
    assert_int_equal(rl_resource_force_unlock(ext, "x", out, NODES, &count,
                                              NULL),
                     RL_EMISUSE);
    rl_client_free(ext);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_held_lock_is_removed_on_every_node),
        cmocka_unit_test(test_a_free_resource_reports_nothing_removed),
        cmocka_unit_test(test_stale_keys_on_a_minority_are_removed),
        cmocka_unit_test(test_the_prefix_is_applied),
        cmocka_unit_test(test_the_removed_token_is_published),
        cmocka_unit_test(test_a_waiter_gets_the_lock_after_a_force_unlock),
        cmocka_unit_test(test_readers_are_removed_and_counted),
        cmocka_unit_test(test_a_watchdog_holder_is_reported_lost),
        cmocka_unit_test(test_no_quorum_with_a_majority_down),
        cmocka_unit_test(
            test_fence_counters_and_reserved_keys_are_never_touched),
        cmocka_unit_test(test_a_key_that_is_not_a_string_is_left_alone),
        cmocka_unit_test(test_bad_arguments_are_refused),
    };

    return FIXTURE_RUN("tests", &fx, tests);
}
