/* SPDX-License-Identifier: BSD-3-Clause */
/* test_token.c -- lock tokens (src/token.c): their form, that no two are
 * alike (across batch refills, threads and a fork), and an acquisition's
 * attempts (each its own token, one stem). No Redis. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "token.h"

/* More than a few of the per-thread batches the tokens are cut from. */
#define MANY 2000
#define THREADS 4
#define PER_THREAD 500

static void check_form(const char *t)
{
    assert_int_equal(strlen(t), TOKEN_HEX_LEN);
    for (size_t i = 0; i < TOKEN_HEX_LEN; i++)
        assert_non_null(strchr("0123456789abcdef", t[i]));
}

static int by_string(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* n tokens (rows of TOKEN_HEX_LEN + 1), sorted: no two equal. */
static void check_distinct(char (*t)[TOKEN_HEX_LEN + 1], size_t n)
{
    qsort(t, n, sizeof(*t), by_string);
    for (size_t i = 1; i < n; i++)
        assert_string_not_equal(t[i - 1], t[i]);
}

static void test_tokens_are_lowercase_hex_of_the_full_length(void **state)
{
    char t[TOKEN_HEX_LEN + 1];

    (void)state;
    for (int i = 0; i < 100; i++) {
        memset(t, 'X', sizeof(t));
        assert_int_equal(token_generate(t), RL_OK);
        check_form(t);
    }
}

static void test_no_two_tokens_alike_across_refills(void **state)
{
    char (*t)[TOKEN_HEX_LEN + 1] = calloc(MANY, sizeof(*t));

    (void)state;
    assert_non_null(t);
    for (size_t i = 0; i < MANY; i++)
        assert_int_equal(token_generate(t[i]), RL_OK);
    check_distinct(t, MANY);
    free(t);
}

static void *draw(void *arg)
{
    char (*t)[TOKEN_HEX_LEN + 1] = arg;

    for (size_t i = 0; i < PER_THREAD; i++) {
        if (token_generate(t[i]) != RL_OK)
            t[i][0] = '\0';
    }
    return NULL;
}

static void test_threads_never_share_tokens(void **state)
{
    char (*t)[TOKEN_HEX_LEN + 1] = calloc(THREADS * PER_THREAD, sizeof(*t));
    pthread_t th[THREADS];

    (void)state;
    assert_non_null(t);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, draw,
                                        t + i * PER_THREAD), 0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    for (size_t i = 0; i < THREADS * PER_THREAD; i++)
        check_form(t[i]);
    check_distinct(t, THREADS * PER_THREAD);
    free(t);
}

/* A child forked (by fork_fn) with a half-used batch must not hand out
 * the parent's next tokens. */
static void child_draws_its_own_tokens(pid_t (*fork_fn)(void))
{
    char parent[2][TOKEN_HEX_LEN + 1];
    char child[2][TOKEN_HEX_LEN + 1] = { { 0 } };
    int fds[2];
    int status;
    pid_t pid;

    assert_int_equal(token_generate(parent[0]), RL_OK);
    assert_int_equal(pipe(fds), 0);
    pid = fork_fn();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        if (token_generate(child[0]) != RL_OK ||
            token_generate(child[1]) != RL_OK ||
            write(fds[1], child, sizeof(child)) != (ssize_t)sizeof(child))
            _exit(1);
        _exit(0);
    }
    close(fds[1]);
    assert_int_equal(read(fds[0], child, sizeof(child)),
                     (ssize_t)sizeof(child));
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(token_generate(parent[1]), RL_OK);
    check_form(child[0]);
    check_form(child[1]);
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < 2; j++)
            assert_string_not_equal(child[i], parent[j]);
    }
}

static void test_a_forked_child_draws_its_own_tokens(void **state)
{
    (void)state;
    child_draws_its_own_tokens(fork);
}

/* _Fork() runs no atfork handlers: the batch page is wiped all the same
 * (a per-process count kept by a handler missed it). */
static void test_a_child_of_underscore_fork_draws_its_own_tokens(void **state)
{
    (void)state;
    child_draws_its_own_tokens(_Fork);
}

/* Each attempt's token differs from every earlier one of the same
 * acquisition (the attempt digits wrap past ffffffff), keeps the stem and
 * what follows the digits (an owner), and is recognised as the same
 * acquisition's; another acquisition's token is not. */
static void test_each_attempt_has_its_own_token_of_one_stem(void **state)
{
    static const char owner[] = ".worker-1";
    enum { ROW = TOKEN_HEX_LEN + sizeof(owner) };
    char first[ROW], t[ROW], other[ROW];
    char (*seen)[ROW] = calloc(MANY, sizeof(*seen));

    (void)state;
    assert_non_null(seen);
    assert_int_equal(token_generate(first), RL_OK);
    memcpy(first + TOKEN_STEM_LEN, "fffffff0", 8);
    strcpy(first + TOKEN_HEX_LEN, owner);
    strcpy(t, first);
    for (size_t i = 0; i < MANY; i++) {
        token_next_attempt(t);
        for (size_t j = 0; j < TOKEN_HEX_LEN; j++)
            assert_non_null(strchr("0123456789abcdef", t[j]));
        assert_memory_equal(t, first, TOKEN_STEM_LEN);
        assert_string_equal(t + TOKEN_HEX_LEN, owner);
        assert_string_not_equal(t, first);
        assert_true(token_same_acquisition(t, strlen(t), first));
        strcpy(seen[i], t);
    }
    assert_memory_equal(seen[15] + TOKEN_STEM_LEN, "00000000", 8);
    qsort(seen, MANY, sizeof(*seen), by_string);
    for (size_t i = 1; i < MANY; i++)
        assert_string_not_equal(seen[i - 1], seen[i]);
    assert_int_equal(token_generate(other), RL_OK);
    strcpy(other + TOKEN_HEX_LEN, owner);
    assert_false(token_same_acquisition(other, strlen(other), first));
    assert_false(token_same_acquisition(t, TOKEN_HEX_LEN, first));
    assert_true(token_same_acquisition("", 0, ""));
    assert_false(token_same_acquisition(t, strlen(t), ""));
    free(seen);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokens_are_lowercase_hex_of_the_full_length),
        cmocka_unit_test(test_no_two_tokens_alike_across_refills),
        cmocka_unit_test(test_threads_never_share_tokens),
        cmocka_unit_test(test_a_forked_child_draws_its_own_tokens),
        cmocka_unit_test(test_a_child_of_underscore_fork_draws_its_own_tokens),
        cmocka_unit_test(test_each_attempt_has_its_own_token_of_one_stem),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
