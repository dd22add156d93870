/* SPDX-License-Identifier: BSD-3-Clause */
/* test_lock_basic.c -- the lock operations against 1, 3 and 5 real
 * redis-server nodes: what the calls return *and* what ends up stored in
 * Redis (token values, PTTLs, keys left behind). DESIGN §5.1-5.4, §6. */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"


/* The tests check what each node stores, so no healthy node may be
 * dropped for a slow reply on a busy machine (no test here waits for a
 * node to time out). */
static void generous_op_timeout(rl_config *cfg)
{
    cfg->op_timeout_ms = (uint32_t)harness_scale_ms(2000);
}

#define NODES_OPTS(count)                                                     \
    { .nodes = (count), .all_voting = true, .tune = generous_op_timeout }
static const struct fixture_opts one = NODES_OPTS(1);
static const struct fixture_opts three = NODES_OPTS(3);
static const struct fixture_opts five = NODES_OPTS(5);

/* A client on f's nodes, every one of them connected and voting, keys
 * prefixed with prefix (may be NULL). */
static rl_client *new_client(const struct fixture *f, const char *prefix)
{
    rl_config cfg;
    rl_client *c;

    fixture_config(&cfg, &f->hn);
    cfg.prefix = prefix;
    generous_op_timeout(&cfg);
    c = fixture_client(&cfg);
    if (c != NULL && !fixture_all_voting(c)) {
        rl_client_free(c);
        return NULL;
    }
    return c;
}

/* ---- Checks (those on what Redis holds are in harness.h) ---- */

static bool is_hex_token(const char *t)
{
    size_t len;

    if (t == NULL)
        return false;
    len = strlen(t);
    if (len < 32)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (!isxdigit((unsigned char)t[i]))
            return false;
    }
    return true;
}

static void set_on_all(const struct fixture *f, const char *key, const char *val,
                       int ttl_ms)
{
    for (int i = 0; i < f->n; i++)
        assert_true(harness_ok(harness_cmd(&f->r[i], "SET %s %s NX PX %d",
                                           key, val, ttl_ms)));
}

/* ---- Tests ---- */

static void test_acquire_stores_the_token_on_every_node(void **state)
{
    struct fixture *f = *state;
    int64_t t0 = harness_now_ms();
    rl_lock *l = fixture_acquire(f->c, "basic:res", 10000);

    assert_non_null(l);
    assert_true(is_hex_token(rl_lock_token(l)));
    assert_string_equal(rl_lock_resource(l), "basic:res");
    /* The verdict comes as soon as a majority agrees (§5.1). */
    assert_in_range(rl_lock_nodes_ok(l), f->n / 2 + 1, f->n);
    assert_false(rl_lock_lost(l));
    assert_true(fixture_all_hold(f, "basic:res", rl_lock_token(l), t0, 10000));
    /* Nothing but the lock key itself. */
    for (int i = 0; i < f->n; i++)
        assert_int_equal(harness_dbsize(&f->r[i]), 1);
    assert_int_equal(rl_release(l), RL_OK);
    assert_true(harness_all_empty(f->r, f->n));
}

static void test_validity_is_at_most_ttl_minus_drift(void **state)
{
    struct fixture *f = *state;
    int64_t t0 = harness_now_ms();
    rl_lock *l = fixture_acquire(f->c, "basic:validity", 10000);
    /* default drift factor 0.01: drift = 10000 * 0.01 + 2 ms */
    int64_t v = rl_lock_validity_ms(l);

    assert_true(fixture_validity_from(l, t0, 10000 - 100 - 2));
    harness_sleep_ms(200);
    assert_true(rl_lock_validity_ms(l) <= v - 150);
    assert_int_equal(rl_release(l), RL_OK);
}

static void test_second_acquire_of_a_held_resource_is_not_acquired(
    void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = { 0 };
    rl_lock *l2 = NULL;
    rl_lock *l;
    char token[128];
    int64_t t0;

    f->c2 = new_client(f, NULL);
    assert_non_null(f->c2);
    t0 = harness_now_ms();
    l = fixture_acquire(f->c, "basic:held", 10000);
    snprintf(token, sizeof(token), "%s", rl_lock_token(l));
    /* rl_acquire returns at a majority: wait for the last nodes' writes,
     * or a contender reaching such a node first takes it there (and its
     * rollback leaves that node empty), which is correct but not what
     * the check below is about. */
    assert_true(fixture_all_hold(f, "basic:held", token, t0, 10000));
    /* Same client and another client: both are turned away. */
    o.ttl_ms = 10000;
    assert_int_equal(rl_acquire(f->c, "basic:held", &o, &l2),
                     RL_ENOTACQUIRED);
    assert_null(l2);
    assert_int_equal(rl_acquire(f->c2, "basic:held", &o, &l2),
                     RL_ENOTACQUIRED);
    assert_null(l2);
    /* The failed attempts rolled back without touching the holder's key
     * (its expiry is still the acquire's). */
    assert_true(fixture_all_hold(f, "basic:held", token, t0, 10000));
    assert_int_equal(rl_release(l), RL_OK);
    l2 = fixture_acquire(f->c2, "basic:held", 10000);
    assert_int_equal(rl_release(l2), RL_OK);
    assert_true(harness_all_empty(f->r, f->n));
}

static void test_release_deletes_the_keys_on_every_node(void **state)
{
    struct fixture *f = *state;
    rl_lock *l = fixture_acquire(f->c, "basic:rel", 5000);

    assert_int_equal(rl_release(l), RL_OK);
    assert_true(harness_key_gone(f->r, f->n, "basic:rel"));
    assert_true(harness_all_empty(f->r, f->n));
}

static void test_extend_refreshes_the_pttl_on_every_node(void **state)
{
    struct fixture *f = *state;
    int64_t t0 = harness_now_ms();
    rl_lock *l = fixture_acquire(f->c, "basic:ext", 2000);
    char token[128];

    snprintf(token, sizeof(token), "%s", rl_lock_token(l));
    /* Every node first has the acquire's expiry (a late node's SET after
     * the extend would keep it: the extend never creates a key); the
     * extend's expiry, an instant 10 s after the call, is then one the
     * acquire's (2 s after it) cannot pass for. */
    assert_true(fixture_all_hold(f, "basic:ext", token, t0, 2000));
    t0 = harness_now_ms();
    assert_int_equal(rl_extend(l, 10000), RL_OK);
    assert_true(fixture_validity_from(l, t0, 10000 - 100 - 2));
    assert_true(fixture_all_hold(f, "basic:ext", token, t0, 10000));
    /* ttl 0: the TTL it was acquired with. */
    t0 = harness_now_ms();
    assert_int_equal(rl_extend(l, 0), RL_OK);
    assert_true(fixture_all_hold(f, "basic:ext", token, t0, 2000));
    assert_true(rl_lock_validity_ms(l) <= 2000 - 20 - 2);
    assert_int_equal(rl_release(l), RL_OK);
    assert_true(harness_all_empty(f->r, f->n));
}

static void test_expired_lock_can_be_taken_by_another_client(void **state)
{
    struct fixture *f = *state;
    rl_lock *l;
    rl_lock *l2;
    rl_status st;
    int64_t t0;

    f->c2 = new_client(f, NULL);
    assert_non_null(f->c2);
    l = fixture_acquire(f->c, "basic:expiry", 300);
    assert_true(rl_lock_validity_ms(l) <= 300 - 3 - 2);
    harness_sleep_ms(400);
    assert_true(rl_lock_validity_ms(l) <= 0);
    assert_true(harness_key_gone(f->r, f->n, "basic:expiry"));
    t0 = harness_now_ms();
    l2 = fixture_acquire(f->c2, "basic:expiry", 10000);
    /* Every node has the new holder's key before the stale release is
     * sent (else a late node could miss it for a reason of its own). */
    assert_true(fixture_all_hold(f, "basic:expiry", rl_lock_token(l2), t0,
                                 10000));
    /* The stale holder's release must not delete the new holder's keys. */
    st = rl_release(l);
    assert_true(st == RL_ELOST || st == RL_ENOTACQUIRED);
    assert_true(fixture_all_hold(f, "basic:expiry", rl_lock_token(l2), t0,
                                 10000));
    assert_int_equal(rl_release(l2), RL_OK);
    assert_true(harness_all_empty(f->r, f->n));
}

/* A lock of resource on f->c whose TTL (300 ms) has run out. */
static rl_lock *expired_lock(struct fixture *f, const char *resource)
{
    rl_lock *l = fixture_acquire(f->c, resource, 300);

    harness_sleep_ms(450);
    return l;
}

static void test_release_of_an_expired_lock_is_lost(void **state)
{
    struct fixture *f = *state;

    assert_int_equal(rl_release(expired_lock(f, "basic:lost")), RL_ELOST);
    assert_true(harness_all_empty(f->r, f->n));
}

/* ---- Release: one answer for the same keys, whatever the reply order ----
 * Node `last` is paused (SIGSTOP) before the release and resumed only once
 * the client has counted every other node's reply (its vote counters),
 * so its reply is counted last: the order is set, not raced. */

/* Replies of node i that c's rounds have counted so far. */
static uint64_t counted(rl_client *c, size_t i)
{
    rl_node_stats s;

    if (rl_client_node_stats(c, i, &s) != RL_OK)
        return 0;
    return s.votes_for + s.votes_against;
}

struct last_node {
    struct fixture *f;
    int last;                           /* paused, answers last */
    uint64_t before[FIXTURE_MAX_NODES]; /* counted() before the release */
    bool others_first;                  /* the others were counted first */
    pthread_t thread;
};

static void *resume_last(void *arg)
{
    struct last_node *x = arg;
    int64_t until = harness_now_ms() + harness_scale_ms(5000);
    int i;

    for (;;) {
        x->others_first = true;
        for (i = 0; i < x->f->n; i++) {
            if (i != x->last && counted(x->f->c, (size_t)i) <= x->before[i])
                x->others_first = false;
        }
        if (x->others_first || harness_now_ms() >= until)
            break;
        harness_sleep_ms(1);
    }
    harness_resume(&x->f->r[x->last]);
    return NULL;
}

/* Once l's key is on every node, delete it on those not in the bit set
 * keep (bit i: node i). */
static void keep_only(struct fixture *f, const rl_lock *l, unsigned keep)
{
    const char *res = rl_lock_resource(l);
    int i;

    for (i = 0; i < f->n; i++) { /* the acquire returned at a quorum */
        assert_true(harness_key_holds(&f->r[i], res, rl_lock_token(l)));
        if (!(keep >> i & 1u))
            assert_int_equal(
                harness_int(harness_cmd(&f->r[i], "DEL %s", res), -1), 1);
    }
}

/* keep_only, then pause node x->last and start the thread that resumes
 * it. */
static void set_up_release(struct fixture *f, const rl_lock *l,
                           unsigned keep, struct last_node *x)
{
    int i;

    keep_only(f, l, keep);
    for (i = 0; i < f->n; i++)
        x->before[i] = counted(f->c, (size_t)i);
    x->f = f;
    assert_int_equal(harness_pause(&f->r[x->last]), 0);
    assert_int_equal(pthread_create(&x->thread, NULL, resume_last, x), 0);
}

/* rl_release of a lock on res whose key is left on the nodes of keep,
 * node last answering after the others. */
static rl_status release_in_order(struct fixture *f, const char *res,
                                  unsigned keep, int last)
{
    rl_lock *l = fixture_acquire(f->c, res, 10000);
    struct last_node x = {.last = last};
    rl_status st;

    set_up_release(f, l, keep, &x);
    st = rl_release(l);
    pthread_join(x.thread, NULL);
    assert_true(x.others_first);
    return st;
}

static void test_release_answer_does_not_depend_on_reply_order(void **state)
{
    struct fixture *f = *state;

    /* Key on node 0 only: a quorum no longer held it, so the lock may have
     * been lost before the release, whichever node answers last. */
    assert_int_equal(release_in_order(f, "basic:order1", 1u, 0), RL_ELOST);
    assert_int_equal(release_in_order(f, "basic:order2", 1u, 2), RL_ELOST);
    /* Key on nodes 0 and 1: held by a quorum up to the release. */
    assert_int_equal(release_in_order(f, "basic:order3", 3u, 0), RL_OK);
    assert_int_equal(release_in_order(f, "basic:order4", 3u, 2), RL_OK);
    assert_true(harness_all_empty(f->r, f->n));
}

/* Node 2 paused through the whole release (its request times out). */
static rl_status release_without_node_2(struct fixture *f, const char *res,
                                        unsigned keep)
{
    rl_lock *l = fixture_acquire(f->c, res, 10000);
    rl_status st;

    keep_only(f, l, keep);
    assert_int_equal(harness_pause(&f->r[2]), 0);
    st = rl_release(l);
    assert_int_equal(harness_resume(&f->r[2]), 0);
    return st;
}

static void test_release_that_cannot_tell_says_no_quorum(void **state)
{
    struct fixture *f = *state;

    /* Known whatever node 2 would say: decided without it. */
    assert_int_equal(release_without_node_2(f, "basic:unknown1", 3u), RL_OK);
    assert_int_equal(release_without_node_2(f, "basic:unknown2", 0u),
                     RL_ELOST);
    /* Node 0 had it, node 1 not, node 2 never answers: held or lost,
     * nobody can tell (last: node 2's request times out). */
    assert_int_equal(release_without_node_2(f, "basic:unknown3", 1u),
                     RL_ENOQUORUM);
}

/* The section of the case below: the key vanishes from nodes 1 and 2
 * (as after a failover that lost it), which no renewal saw yet. */
static int lose_two_keys(rl_lock *l, void *arg)
{
    struct last_node *x = arg;

    set_up_release(x->f, l, 1u, x);
    return 0;
}

static void test_with_lock_is_ok_only_when_held_throughout(void **state)
{
    struct fixture *f = *state;
    struct last_node x = {.f = f, .last = 2};

    /* Node 0 (still holding it) answers the release before node 2. */
    assert_int_equal(rl_with_lock(f->c, "basic:section", NULL, lose_two_keys,
                                  &x, NULL),
                     RL_ELOST);
    pthread_join(x.thread, NULL);
    assert_true(x.others_first);
    assert_true(harness_all_empty(f->r, f->n));
}

static void test_extend_of_an_expired_lock_is_lost(void **state)
{
    struct fixture *f = *state;
    rl_lock *l = expired_lock(f, "basic:lostext");

    assert_int_equal(rl_extend(l, 5000), RL_ELOST);
    assert_true(rl_lock_lost(l));
    /* Never resurrected (§5.4). */
    assert_true(harness_all_empty(f->r, f->n));
    rl_lock_free(l);
}

static void test_adopted_token_can_be_extended_and_released(void **state)
{
    struct fixture *f = *state;
    rl_lock *l;
    rl_lock *a = NULL;
    int64_t t0;

    f->c2 = new_client(f, NULL);
    assert_non_null(f->c2);
    t0 = harness_now_ms();
    l = fixture_acquire(f->c, "basic:adopt", 3000);
    /* The acquire returned at a majority: a late node's SET PX 3000 that
     * lands after the extend below would keep 3 s (an extend creates no
     * key). Every node holds the token first. */
    assert_true(fixture_all_hold(f, "basic:adopt", rl_lock_token(l), t0,
                                 3000));
    assert_int_equal(rl_lock_adopt(f->c2, "basic:adopt", rl_lock_token(l),
                                   &a),
                     RL_OK);
    assert_non_null(a);
    assert_string_equal(rl_lock_token(a), rl_lock_token(l));
    assert_string_equal(rl_lock_resource(a), "basic:adopt");
    assert_true(rl_lock_validity_ms(a) <= 0);
    t0 = harness_now_ms();
    assert_int_equal(rl_extend(a, 8000), RL_OK);
    assert_true(fixture_validity_from(a, t0, 8000 - 80 - 2));
    assert_true(fixture_all_hold(f, "basic:adopt", rl_lock_token(l), t0,
                                 8000));
    assert_int_equal(rl_release(a), RL_OK);
    assert_true(harness_all_empty(f->r, f->n));
    rl_lock_free(l);
}

static void test_adopting_a_wrong_token_releases_nothing(void **state)
{
    struct fixture *f = *state;
    int64_t t0 = harness_now_ms();
    rl_lock *l = fixture_acquire(f->c, "basic:wrongtok", 5000);
    rl_lock *a = NULL;

    /* Every node holds it before the wrong release, so a node's key left
     * alone is the release's doing, not a late SET's. */
    assert_true(fixture_all_hold(f, "basic:wrongtok", rl_lock_token(l), t0,
                                 5000));
    assert_int_equal(rl_lock_adopt(f->c, "basic:wrongtok",
                                   "00000000000000000000000000000000", &a),
                     RL_OK);
    assert_int_equal(rl_release(a), RL_ENOTACQUIRED);
    assert_true(fixture_all_hold(f, "basic:wrongtok", rl_lock_token(l), t0,
                                 5000));
    assert_int_equal(rl_release(l), RL_OK);
    assert_true(harness_all_empty(f->r, f->n));
}

static void test_prefix_is_prepended_to_the_key(void **state)
{
    struct fixture *f = *state;
    rl_lock *l;
    int64_t t0;

    f->c2 = new_client(f, "app1:");
    assert_non_null(f->c2);
    t0 = harness_now_ms();
    l = fixture_acquire(f->c2, "jobs", 5000);
    assert_string_equal(rl_lock_resource(l), "jobs");
    assert_true(fixture_all_hold(f, "app1:jobs", rl_lock_token(l), t0, 5000));
    assert_true(harness_key_gone(f->r, f->n, "jobs"));
    assert_int_equal(rl_release(l), RL_OK);
    assert_true(harness_all_empty(f->r, f->n));
}

static void test_multi_acquire_sets_every_key_and_release_clears_them(
    void **state)
{
    struct fixture *f = *state;
    const char *res[] = { "multi:a", "multi:b", "multi:c" };
    rl_acquire_opts o = { 0 };
    rl_lock *l = NULL;
    int64_t t0 = harness_now_ms();

    o.ttl_ms = 5000;
    assert_int_equal(rl_acquire_multi(f->c, res, 3, &o, &l), RL_OK);
    assert_string_equal(rl_lock_resource(l), "multi:a");
    for (int k = 0; k < 3; k++)
        assert_true(fixture_all_hold(f, res[k], rl_lock_token(l), t0, 5000));
    t0 = harness_now_ms();
    assert_int_equal(rl_extend(l, 9000), RL_OK);
    for (int k = 0; k < 3; k++)
        assert_true(fixture_all_hold(f, res[k], rl_lock_token(l), t0, 9000));
    assert_int_equal(rl_release(l), RL_OK);
    assert_true(harness_all_empty(f->r, f->n));
}

static void test_multi_acquire_is_all_or_nothing(void **state)
{
    struct fixture *f = *state;
    const char *res[] = { "aon:a", "aon:b", "aon:c" };
    rl_acquire_opts o = { 0 };
    rl_lock *l = NULL;
    int64_t t0 = harness_now_ms();

    set_on_all(f, "aon:b", "someone-else", 10000);
    o.ttl_ms = 5000;
    assert_int_equal(rl_acquire_multi(f->c, res, 3, &o, &l),
                     RL_ENOTACQUIRED);
    assert_null(l);
    assert_true(harness_key_gone(f->r, f->n, "aon:a"));
    assert_true(harness_key_gone(f->r, f->n, "aon:c"));
    assert_true(fixture_all_hold(f, "aon:b", "someone-else", t0, 10000));
    for (int i = 0; i < f->n; i++)
        assert_int_equal(harness_dbsize(&f->r[i]), 1);
}

static void test_key_set_by_plain_set_nx_px_is_respected_and_adoptable(
    void **state)
{
    struct fixture *f = *state;
    /* How redsync / node-redlock store a lock: SET key token NX PX ttl. */
    const char *foreign = "f00dfeedf00dfeedf00dfeedf00dfeed";
    rl_acquire_opts o = { 0 };
    rl_lock *l = NULL;
    rl_lock *a = NULL;
    int64_t t0 = harness_now_ms();

    set_on_all(f, "interop:res", foreign, 10000);
    o.ttl_ms = 5000;
    assert_int_equal(rl_acquire(f->c, "interop:res", &o, &l),
                     RL_ENOTACQUIRED);
    assert_true(fixture_all_hold(f, "interop:res", foreign, t0, 10000));
    assert_int_equal(rl_lock_adopt(f->c, "interop:res", foreign, &a), RL_OK);
    assert_int_equal(rl_release(a), RL_OK);
    assert_true(harness_all_empty(f->r, f->n));
}

static void test_lock_is_released_by_a_plain_compare_and_delete(
    void **state)
{
    struct fixture *f = *state;
    /* redsync's / node-redlock's release script. */
    const char *cad = "if redis.call('get', KEYS[1]) == ARGV[1] then "
                      "return redis.call('del', KEYS[1]) else return 0 end";
    int64_t t0 = harness_now_ms();
    rl_lock *l = fixture_acquire(f->c, "interop:out", 5000);

    /* The acquire returned at a majority: every node holds it first. */
    assert_true(fixture_all_hold(f, "interop:out", rl_lock_token(l), t0, 5000));
    for (int i = 0; i < f->n; i++) {
        redisReply *rep = harness_cmd(&f->r[i], "EVAL %s 1 %s %s", cad,
                                      "interop:out", rl_lock_token(l));

        assert_non_null(rep);
        assert_int_equal(rep->type, REDIS_REPLY_INTEGER);
        assert_int_equal(rep->integer, 1);
        freeReplyObject(rep);
    }
    assert_true(harness_all_empty(f->r, f->n));
    rl_lock_free(l);
}

static void test_distinct_acquisitions_get_distinct_tokens(void **state)
{
    struct fixture *f = *state;
    char seen[20][128];

    for (int k = 0; k < 20; k++) {
        rl_lock *l = fixture_acquire(f->c, "basic:tokens", 5000);

        snprintf(seen[k], sizeof(seen[k]), "%s", rl_lock_token(l));
        for (int j = 0; j < k; j++)
            assert_string_not_equal(seen[j], seen[k]);
        assert_int_equal(rl_release(l), RL_OK);
    }
    assert_true(harness_all_empty(f->r, f->n));
}

#define NODES_TEST(fn, n)                                                     \
    { #fn "/" #n, fn, fixture_setup, fixture_teardown, (void *)&n }
#define ALL_SIZES(fn)                                                         \
    NODES_TEST(fn, one), NODES_TEST(fn, three), NODES_TEST(fn, five)

int main(void)
{
    const struct CMUnitTest tests[] = {
        ALL_SIZES(test_acquire_stores_the_token_on_every_node),
        ALL_SIZES(test_validity_is_at_most_ttl_minus_drift),
        ALL_SIZES(test_second_acquire_of_a_held_resource_is_not_acquired),
        ALL_SIZES(test_release_deletes_the_keys_on_every_node),
        ALL_SIZES(test_extend_refreshes_the_pttl_on_every_node),
        ALL_SIZES(test_expired_lock_can_be_taken_by_another_client),
        NODES_TEST(test_release_of_an_expired_lock_is_lost, three),
        NODES_TEST(test_extend_of_an_expired_lock_is_lost, three),
        NODES_TEST(test_release_answer_does_not_depend_on_reply_order, three),
        NODES_TEST(test_release_that_cannot_tell_says_no_quorum, three),
        NODES_TEST(test_with_lock_is_ok_only_when_held_throughout, three),
        ALL_SIZES(test_adopted_token_can_be_extended_and_released),
        NODES_TEST(test_adopting_a_wrong_token_releases_nothing, three),
        NODES_TEST(test_prefix_is_prepended_to_the_key, three),
        ALL_SIZES(test_multi_acquire_sets_every_key_and_release_clears_them),
        ALL_SIZES(test_multi_acquire_is_all_or_nothing),
        NODES_TEST(test_key_set_by_plain_set_nx_px_is_respected_and_adoptable,
                   five),
        NODES_TEST(test_lock_is_released_by_a_plain_compare_and_delete, three),
        NODES_TEST(test_distinct_acquisitions_get_distinct_tokens, three),
    };

    return FIXTURE_RUN("lock_basic", &three, tests);
}
