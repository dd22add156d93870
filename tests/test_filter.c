/* Linked into every cmocka test program: RL_TEST_FILTER (a cmocka glob)
 * selects the cases to run, so CTest can run each case in its own process
 * (tests/CMakeLists.txt registers one CTest test per case). Unset: all. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

__attribute__((constructor)) static void rl_apply_test_filter(void)
{
    const char *pattern = getenv("RL_TEST_FILTER");

    if (pattern != NULL && pattern[0] != '\0')
        cmocka_set_test_filter(pattern);
}
