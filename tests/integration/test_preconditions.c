/* SPDX-License-Identifier: BSD-3-Clause */
/* test_preconditions.c -- Redlock's preconditions on every node, checked
 * against real redis-server processes:
 *   - a node that may evict our keys (maxmemory with a policy other than
 *     noeviction) does not vote, so an application filling the nodes
 *     cannot evict a held lock and let a second holder in;
 *   - a node whose policy turns evicting at run time stops voting within
 *     about a second, and a held lock that thereby has too few votes is
 *     LOST before its validity ends; allow_evicting_nodes lets them vote;
 *   - the same server listed twice (two addresses, TCP and its unix
 *     socket) or a replica beside its master is not counted as two
 *     independent nodes: rl_client_new refuses it, naming both entries;
 *     a node that becomes a replica later stops voting, and once promoted
 *     votes again only after max_ttl_ms (the resync dropped its keys);
 *     likewise a node that evicted keys and stopped evicting;
 *   - restart trust "auto": a young node with appendonly yes and
 *     appendfsync always votes at once, one with everysec is quarantined;
 *   - a node given by host name is looked up again when its connection
 *     fails, and reached at its new address (the hosts file is replaced
 *     in a private mount namespace: needs root, else the case says SKIP);
 *   - a user without permission for the scripts gets an error naming the
 *     node and the refusal. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <poll.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"

#define MAX_NODES 4

/* Our /etc/hosts, bind-mounted; "" when none. */
static char hosts[256];

static void unmount_hosts(struct fixture *f)
{
    (void)f;
    if (hosts[0] != '\0') {
        umount2("/etc/hosts", MNT_DETACH);
        unlink(hosts);
    }
    hosts[0] = '\0';
}

/* No servers: each test starts its own. */
static const struct fixture_opts fx = { .cleanup = unmount_hosts };

/* What another application does to a Redis that also serves as a cache:
 * n keys of size bytes, each with a TTL (so volatile-* policies may evict
 * them, and ours). Pipelined on one connection. */
static void fill_node(const struct rl_redis *r, int first, int n,
                      size_t size)
{
    redisContext *ctx = harness_connect(r);
    char *value = malloc(size);

    assert_non_null(ctx);
    assert_non_null(value);
    memset(value, 'x', size);
    for (int i = first; i < first + n; i++)
        redisAppendCommand(ctx, "SET filler:%d %b EX 3600", i, value, size);
    for (int i = 0; i < n; i++) {
        redisReply *reply = NULL;

        /* OOM errors are fine: the node is full, that is the point. */
        if (redisGetReply(ctx, (void **)&reply) != REDIS_OK)
            break;
        freeReplyObject(reply);
    }
    free(value);
    redisFree(ctx);
}

/* Fills an evicting node until key is gone. The LRU is approximate: one
 * round of filling leaves an old key in place about once in twenty, so
 * fill again (new keys) until it is evicted, up to eight rounds. */
static bool evict_key(const struct rl_redis *r, const char *key)
{
    for (int round = 0; round < 8; round++) {
        fill_node(r, round * 4000, 4000, 1024);
        if (harness_pttl(r, key) == -2)
            return true;
    }
    fprintf(stderr, "port %d: %s still exists after 32,000 fillers\n",
            r->port, key);
    return false;
}

static void ping(rl_client *c, rl_node_info *info,
                 size_t n)
{
    size_t count = 0;

    rl_client_ping(c, info, n, &count);
    assert_int_equal(count, n);
}

static int vote_bar_of(const rl_node_info *n)
{
    return n->vote_bar;
}

static int may_evict_of(const rl_node_info *n)
{
    return n->may_evict;
}

static int fsync_always_of(const rl_node_info *n)
{
    return n->fsync_always;
}

/* Polls ping until field(node i) is want (the client's once-a-second
 * check of the nodes has seen what the test changed); false past ms
 * (scaled). */
static bool wait_node_within(rl_client *c, size_t n, size_t i,
                             int (*field)(const rl_node_info *), int want,
                             int ms)
{
    int64_t deadline = harness_now_ms() + harness_scale_ms(ms);
    rl_node_info info[MAX_NODES];

    do {
        ping(c, info, n);
        if (field(&info[i]) == want)
            return true;
        harness_sleep_ms(50);
    } while (harness_now_ms() < deadline);
    fprintf(stderr, "  node %zu: %d, want %d\n", i, field(&info[i]), want);
    return false;
}

static bool wait_node(rl_client *c, size_t n, size_t i,
                      int (*field)(const rl_node_info *), int want)
{
    return wait_node_within(c, n, i, field, want, 5000);
}

static bool wait_vote_bar(rl_client *c, size_t n, size_t i, int want)
{
    return wait_node(c, n, i, vote_bar_of, want);
}

static bool fd_readable(int fd, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};

    return poll(&p, 1, timeout_ms) == 1;
}

static long long info_number(const struct rl_redis *r, const char *section,
                             const char *field)
{
    char buf[64];

    if (harness_info_field(r, section, field, buf, sizeof(buf)) != 0)
        return -1;
    return strtoll(buf, NULL, 10);
}

/* ---- Eviction -------------------------------------------------------------*/

static const char *const evicting_args[] = {
    "--maxmemory", "4mb", "--maxmemory-policy", "volatile-lru", NULL};

/* The reproduction: three nodes that evict (volatile-lru, 4 MB); holder A
 * acquires, an application writes 8,000 1 kB keys to each node, holder B
 * tries. Two holders at once must never happen: either A is refused (the
 * nodes do not vote) or B is. */
static void test_eviction_never_lets_a_second_holder_in(void **state)
{
    struct fixture *f = *state;
    struct harness_opts o = {.extra_args = evicting_args};
    rl_acquire_opts ao = {0};
    rl_status sa, sb;
    long long evicted = 0;

    assert_int_equal(harness_cluster_start_nodes(f->r, 3, &o, &f->hn), 0);
    f->c = fixture_fast_client(&f->hn);
    f->c2 = fixture_fast_client(&f->hn);
    assert_non_null(f->c);
    assert_non_null(f->c2);
    ao.ttl_ms = 30000;
    sa = rl_acquire(f->c, "evict-me", &ao, &f->l);
    fprintf(stderr, "  holder A: %s (%s)\n", rl_status_name(sa),
            sa == RL_OK ? "" : rl_last_error());
    for (int i = 0; i < 3; i++) {
        fill_node(&f->r[i], 0, 8000, 1024);
        evicted += info_number(&f->r[i], "stats", "evicted_keys");
    }
    fprintf(stderr, "  evicted %lld keys on 3 nodes\n", evicted);
    assert_true(evicted > 0);
    sb = rl_acquire(f->c2, "evict-me", &ao, &f->l2);
    fprintf(stderr, "  holder B: %s (%s)\n", rl_status_name(sb),
            sb == RL_OK ? "" : rl_last_error());
    if (sa == RL_OK && sb == RL_OK)
        fail_msg("two holders: A with %lld ms of validity left, and B",
                 (long long)rl_lock_validity_ms(f->l));
    /* The nodes may evict: none votes, A is refused with the reason. */
    assert_int_equal(sa, RL_ENOQUORUM);
    assert_int_equal(sb, RL_ENOQUORUM);
    assert_non_null(strstr(rl_last_error(), "evict"));
}

/* ---- Independence ---------------------------------------------------------*/

/* rl_client_new on these node URIs must fail with RL_EINVAL naming both
 * entries dup and orig. */
static void expect_refused(struct fixture *f, const char *orig, const char *dup)
{
    rl_config cfg;
    rl_status st = RL_OK;

    fixture_config(&cfg, &f->hn);
    f->c = rl_client_new(&cfg, &st);
    if (f->c != NULL) {
        rl_node_info info[MAX_NODES];
        size_t count = 0;

        rl_client_ping(f->c, info, MAX_NODES, &count);
        fail_msg("the client took %zu nodes, two of them the same server "
                 "(%s, %s)", count, orig, dup);
    }
    fprintf(stderr, "  refused: %s: %s\n", rl_status_name(st),
            rl_last_error());
    assert_int_equal(st, RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), orig));
    assert_non_null(strstr(rl_last_error(), dup));
}

/* f->hn: server 0 as 127.0.0.1:port, server 0 again as alias, then
 * server 1. A client there must be refused, naming the first entry and
 * alias_name (how the error names the alias; NULL: alias itself). */
static void expect_alias_refused(struct fixture *f, const char *alias,
                                 const char *alias_name)
{
    char first[64];
    char third[64];

    snprintf(first, sizeof(first), "127.0.0.1:%d", f->r[0].port);
    snprintf(third, sizeof(third), "127.0.0.1:%d", f->r[1].port);
    harness_nodes_set(&f->hn, 0, first);
    harness_nodes_set(&f->hn, 1, alias);
    harness_nodes_set(&f->hn, 2, third);
    expect_refused(f, first, alias_name != NULL ? alias_name : alias);
}

static void test_same_server_on_two_addresses_is_refused(void **state)
{
    struct fixture *f = *state;
    static const char *const two_addrs[] = {"--bind", "127.0.0.1",
                                            "127.0.0.2", NULL};
    struct harness_opts o = {.extra_args = two_addrs};
    char alias[64];

    assert_int_equal(harness_start(&f->r[0], &o), 0);
    assert_int_equal(harness_start(&f->r[1], NULL), 0);
    snprintf(alias, sizeof(alias), "127.0.0.2:%d", f->r[0].port);
    expect_alias_refused(f, alias, NULL);
}

static void test_same_server_over_tcp_and_unix_socket_is_refused(
    void **state)
{
    struct fixture *f = *state;
    struct harness_opts o = {.unix_socket = true};
    char alias[HARNESS_DIR_MAX + 32];
    char name[HARNESS_DIR_MAX + 32];

    assert_int_equal(harness_start(&f->r[0], &o), 0);
    assert_int_equal(harness_start(&f->r[1], NULL), 0);
    snprintf(alias, sizeof(alias), "unix://%s", f->r[0].unix_path);
    snprintf(name, sizeof(name), "unix:%s", f->r[0].unix_path);
    expect_alias_refused(f, alias, name);
}

/* Waits until r reports master_link_status:up. */
static bool replica_linked(const struct rl_redis *r)
{
    int64_t deadline = harness_now_ms() + harness_scale_ms(10000);
    char buf[16];

    while (harness_now_ms() < deadline) {
        if (harness_info_field(r, "replication", "master_link_status", buf,
                               sizeof(buf)) == 0 &&
            strcmp(buf, "up") == 0)
            return true;
        harness_sleep_ms(20);
    }
    return false;
}

static void test_replica_beside_its_master_is_refused(void **state)
{
    struct fixture *f = *state;
    char port[16];
    const char *replica_args[] = {"--replicaof", "127.0.0.1", port, NULL};
    static const char *const master_args[] = {
        "--repl-diskless-sync-delay", "0", NULL};
    struct harness_opts o = {.extra_args = replica_args};
    struct harness_opts mo = {.extra_args = master_args};
    char uri[3][64];

    assert_int_equal(harness_start(&f->r[0], &mo), 0);
    snprintf(port, sizeof(port), "%d", f->r[0].port);
    assert_int_equal(harness_start(&f->r[1], &o), 0);
    assert_int_equal(harness_start(&f->r[2], NULL), 0);
    assert_true(replica_linked(&f->r[1]));
    for (int i = 0; i < 3; i++) {
        snprintf(uri[i], sizeof(uri[i]), "127.0.0.1:%d", f->r[i].port);
        harness_nodes_set(&f->hn, i, uri[i]);
    }
    expect_refused(f, uri[0], uri[1]);
}

/* A held, renewed lock on three nodes; two of them turn evicting: their
 * votes are withdrawn at the next renewal and the lock is LOST while its
 * validity remains. */
static void test_policy_turned_evicting_loses_a_held_lock(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts ao = {0};
    rl_node_info info[3];

    assert_int_equal(harness_cluster_start_nodes(f->r, 3, NULL, &f->hn), 0);
    f->c = fixture_fast_client(&f->hn);
    assert_non_null(f->c);
    ao.ttl_ms = 10000;
    ao.auto_extend = true;
    assert_int_equal(rl_acquire(f->c, "evict-later", &ao, &f->l), RL_OK);
    ping(f->c, info, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(info[i].may_evict, RL_FACT_NO);
        assert_int_equal(info[i].vote_bar, RL_VOTES);
    }
    for (int i = 0; i < 2; i++) {
        assert_true(harness_ok(harness_cmd(&f->r[i],
                                           "CONFIG SET maxmemory 100mb")));
        assert_true(harness_ok(harness_cmd(
            &f->r[i], "CONFIG SET maxmemory-policy allkeys-lru")));
    }
    assert_true(wait_vote_bar(f->c, 3, 0, RL_BAR_EVICTS));
    /* Renewals every ttl/3: lost at the next one, before the TTL. */
    assert_true(fd_readable(rl_lock_lost_fd(f->l), 9000));
    assert_true(rl_lock_lost(f->l));
    ping(f->c, info, 3);
    assert_int_equal(info[1].may_evict, RL_FACT_YES);
    assert_string_equal(info[1].maxmemory_policy, "allkeys-lru");
    assert_int_equal(info[1].maxmemory, 100 * 1024 * 1024);
    assert_int_equal(info[2].vote_bar, RL_VOTES);
    /* Back to noeviction: it votes again only once every key it may
     * have evicted would have expired (max_ttl_ms: 60 s here). */
    assert_true(harness_ok(
        harness_cmd(&f->r[0], "CONFIG SET maxmemory-policy noeviction")));
    assert_true(wait_node(f->c, 3, 0, may_evict_of, RL_FACT_NO));
    ping(f->c, info, 3);
    assert_int_equal(info[0].vote_bar, RL_BAR_EVICTS);
}

/* A node that evicted a held key and then stops evicting must not vote
 * again at once: the key it dropped would let a second holder in. Two of
 * three nodes evict the holder's key and go back to no limit within one
 * check interval; a contender created before must still be refused. */
static void test_a_node_that_stopped_evicting_does_not_vote_at_once(
    void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts ao = {0};
    rl_config cfg;
    rl_status st;

    assert_int_equal(harness_cluster_start_nodes(f->r, 3, NULL, &f->hn), 0);
    fixture_config(&cfg, &f->hn);
    f->c = fixture_client(&cfg);
    f->c2 = fixture_client(&cfg);
    assert_non_null(f->c);
    assert_non_null(f->c2);
    ao.ttl_ms = 30000;
    assert_int_equal(rl_acquire(f->c, "evicted", &ao, &f->l), RL_OK);
    for (int i = 0; i < 2; i++) {
        assert_true(harness_ok(harness_cmd(
            &f->r[i], "CONFIG SET maxmemory-policy allkeys-lru")));
        assert_true(harness_ok(harness_cmd(&f->r[i],
                                           "CONFIG SET maxmemory 2mb")));
        assert_true(evict_key(&f->r[i], "evicted"));
        assert_true(harness_ok(harness_cmd(&f->r[i],
                                           "CONFIG SET maxmemory 0")));
    }
    /* The contender's check of the nodes has seen the evictions. */
    for (size_t i = 0; i < 2; i++)
        assert_true(wait_vote_bar(f->c2, 3, i, RL_BAR_EVICTS));
    st = rl_acquire(f->c2, "evicted", &ao, &f->l2);
    fprintf(stderr, "  contender: %s (%s); holder's validity %lld ms\n",
            rl_status_name(st), st == RL_OK ? "" : rl_last_error(),
            (long long)rl_lock_validity_ms(f->l));
    if (st == RL_OK)
        fail_msg("a second holder while the first has %lld ms left",
                 (long long)rl_lock_validity_ms(f->l));
    /* Refused: by the node that still holds the key, the two others not
     * voting. */
    assert_true(st == RL_ENOTACQUIRED || st == RL_ENOQUORUM);
    assert_non_null(strstr(rl_last_error(), "evict"));
}

/* The node check asks every second only for what can change a vote
 * (docs/protocol.md section 5), and still sees a policy turned evicting,
 * or a persistence change, within 2 s: on a node that answers CONFIG GET,
 * and on one whose ACL refuses CONFIG (its checks read INFO instead).
 * Each client has run past the handshake's full INFO. */
static void policy_and_persistence_changes_are_seen(struct fixture *f,
                                                   const char *user)
{
    static const char *const args[] = {"--maxmemory", "100mb",
                                       "--appendonly", "yes",
                                       "--appendfsync", "always", NULL};
    struct harness_opts o = {.extra_args = args};
    char uri[3][192];
    rl_node_info info[3];
    rl_config cfg;

    assert_int_equal(harness_cluster_start_nodes(f->r, 3, &o, &f->hn), 0);
    for (int i = 0; user != NULL && i < 3; i++) {
        assert_true(harness_ok(harness_cmd(
            &f->r[i], "ACL SETUSER %s on >pw ~* &* +@all -config", user)));
        harness_uri_auth(&f->r[i], user, "pw", uri[i], sizeof(uri[i]));
        harness_nodes_set(&f->hn, i, uri[i]);
    }
    fixture_config(&cfg, &f->hn);
    f->c = fixture_client(&cfg);
    assert_non_null(f->c);
    ping(f->c, info, 3);
    assert_int_equal(info[1].vote_bar, RL_VOTES);
    assert_int_equal(info[2].fsync_always,
                     user != NULL ? RL_FACT_UNKNOWN : RL_FACT_YES);
    harness_sleep_ms(1500); /* checks after the handshake's full INFO */
    assert_true(harness_ok(
        harness_cmd(&f->r[1], "CONFIG SET maxmemory-policy allkeys-lru")));
    assert_true(wait_node_within(f->c, 3, 1, vote_bar_of, RL_BAR_EVICTS,
                                 2000));
    ping(f->c, info, 3);
    assert_string_equal(info[1].maxmemory_policy, "allkeys-lru");
    assert_int_equal(info[0].vote_bar, RL_VOTES);
    assert_true(harness_ok(harness_cmd(&f->r[2], "CONFIG SET appendonly no")));
    assert_true(wait_node_within(f->c, 3, 2, fsync_always_of, RL_FACT_NO,
                                 2000));
}

static void test_a_policy_change_is_seen_within_two_seconds(void **state)
{
    policy_and_persistence_changes_are_seen(*state, NULL);
}

static void test_a_node_refusing_config_shows_changes_within_two_seconds(
    void **state)
{
    policy_and_persistence_changes_are_seen(*state, "noconfig");
}

static void test_allow_evicting_nodes_lets_them_vote(void **state)
{
    struct fixture *f = *state;
    struct harness_opts o = {.extra_args = evicting_args};
    rl_acquire_opts ao = {0};
    rl_node_info info[3];
    rl_config cfg;

    assert_int_equal(harness_cluster_start_nodes(f->r, 3, &o, &f->hn), 0);
    fixture_config(&cfg, &f->hn);
    cfg.allow_evicting_nodes = true;
    f->c = fixture_client(&cfg);
    assert_non_null(f->c);
    ping(f->c, info, 3);
    assert_int_equal(info[0].may_evict, RL_FACT_YES);
    assert_string_equal(info[0].maxmemory_policy, "volatile-lru");
    assert_true(info[0].voting);
    assert_int_equal(rl_acquire(f->c, "accepted", &ao, &f->l), RL_OK);
}

static void test_a_node_turned_replica_stops_voting(void **state)
{
    struct fixture *f = *state;
    static const char *const fast_sync[] = {"--repl-diskless-sync-delay",
                                            "0", NULL};
    struct harness_opts o = {.extra_args = fast_sync};
    rl_node_info info[3];
    rl_config cfg;

    assert_int_equal(harness_cluster_start_nodes(f->r, 3, &o, &f->hn), 0);
    fixture_config(&cfg, &f->hn);
    cfg.max_ttl_ms = 2000;
    f->c = fixture_client(&cfg);
    assert_non_null(f->c);
    assert_true(harness_ok(harness_cmd(&f->r[1], "REPLICAOF %s %d",
                                       HARNESS_HOST, f->r[0].port)));
    assert_true(replica_linked(&f->r[1]));
    assert_true(wait_vote_bar(f->c, 3, 1, RL_BAR_TWIN));
    ping(f->c, info, 3);
    assert_int_equal(info[1].twin_of, 0);
    assert_string_equal(info[1].role, "slave");
    assert_true(info[0].voting);
    /* Promoted: a replication stream of its own, a master again, but
     * the keys it granted before the resync are gone: it votes once they
     * would have expired (max_ttl_ms 2 s here), and the longest gap
     * between two readings of the node (6 s, src/vote.h) has passed. */
    assert_true(harness_ok(harness_cmd(&f->r[1], "REPLICAOF NO ONE")));
    assert_true(wait_vote_bar(f->c, 3, 1, RL_BAR_EVICTS));
    assert_true(wait_node_within(f->c, 3, 1, vote_bar_of, RL_VOTES, 12000));
}

/* ---- Restart trust --------------------------------------------------------*/

static void test_auto_trusts_fsync_always_and_quarantines_everysec(
    void **state)
{
    struct fixture *f = *state;
    static const char *const always[] = {"--appendonly", "yes",
                                         "--appendfsync", "always", NULL};
    static const char *const everysec[] = {"--appendonly", "yes",
                                           "--appendfsync", "everysec",
                                           NULL};
    struct harness_opts oa = {.extra_args = always};
    struct harness_opts oe = {.extra_args = everysec};
    rl_acquire_opts ao = {0};
    rl_node_info info[3];
    rl_config cfg;

    assert_int_equal(harness_start(&f->r[0], &oa), 0);
    assert_int_equal(harness_start(&f->r[1], &oa), 0);
    assert_int_equal(harness_start(&f->r[2], &oe), 0);
    harness_nodes_fill(&f->hn, f->r, 3);
    fixture_config(&cfg, &f->hn);
    cfg.trust_restarted_nodes = false; /* the default: restart_trust auto */
    cfg.max_ttl_ms = 60000;            /* the servers are seconds old */
    f->c = fixture_client(&cfg);
    assert_non_null(f->c);
    ping(f->c, info, 3);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(info[i].fsync_always, RL_FACT_YES);
        assert_string_equal(info[i].appendfsync, "always");
        assert_int_equal(info[i].vote_bar, RL_VOTES);
    }
    assert_int_equal(info[2].fsync_always, RL_FACT_NO);
    assert_string_equal(info[2].appendfsync, "everysec");
    assert_int_equal(info[2].vote_bar, RL_BAR_QUARANTINE);
    assert_int_equal(rl_acquire(f->c, "auto", &ao, &f->l), RL_OK);
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
    /* The same nodes with quarantine on: nobody votes yet. */
    cfg.restart_trust = RL_RESTART_QUARANTINE;
    f->c2 = fixture_client(&cfg);
    assert_non_null(f->c2);
    assert_int_equal(rl_acquire(f->c2, "auto", &ao, &f->l2), RL_ENOQUORUM);
    assert_non_null(strstr(rl_last_error(), "3 quarantined"));
}

/* ---- A node that moves ----------------------------------------------------*/

/* Writes text over path in place (the bind mount follows the inode). */
static void rewrite(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);

    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

/* A private /etc/hosts for this process, or false (with why) when the
 * machine does not allow it. */
static bool private_hosts(const char *text, char *why, size_t len)
{
    const char *tmp = getenv("TMPDIR");
    int fd;

    if (geteuid() != 0) {
        snprintf(why, len, "needs root for a private /etc/hosts");
        return false;
    }
    /* "none" rather than NULL: valgrind checks the strings. */
    if (unshare(CLONE_NEWNS) != 0 ||
        mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0) {
        snprintf(why, len, "no private mount namespace: %s",
                 strerror(errno));
        return false;
    }
    snprintf(hosts, sizeof(hosts), "%s/rl-hosts-XXXXXX",
             tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
    fd = mkstemp(hosts);
    assert_true(fd >= 0);
    close(fd);
    rewrite(hosts, text);
    if (mount(hosts, "/etc/hosts", "none", MS_BIND, NULL) != 0) {
        snprintf(why, len, "cannot bind-mount /etc/hosts: %s",
                 strerror(errno));
        unlink(hosts);
        hosts[0] = '\0';
        return false;
    }
    return true;
}

static void test_a_node_whose_name_moves_is_followed(void **state)
{
    struct fixture *f = *state;
    char why[128];
    char uri[3][64];
    rl_acquire_opts ao = {0};
    rl_node_info info[3];
    redisContext *b;
    redisReply *reply;
    int64_t deadline;
    char line[160];

    assert_int_equal(harness_start(&f->r[0], NULL), 0); /* the old home */
    assert_int_equal(harness_start(&f->r[1], NULL), 0);
    assert_int_equal(harness_start(&f->r[2], NULL), 0);
    assert_int_equal(harness_start(&f->r[3], NULL), 0); /* the new one */
    snprintf(line, sizeof(line), "127.0.0.1 localhost\n"
                                 "127.0.0.1 rl-moving-node.test\n");
    if (!private_hosts(line, why, sizeof(why))) {
        printf("SKIP: %s\n", why);
        skip();
    }
    snprintf(uri[0], sizeof(uri[0]), "rl-moving-node.test:%d", f->r[0].port);
    snprintf(uri[1], sizeof(uri[1]), "127.0.0.1:%d", f->r[1].port);
    snprintf(uri[2], sizeof(uri[2]), "127.0.0.1:%d", f->r[2].port);
    for (int i = 0; i < 3; i++)
        harness_nodes_set(&f->hn, i, uri[i]);
    f->c = fixture_fast_client(&f->hn);
    assert_non_null(f->c);
    /* The new home: server 3 moves to 127.0.0.2 on the old one's port
     * (CONFIG SET keeps this connection open). */
    b = harness_connect(&f->r[3]);
    assert_non_null(b);
    reply = redisCommand(b, "CONFIG SET bind 127.0.0.2");
    assert_true(harness_ok(reply));
    reply = redisCommand(b, "CONFIG SET port %d", f->r[0].port);
    assert_true(harness_ok(reply));
    snprintf(line, sizeof(line), "127.0.0.1 localhost\n"
                                 "127.0.0.2 rl-moving-node.test\n");
    rewrite(hosts, line);
    harness_kill(&f->r[0]);
    /* The client looks the name up again after the failure. */
    deadline = harness_now_ms() + harness_scale_ms(10000);
    do {
        ping(f->c, info, 3);
        if (info[0].voting)
            break;
        harness_sleep_ms(50);
    } while (harness_now_ms() < deadline);
    assert_true(info[0].voting);
    assert_int_equal(rl_acquire(f->c, "moved", &ao, &f->l), RL_OK);
    reply = redisCommand(b, "GET moved");
    assert_non_null(reply);
    assert_int_equal(reply->type, REDIS_REPLY_STRING);
    freeReplyObject(reply);
    redisFree(b);
}

/* ---- Permissions ----------------------------------------------------------*/

static void test_a_user_without_script_rights_gets_a_clear_error(
    void **state)
{
    struct fixture *f = *state;
    char uri[3][192];
    rl_acquire_opts ao = {0};
    rl_config cfg;
    rl_status st;

    assert_int_equal(harness_cluster_start(f->r, 3, NULL), 0);
    for (int i = 0; i < 3; i++) {
        assert_true(harness_ok(harness_cmd(
            &f->r[i], "ACL SETUSER locker on >pw ~* +@all -evalsha -eval")));
        harness_uri_auth(&f->r[i], "locker", "pw", uri[i], sizeof(uri[i]));
        harness_nodes_set(&f->hn, i, uri[i]);
    }
    fixture_config(&cfg, &f->hn);
    f->c = fixture_client(&cfg);
    assert_non_null(f->c);
    /* A plain SET NX PX needs no script; the release does. */
    assert_int_equal(rl_acquire(f->c, "denied", &ao, &f->l), RL_OK);
    st = rl_release(f->l);
    f->l = NULL;
    fprintf(stderr, "  %s: %s\n", rl_status_name(st), rl_last_error());
    assert_int_equal(st, RL_ENOQUORUM);
    assert_non_null(strstr(rl_last_error(), "NOPERM"));
    assert_non_null(strstr(rl_last_error(), "127.0.0.1:"));
    assert_null(strstr(rl_last_error(), "pw"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eviction_never_lets_a_second_holder_in),
        cmocka_unit_test(test_same_server_on_two_addresses_is_refused),
        cmocka_unit_test(test_same_server_over_tcp_and_unix_socket_is_refused),
        cmocka_unit_test(test_replica_beside_its_master_is_refused),
        cmocka_unit_test(test_policy_turned_evicting_loses_a_held_lock),
        cmocka_unit_test(
            test_a_node_that_stopped_evicting_does_not_vote_at_once),
        cmocka_unit_test(test_a_policy_change_is_seen_within_two_seconds),
        cmocka_unit_test(
            test_a_node_refusing_config_shows_changes_within_two_seconds),
        cmocka_unit_test(test_allow_evicting_nodes_lets_them_vote),
        cmocka_unit_test(test_a_node_turned_replica_stops_voting),
        cmocka_unit_test(
            test_auto_trusts_fsync_always_and_quarantines_everysec),
        cmocka_unit_test(test_a_node_whose_name_moves_is_followed),
        cmocka_unit_test(test_a_user_without_script_rights_gets_a_clear_error),
    };

    return FIXTURE_RUN("preconditions", &fx, tests);
}
