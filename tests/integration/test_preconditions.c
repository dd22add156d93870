/* test_preconditions.c -- Redlock's preconditions on every node, checked
 * against real redis-server processes:
 *   - a node that may evict our keys (maxmemory with a policy other than
 *     noeviction) does not vote, so an application filling the nodes
 *     cannot evict a held lock and let a second holder in;
 *   - the same server listed twice (two addresses, TCP and its unix
 *     socket) or a replica beside its master is not counted as two
 *     independent nodes: rl_client_new refuses it, naming both entries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

#define MAX_NODES 3

struct fx {
    struct rl_redis r[MAX_NODES];
    struct harness_nodes hn;
    rl_client *a;
    rl_client *b;
    rl_lock *la;
    rl_lock *lb;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (f == NULL)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    rl_lock_free(f->la);
    rl_lock_free(f->lb);
    rl_client_free(f->a);
    rl_client_free(f->b);
    harness_cluster_stop(f->r, MAX_NODES);
    free(f);
    return 0;
}

/* What another application does to a Redis that also serves as a cache:
 * n keys of size bytes, each with a TTL (so volatile-* policies may evict
 * them, and ours). Pipelined on one connection. */
static void fill_node(const struct rl_redis *r, int n, size_t size)
{
    redisContext *ctx = harness_connect(r);
    char *value = malloc(size);

    assert_non_null(ctx);
    assert_non_null(value);
    memset(value, 'x', size);
    for (int i = 0; i < n; i++)
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
    struct fx *f = *state;
    struct harness_opts o = {.extra_args = evicting_args};
    rl_acquire_opts ao = {0};
    rl_status sa, sb;
    long long evicted = 0;

    assert_int_equal(harness_cluster_start_nodes(f->r, 3, &o, &f->hn), 0);
    f->a = fixture_fast_client(&f->hn);
    f->b = fixture_fast_client(&f->hn);
    assert_non_null(f->a);
    assert_non_null(f->b);
    ao.ttl_ms = 30000;
    sa = rl_acquire(f->a, "evict-me", &ao, &f->la);
    fprintf(stderr, "  holder A: %s (%s)\n", rl_status_name(sa),
            sa == RL_OK ? "" : rl_last_error());
    for (int i = 0; i < 3; i++) {
        fill_node(&f->r[i], 8000, 1024);
        evicted += info_number(&f->r[i], "stats", "evicted_keys");
    }
    fprintf(stderr, "  evicted %lld keys on 3 nodes\n", evicted);
    assert_true(evicted > 0);
    sb = rl_acquire(f->b, "evict-me", &ao, &f->lb);
    fprintf(stderr, "  holder B: %s (%s)\n", rl_status_name(sb),
            sb == RL_OK ? "" : rl_last_error());
    if (sa == RL_OK && sb == RL_OK)
        fail_msg("two holders: A with %lld ms of validity left, and B",
                 (long long)rl_lock_validity_ms(f->la));
    /* The nodes may evict: none votes, A is refused with the reason. */
    assert_int_equal(sa, RL_ENOQUORUM);
    assert_int_equal(sb, RL_ENOQUORUM);
    assert_non_null(strstr(rl_last_error(), "evict"));
}

/* ---- Independence ---------------------------------------------------------*/

/* rl_client_new on these node URIs must fail with RL_EINVAL naming both
 * entries dup and orig. */
static void expect_refused(struct fx *f, const char *orig, const char *dup)
{
    rl_config cfg;
    rl_status st = RL_OK;

    fixture_config(&cfg, &f->hn);
    f->a = rl_client_new(&cfg, &st);
    if (f->a != NULL) {
        rl_node_info info[MAX_NODES];
        size_t count = 0;

        rl_client_ping(f->a, info, MAX_NODES, &count);
        fail_msg("the client took %zu nodes, two of them the same server "
                 "(%s, %s)", count, orig, dup);
    }
    fprintf(stderr, "  refused: %s: %s\n", rl_status_name(st),
            rl_last_error());
    assert_int_equal(st, RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), orig));
    assert_non_null(strstr(rl_last_error(), dup));
}

static void test_same_server_on_two_addresses_is_refused(void **state)
{
    struct fx *f = *state;
    static const char *const two_addrs[] = {"--bind", "127.0.0.1",
                                            "127.0.0.2", NULL};
    struct harness_opts o = {.extra_args = two_addrs};
    char uri[3][64];

    assert_int_equal(harness_start(&f->r[0], &o), 0);
    assert_int_equal(harness_start(&f->r[1], NULL), 0);
    snprintf(uri[0], sizeof(uri[0]), "127.0.0.1:%d", f->r[0].port);
    snprintf(uri[1], sizeof(uri[1]), "127.0.0.2:%d", f->r[0].port);
    snprintf(uri[2], sizeof(uri[2]), "127.0.0.1:%d", f->r[1].port);
    for (int i = 0; i < 3; i++)
        harness_nodes_set(&f->hn, i, uri[i]);
    expect_refused(f, uri[0], uri[1]);
}

static void test_same_server_over_tcp_and_unix_socket_is_refused(
    void **state)
{
    struct fx *f = *state;
    struct harness_opts o = {.unix_socket = true};
    char uri[3][HARNESS_DIR_MAX + 32];
    char name[HARNESS_DIR_MAX + 32];

    assert_int_equal(harness_start(&f->r[0], &o), 0);
    assert_int_equal(harness_start(&f->r[1], NULL), 0);
    snprintf(uri[0], sizeof(uri[0]), "127.0.0.1:%d", f->r[0].port);
    snprintf(uri[1], sizeof(uri[1]), "unix://%s", f->r[0].unix_path);
    snprintf(uri[2], sizeof(uri[2]), "127.0.0.1:%d", f->r[1].port);
    for (int i = 0; i < 3; i++)
        harness_nodes_set(&f->hn, i, uri[i]);
    snprintf(name, sizeof(name), "unix:%s", f->r[0].unix_path);
    expect_refused(f, uri[0], name);
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
    struct fx *f = *state;
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_eviction_never_lets_a_second_holder_in, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_same_server_on_two_addresses_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_same_server_over_tcp_and_unix_socket_is_refused, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_replica_beside_its_master_is_refused, setup, teardown),
    };

    harness_require_redis();
    return cmocka_run_group_tests_name("preconditions", tests, NULL, NULL);
}
