/* SPDX-License-Identifier: BSD-3-Clause */
/* Linked into every cmocka test program:
 *   RL_TEST_FILTER (a cmocka glob) selects the cases to run, so CTest can
 *   run each case in its own process (tests/CMakeLists.txt registers one
 *   CTest test per case). Unset: all.
 *   RL_TEST_LIST=1 prints the name of every case the program has, one a
 *   line, and runs none: tests/check_registered.sh compares that list with
 *   what CTest registered, so a case the registration missed fails the
 *   suite instead of being silently never run.
 * The listing wraps cmocka's group runner (-Wl,--wrap in
 * tests/CMakeLists.txt); cmocka 1.1 has no listing of its own. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

int __real__cmocka_run_group_tests(const char *group_name,
                                   const struct CMUnitTest *const tests,
                                   const size_t num_tests,
                                   CMFixtureFunction group_setup,
                                   CMFixtureFunction group_teardown);
int __wrap__cmocka_run_group_tests(const char *group_name,
                                   const struct CMUnitTest *const tests,
                                   const size_t num_tests,
                                   CMFixtureFunction group_setup,
                                   CMFixtureFunction group_teardown);

int __wrap__cmocka_run_group_tests(const char *group_name,
                                   const struct CMUnitTest *const tests,
                                   const size_t num_tests,
                                   CMFixtureFunction group_setup,
                                   CMFixtureFunction group_teardown)
{
    const char *list = getenv("RL_TEST_LIST");

    if (list != NULL && list[0] != '\0') {
        for (size_t i = 0; i < num_tests; i++)
            printf("%s\n", tests[i].name);
        return 0;
    }
    return __real__cmocka_run_group_tests(group_name, tests, num_tests,
                                          group_setup, group_teardown);
}

__attribute__((constructor)) static void rl_apply_test_filter(void)
{
    const char *pattern = getenv("RL_TEST_FILTER");

    if (pattern != NULL && pattern[0] != '\0')
        cmocka_set_test_filter(pattern);
}
