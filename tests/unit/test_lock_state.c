/* SPDX-License-Identifier: BSD-3-Clause */
/* test_lock_state.c -- a held lock's state machine (src/lock.c): the
 * table of legal moves, walked in full. Every legal move is accepted and
 * leaves the lock in the new state with what it has in flight; every
 * illegal one (and a move whose in-flight argument does not fit the new
 * state) aborts the process, checked in a child. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "lock.h"

/* The moves a held lock may make, written out independently of lock.c. */
static const struct {
    enum lock_state from, to;
} spec[] = {
    {LOCK_ACQUIRING, LOCK_HELD},
    {LOCK_HELD, LOCK_RENEWING},
    {LOCK_HELD, LOCK_BATCHED},
    {LOCK_HELD, LOCK_RELEASING},
    {LOCK_HELD, LOCK_LOST},
    {LOCK_RENEWING, LOCK_HELD},
    {LOCK_BATCHED, LOCK_HELD},
    {LOCK_RELEASING, LOCK_RELEASED},
    {LOCK_LOST, LOCK_RELEASING},
};

static bool in_spec(enum lock_state from, enum lock_state to)
{
    for (size_t i = 0; i < sizeof(spec) / sizeof(spec[0]); i++)
        if (spec[i].from == from && spec[i].to == to)
            return true;
    return false;
}

static int dummy_flight;

static void *flight_for(enum lock_state to)
{
    return to == LOCK_RENEWING || to == LOCK_BATCHED ||
                   to == LOCK_RELEASING
               ? &dummy_flight
               : NULL;
}

/* Runs lock_set_state(from -> to, in_flight) in a child: true when it
 * aborted. */
static bool aborts(enum lock_state from, enum lock_state to, void *in_flight)
{
    int status = 0;
    pid_t pid = fork();

    assert_true(pid >= 0);
    if (pid == 0) {
        struct rl_lock l = {0};
        int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);

        if (devnull >= 0)
            dup2(devnull, STDERR_FILENO);
        l.state = (uint8_t)from;
        lock_set_state(&l, to, in_flight);
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static void test_table_is_the_spec(void **state)
{
    (void)state;
    for (int from = 0; from < LOCK_STATES; from++)
        for (int to = 0; to < LOCK_STATES; to++)
            assert_int_equal(lock_transition_legal(from, to),
                             in_spec(from, to));
    assert_false(lock_transition_legal(LOCK_STATES, LOCK_HELD));
    assert_false(lock_transition_legal(LOCK_HELD, LOCK_STATES));
}

static void test_legal_moves_are_made(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(spec) / sizeof(spec[0]); i++) {
        struct rl_lock l = {0};

        l.state = (uint8_t)spec[i].from;
        l.in_flight = flight_for(spec[i].from);
        lock_set_state(&l, spec[i].to, flight_for(spec[i].to));
        assert_int_equal(l.state, spec[i].to);
        assert_ptr_equal(l.in_flight, flight_for(spec[i].to));
        assert_int_equal(lock_state_in_flight(spec[i].to),
                         flight_for(spec[i].to) != NULL);
    }
}

static void test_illegal_moves_abort(void **state)
{
    unsigned walked = 0;

    (void)state;
    for (int from = 0; from < LOCK_STATES; from++)
        for (int to = 0; to < LOCK_STATES; to++) {
            if (in_spec(from, to))
                continue;
            if (!aborts(from, to, flight_for(to)))
                fail_msg("move %d -> %d was not refused", from, to);
            walked++;
        }
    assert_int_equal(walked, LOCK_STATES * LOCK_STATES -
                                 sizeof(spec) / sizeof(spec[0]));
}

static void test_in_flight_must_fit_the_state(void **state)
{
    (void)state;
    assert_true(aborts(LOCK_HELD, LOCK_RENEWING, NULL));
    assert_true(aborts(LOCK_HELD, LOCK_BATCHED, NULL));
    assert_true(aborts(LOCK_HELD, LOCK_RELEASING, NULL));
    assert_true(aborts(LOCK_HELD, LOCK_LOST, &dummy_flight));
    assert_true(aborts(LOCK_RENEWING, LOCK_HELD, &dummy_flight));
    /* The control: the same moves with a fitting argument go through. */
    assert_false(aborts(LOCK_HELD, LOCK_RENEWING, &dummy_flight));
    assert_false(aborts(LOCK_HELD, LOCK_LOST, NULL));
}

static void test_drop_without_flight_keeps_state(void **state)
{
    (void)state;
    for (int s = 0; s < LOCK_STATES; s++) {
        struct rl_lock l = {0};

        if (lock_state_in_flight(s))
            continue;
        l.state = (uint8_t)s;
        lock_drop_flight(&l);
        assert_int_equal(l.state, s);
        assert_null(l.in_flight);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_is_the_spec),
        cmocka_unit_test(test_legal_moves_are_made),
        cmocka_unit_test(test_illegal_moves_abort),
        cmocka_unit_test(test_in_flight_must_fit_the_state),
        cmocka_unit_test(test_drop_without_flight_keeps_state),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
