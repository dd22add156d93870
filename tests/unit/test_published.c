/* SPDX-License-Identifier: BSD-3-Clause */
/* test_published.c -- the values of one lock after a proclaim: which
 * stored values are the same lock (lockrec_same_lock, the scripts'
 * ours()), and what rl_resource_inspect reports when nodes hold either
 * (inspect_summarize): a minority with the old owner changes nothing,
 * a lock split between owners is still held, plain tokens compare
 * exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "inspect.h"
#include "lockrec.h"

#define DIGITS "0123456789abcdef0123456789abcdef01234567"
#define OTHER "ffffffffffffffffffffffffffffffffffffffff"

static void test_same_lock(void **state)
{
    (void)state;
    assert_true(lockrec_same_lock(DIGITS ".old", DIGITS ".new"));
    assert_true(lockrec_same_lock(DIGITS, DIGITS));
    assert_true(lockrec_same_lock("plain-token", "plain-token"));
    /* Without an owner on both sides: exact. */
    assert_false(lockrec_same_lock(DIGITS, DIGITS ".new"));
    assert_false(lockrec_same_lock(DIGITS ".a", OTHER ".a"));
    assert_false(lockrec_same_lock(DIGITS ".", DIGITS ".a"));
    /* With a lock-delay: the identity is digits and delay. */
    assert_true(lockrec_same_lock(DIGITS "~800.old", DIGITS "~800.new"));
    assert_false(lockrec_same_lock(DIGITS "~800.a", DIGITS "~900.a"));
    assert_false(lockrec_same_lock(DIGITS "~800.a", DIGITS ".a"));
    /* Not 40 hex digits: another client's value, exact. */
    assert_false(lockrec_same_lock("xyz0123456789abcdef0123456789abcdef01234.a",
                                   "xyz0123456789abcdef0123456789abcdef01234.b"));
}

static void fill(rl_holder_info *h, size_t n, const char *const *values)
{
    size_t i;

    memset(h, 0, n * sizeof(*h));
    for (i = 0; i < n; i++) {
        h[i].reachable = values[i] != NULL;
        h[i].voting = h[i].reachable;
        snprintf(h[i].token, sizeof(h[i].token), "%s",
                 values[i] != NULL ? values[i] : "");
        h[i].pttl_ms = 1000 + (int64_t)i;
    }
}

/* Only voting nodes make a holder (a quarantined node's key granted no
 * vote), and a fenced holder's term counts once a quorum of the voting
 * nodes holding it recorded it for that lock. */
static void test_summary_counts_votes_and_terms(void **state)
{
    const char *values[5] = {DIGITS ".a", DIGITS ".a", DIGITS ".a",
                             OTHER, NULL};
    rl_holder_info h[5];
    rl_resource_info info;
    size_t i;

    (void)state;
    fill(h, 5, values);
    h[2].voting = false; /* quarantined: two votes of the three needed */
    inspect_summarize(h, 5, &info);
    assert_false(info.held);
    assert_int_equal(info.nodes_holding, 3);
    assert_int_equal(info.term_state, RL_TERM_NONE);

    /* Held without fencing: no term, whatever the counter says. */
    fill(h, 5, values);
    for (i = 0; i < 5; i++)
        h[i].fence = 41;
    inspect_summarize(h, 5, &info);
    assert_true(info.held);
    assert_int_equal(info.fence, 41);
    assert_int_equal(info.term_state, RL_TERM_NONE);
    assert_int_equal(info.term, 0);

    /* Between the rounds: the old counter, the record names it without a
     * term on one node, with its term on two -- pending, not term 41. */
    h[0].term_state = RL_TERM_PENDING;
    h[1].term_state = h[2].term_state = RL_TERM_SET;
    h[1].term = h[2].term = 42;
    inspect_summarize(h, 5, &info);
    assert_true(info.held);
    assert_int_equal(info.term_state, RL_TERM_PENDING);
    assert_int_equal(info.term, 0);

    /* The term on a quorum of the voting holders: set. */
    h[0].term_state = RL_TERM_SET;
    h[0].term = 42;
    inspect_summarize(h, 5, &info);
    assert_int_equal(info.term_state, RL_TERM_SET);
    assert_int_equal(info.term, 42);

    /* A non-voting node's record does not make up the quorum. */
    h[0].voting = false;
    h[3].token[0] = '\0';
    snprintf(h[3].token, sizeof(h[3].token), "%s", DIGITS ".a");
    inspect_summarize(h, 5, &info);
    assert_true(info.held);
    assert_int_equal(info.term_state, RL_TERM_PENDING);
}

static void test_summary_after_a_proclaim(void **state)
{
    const char *minority[5] = {DIGITS ".new", DIGITS ".old", DIGITS ".new",
                               DIGITS ".new", DIGITS ".old"};
    const char *split[5] = {DIGITS ".old", DIGITS ".new", DIGITS ".new",
                            NULL, OTHER};
    const char *plain[5] = {DIGITS, DIGITS ".x", DIGITS ".x", OTHER, NULL};
    rl_holder_info h[5];
    rl_resource_info info;

    (void)state;
    fill(h, 5, minority);
    inspect_summarize(h, 5, &info);
    assert_true(info.held);
    assert_string_equal(info.owner, "new");
    assert_int_equal(info.nodes_holding, 5);
    assert_int_equal(info.validity_ms, 1002); /* 3rd longest of 5 */

    /* Two with the new owner, one with the old: held, the new owner. */
    fill(h, 5, split);
    inspect_summarize(h, 5, &info);
    assert_true(info.held);
    assert_int_equal(info.nodes_holding, 3);
    assert_string_equal(info.owner, "new");

    /* A plain token is not the owned value: two of five, not held. */
    fill(h, 5, plain);
    inspect_summarize(h, 5, &info);
    assert_false(info.held);
    assert_int_equal(info.nodes_holding, 2);
}

/* Ties are broken by the values, not by which node answered first: a
 * proclaim that reached half of the nodes (or a node that stops
 * answering) must not make the owner reported flip with node order. */
static void test_ties_do_not_depend_on_node_order(void **state)
{
    const char *owners[2][4] = {
        {DIGITS ".old", DIGITS ".new", DIGITS ".new", DIGITS ".old"},
        {DIGITS ".new", DIGITS ".old", DIGITS ".old", DIGITS ".new"}};
    const char *locks[2][3] = {{DIGITS, OTHER, NULL},
                               {OTHER, DIGITS, NULL}};
    rl_holder_info h[4];
    rl_resource_info a, b;

    (void)state;
    fill(h, 4, owners[0]);
    inspect_summarize(h, 4, &a);
    fill(h, 4, owners[1]);
    inspect_summarize(h, 4, &b);
    assert_true(a.held && b.held);
    assert_string_equal(a.owner, b.owner);
    assert_string_equal(a.token, b.token);

    /* Two locks on one node each: neither is held; the same one is
     * named either way. */
    fill(h, 3, locks[0]);
    inspect_summarize(h, 3, &a);
    fill(h, 3, locks[1]);
    inspect_summarize(h, 3, &b);
    assert_false(a.held || b.held);
    assert_string_equal(a.token, b.token);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_lock),
        cmocka_unit_test(test_summary_counts_votes_and_terms),
        cmocka_unit_test(test_summary_after_a_proclaim),
        cmocka_unit_test(test_ties_do_not_depend_on_node_order),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
