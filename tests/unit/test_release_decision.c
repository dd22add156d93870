/* SPDX-License-Identifier: BSD-3-Clause */
/* test_release_decision.c -- the outcome of a release (src/release.c):
 * which status the nodes' answers give, and that the round's early end
 * never changes it, whatever order the answers come in. No Redis: a
 * node's answer is one of four kinds. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "quorum.h"
#include "release.h"

/* The kinds of answer, as release.c counts them. */
enum kind { HELD, GONE, OTHER, UNKNOWN, KINDS };

static void add(struct release_facts *f, enum kind k, size_t count)
{
    if (k == HELD)
        f->held += count;
    else if (k == GONE)
        f->gone += count;
    else if (k == OTHER)
        f->other += count;
    else
        f->unknown += count;
}

static struct release_facts facts(size_t n, size_t held, size_t gone,
                                  size_t other, size_t unknown)
{
    struct release_facts f = {n, held, gone, other, unknown};

    return f;
}

/* The three kinds of lock a release can be for. */
struct flags {
    bool adopted;
    bool expired;
};
static const struct flags flag_sets[] = {
    {false, false}, {false, true}, {true, false}};
#define FLAG_SETS (sizeof(flag_sets) / sizeof(flag_sets[0]))

/* Three nodes, as in the issue: the key left on one node of three. */
static void test_own_lock_outcomes_on_three_nodes(void **state)
{
    struct release_facts f;

    (void)state;
    f = facts(3, 1, 2, 0, 0); /* left on one node: lost */
    assert_int_equal(release_verdict(&f, false, false), RL_ELOST);
    f = facts(3, 2, 1, 0, 0); /* left on a quorum: held up to the release */
    assert_int_equal(release_verdict(&f, false, false), RL_OK);
    f = facts(3, 1, 1, 0, 1); /* one node unknown: cannot tell */
    assert_int_equal(release_verdict(&f, false, false), RL_ENOQUORUM);
    f = facts(3, 0, 2, 0, 1); /* unknown, but a quorum is gone */
    assert_int_equal(release_verdict(&f, false, false), RL_ELOST);
    f = facts(3, 1, 0, 0, 2);
    assert_int_equal(release_verdict(&f, false, false), RL_ENOQUORUM);
    f = facts(3, 0, 0, 2, 1);
    assert_int_equal(release_verdict(&f, false, false), RL_ENOTACQUIRED);
    f = facts(3, 3, 0, 0, 0); /* validity ran out first */
    assert_int_equal(release_verdict(&f, false, true), RL_ELOST);
    f = facts(3, 0, 1, 2, 0);
    assert_int_equal(release_verdict(&f, false, true), RL_ENOTACQUIRED);
}

/* An adopted token may be free: a quorum without another's key is done. */
static void test_adopted_token_outcomes_on_three_nodes(void **state)
{
    struct release_facts f;

    (void)state;
    f = facts(3, 0, 2, 1, 0);
    assert_int_equal(release_verdict(&f, true, false), RL_OK);
    f = facts(3, 1, 1, 0, 1);
    assert_int_equal(release_verdict(&f, true, false), RL_OK);
    f = facts(3, 0, 1, 1, 1); /* the unknown node may be another's */
    assert_int_equal(release_verdict(&f, true, false), RL_ENOQUORUM);
    f = facts(3, 0, 1, 2, 0);
    assert_int_equal(release_verdict(&f, true, false), RL_ENOTACQUIRED);
}

/* RL_OK for our own lock only when a quorum of voting nodes deleted our
 * key (rl_with_lock's "held throughout"); RL_ELOST only when fewer than a
 * quorum can have held it, or the validity had run out. */
static void test_own_lock_is_ok_only_with_a_quorum_of_holders(void **state)
{
    size_t n, h, g, o, u, q;
    struct release_facts f;
    rl_status st;

    (void)state;
    for (n = 1; n <= 9; n++) {
        q = quorum_size(n);
        for (h = 0; h <= n; h++)
            for (g = 0; h + g <= n; g++)
                for (o = 0; h + g + o <= n; o++) {
                    u = n - h - g - o;
                    f = facts(n, h, g, o, u);
                    st = release_verdict(&f, false, false);
                    assert_int_equal(st == RL_OK, h >= q);
                    assert_int_equal(st == RL_ELOST, h + u < q && o < q);
                    assert_int_equal(release_verdict(&f, false, true),
                                     o >= q ? RL_ENOTACQUIRED : RL_ELOST);
                }
    }
}

/* release_settled against its definition: every way the nodes still to
 * answer can answer gives one outcome. */
static bool every_mix_agrees(const struct release_facts *f,
                             const struct flags *fl)
{
    size_t pending = f->n - f->held - f->gone - f->other - f->unknown;
    struct release_facts c = *f;
    rl_status first;
    size_t a, b, d;

    add(&c, HELD, pending);
    first = release_verdict(&c, fl->adopted, fl->expired);
    for (a = 0; a <= pending; a++)
        for (b = 0; a + b <= pending; b++)
            for (d = 0; a + b + d <= pending; d++) {
                c = *f;
                add(&c, HELD, a);
                add(&c, GONE, b);
                add(&c, UNKNOWN, d);
                add(&c, OTHER, pending - a - b - d);
                if (release_verdict(&c, fl->adopted, fl->expired) != first)
                    return false;
            }
    return true;
}

static void test_settled_means_no_answer_left_can_change_it(void **state)
{
    size_t n, h, g, o, u, i;
    struct release_facts f;

    (void)state;
    for (i = 0; i < FLAG_SETS; i++)
        for (n = 1; n <= 9; n++)
            for (h = 0; h <= n; h++)
                for (g = 0; h + g <= n; g++)
                    for (o = 0; h + g + o <= n; o++)
                        for (u = 0; h + g + o + u <= n; u++) {
                            f = facts(n, h, g, o, u);
                            assert_int_equal(
                                release_settled(&f, flag_sets[i].adopted,
                                                flag_sets[i].expired),
                                every_mix_agrees(&f, &flag_sets[i]));
                        }
}

/* What the round does: count answers in the order they come, stop at the
 * first settled prefix and count the nodes not waited for as unknown
 * (release.c's decided); its outcome must be that of all the answers, for
 * every sequence of answers on up to 6 nodes. */
static void test_every_reply_order_gives_the_outcome_of_all(void **state)
{
    struct release_facts all, seen;
    const struct flags *fl;
    size_t n, i, k, code, codes, rest;

    (void)state;
    for (k = 0; k < FLAG_SETS; k++)
        for (n = 1, fl = &flag_sets[k]; n <= 6; n++) {
            for (codes = 1, i = 0; i < n; i++)
                codes *= KINDS;
            for (code = 0; code < codes; code++) {
                all = facts(n, 0, 0, 0, 0);
                for (i = 0, rest = code; i < n; i++, rest /= KINDS)
                    add(&all, (enum kind)(rest % KINDS), 1);
                seen = facts(n, 0, 0, 0, 0);
                for (rest = code;
                     !release_settled(&seen, fl->adopted, fl->expired);
                     rest /= KINDS)
                    add(&seen, (enum kind)(rest % KINDS), 1);
                seen.unknown = n - seen.held - seen.gone - seen.other;
                assert_int_equal(
                    release_verdict(&seen, fl->adopted, fl->expired),
                    release_verdict(&all, fl->adopted, fl->expired));
            }
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_lock_outcomes_on_three_nodes),
        cmocka_unit_test(test_adopted_token_outcomes_on_three_nodes),
        cmocka_unit_test(test_own_lock_is_ok_only_with_a_quorum_of_holders),
        cmocka_unit_test(test_settled_means_no_answer_left_can_change_it),
        cmocka_unit_test(test_every_reply_order_gives_the_outcome_of_all),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
