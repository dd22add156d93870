/* SPDX-License-Identifier: BSD-3-Clause */
/* test_timeheap.c -- the intrusive pairing heap the watchdog keeps its
 * instants in (src/timeheap.c, issue 16). A seeded random mix of inserts,
 * removals of arbitrary nodes and pops of the minimum is checked against a
 * plain array: the minimum is always the smallest queued key, the count
 * matches, removed nodes are no longer queued. Also: 100,000 children
 * under one root (many inserts, then one pop) work without deep
 * recursion. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "timeheap.h"

#define NODES 2000

static uint64_t rng = 88172645463325252u;

static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* The smallest key among queued nodes, or UINT64_MAX. */
static uint64_t reference_min(const struct theap *h,
                              const struct theap_node *n, size_t count,
                              size_t *queued)
{
    uint64_t min = UINT64_MAX;
    size_t i;

    *queued = 0;
    for (i = 0; i < count; i++) {
        if (!theap_queued(h, &n[i]))
            continue;
        (*queued)++;
        if (n[i].key < min)
            min = n[i].key;
    }
    return min;
}

static void test_random_operations_match_a_reference(void **state)
{
    struct theap h = {0};
    struct theap_node *n = calloc(NODES, sizeof(*n));
    size_t queued, i;
    int step;

    (void)state;
    assert_non_null(n);
    for (step = 0; step < 20000; step++) {
        struct theap_node *m;
        uint64_t r = next_random();

        i = (size_t)(r % NODES);
        switch ((r >> 32) % 4) {
        case 0: /* insert, or re-key (remove + insert) */
        case 1:
            theap_remove(&h, &n[i]);
            theap_insert(&h, &n[i], (r >> 16) % 1000);
            break;
        case 2: /* remove an arbitrary node (maybe not queued) */
            theap_remove(&h, &n[i]);
            assert_false(theap_queued(&h, &n[i]));
            break;
        default: /* pop the minimum */
            m = theap_min(&h);
            if (m != NULL) {
                theap_remove(&h, m);
                assert_false(theap_queued(&h, m));
            }
            break;
        }
        m = theap_min(&h);
        if (m == NULL) {
            assert_int_equal(reference_min(&h, n, NODES, &queued),
                             UINT64_MAX);
            assert_int_equal(queued, 0);
        } else {
            assert_int_equal(m->key, reference_min(&h, n, NODES, &queued));
        }
        assert_int_equal(h.count, queued);
    }
    free(n);
}

static void test_many_roots_children_pop_in_order(void **state)
{
    const size_t count = 100000;
    struct theap h = {0};
    struct theap_node *n = calloc(count, sizeof(*n));
    uint64_t last = 0;
    size_t i;

    (void)state;
    assert_non_null(n);
    for (i = 0; i < count; i++) /* increasing: all children of the root */
        theap_insert(&h, &n[i], i);
    for (i = 0; i < count; i++) {
        struct theap_node *m = theap_min(&h);

        assert_non_null(m);
        assert_true(m->key >= last);
        last = m->key;
        theap_remove(&h, m);
    }
    assert_null(theap_min(&h));
    assert_int_equal(h.count, 0);
    free(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_operations_match_a_reference),
        cmocka_unit_test(test_many_roots_children_pop_in_order),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
