/* SPDX-License-Identifier: BSD-3-Clause */
/* test_clock.c -- monotonic clock and validity math (src/clock.c,
 * DESIGN §5.1): drift allowance, remaining validity, validity deadline.
 * Pure arithmetic on chosen instants; the only real clock reads check that
 * mono_now_us() never goes backwards (no timing assertions, STYLE 3.8). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "clock.h"

#define T0 ((rl_mono_us)5000000000u) /* an arbitrary round start, µs */

/* ---- drift_us ---- */

static void test_drift_is_one_percent_of_ttl_plus_two_ms(void **state)
{
    (void)state;
    /* 10000 ms * 0.01 = 100 ms, + 2 ms, in µs. */
    assert_int_equal(drift_us(10000, 0.01), 102000);
}

static void test_drift_with_factor_zero_is_the_fixed_two_ms(void **state)
{
    (void)state;
    assert_int_equal(drift_us(10000, 0.0), 2000);
    assert_int_equal(drift_us(0, 0.0), 2000);
    assert_int_equal(drift_us(0, 0.01), 2000);
}

static void test_drift_grows_with_ttl_and_factor(void **state)
{
    (void)state;
    assert_int_equal(drift_us(1000, 0.01), 12000);
    assert_int_equal(drift_us(30000, 0.01), 302000);
    assert_int_equal(drift_us(10000, 0.1), 1002000);
    assert_int_equal(drift_us(1, 0.01), 2010);
}

static void test_drift_of_the_largest_ttl_does_not_overflow(void **state)
{
    (void)state;
    /* UINT32_MAX ms * 0.1 = 429496729.5 ms = 429496729500 µs. */
    assert_int_equal(drift_us(UINT32_MAX, 0.1), 429496729500ull + 2000u);
}

/* ---- validity_compute_us ---- */

static void test_validity_is_ttl_minus_elapsed_minus_drift(void **state)
{
    (void)state;
    /* 10 s TTL, 50 ms spent: 10000000 - 50000 - 102000 µs. */
    assert_int_equal(validity_compute_us(10000, 0.01, T0, T0 + 50000),
                     9848000);
}

static void test_validity_with_zero_elapsed_is_ttl_minus_drift(void **state)
{
    (void)state;
    assert_int_equal(validity_compute_us(10000, 0.01, T0, T0), 9898000);
    assert_int_equal(validity_compute_us(10000, 0.0, T0, T0), 9998000);
}

static void test_validity_is_negative_when_elapsed_exceeds_ttl(void **state)
{
    (void)state;
    /* 10 s TTL, 11 s spent: 10000000 - 11000000 - 102000. */
    assert_int_equal(validity_compute_us(10000, 0.01, T0, T0 + 11000000),
                     -1102000);
    assert_true(validity_compute_us(10000, 0.01, T0, T0 + 9898001) < 0);
    assert_int_equal(validity_compute_us(10000, 0.01, T0, T0 + 9898000), 0);
}

static void test_validity_is_negative_when_drift_exceeds_ttl(void **state)
{
    (void)state;
    /* 1 ms TTL is eaten by the 2 ms fixed allowance. */
    assert_int_equal(validity_compute_us(1, 0.01, T0, T0), 1000 - 2010);
}

static void test_now_before_t0_counts_as_zero_elapsed(void **state)
{
    (void)state;
    assert_int_equal(validity_compute_us(10000, 0.01, T0, T0 - 1),
                     validity_compute_us(10000, 0.01, T0, T0));
    assert_int_equal(validity_compute_us(10000, 0.01, T0, 0), 9898000);
}

/* ---- validity_deadline ---- */

static void test_deadline_is_t0_plus_ttl_minus_drift(void **state)
{
    (void)state;
    assert_int_equal(validity_deadline(10000, 0.01, T0),
                     T0 + 10000000 - 102000);
    assert_int_equal(validity_deadline(10000, 0.0, T0), T0 + 9998000);
    assert_int_equal(validity_deadline(10000, 0.01, 0), 9898000);
}

static void test_deadline_is_t0_when_drift_reaches_ttl(void **state)
{
    (void)state;
    /* 2 ms TTL: drift 2000 + 20 µs >= 2000 µs. */
    assert_int_equal(validity_deadline(2, 0.01, T0), T0);
    assert_int_equal(validity_deadline(1, 0.0, T0), T0);
    assert_int_equal(validity_deadline(0, 0.0, T0), T0);
    /* Exactly equal: 2 ms TTL, factor 0, drift 2000 µs. */
    assert_int_equal(validity_deadline(2, 0.0, T0), T0);
    /* A 3 ms TTL keeps 1 ms. */
    assert_int_equal(validity_deadline(3, 0.0, T0), T0 + 1000);
}

static void test_deadline_agrees_with_validity_compute(void **state)
{
    rl_mono_us dl = validity_deadline(10000, 0.01, T0);

    (void)state;
    assert_int_equal(validity_compute_us(10000, 0.01, T0, dl), 0);
    assert_int_equal(validity_compute_us(10000, 0.01, T0, dl - 1), 1);
    assert_int_equal(validity_compute_us(10000, 0.01, T0, dl + 1), -1);
}

/* ---- mono_now_us ---- */

static void test_mono_now_never_goes_backwards(void **state)
{
    rl_mono_us prev = mono_now_us();
    int i;

    (void)state;
    assert_true(prev > 0);
    for (i = 0; i < 100000; i++) {
        rl_mono_us now = mono_now_us();

        assert_true(now >= prev);
        prev = now;
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_drift_is_one_percent_of_ttl_plus_two_ms),
        cmocka_unit_test(test_drift_with_factor_zero_is_the_fixed_two_ms),
        cmocka_unit_test(test_drift_grows_with_ttl_and_factor),
        cmocka_unit_test(test_drift_of_the_largest_ttl_does_not_overflow),
        cmocka_unit_test(test_validity_is_ttl_minus_elapsed_minus_drift),
        cmocka_unit_test(test_validity_with_zero_elapsed_is_ttl_minus_drift),
        cmocka_unit_test(test_validity_is_negative_when_elapsed_exceeds_ttl),
        cmocka_unit_test(test_validity_is_negative_when_drift_exceeds_ttl),
        cmocka_unit_test(test_now_before_t0_counts_as_zero_elapsed),
        cmocka_unit_test(test_deadline_is_t0_plus_ttl_minus_drift),
        cmocka_unit_test(test_deadline_is_t0_when_drift_reaches_ttl),
        cmocka_unit_test(test_deadline_agrees_with_validity_compute),
        cmocka_unit_test(test_mono_now_never_goes_backwards),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
