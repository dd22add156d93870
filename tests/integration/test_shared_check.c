/* SPDX-License-Identifier: BSD-3-Clause */
/* test_shared_check.c -- the node's shared check (src/nodeshare.c)
 * against real redis-server processes, with five clients of the same
 * node(s):
 *   - once every client follows the node (subscribed to redlock:facts),
 *     one of them checks the node and publishes its readings, the others
 *     take them instead of checking themselves (checks_heard), and a
 *     policy turned evicting is still seen by every client within 2 s;
 *   - when the publisher goes (rl_client_free), the others check again:
 *     the policy change is seen within 6 s, one or two of them check and
 *     take over publishing (not every one: the takeovers wait by id), and
 *     the rest go back to hearing; when the node stalls across the
 *     takeover, every one of them checks, yet one or two publish;
 *   - (in the first case) a published reading of another server (a
 *     run_id not the node's) is not taken, nor is a malformed one; the
 *     same line with the node's run_id is (the control: publications are
 *     read, the first one was refused for its run_id).
 * Every wait polls the clients' counters (rl_client_node_stats) until a
 * scaled deadline; the counts in a window are printed, never asserted as
 * a rate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

#define CLIENTS 5
#define CHANNEL "redlock:facts"
/* Readings every client must have taken part in (one heard, or one of
 * its own published: while nothing changes, one every 3 instants) in a
 * window that shows the readings have settled. */
#define SETTLED_INSTANTS 2

/* The clients, made by setup and freed by cleanup (also when a case
 * fails); a case that frees one itself sets its entry to NULL. */
struct clients {
    rl_client *c[CLIENTS];
};

static const char *const names[CLIENTS] = {"A", "B", "C", "D", "E"};

static int start_clients(struct fixture *f)
{
    struct clients *cs = f->priv;
    rl_config cfg;

    for (int i = 0; i < CLIENTS; i++) {
        fixture_config(&cfg, &f->hn);
        cfg.log_privdata = (void *)names[i];
        cs->c[i] = fixture_client(&cfg);
        if (cs->c[i] == NULL)
            return -1;
    }
    return 0;
}

static void free_clients(struct fixture *f)
{
    struct clients *cs = f->priv;

    for (int i = 0; i < CLIENTS; i++) {
        rl_client_free(cs->c[i]);
        cs->c[i] = NULL;
    }
}

static const struct fixture_opts three = {
    .nodes = 3, .no_client = true, .priv_size = sizeof(struct clients),
    .setup = start_clients, .cleanup = free_clients};
static const struct fixture_opts one = {
    .nodes = 1, .no_client = true, .priv_size = sizeof(struct clients),
    .setup = start_clients, .cleanup = free_clients};

/* Client i, NULL once the case freed it. */
static rl_client *cl(const struct fixture *f, int i)
{
    return ((const struct clients *)f->priv)->c[i];
}

/* A client's node checks of one node, as rl_node_stats counts them. */
struct checks {
    uint64_t own;
    uint64_t heard;
    uint64_t shared;
    int vote_bar;
};

static void read_checks(struct fixture *f, size_t node,
                        struct checks out[CLIENTS])
{
    rl_node_stats s;

    memset(out, 0, sizeof(struct checks) * CLIENTS);
    for (int i = 0; i < CLIENTS; i++) {
        if (cl(f, i) == NULL)
            continue;
        assert_int_equal(rl_client_node_stats(cl(f, i), node, &s), RL_OK);
        out[i].own = s.checks_own;
        out[i].heard = s.checks_heard;
        out[i].shared = s.checks_shared;
        out[i].vote_bar = s.vote_bar;
    }
}

static void print_window(const struct fixture *f, size_t node,
                         const char *what, const struct checks *base,
                         const struct checks *now)
{
    fprintf(stderr, "  node %zu %s:", node, what);
    for (int i = 0; i < CLIENTS; i++) {
        if (cl(f, i) == NULL)
            continue;
        fprintf(stderr, " %s own +%llu heard +%llu shared +%llu;", names[i],
                (unsigned long long)(now[i].own - base[i].own),
                (unsigned long long)(now[i].heard - base[i].heard),
                (unsigned long long)(now[i].shared - base[i].shared));
    }
    fprintf(stderr, "\n");
}

/* Every live client is subscribed to node's readings: a client follows
 * the shared check only after FOLLOW_AFTER_CHECKS (8) checks of its own,
 * about 8 s. */
static void wait_all_following(struct fixture *f, int nodes, int live)
{
    int64_t start = harness_now_ms();
    int64_t deadline = start + harness_scale_ms(30000);
    long long subs = -1;

    for (int i = 0; i < nodes; i++) {
        while ((subs = harness_numsub(&f->r[i], CHANNEL)) != live &&
               harness_now_ms() < deadline)
            harness_sleep_ms(100);
        if (subs != live)
            fail_msg("node %d: %lld subscribers of " CHANNEL ", want %d", i,
                     subs, live);
    }
    fprintf(stderr, "  %d clients follow %d node(s) after %lld ms\n", live,
            nodes, (long long)(harness_now_ms() - start));
}

/* Waits until node's readings have settled among the live clients: in
 * one window between two snapshots every client took part in at least
 * SETTLED_INSTANTS readings, exactly one client published (its
 * checks_shared grew), and each other one checked the node itself at
 * most once (the full check every 60th instant). A window that breaks
 * this (two publishers, a second own check of a follower, or every
 * client counted without the rest holding) starts again from a new
 * snapshot. Returns the publisher; fails the case past the deadline. */
static int wait_settled(struct fixture *f, size_t node, int64_t deadline)
{
    struct checks base[CLIENTS], now[CLIENTS], last[CLIENTS];
    int64_t start = harness_now_ms();
    int restarts = 0;

    read_checks(f, node, base);
    memcpy(last, base, sizeof(last));
    do {
        int publisher = -1, publishers = 0, live = 0, took_part = 0;
        bool own_ok = true;

        harness_sleep_ms(100);
        read_checks(f, node, now);
        for (int i = 0; i < CLIENTS; i++) {
            if (cl(f, i) == NULL)
                continue;
            live++;
            if (now[i].shared > base[i].shared) {
                publishers++;
                publisher = i;
            } else if (now[i].own - base[i].own > 1) {
                own_ok = false;
            }
            if (now[i].heard - base[i].heard +
                    (now[i].shared - base[i].shared) >=
                SETTLED_INSTANTS)
                took_part++;
        }
        if (publishers == 1 && own_ok && took_part == live) {
            print_window(f, node, "settled", base, now);
            fprintf(stderr, "  node %zu: publisher %s, after %lld ms and "
                            "%d new windows\n",
                    node, names[publisher],
                    (long long)(harness_now_ms() - start), restarts);
            return publisher;
        }
        if (publishers > 1 || !own_ok || took_part == live) {
            print_window(f, node, "unsettled", base, now);
            memcpy(last, base, sizeof(last));
            memcpy(base, now, sizeof(base));
            restarts++;
        }
    } while (harness_now_ms() < deadline);
    /* The window still open, and the last one that failed. */
    print_window(f, node, "open window", base, now);
    print_window(f, node, "last failed window", last, base);
    fail_msg("node %zu: the readings did not settle in %lld ms", node,
             (long long)(harness_now_ms() - start));
    return -1;
}

/* PUBLISH line on redlock:facts of r; the subscribers it reached. */
static long long publish(const struct rl_redis *r, const char *line)
{
    return harness_int(harness_cmd(r, "PUBLISH " CHANNEL " %s", line), -1);
}

/* Polls until every live client reports vote_bar want for node, within
 * ms (scaled); prints when each did. repeat (may be NULL) is published on
 * the node before each look, so a client that was between its own check
 * and its reply when one arrived (it then keeps its own) gets another. */
static bool wait_all_bar(struct fixture *f, size_t node, int want, int ms,
                         const char *repeat)
{
    int64_t start = harness_now_ms();
    int64_t deadline = start + harness_scale_ms(ms);
    int64_t seen[CLIENTS];
    struct checks now[CLIENTS];
    int missing;

    for (int i = 0; i < CLIENTS; i++)
        seen[i] = -1;
    do {
        if (repeat != NULL)
            publish(&f->r[node], repeat);
        read_checks(f, node, now);
        missing = 0;
        for (int i = 0; i < CLIENTS; i++) {
            if (cl(f, i) == NULL || seen[i] >= 0)
                continue;
            if (now[i].vote_bar == want)
                seen[i] = harness_now_ms() - start;
            else
                missing++;
        }
        if (missing == 0)
            break;
        harness_sleep_ms(repeat != NULL ? 200 : 20);
    } while (harness_now_ms() < deadline);
    fprintf(stderr, "  node %zu: vote_bar %d", node, want);
    for (int i = 0; i < CLIENTS; i++) {
        if (cl(f, i) == NULL)
            continue;
        if (seen[i] >= 0)
            fprintf(stderr, "; %s after %lld ms", names[i],
                    (long long)seen[i]);
        else
            fprintf(stderr, "; %s not (%d)", names[i], now[i].vote_bar);
    }
    fprintf(stderr, "\n");
    return missing == 0;
}

static void turn_evicting(const struct rl_redis *r)
{
    assert_true(harness_ok(harness_cmd(r, "CONFIG SET maxmemory 100mb")));
    assert_true(
        harness_ok(harness_cmd(r, "CONFIG SET maxmemory-policy allkeys-lru")));
}

static void check_other_server_reading_refused(struct fixture *f,
                                               size_t node)
{
    struct checks base[CLIENTS], now[CLIENTS];
    char run_id[64], other[64];
    char forged[256], control[256];
    int64_t deadline;
    int behind;

    assert_int_equal(
        harness_info_field(&f->r[node], "server", "run_id", run_id,
                           sizeof(run_id)),
        0);
    assert_int_equal(strlen(run_id), 40);
    /* Another run_id: every hex digit changed. */
    for (size_t i = 0; i < 40; i++)
        other[i] = run_id[i] == '0' ? '1' : '0';
    other[40] = '\0';
    snprintf(forged, sizeof(forged),
             "rlf1 0000000000000000 %s master - allkeys-lru 1000 0 "
             "everysec 0", other);
    snprintf(control, sizeof(control),
             "rlf1 0000000000000000 %s master - allkeys-lru 1000 0 "
             "everysec 0", run_id);

    /* The forgery reaches all three (PUBLISH counts them), again at each
     * look, until every client has taken two readings after the first. */
    read_checks(f, node, base);
    assert_int_equal(publish(&f->r[node], forged), CLIENTS);
    deadline = harness_now_ms() + harness_scale_ms(10000);
    do {
        harness_sleep_ms(200);
        publish(&f->r[node], forged);
        read_checks(f, node, now);
        behind = 0;
        for (int i = 0; i < CLIENTS; i++)
            behind += now[i].heard - base[i].heard +
                          (now[i].own - base[i].own) <
                      2;
    } while (behind > 0 && harness_now_ms() < deadline);
    print_window(f, node, "after the forgery", base, now);
    assert_int_equal(behind, 0);
    for (int i = 0; i < CLIENTS; i++)
        assert_int_equal(now[i].vote_bar, RL_VOTES);

    /* Garbage on the channel: refused, every client still answers. */
    assert_int_equal(publish(&f->r[node], "rlf1 garbage"), CLIENTS);
    read_checks(f, node, now);
    for (int i = 0; i < CLIENTS; i++)
        assert_int_equal(now[i].vote_bar, RL_VOTES);

    /* The control: the node's own run_id. */
    assert_int_equal(publish(&f->r[node], control), CLIENTS);
    assert_true(wait_all_bar(f, node, RL_BAR_EVICTS, 2000, control));
}

/* ---- Cases ---------------------------------------------------------------*/

/* Three clients of three nodes: per node, one client reads for the
 * others; a policy turned evicting on node 1 still reaches every client
 * within the 2 s a client checking on its own has (test_preconditions);
 * and a reading of another server published on node 0 is not taken
 * (one case, not two: following and settling take most of its time). */
static void test_one_client_reads_for_the_others(void **state)
{
    struct fixture *f = *state;
    int64_t deadline;

    wait_all_following(f, 3, CLIENTS);
    deadline = harness_now_ms() + harness_scale_ms(30000);
    for (size_t i = 0; i < 3; i++)
        wait_settled(f, i, deadline);
    check_other_server_reading_refused(f, 0);
    turn_evicting(&f->r[1]);
    assert_true(wait_all_bar(f, 1, RL_BAR_EVICTS, 2000, NULL));
}

/* Snapshots of the clients' counters, every 20 ms, the last TAKE_RING. */
#define TAKE_RING 128
struct snapshots {
    struct checks at[TAKE_RING][CLIENTS];
    int64_t ms[TAKE_RING];
    unsigned next;
};

/* Polls node 0's counters until a live client's checks_shared has grown
 * past base (the first publication after the publisher went), then
 * 300 ms more. Returns how many live clients sent a check of their own
 * from a second before that publication to the end: the takeover's
 * checkers (a follower's full check, every 60th instant, falls in this
 * window rarely). -1 when nobody published before the deadline. */
static int takeover_checkers(struct fixture *f,
                             const struct checks base[CLIENTS])
{
    static struct snapshots s;
    int64_t deadline = harness_now_ms() + harness_scale_ms(10000);
    int64_t first = -1, now;
    const struct checks *from = base, *last;
    int checkers = 0;

    s.next = 0;
    for (;;) {
        unsigned k = s.next++ % TAKE_RING;

        now = harness_now_ms();
        read_checks(f, 0, s.at[k]);
        s.ms[k] = now;
        last = s.at[k];
        for (int i = 0; i < CLIENTS && first < 0; i++)
            if (cl(f, i) != NULL && last[i].shared > base[i].shared)
                first = now;
        if (first >= 0 ? now >= first + 300 : now >= deadline)
            break;
        harness_sleep_ms(20);
    }
    if (first < 0)
        return -1;
    /* The newest snapshot at least a second before the publication. */
    for (unsigned j = 0; j < TAKE_RING && j < s.next; j++) {
        unsigned k = (s.next - 1 - j) % TAKE_RING;

        if (s.ms[k] <= first - 1000) {
            from = s.at[k];
            break;
        }
    }
    print_window(f, 0, "around the takeover", from, last);
    for (int i = 0; i < CLIENTS; i++)
        checkers += cl(f, i) != NULL && last[i].own > from[i].own;
    return checkers;
}

/* Frees the publisher right after a reading, and pauses the node's
 * clients (CLIENT PAUSE) from shortly before the others' takeover, 4
 * instants after that reading, to well after their delays: every one of
 * them checks in the stall, and the replies come back together. Yet one
 * or two of them publish, not all (a slow takeover check waits the
 * delay again before its publication). */
static void takeover_in_a_stall(struct fixture *f, int publisher)
{
    struct clients *cs = f->priv;
    struct checks base[CLIENTS], now[CLIENTS];
    int64_t deadline = harness_now_ms() + harness_scale_ms(10000);
    int64_t heard = -1, first = -1;
    uint64_t sum, last_sum = 0;
    int publishers = 0;

    /* A reading arrives (one every 3 instants): free its publisher. */
    read_checks(f, 0, base);
    for (int i = 0; i < CLIENTS; i++)
        last_sum += base[i].heard;
    do {
        harness_sleep_ms(10);
        read_checks(f, 0, now);
        sum = 0;
        for (int i = 0; i < CLIENTS; i++)
            sum += now[i].heard;
    } while (sum == last_sum && harness_now_ms() < deadline);
    assert_true(sum > last_sum);
    heard = harness_now_ms();
    rl_client_free(cs->c[publisher]);
    cs->c[publisher] = NULL;
    read_checks(f, 0, base);
    /* The takeover instant is about 4 s after that reading. */
    harness_sleep_ms(3850 - (harness_now_ms() - heard));
    assert_true(harness_ok(harness_cmd(&f->r[0], "CLIENT PAUSE 1000 ALL")));
    fprintf(stderr, "  publisher %s freed; node paused %lld ms after the "
                    "last reading\n",
            names[publisher], (long long)(harness_now_ms() - heard));
    deadline = harness_now_ms() + harness_scale_ms(10000);
    do {
        harness_sleep_ms(20);
        read_checks(f, 0, now);
        for (int i = 0; i < CLIENTS && first < 0; i++)
            if (cl(f, i) != NULL && now[i].shared > base[i].shared)
                first = harness_now_ms();
    } while ((first < 0 || harness_now_ms() < first + 600) &&
             harness_now_ms() < deadline);
    print_window(f, 0, "the stalled takeover", base, now);
    for (int i = 0; i < CLIENTS; i++)
        publishers += cl(f, i) != NULL && now[i].shared > base[i].shared;
    assert_in_range(publishers, 1, 2);
}

/* The publisher goes without a word (rl_client_free), twice. The first
 * time the node stalls across the takeover (takeover_in_a_stall): of
 * the four others one or two publish. The second time, at the first
 * instant after 3 in which the three left heard nothing, one of them
 * checks (and publishes) again: one or two of them check then, not all
 * three (the takeovers wait by id: the first one's reading stands for
 * the others' checks). A policy change made right after the free is seen
 * within 6 s (a follower that heard the last reading checks at the
 * fourth instant after it, plus its takeover's delay of at most 250 ms,
 * at the latest: about 4.3 s), and the readings settle again with one
 * publishing. */
static void test_the_others_check_again_when_the_publisher_goes(
    void **state)
{
    struct fixture *f = *state;
    struct clients *cs = f->priv;
    struct checks base[CLIENTS];
    int64_t freed, left;
    int publisher, next, checkers;

    wait_all_following(f, 1, CLIENTS);
    publisher = wait_settled(f, 0, harness_now_ms() + harness_scale_ms(30000));
    takeover_in_a_stall(f, publisher);
    publisher = wait_settled(f, 0, harness_now_ms() + harness_scale_ms(30000));
    read_checks(f, 0, base);
    rl_client_free(cs->c[publisher]);
    cs->c[publisher] = NULL;
    freed = harness_now_ms();
    fprintf(stderr, "  publisher %s freed\n", names[publisher]);
    turn_evicting(&f->r[0]);
    checkers = takeover_checkers(f, base);
    fprintf(stderr, "  %d of %d checked at the takeover, %lld ms after "
                    "the free\n",
            checkers, CLIENTS - 2, (long long)(harness_now_ms() - freed));
    assert_in_range(checkers, 1, 2);
    left = harness_scale_ms(6000) - (harness_now_ms() - freed);
    assert_true(wait_all_bar(f, 0, RL_BAR_EVICTS, left > 0 ? (int)left : 0,
                             NULL));
    /* ... and they settle on one publisher again (wait_settled counts the
     * live clients only). */
    next = wait_settled(f, 0, harness_now_ms() + harness_scale_ms(30000));
    fprintf(stderr, "  %s took over from %s\n", names[next],
            names[publisher]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_client_reads_for_the_others),
        FIXTURE_TEST(test_the_others_check_again_when_the_publisher_goes,
                     &one),
    };

    return FIXTURE_RUN("shared_check", &three, tests);
}
