/* SPDX-License-Identifier: BSD-3-Clause */
/* test_vote.c -- may a node vote now, and why not (vote.c): the verdict
 * from a table of rows (what the node's readings recorded, the client's
 * rules, the time), and the record the readings keep (server start,
 * eviction and replica marks). Pure: no clock reads, no Redis. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vote.h"

#define S 1000000u              /* µs per second */
#define NOW ((rl_mono_us)100000 * S)
#define TTL_MS 60000u           /* max_ttl_ms of every row */
/* A key dropped at t may belong to a lock held until t + TTL; the reading
 * that stops showing it may come the longest gap between checks later. */
#define WINDOW_US (((rl_mono_us)TTL_MS + VOTE_CHECK_GAP_MS) * 1000u)

/* A master that has voted for a long time: no eviction, up for an hour. */
static struct vote_record healthy(void)
{
    struct vote_record v;

    memset(&v, 0, sizeof(v));
    v.is_master = true;
    v.evicts = FACT_NO;
    v.up_since_us = NOW - 3600u * S;
    v.start_min_us = v.up_since_us - S;
    return v;
}

/* The client's rules every test starts from: defaults, max_ttl_ms TTL_MS. */
static struct config rules(void)
{
    struct config cfg;

    memset(&cfg, 0, sizeof(cfg));
    cfg.max_ttl_ms = TTL_MS;
    return cfg;
}

struct row {
    const char *name;
    /* the record: changed from healthy() where set */
    bool replica;               /* not a master */
    enum fact evicts;           /* 0 = FACT_NO */
    rl_mono_us evict_ago_us;    /* evict_seen_us = NOW - this (0: never) */
    rl_mono_us replica_ago_us;  /* replica_seen_us = NOW - this */
    rl_mono_us up_us;           /* up_since_us = NOW - this (0: keep) */
    bool start_unknown;         /* up_since_us = 0 */
    bool fsyncs_always;
    bool clock_suspect;
    /* the moment and the rules */
    bool down;
    bool twin;
    bool allow_evicting;
    enum rl_restart_trust trust;
    /* expected */
    enum node_bar bar;
};

static const struct row rows[] = {
    {.name = "healthy master votes", .bar = NODE_BAR_NONE},
    {.name = "not connected", .down = true, .bar = NODE_BAR_DOWN},
    {.name = "down wins over every other bar", .down = true, .twin = true,
     .replica = true, .evicts = FACT_YES, .clock_suspect = true,
     .bar = NODE_BAR_DOWN},
    {.name = "twin of an earlier node", .twin = true, .bar = NODE_BAR_TWIN},
    {.name = "twin wins over role", .twin = true, .replica = true,
     .bar = NODE_BAR_TWIN},
    {.name = "replica", .replica = true, .replica_ago_us = 1,
     .bar = NODE_BAR_ROLE},
    {.name = "may evict", .evicts = FACT_YES, .evict_ago_us = 1,
     .bar = NODE_BAR_EVICTS},
    {.name = "does not say whether it evicts", .evicts = FACT_UNKNOWN,
     .bar = NODE_BAR_EVICTS},
    {.name = "may evict, allowed", .evicts = FACT_YES, .evict_ago_us = 1,
     .allow_evicting = true, .bar = NODE_BAR_NONE},
    {.name = "stopped evicting just now", .evict_ago_us = 1,
     .bar = NODE_BAR_EVICTS},
    {.name = "stopped evicting a TTL and a check ago, less 1 us",
     .evict_ago_us = WINDOW_US - 1, .bar = NODE_BAR_EVICTS},
    {.name = "stopped evicting a TTL and a check ago",
     .evict_ago_us = WINDOW_US, .bar = NODE_BAR_NONE},
    {.name = "evicted lately, allowed", .evict_ago_us = 1,
     .allow_evicting = true, .bar = NODE_BAR_NONE},
    {.name = "was a replica just now", .replica_ago_us = 1,
     .bar = NODE_BAR_EVICTS},
    {.name = "was a replica, allowed evicting does not excuse it",
     .replica_ago_us = 1, .allow_evicting = true, .bar = NODE_BAR_EVICTS},
    {.name = "was a replica a TTL and a check ago",
     .replica_ago_us = WINDOW_US, .bar = NODE_BAR_NONE},
    {.name = "clock suspect", .clock_suspect = true, .bar = NODE_BAR_CLOCK},
    {.name = "evicting wins over the clock", .evicts = FACT_YES,
     .clock_suspect = true, .bar = NODE_BAR_EVICTS},
    {.name = "restarted lately", .up_us = 10u * S,
     .bar = NODE_BAR_QUARANTINE},
    {.name = "start unknown", .start_unknown = true,
     .bar = NODE_BAR_QUARANTINE},
    {.name = "clock wins over the quarantine", .up_us = 10u * S,
     .clock_suspect = true, .bar = NODE_BAR_CLOCK},
    {.name = "up a TTL less 1 ms", .up_us = (TTL_MS - 1) * 1000u,
     .bar = NODE_BAR_QUARANTINE},
    {.name = "up a TTL", .up_us = TTL_MS * 1000u, .bar = NODE_BAR_NONE},
    {.name = "restarted, trusted", .up_us = 10u * S,
     .trust = RL_RESTART_TRUST, .bar = NODE_BAR_NONE},
    {.name = "restarted, auto, fsyncs every write", .up_us = 10u * S,
     .fsyncs_always = true, .bar = NODE_BAR_NONE},
    {.name = "restarted, auto, does not fsync every write",
     .up_us = 10u * S, .bar = NODE_BAR_QUARANTINE},
    {.name = "restarted, quarantine, fsyncs every write", .up_us = 10u * S,
     .fsyncs_always = true, .trust = RL_RESTART_QUARANTINE,
     .bar = NODE_BAR_QUARANTINE},
};

static void test_verdict_rows(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct row *r = &rows[i];
        struct vote_record v = healthy();
        struct config cfg = rules();

        cfg.allow_evicting_nodes = r->allow_evicting;
        cfg.restart_trust = (uint8_t)r->trust;
        v.is_master = !r->replica;
        v.evicts = r->evicts;
        v.evict_seen_us = r->evict_ago_us ? NOW - r->evict_ago_us : 0;
        v.replica_seen_us = r->replica_ago_us ? NOW - r->replica_ago_us : 0;
        if (r->up_us != 0)
            v.up_since_us = NOW - r->up_us;
        if (r->start_unknown)
            v.up_since_us = 0;
        v.fsyncs_always = r->fsyncs_always;
        v.clock.suspect = r->clock_suspect;
        print_message("row: %s\n", r->name);
        assert_int_equal(vote_bar(&cfg, &v, !r->down, r->twin, NOW), r->bar);
    }
}

/* The bars after which a key the node holds may be gone (or its vote
 * never counted) withdraw a held lock's vote; down and quarantine do
 * not. */
static void test_which_bars_keep_keys(void **state)
{
    (void)state;
    assert_true(vote_keeps_keys(NODE_BAR_NONE));
    assert_true(vote_keeps_keys(NODE_BAR_DOWN));
    assert_true(vote_keeps_keys(NODE_BAR_QUARANTINE));
    assert_false(vote_keeps_keys(NODE_BAR_TWIN));
    assert_false(vote_keeps_keys(NODE_BAR_ROLE));
    assert_false(vote_keeps_keys(NODE_BAR_EVICTS));
    assert_false(vote_keeps_keys(NODE_BAR_CLOCK));
}

static void test_quarantine_left(void **state)
{
    struct vote_record v = healthy();
    struct config cfg = rules();

    (void)state;
    cfg.restart_trust = RL_RESTART_QUARANTINE;
    v.up_since_us = NOW - 10u * S;
    assert_int_equal(vote_quarantine_left_ms(&cfg, &v, NOW), TTL_MS - 10000);
    v.up_since_us = NOW - 3600u * S;
    assert_int_equal(vote_quarantine_left_ms(&cfg, &v, NOW), 0);
    v.up_since_us = 0;
    assert_int_equal(vote_quarantine_left_ms(&cfg, &v, NOW), -1);
    v.up_since_us = NOW - 10u * S;
    cfg.restart_trust = RL_RESTART_TRUST;
    assert_int_equal(vote_quarantine_left_ms(&cfg, &v, NOW), 0);
}

/* uptime_in_seconds has whole seconds: the start lies within a second
 * either way; the quarantine counts from the latest, started_after from
 * the earliest. The same run_id again keeps what was known. */
static void test_handshake_learns_the_start(void **state)
{
    struct vote_record v = {0};
    struct node_facts f, again;
    const struct config cfg = rules();

    (void)state;
    facts_from_info(&f, "run_id:aaaa\r\nuptime_in_seconds:100\r\n"
                        "role:master\r\nmaxmemory:0\r\n"
                        "maxmemory_policy:noeviction\r\n");
    vote_handshake(&v, &cfg, "n", &f, NULL, NOW);
    assert_int_equal(v.up_since_us, NOW - 99u * S);
    assert_int_equal(v.start_min_us, NOW - 101u * S);
    assert_true(vote_started_after(&v, NOW - 102u * S));
    assert_false(vote_started_after(&v, NOW - 101u * S));
    assert_int_equal(vote_uptime_ms(&v, NOW), 99000);
    assert_true(v.is_master);
    assert_int_equal(v.evicts, FACT_NO);

    /* A reconnect to the same server 50 s later: the start holds. */
    again = f;
    again.uptime_s = 150;
    vote_handshake(&v, &cfg, "n", &again, &f, NOW + 50u * S);
    assert_int_equal(v.up_since_us, NOW - 99u * S);

    /* Another server (a restart): learnt afresh. */
    memcpy(again.run_id, "bbbb", 5);
    again.uptime_s = 0;
    vote_handshake(&v, &cfg, "n", &again, &f, NOW + 60u * S);
    assert_int_equal(v.up_since_us, NOW + 60u * S);
    assert_int_equal(vote_bar(&cfg, &v, true, false, NOW + 60u * S),
                     NODE_BAR_QUARANTINE);
}

/* A reading marks a replica and a node that may evict, or whose
 * evicted_keys grew since the last reading of the same server. */
static void test_readings_mark_lost_keys(void **state)
{
    struct vote_record v = {0};
    struct node_facts a, b;
    const struct config cfg = rules();

    (void)state;
    facts_from_info(&a, "run_id:aaaa\r\nrole:master\r\nmaxmemory:0\r\n"
                        "maxmemory_policy:noeviction\r\nevicted_keys:5\r\n");
    vote_read(&v, &cfg, "n", &a, &a, NOW);
    assert_int_equal(v.evict_seen_us, 0);
    b = a;
    b.evicted_keys = 6;
    vote_read(&v, &cfg, "n", &b, &a, NOW + S);
    assert_int_equal(v.evict_seen_us, NOW + S);
    memcpy(b.role, "slave", 6);
    vote_read(&v, &cfg, "n", &b, &b, NOW + 2u * S);
    assert_false(v.is_master);
    assert_int_equal(v.replica_seen_us, NOW + 2u * S);
}

#define CHECK_US ((uint64_t)VOTE_CHECK_INTERVAL_MS * 1000u)
#define WALL_US ((uint64_t)1795000000 * S) /* a wall-clock reading */

/* The next check of the node at uri, the wall clock reading now_us;
 * always half to one and a half intervals away. */
static uint64_t next_check(const char *uri, uint64_t now_us)
{
    struct node_addr a;
    char err[128];
    uint64_t at;

    assert_int_equal(uri_parse(uri, &a, err, sizeof(err)), RL_OK);
    at = vote_next_check_us(&a, now_us);
    node_addr_clear(&a);
    assert_true(at >= now_us + CHECK_US / 2);
    assert_true(at < now_us + CHECK_US * 3 / 2);
    return at;
}

/* Every client of a node checks it at the same instants of the wall
 * clock (one wake-up of the node for all of them), whatever its db,
 * user or password or when it started; the next instants of a client
 * are an interval apart; two nodes, or two ports of one host, fall
 * apart. */
static void test_clients_check_a_node_at_the_same_instants(void **state)
{
    uint64_t at = next_check("redis://10.0.0.1:6379", WALL_US);

    (void)state;
    assert_int_equal(next_check("10.0.0.1:6379", WALL_US), at);
    assert_int_equal(next_check("redis://app:pw@10.0.0.1:6379/3",
                                WALL_US + 300000u), at);
    assert_int_equal(next_check("rediss://10.0.0.1:6379",
                                at - CHECK_US / 2), at);
    assert_int_equal(next_check("10.0.0.1:6379", at), at + CHECK_US);
    assert_int_equal(next_check("10.0.0.1:6379", at + 2000u),
                     at + CHECK_US);
    assert_int_equal(next_check("10.0.0.1:6379", at - 2000u),
                     at + CHECK_US);
    assert_true(next_check("10.0.0.1:6380", WALL_US) % CHECK_US !=
                at % CHECK_US);
    assert_true(next_check("10.0.0.2:6379", WALL_US) % CHECK_US !=
                at % CHECK_US);
    assert_true(next_check("unix:///run/redis.sock", WALL_US) % CHECK_US !=
                next_check("unix:///run/redis2.sock", WALL_US) % CHECK_US);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verdict_rows),
        cmocka_unit_test(test_which_bars_keep_keys),
        cmocka_unit_test(test_quarantine_left),
        cmocka_unit_test(test_handshake_learns_the_start),
        cmocka_unit_test(test_readings_mark_lost_keys),
        cmocka_unit_test(test_clients_check_a_node_at_the_same_instants),
    };

    return cmocka_run_group_tests_name("vote", tests, NULL, NULL);
}
