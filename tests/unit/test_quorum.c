/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for the quorum decision rule (quorum.c), exhaustive for
 * N = 1..9 and every mix of outcomes. No Redis. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "quorum.h"

/* The rule stated independently: success with a majority of yes votes,
 * failure once the nodes still undecided cannot make up a majority. */
static enum verdict reference(size_t n, size_t yes, size_t no)
{
    size_t q = n / 2 + 1;
    size_t undecided = n - yes - no;

    if (yes >= q)
        return VERDICT_SUCCESS;
    if (yes + undecided < q)
        return VERDICT_FAILURE;
    return VERDICT_PENDING;
}

static void test_quorum_size_is_a_strict_majority(void **state)
{
    (void)state;
    assert_int_equal(quorum_size(1), 1);
    assert_int_equal(quorum_size(2), 2);
    assert_int_equal(quorum_size(3), 2);
    assert_int_equal(quorum_size(4), 3);
    assert_int_equal(quorum_size(5), 3);
    assert_int_equal(quorum_size(7), 4);
    assert_int_equal(quorum_size(9), 5);
}

static void test_verdict_matches_the_rule_for_every_n_and_outcome_mix(
    void **state)
{
    size_t n, yes, no, checked = 0;

    (void)state;
    for (n = 1; n <= 9; n++) {
        for (yes = 0; yes <= n; yes++) {
            for (no = 0; yes + no <= n; no++) {
                assert_int_equal(quorum_verdict(n, yes, no),
                                 reference(n, yes, no));
                checked++;
            }
        }
    }
    assert_int_equal(checked, 219); /* sum over n of (n+1)(n+2)/2 */
}

static void test_two_failures_of_five_still_leave_a_quorum_possible(
    void **state)
{
    (void)state;
    assert_int_equal(quorum_verdict(5, 0, 2), VERDICT_PENDING);
    assert_int_equal(quorum_verdict(5, 3, 2), VERDICT_SUCCESS);
}

static void test_three_failures_of_five_decide_failure_without_waiting(
    void **state)
{
    (void)state;
    assert_int_equal(quorum_verdict(5, 0, 3), VERDICT_FAILURE);
    assert_int_equal(quorum_verdict(5, 2, 3), VERDICT_FAILURE);
}

static void test_success_is_decided_without_waiting_for_stragglers(
    void **state)
{
    (void)state;
    assert_int_equal(quorum_verdict(5, 3, 0), VERDICT_SUCCESS);
    assert_int_equal(quorum_verdict(9, 5, 0), VERDICT_SUCCESS);
    assert_int_equal(quorum_verdict(1, 1, 0), VERDICT_SUCCESS);
}

static void test_even_n_needs_more_than_half(void **state)
{
    (void)state;
    assert_int_equal(quorum_verdict(4, 2, 2), VERDICT_FAILURE);
    assert_int_equal(quorum_verdict(2, 1, 1), VERDICT_FAILURE);
    assert_int_equal(quorum_verdict(2, 1, 0), VERDICT_PENDING);
}

static void test_impossible_counts_are_never_a_success(void **state)
{
    (void)state;
    assert_int_equal(quorum_verdict(3, 4, 0), VERDICT_FAILURE);
    assert_int_equal(quorum_verdict(3, 2, 2), VERDICT_FAILURE);
    assert_int_equal(quorum_verdict(0, 0, 0), VERDICT_FAILURE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quorum_size_is_a_strict_majority),
        cmocka_unit_test(
            test_verdict_matches_the_rule_for_every_n_and_outcome_mix),
        cmocka_unit_test(
            test_two_failures_of_five_still_leave_a_quorum_possible),
        cmocka_unit_test(
            test_three_failures_of_five_decide_failure_without_waiting),
        cmocka_unit_test(
            test_success_is_decided_without_waiting_for_stragglers),
        cmocka_unit_test(test_even_n_needs_more_than_half),
        cmocka_unit_test(test_impossible_counts_are_never_a_success),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
