/* SPDX-License-Identifier: BSD-3-Clause */
/* test_extend_decision.c -- one lock's decision in a renewal (src/extend.c,
 * the same for a single round and a batch): how a node's answer moves the
 * lock's holders, when the lock is lost at once, and which status a
 * decided lock gets. No Redis, no nodes: their facts are bits. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "extend.h"

#define BIT(i) (UINT64_C(1) << (i))

static void test_a_voting_yes_makes_a_holder_again(void **state)
{
    (void)state;
    assert_true(extend_holders_after(0, 3, VOTE_YES, true) == BIT(3));
    assert_true(extend_holders_after(BIT(0), 3, VOTE_YES, true) ==
                (BIT(0) | BIT(3)));
    assert_true(extend_holders_after(BIT(3), 3, VOTE_YES, true) == BIT(3));
    assert_true(extend_holders_after(0, 63, VOTE_YES, true) == BIT(63));
}

/* A node whose vote does not count (quarantined, clock-suspect) renewing
 * our key does not make it a holder, nor does it withdraw it. */
static void test_a_yes_that_does_not_count_changes_nothing(void **state)
{
    (void)state;
    assert_true(extend_holders_after(0, 2, VOTE_YES, false) == 0);
    assert_true(extend_holders_after(BIT(2), 2, VOTE_YES, false) == BIT(2));
}

static void test_a_no_withdraws_the_node(void **state)
{
    (void)state;
    assert_true(extend_holders_after(BIT(1) | BIT(2), 1, VOTE_NO, true) ==
                BIT(2));
    assert_true(extend_holders_after(BIT(1) | BIT(2), 1, VOTE_NO, false) ==
                BIT(2));
    assert_true(extend_holders_after(BIT(2), 1, VOTE_NO, true) == BIT(2));
}

/* An error or a timeout says nothing about our key. */
static void test_errors_and_silence_change_nothing(void **state)
{
    (void)state;
    assert_true(extend_holders_after(BIT(1), 1, VOTE_ERROR, true) == BIT(1));
    assert_true(extend_holders_after(0, 1, VOTE_ERROR, true) == 0);
    assert_true(extend_holders_after(BIT(1), 1, VOTE_NONE, true) == BIT(1));
}

/* The rule stated on its own: count the nodes below n that hold or may
 * still answer, and keep their keys. */
static bool reference_lost(uint64_t holders, uint64_t unanswered,
                           uint64_t keeps, size_t n)
{
    size_t count = 0;

    for (size_t i = 0; i < n; i++)
        count += ((holders | unanswered) >> i & 1u) && (keeps >> i & 1u);
    return count < n / 2 + 1;
}

static void test_lost_now_matches_the_rule_for_every_mix_up_to_5(
    void **state)
{
    size_t checked = 0;

    (void)state;
    for (size_t n = 1; n <= 5; n++) {
        uint64_t all = BIT(n) - 1;

        for (uint64_t h = 0; h <= all; h++)
            for (uint64_t u = 0; u <= all; u++)
                for (uint64_t k = 0; k <= all; k++) {
                    assert_int_equal(extend_lost_now(h, u, k, n),
                                     reference_lost(h, u, k, n));
                    checked++;
                }
    }
    assert_true(checked > 30000);
}

static void test_unanswered_nodes_keep_the_lock_alive(void **state)
{
    (void)state;
    /* 5 nodes, 1 holder left, but 2 more may still say yes. */
    assert_false(extend_lost_now(BIT(0), BIT(3) | BIT(4), 0x1f, 5));
    /* Once they answered no, it is lost. */
    assert_true(extend_lost_now(BIT(0), 0, 0x1f, 5));
}

/* A holder whose keys do not count (clock-suspect, evicting, a replica,
 * a duplicate) is no holder. */
static void test_holders_whose_keys_do_not_count_are_not_enough(void **state)
{
    (void)state;
    assert_false(extend_lost_now(0x7, 0, 0x7, 5));
    assert_true(extend_lost_now(0x7, 0, 0x3, 5));
}

/* A batch passes ~answered: the bits above the node count are set and
 * must not count. */
static void test_bits_above_the_node_count_are_ignored(void **state)
{
    (void)state;
    assert_true(extend_lost_now(BIT(0), ~UINT64_C(0) << 3, ~UINT64_C(0), 3));
    assert_false(extend_lost_now(BIT(0) | BIT(1), ~UINT64_C(0) << 3,
                                 ~UINT64_C(0), 3));
    /* 64 nodes: every bit is a node. */
    assert_false(extend_lost_now(~UINT64_C(0) >> 31, 0, ~UINT64_C(0), 64));
    assert_true(extend_lost_now(~UINT64_C(0) >> 32, 0, ~UINT64_C(0), 64));
}

static void test_success_is_ok_and_clears_the_error(void **state)
{
    (void)state;
    rl_fail(RL_EINVAL, "left over");
    assert_int_equal(extend_outcome(VERDICT_SUCCESS, "r", 5, 3, 2, "d"),
                     RL_OK);
    assert_string_equal(rl_last_error(), "");
}

/* With n = 5 a quorum (3) can spare 2 refusals: a third proves the lock
 * is gone; fewer refusals are no quorum, quoting the detail. */
static void test_lost_or_no_quorum_by_refusals(void **state)
{
    (void)state;
    assert_int_equal(extend_outcome(VERDICT_FAILURE, "job", 5, 0, 3, "x"),
                     RL_ELOST);
    assert_non_null(strstr(rl_last_error(), "'job' is no longer held"));
    assert_non_null(strstr(rl_last_error(), "3 of 5 nodes"));
    assert_int_equal(extend_outcome(VERDICT_FAILURE, "job", 5, 2, 2,
                                    "127.0.0.1:7001: timeout"),
                     RL_ENOQUORUM);
    assert_non_null(strstr(rl_last_error(),
                           "'job': extension reached 2 of 5 nodes (need 3)"));
    assert_non_null(strstr(rl_last_error(), "127.0.0.1:7001: timeout"));
    /* One node: its refusal is the lock's loss. */
    assert_int_equal(extend_outcome(VERDICT_FAILURE, "one", 1, 0, 1, ""),
                     RL_ELOST);
    assert_int_equal(extend_outcome(VERDICT_FAILURE, "one", 1, 0, 0, "e"),
                     RL_ENOQUORUM);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_voting_yes_makes_a_holder_again),
        cmocka_unit_test(test_a_yes_that_does_not_count_changes_nothing),
        cmocka_unit_test(test_a_no_withdraws_the_node),
        cmocka_unit_test(test_errors_and_silence_change_nothing),
        cmocka_unit_test(
            test_lost_now_matches_the_rule_for_every_mix_up_to_5),
        cmocka_unit_test(test_unanswered_nodes_keep_the_lock_alive),
        cmocka_unit_test(
            test_holders_whose_keys_do_not_count_are_not_enough),
        cmocka_unit_test(test_bits_above_the_node_count_are_ignored),
        cmocka_unit_test(test_success_is_ok_and_clears_the_error),
        cmocka_unit_test(test_lost_or_no_quorum_by_refusals),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
