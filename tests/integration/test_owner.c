/* SPDX-License-Identifier: BSD-3-Clause */
/* test_owner.c -- holder identity: an acquire's owner is stored with its
 * token (same keys, same requests) and read back by rl_resource_inspect
 * with the holder a quorum agrees on, its validity (the quorum's) and its
 * fence; one node holding another value does not change the holder; a
 * plain SET NX key (redsync, node-redlock) shows as a holder with an
 * unknown owner and still excludes us; bad owners are RL_EINVAL. */
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

static void test_owner_round_trip(void **state)
{
    struct fixture *f = *state;
    const rl_acquire_opts o = { .ttl_ms = 10000, .owner = "web-1:4242",
                                .fencing = true };
    rl_holder_info nodes[NODES];
    rl_resource_info info;
    rl_lock *l = NULL;
    size_t count = 0;

    assert_int_equal(rl_acquire(f->c, "own", &o, &l), RL_OK);
    /* The value is the token; the owner rides in it. */
    assert_int_equal(strlen(rl_lock_token(l)), 40 + 1 + strlen(o.owner));
    assert_string_equal(rl_lock_token(l) + 41, "web-1:4242");
    assert_true(fixture_all_hold(f, "own", rl_lock_token(l), 0, 0));
    assert_int_equal(rl_resource_inspect(f->c, "own", &info, nodes, NODES,
                                         &count), RL_OK);
    assert_int_equal(count, NODES);
    assert_true(info.held);
    assert_string_equal(info.owner, "web-1:4242");
    assert_string_equal(info.token, rl_lock_token(l));
    assert_int_equal(info.nodes_holding, NODES);
    assert_int_equal(info.node_count, NODES);
    assert_true(info.validity_ms > 0 && info.validity_ms <= 10000);
    assert_int_equal(info.fence, rl_lock_fence(l));
    assert_int_equal(info.term, rl_lock_fence(l));
    assert_int_equal(info.term_state, RL_TERM_SET);
    assert_true(info.fence > 0);
    for (int i = 0; i < NODES; i++)
        assert_string_equal(nodes[i].token, rl_lock_token(l));
    /* Extend and release compare the whole value. */
    assert_int_equal(rl_extend(l, 10000), RL_OK);
    assert_int_equal(rl_release(l), RL_OK);
    assert_true(harness_key_gone(f->r, NODES, "own"));
    assert_int_equal(rl_resource_inspect(f->c, "own", &info, NULL, 0, NULL),
                     RL_OK);
    assert_false(info.held);
    assert_string_equal(info.token, "");
    assert_int_equal(info.validity_ms, 0);
}

static void test_no_owner_costs_nothing_and_reads_unknown(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = {0};
    rl_resource_info info;
    rl_lock *l = NULL;

    assert_int_equal(rl_acquire(f->c, "plain", &o, &l), RL_OK);
    assert_int_equal(strlen(rl_lock_token(l)), 40);
    /* The acquire returned at a majority: node 0's write is awaited. */
    assert_true(fixture_all_hold(f, "plain", rl_lock_token(l), 0, 0));
    assert_int_equal(harness_dbsize(&f->r[0]), 1); /* no extra key */
    assert_int_equal(rl_resource_inspect(f->c, "plain", &info, NULL, 0,
                                         NULL), RL_OK);
    assert_true(info.held);
    assert_string_equal(info.owner, "");
    assert_int_equal(info.fence, 0);
    assert_int_equal(rl_release(l), RL_OK);
}

/* Node 0 holds a stale value of someone else: the quorum's holder is
 * still reported, with its own owner and the quorum's validity. */
static void test_minority_value_does_not_change_the_holder(void **state)
{
    struct fixture *f = *state;
    rl_holder_info nodes[NODES];
    rl_resource_info info;
    rl_lock *l = NULL;
    size_t count;
    char value[64];

    snprintf(value, sizeof(value), "%040d.node-a:1", 7);
    assert_true(harness_ok(harness_cmd(&f->r[0], "SET split %s PX 60000",
                                       value)));
    snprintf(value, sizeof(value), "%040d.node-b:2", 9);
    for (int i = 1; i < NODES; i++)
        assert_true(harness_ok(harness_cmd(&f->r[i], "SET split %s PX %d",
                                           value, i == 1 ? 20000 : 8000)));
    assert_int_equal(rl_resource_inspect(f->c, "split", &info, nodes, NODES,
                                         &count), RL_OK);
    assert_true(info.held);
    assert_string_equal(info.owner, "node-b:2");
    assert_string_equal(info.token, value);
    assert_int_equal(info.nodes_holding, 2);
    /* The quorum (2 of 3) holds it until the shorter of its two PTTLs. */
    assert_true(info.validity_ms > 0 && info.validity_ms <= 8000);
    assert_non_null(strstr(nodes[0].token, "node-a:1"));
    /* And we are excluded. */
    assert_int_equal(rl_acquire(f->c, "split", NULL, &l), RL_ENOTACQUIRED);
}

/* A redsync / node-redlock holder: a plain random value. */
static void test_foreign_key_is_a_holder_with_unknown_owner(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = {0};
    rl_resource_info info;
    rl_lock *l = NULL;
    redisReply *rep;
    int i;

    for (i = 0; i < NODES; i++)
        assert_true(harness_ok(harness_cmd(
            &f->r[i], "SET interop k4nXbmC8Z2sZyhvT+7dAnw== NX PX 20000")));
    assert_int_equal(rl_resource_inspect(f->c, "interop", &info, NULL, 0,
                                         NULL), RL_OK);
    assert_true(info.held);
    assert_string_equal(info.token, "k4nXbmC8Z2sZyhvT+7dAnw==");
    assert_string_equal(info.owner, "");
    /* An owned acquire is excluded by it, and excludes a SET NX. */
    o.owner = "me";
    assert_int_equal(rl_acquire(f->c, "interop", &o, &l), RL_ENOTACQUIRED);
    assert_int_equal(rl_acquire(f->c, "interop2", &o, &l), RL_OK);
    rep = harness_cmd(&f->r[0], "SET interop2 x NX PX 1000");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_NIL);
    freeReplyObject(rep);
    assert_int_equal(rl_release(l), RL_OK);
}

static void test_bad_owner_is_einval_naming_it(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = {0};
    char longer[RL_OWNER_MAX + 2];
    rl_resource_info info;
    rl_lock *l = NULL;

    o.owner = "has space";
    assert_int_equal(rl_acquire(f->c, "bad", &o, &l), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "owner"));
    o.owner = "tab\there";
    assert_int_equal(rl_acquire(f->c, "bad", &o, &l), RL_EINVAL);
    memset(longer, 'x', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    o.owner = longer;
    assert_int_equal(rl_acquire(f->c, "bad", &o, &l), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "owner"));
    longer[RL_OWNER_MAX] = '\0'; /* exactly the maximum */
    assert_int_equal(rl_acquire(f->c, "bad", &o, &l), RL_OK);
    assert_int_equal(rl_release(l), RL_OK);
    assert_int_equal(rl_resource_inspect(NULL, "bad", &info, NULL, 0, NULL),
                     RL_EINVAL);
    assert_int_equal(rl_resource_inspect(f->c, "bad", NULL, NULL, 0, NULL),
                     RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "info"));
    assert_int_equal(rl_resource_inspect(f->c, "bad", &info, NULL, 3, NULL),
                     RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "nodes"));
    assert_int_equal(rl_resource_inspect(f->c, "redlock:x", &info, NULL, 0,
                                         NULL), RL_EINVAL);
    assert_true(harness_all_empty(f->r, NODES));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_owner_round_trip),
        cmocka_unit_test(test_no_owner_costs_nothing_and_reads_unknown),
        cmocka_unit_test(test_minority_value_does_not_change_the_holder),
        cmocka_unit_test(test_foreign_key_is_a_holder_with_unknown_owner),
        cmocka_unit_test(test_bad_owner_is_einval_naming_it),
    };

    return FIXTURE_RUN("tests", &fx, tests);
}
