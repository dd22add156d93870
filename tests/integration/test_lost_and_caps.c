/* SPDX-License-Identifier: BSD-3-Clause */
/* test_lost_and_caps.c -- a held lock's life at its edges (issue 10 §2),
 * written against include/redlock.h only:
 *   - once LOST, always LOST: a watchdog renewal that is still in flight
 *     when the lock is reported lost, and whose replies land afterwards,
 *     must neither clear the flag nor move the validity; a later extend
 *     says RL_ELOST even though Redis still holds the key;
 *   - max_hold_ms: UINT64_MAX means "no cap" (the lock keeps being
 *     renewed), values whose microseconds overflow 64 bits are either
 *     refused (RL_EINVAL) or behave as no cap, and a short cap still
 *     stops the renewals (the control that shows the checks can fail).
 * Timing bounds scale with RL_TEST_TIMEOUT_MULTIPLIER. */
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

#define NODES 3
#define QUORUM 2

static const struct fixture_opts fx = { .nodes = NODES };

static bool fd_readable(int fd, int timeout_ms)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };

    if (fd < 0)
        return false;
    return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN) != 0;
}

static uint64_t stat_renewals(rl_client *c)
{
    rl_stats s;

    assert_int_equal(rl_client_stats(c, &s), RL_OK);
    return s.renewals;
}

/* ==== Once LOST, always LOST ============================================ */

#define LOST_TTL_MS 1000

/* harness_scale_ms(ms), but at most three times ms: valgrind's x10 would
 * make these holds last minutes without testing anything more. */
static int64_t scaled(int64_t ms)
{
    int64_t s = harness_scale_ms(ms);

    return s < 3 * ms ? s : 3 * ms;
}

struct lost_rec {
    atomic_int calls;
    int64_t validity_ms;       /* rl_lock_validity_ms inside the callback */
    pid_t resume[NODES];       /* SIGCONT these at once (0: none) */
};

/* Runs on the loop thread the moment the lock is LOST: wake the paused
 * majority so the renewal still in flight gets its answers now. */
static void on_lost(rl_lock *l, void *privdata)
{
    struct lost_rec *rec = privdata;

    rec->validity_ms = rl_lock_validity_ms(l);
    for (int i = 0; i < NODES; i++) {
        if (rec->resume[i] > 0)
            kill(rec->resume[i], SIGCONT);
    }
    atomic_fetch_add(&rec->calls, 1);
}

/* The op timeout (2.5 TTLs) outlives the lock: when a majority is paused,
 * the renewal round sent to it is still waiting for them when the margin
 * is reached and the lock is reported LOST. The lost callback resumes
 * them, their replies complete the round -- after LOST. */
static void long_op_timeout(rl_config *cfg)
{
    cfg->op_timeout_ms = (uint32_t)scaled(5 * LOST_TTL_MS / 2);
}

static const struct fixture_opts long_op = { .nodes = NODES,
                                             .tune = long_op_timeout };

static void test_renewal_landing_after_lost_does_not_revive_the_lock(
    void **state)
{
    struct fixture *f = *state;
    struct lost_rec rec = { 0 };
    rl_acquire_opts o = { 0 };
    rl_lock *l = NULL;
    const char *key = "lt:lost";
    char token[160];
    int64_t ttl = scaled(LOST_TTL_MS);
    int64_t max_after = INT64_MIN;
    int64_t end;
    uint64_t renewals_at_lost;
    uint64_t renewals_after;
    long long max_pttl = -3;
    bool flag_cleared = false;
    int fd;
    rl_status st;

    o.ttl_ms = (uint32_t)ttl;
    o.auto_extend = true;
    o.extend_interval_ms = (uint32_t)(ttl / 2);
    o.lost_cb = on_lost;
    o.lost_privdata = &rec;
    /* Set before the watchdog (and its thread) can look at it. */
    for (int i = 0; i < QUORUM; i++)
        rec.resume[i] = f->r[i].pid;
    assert_int_equal(rl_acquire(f->c, key, &o, &l), RL_OK);
    f->l = l;
    snprintf(token, sizeof(token), "%s", rl_lock_token(l));
    fd = rl_lock_lost_fd(l);
    assert_true(fd >= 0);
    /* Renewed once, then freeze a majority (they keep their sockets). */
    harness_sleep_ms(ttl * 3 / 4);
    assert_false(rl_lock_lost(l));
    for (int i = 0; i < QUORUM; i++)
        assert_int_equal(harness_pause(&f->r[i]), 0);
    assert_true(fd_readable(fd, (int)(3 * ttl)));
    assert_true(harness_wait_count(&rec.calls, 1, 1000));
    renewals_at_lost = stat_renewals(f->c);
    for (int i = 0; i < QUORUM; i++)
        assert_int_equal(harness_resume(&f->r[i]), 0);

    /* For the rest of the validity (and the round's answers): the flag
     * stays, the validity only counts down. */
    end = harness_now_ms() + ttl;
    while (harness_now_ms() < end) {
        int64_t v = rl_lock_validity_ms(l);
        long long pttl = -3;

        if (!rl_lock_lost(l))
            flag_cleared = true;
        if (v > max_after)
            max_after = v;
        harness_holders(f->r, NODES, key, token, &pttl);
        if (pttl > max_pttl)
            max_pttl = pttl;
        harness_sleep_ms(5);
    }
    renewals_after = stat_renewals(f->c);
    fprintf(stderr,
            "  lost with %lld ms of validity left; afterwards: largest "
            "validity %lld ms, largest PTTL of our key in Redis %lld ms, "
            "%llu renewal(s) counted after the loss, flag cleared: %s\n",
            (long long)rec.validity_ms, (long long)max_after, max_pttl,
            (unsigned long long)(renewals_after - renewals_at_lost),
            flag_cleared ? "yes" : "no");
    assert_int_equal(atomic_load(&rec.calls), 1);
    assert_true(rec.validity_ms > 0);
    assert_false(flag_cleared);
    assert_true(max_after <= rec.validity_ms);
    assert_true(renewals_after == renewals_at_lost);

    /* An explicit extend now, with every node up: still lost. */
    rl_watchdog_stop(l);
    st = rl_extend(l, 0);
    if (st != RL_ELOST)
        fprintf(stderr, "  rl_extend after LOST: %s: %s\n",
                rl_status_name(st), rl_last_error());
    assert_int_equal(st, RL_ELOST);
    assert_true(rl_lock_lost(l));
    assert_true(rl_lock_validity_ms(l) <= rec.validity_ms);
    f->l = NULL;
    st = rl_release(l);
    assert_true(st == RL_OK || st == RL_ELOST);
    assert_true(harness_key_gone_within(f->r, NODES, key, 2 * ttl));
}

/* ==== max_hold_ms ======================================================= */

#define CAP_TTL_MS 300

/* Acquire key into f->l with a watchdog capped at max_hold_ms (through
 * opts.auto_extend, or rl_watchdog_start on a plain lock). Returns the
 * acquire / start status, its detail in err; f->l is NULL unless RL_OK. */
static rl_status acquire_capped(struct fixture *f, const char *key,
                                uint64_t max_hold_ms, bool via_start,
                                char *err, size_t errlen)
{
    rl_acquire_opts o = { 0 };
    rl_status st;

    o.ttl_ms = (uint32_t)scaled(CAP_TTL_MS);
    o.extend_interval_ms = o.ttl_ms / 6;
    o.max_hold_ms = max_hold_ms;
    o.auto_extend = !via_start;
    f->l = NULL;
    st = rl_acquire(f->c, key, &o, &f->l);
    if (st == RL_OK && via_start)
        st = rl_watchdog_start(f->l, &o);
    snprintf(err, errlen, "%s", st == RL_OK ? "" : rl_last_error());
    if (st != RL_OK && f->l != NULL) {
        assert_int_equal(rl_release(f->l), RL_OK);
        f->l = NULL;
    }
    return st;
}

/* f->l held for four TTLs: never lost, renewed meanwhile, a majority
 * holds the token at the end; then released. */
static void assert_renewed_for_4_ttls(struct fixture *f, const char *key)
{
    uint64_t before = stat_renewals(f->c);
    rl_lock *l = f->l;
    int holders;

    harness_sleep_ms(4 * scaled(CAP_TTL_MS));
    holders = harness_holders(f->r, NODES, key, rl_lock_token(l), NULL);
    fprintf(stderr, "  %s: lost %s, validity %lld ms, %llu renewals, %d "
                    "holders\n",
            key, rl_lock_lost(l) ? "yes" : "no",
            (long long)rl_lock_validity_ms(l),
            (unsigned long long)(stat_renewals(f->c) - before), holders);
    assert_false(rl_lock_lost(l));
    assert_true(rl_lock_validity_ms(l) > 0);
    assert_true(stat_renewals(f->c) - before >= 4);
    assert_true(holders >= QUORUM);
    f->l = NULL;
    assert_int_equal(rl_release(l), RL_OK);
}

static void test_max_hold_ms_uint64_max_means_no_cap(void **state)
{
    struct fixture *f = *state;
    char err[256];

    assert_int_equal(acquire_capped(f, "lt:cap:max", UINT64_MAX, false, err,
                                    sizeof(err)),
                     RL_OK);
    assert_renewed_for_4_ttls(f, "lt:cap:max");
    assert_int_equal(acquire_capped(f, "lt:cap:max-start", UINT64_MAX, true,
                                    err, sizeof(err)),
                     RL_OK);
    assert_renewed_for_4_ttls(f, "lt:cap:max-start");
}

/* Values whose microseconds do not fit in 64 bits: refused with a detail
 * that names the field, or taken as "no cap" -- never a cap that has
 * already passed. */
static void test_max_hold_ms_overflowing_microseconds_refused_or_no_cap(
    void **state)
{
    struct fixture *f = *state;
    const uint64_t huge[] = {
        UINT64_MAX / 1000u + 1u,
        (uint64_t)INT64_MAX + 1u,
        UINT64_MAX - 1u,
    };
    /* Under valgrind each hold is slow: the first value is enough. */
    size_t n = getenv("RL_TEST_UNDER_VALGRIND") != NULL
                   ? 1
                   : sizeof(huge) / sizeof(huge[0]);
    char key[64];
    char err[256];

    for (size_t i = 0; i < n; i++) {
        for (int via_start = 0; via_start < 2; via_start++) {
            rl_status st;

            snprintf(key, sizeof(key), "lt:cap:huge:%zu:%d", i, via_start);
            st = acquire_capped(f, key, huge[i], via_start != 0, err,
                                sizeof(err));
            fprintf(stderr, "  max_hold_ms %llu (%s): %s %s\n",
                    (unsigned long long)huge[i],
                    via_start ? "rl_watchdog_start" : "auto_extend",
                    rl_status_name(st), err);
            if (st == RL_EINVAL) {
                assert_non_null(strstr(err, "max_hold_ms"));
                assert_true(harness_key_gone_within(f->r, NODES, key, 500));
                continue;
            }
            assert_int_equal(st, RL_OK);
            assert_renewed_for_4_ttls(f, key);
        }
    }
}

/* The control: a cap of half a TTL stops the renewals, and the lock is
 * reported lost before its validity ends. */
static void test_max_hold_ms_short_cap_stops_renewals(void **state)
{
    struct fixture *f = *state;
    int64_t ttl = scaled(CAP_TTL_MS);
    char err[256];
    rl_lock *l;
    rl_status st;

    assert_int_equal(acquire_capped(f, "lt:cap:short", (uint64_t)(ttl / 2),
                                    false, err, sizeof(err)),
                     RL_OK);
    assert_true(fd_readable(rl_lock_lost_fd(f->l), (int)(4 * ttl)));
    assert_true(rl_lock_lost(f->l));
    l = f->l;
    f->l = NULL;
    st = rl_release(l);
    assert_true(st == RL_OK || st == RL_ELOST);
}

/* A node whose grant arrived after the acquire was decided holds our key
 * too: one other node losing its key is no reason to call the lock lost
 * while a quorum still holds it (issue 15's vote withdrawal counted only
 * the grants that came before the decision: a false LOST). Node 2 is
 * paused through the acquire, so the round decides on nodes 0 and 1 and
 * node 2's SET lands when it resumes; then node 0 loses the key. */
static void test_late_grant_still_counts_when_a_key_vanishes(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = {0};
    const char *key = "late:grant";
    redisReply *reply;

    o.ttl_ms = 10000;
    assert_int_equal(harness_pause(&f->r[2]), 0);
    assert_int_equal(rl_acquire(f->c, key, &o, &f->l), RL_OK);
    assert_int_equal(harness_resume(&f->r[2]), 0);
    /* Its SET was in flight. */
    assert_true(harness_key_holds_within(&f->r[2], key, rl_lock_token(f->l),
                                         3000));
    reply = harness_cmd(&f->r[0], "DEL %s", key);
    assert_non_null(reply);
    assert_int_equal(reply->integer, 1);
    freeReplyObject(reply);
    /* Nodes 1 and 2 (a quorum) still hold it: the extension succeeds. */
    assert_int_equal(rl_extend(f->l, 0), RL_OK);
    assert_false(rl_lock_lost(f->l));
    assert_true(harness_key_holds(&f->r[1], key, rl_lock_token(f->l)));
    assert_true(harness_key_holds(&f->r[2], key, rl_lock_token(f->l)));
    assert_true(harness_key_absent(&f->r[0], key));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        FIXTURE_TEST(test_renewal_landing_after_lost_does_not_revive_the_lock,
                     &long_op),
        cmocka_unit_test(test_max_hold_ms_uint64_max_means_no_cap),
        cmocka_unit_test(
            test_max_hold_ms_overflowing_microseconds_refused_or_no_cap),
        cmocka_unit_test(test_max_hold_ms_short_cap_stops_renewals),
        cmocka_unit_test(test_late_grant_still_counts_when_a_key_vanishes),
    };

    return FIXTURE_RUN("lost_and_caps", &fx, tests);
}
