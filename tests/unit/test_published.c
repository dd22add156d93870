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
        snprintf(h[i].token, sizeof(h[i].token), "%s",
                 values[i] != NULL ? values[i] : "");
        h[i].pttl_ms = 1000 + (int64_t)i;
    }
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_lock),
        cmocka_unit_test(test_summary_after_a_proclaim),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
