/* SPDX-License-Identifier: BSD-3-Clause */
/* test_clockguard.c -- the clock-suspect rule (src/clockguard.c, issue
 * 15): a simulated server clock (rate, steps) read through requests with
 * a chosen round trip; checks which samples are consistent, when a node
 * becomes suspect (within the bound stated in clockguard.c) and when it
 * votes again. Pure arithmetic, no clock reads. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "clockguard.h"

#define DRIFT 0.01
#define BEHAVE_MS 1000u
#define T0 ((rl_mono_us)7000000000u)
#define SERVER0 INT64_C(1700000000000000)

/* A server whose clock reads SERVER0 + offset + rate * (real - T0); each
 * request takes rtt µs, executed in its middle. */
struct sim {
    double rate;
    int64_t offset;
    rl_mono_us now;
    uint64_t rtt;
};

static struct clock_sample take(struct sim *s)
{
    struct clock_sample c;
    rl_mono_us exec = s->now + s->rtt / 2;

    c.send_us = s->now;
    c.recv_us = s->now + s->rtt;
    c.server_us = SERVER0 + s->offset +
                  (int64_t)(s->rate * (double)(exec - T0));
    s->now = c.recv_us;
    return c;
}

/* Take the next sample of s and add it to g. */
static enum clock_event sample(struct sim *s, struct clockguard *g)
{
    struct clock_sample c = take(s);

    return clockguard_add(g, &c, DRIFT, BEHAVE_MS);
}

/* Sample every gap µs until the guard turns suspect; returns the real
 * time from the first sample to the one that showed it (0: never, within
 * limit µs). */
static uint64_t time_to_suspect(struct sim *s, uint64_t gap, uint64_t limit)
{
    struct clockguard g = {0};
    rl_mono_us start = s->now;

    sample(s, &g);
    while (s->now - start < limit) {
        s->now += gap;
        if (sample(s, &g) == CLOCK_BECAME_SUSPECT)
            return s->now - start;
    }
    return 0;
}

static void test_a_clock_at_our_rate_is_consistent(void **state)
{
    struct sim s = {1.0, 0, T0, 200};
    struct clockguard g = {0};
    int i;

    (void)state;
    for (i = 0; i < 10000; i++) {
        assert_int_equal(sample(&s, &g), CLOCK_NO_CHANGE);
        s.now += 1000 + (uint64_t)(i % 7) * 5000;
    }
    assert_false(g.suspect);
    assert_true(g.rate > 0.999 && g.rate < 1.001);
}

static void test_drift_within_the_factor_is_consistent(void **state)
{
    struct sim fast = {1.0 + DRIFT * 0.9, 0, T0, 200};
    struct sim slow = {1.0 - DRIFT * 0.9, 0, T0, 200};

    (void)state;
    assert_int_equal(time_to_suspect(&fast, 10000, 60000000), 0);
    assert_int_equal(time_to_suspect(&slow, 10000, 60000000), 0);
}

static void test_x5_is_caught_by_the_first_two_samples(void **state)
{
    /* One round trip between the handshake and the next request. */
    struct sim s = {5.0, 0, T0, 100};
    struct clockguard g = {0};

    (void)state;
    assert_int_equal(sample(&s, &g), CLOCK_NO_CHANGE);
    s.now += 100;
    assert_int_equal(sample(&s, &g), CLOCK_BECAME_SUSPECT);
    assert_true(g.suspect);
    assert_int_equal(g.incidents, 1);
}

/* A first sample whose round trip was long (the server stalled, then
 * answered at its end) must not make the rate shown at the inconsistency
 * look slow: a x5 clock caught between two short samples shows at least
 * the rate their pair proves, more than 1 + drift. */
static void test_the_rate_shown_at_a_fast_inconsistency_is_fast(void **state)
{
    struct clockguard g = {0};
    struct clock_sample first = {T0, T0 + 400000,
                                 SERVER0 + 5 * INT64_C(390000)};
    struct clock_sample prev = {T0 + 400000, T0 + 410000,
                                SERVER0 + 5 * INT64_C(405000)};
    struct clock_sample next = {T0 + 420000, T0 + 430000,
                                SERVER0 + 5 * INT64_C(425000)};

    (void)state;
    assert_int_equal(clockguard_add(&g, &first, DRIFT, BEHAVE_MS),
                     CLOCK_NO_CHANGE);
    assert_int_equal(clockguard_add(&g, &prev, DRIFT, BEHAVE_MS),
                     CLOCK_NO_CHANGE);
    assert_int_equal(clockguard_add(&g, &next, DRIFT, BEHAVE_MS),
                     CLOCK_BECAME_SUSPECT);
    assert_true(g.rate > 1.0 + DRIFT);
}

/* The bound of clockguard.c: rate r is caught once the baseline spans
 * E > (1 + d)(2 rtt) / (r - 1 - d) (slow: (1 - d)(2 rtt) / (1 - d - r)),
 * at the first sample after that. */
static void test_rates_are_caught_within_the_stated_bound(void **state)
{
    static const double rates[] = {1.5, 0.5, 1.05, 0.95, 2.0, 0.0};
    uint64_t rtt = 300, gap = 2000, bound, t;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
        struct sim s = {rates[i], 0, T0, rtt};
        double r = rates[i];

        bound = r > 1 ? (uint64_t)((1 + DRIFT) * 2 * rtt / (r - 1 - DRIFT))
                      : (uint64_t)((1 - DRIFT) * 2 * rtt / (1 - DRIFT - r));
        t = time_to_suspect(&s, gap, 60000000);
        assert_true(t > 0);
        assert_true(t <= bound + gap + 2 * rtt);
    }
}

static void test_steps_forward_and_backward_are_caught(void **state)
{
    static const int64_t steps[] = {5000, -5000, 3600000000, -1000000};
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        struct sim s = {1.0, 0, T0, 200};
        struct clockguard g = {0};
        int k;

        for (k = 0; k < 100; k++) {
            assert_int_equal(sample(&s, &g), CLOCK_NO_CHANGE);
            s.now += 10000;
        }
        /* D > d * E + 2 rtt: 5 ms after 10 ms of gap is caught. */
        s.offset += steps[i];
        assert_int_equal(sample(&s, &g), CLOCK_BECAME_SUSPECT);
    }
}

static void test_it_votes_again_only_after_behaving_for_max_ttl(void **state)
{
    struct sim s = {1.0, 0, T0, 200};
    struct clockguard g = {0};
    rl_mono_us bad;

    (void)state;
    sample(&s, &g);
    s.now += 5000;
    s.offset += 100000; /* a step of 100 ms */
    assert_int_equal(sample(&s, &g), CLOCK_BECAME_SUSPECT);
    bad = s.now; /* when the reply that showed it came back */
    /* Behaves from now on: still suspect until BEHAVE_MS have passed. */
    while (s.now + 50000 < bad + BEHAVE_MS * 1000u) {
        s.now += 50000;
        assert_int_equal(sample(&s, &g), CLOCK_NO_CHANGE);
        assert_true(g.suspect);
    }
    s.now = bad + BEHAVE_MS * 1000u;
    assert_int_equal(sample(&s, &g), CLOCK_RECOVERED);
    assert_false(g.suspect);
    assert_int_equal(g.incidents, 1);
}

static void test_a_reconnect_keeps_the_suspect_state(void **state)
{
    struct sim s = {1.0, 0, T0, 200};
    struct clockguard g = {0};

    (void)state;
    sample(&s, &g);
    s.now += 5000;
    s.offset -= 100000;
    assert_int_equal(sample(&s, &g), CLOCK_BECAME_SUSPECT);
    /* Much later, a new connection: it needs a new baseline of
     * BEHAVE_MS before it votes, however long ago the incident was. */
    s.now += 10 * BEHAVE_MS * 1000u;
    clockguard_reconnect(&g);
    assert_int_equal(sample(&s, &g), CLOCK_NO_CHANGE);
    assert_true(g.suspect);
    s.now += BEHAVE_MS * 500u;
    assert_int_equal(sample(&s, &g), CLOCK_NO_CHANGE);
    assert_true(g.suspect);
    s.now += BEHAVE_MS * 500u;
    assert_int_equal(sample(&s, &g), CLOCK_RECOVERED);
}

static void test_overlapping_requests_are_consistent(void **state)
{
    /* Pipelined requests: the second was sent before the first's reply
     * came back; the server's readings are close together. A reading
     * earlier than the one before is a step back, however small. */
    struct clock_sample a = {T0, T0 + 500, SERVER0};
    struct clock_sample b = {T0 + 10, T0 + 520, SERVER0 + 30};
    struct clock_sample back = {T0 + 10, T0 + 520, SERVER0 - 30};

    (void)state;
    assert_true(clock_consistent(&a, &b, DRIFT));
    /* One connection: b ran after a, so the server's clock went back. */
    assert_false(clock_consistent(&a, &back, DRIFT));
}

static void test_samples_are_eager_then_one_per_interval(void **state)
{
    struct clockguard g = {0};
    rl_mono_us t = T0;
    int i;

    (void)state;
    for (i = 0; i < CLOCK_EAGER_SAMPLES; i++) {
        assert_true(clockguard_due(&g, t));
        clockguard_asked(&g, t);
        t += 10;
    }
    assert_false(clockguard_due(&g, t));
    assert_true(clockguard_due(&g, t - 10 + CLOCK_SAMPLE_INTERVAL_US));
    /* A new connection takes its first samples at once again. */
    clockguard_reconnect(&g);
    assert_true(clockguard_due(&g, t));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_clock_at_our_rate_is_consistent),
        cmocka_unit_test(test_drift_within_the_factor_is_consistent),
        cmocka_unit_test(test_x5_is_caught_by_the_first_two_samples),
        cmocka_unit_test(test_the_rate_shown_at_a_fast_inconsistency_is_fast),
        cmocka_unit_test(test_rates_are_caught_within_the_stated_bound),
        cmocka_unit_test(test_steps_forward_and_backward_are_caught),
        cmocka_unit_test(test_it_votes_again_only_after_behaving_for_max_ttl),
        cmocka_unit_test(test_a_reconnect_keeps_the_suspect_state),
        cmocka_unit_test(test_overlapping_requests_are_consistent),
        cmocka_unit_test(test_samples_are_eager_then_one_per_interval),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
