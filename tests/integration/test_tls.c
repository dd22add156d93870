/* SPDX-License-Identifier: BSD-3-Clause */
/* test_tls.c -- the library over TLS (issue 11 items 3-5) against real
 * redis-server processes with --tls-port and certificates the harness
 * makes (harness_require_certs).
 *
 * Every server keeps its plaintext port (the harness checks keys there);
 * the client talks to tls_port through rediss:// URIs or rl_config.tls.
 * A failed verification must make that node fail like an unreachable one
 * (named, with the reason, within the connect timeout), never hang, and a
 * bad file must be RL_EINVAL naming it at client creation. Bounds on time
 * are generous safety limits only. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"

#define NODES 3

/* The faultproxy processes in front of the nodes (f->priv), 0: none. */
static void stop_proxies(struct fixture *f)
{
    pid_t *proxies = f->priv;

    for (int i = 0; i < NODES; i++)
        fixture_proxy_stop(&proxies[i]);
}

/* No servers: each test starts its own (start_tls). */
static const struct fixture_opts fx = { .priv_size = NODES * sizeof(pid_t),
                                        .cleanup = stop_proxies };

/* Nodes 0..n-1 of f->hn: prefix (scheme, credentials), then host and
 * the server's TLS port (tls_port) or its plaintext one. */
static void set_nodes(struct fixture *f, int n, const char *prefix,
                      const char *host, bool tls_port)
{
    char uri[192];

    for (int i = 0; i < n; i++) {
        snprintf(uri, sizeof(uri), "%s%s:%d", prefix, host,
                 tls_port ? f->r[i].tls_port : f->r[i].port);
        harness_nodes_set(&f->hn, i, uri);
    }
}

/* The fast test configuration on hn, trusting the test CA. */
static void tls_config(struct fixture *f, rl_config *cfg)
{
    fixture_config(cfg, &f->hn);
    cfg->tls_ca_file = harness_cert("ca.pem");
    cfg->connect_timeout_ms = (uint32_t)harness_scale_ms(2000);
    cfg->op_timeout_ms = (uint32_t)harness_scale_ms(1000);
}

/* NODES TLS servers; hn gets "rediss://host:tls_port" (with the
 * credentials of o, if any) and cfg the tls_config for them. */
static void start_tls(struct fixture *f, rl_config *cfg,
                      const char *server_cert, bool auth_clients,
                      const struct harness_opts *base, const char *host)
{
    struct harness_opts o = harness_tls_opts(base, server_cert, auth_clients);
    char prefix[160] = "rediss://";

    assert_int_equal(harness_cluster_start(f->r, NODES, &o), 0);
    memset(&f->hn, 0, sizeof(f->hn));
    if (o.acl_user != NULL)
        snprintf(prefix, sizeof(prefix), "rediss://%s:%s@", o.acl_user,
                 o.acl_pass);
    set_nodes(f, NODES, prefix, host, true);
    tls_config(f, cfg);
}

/* acquire, check the token on every node (plaintext port), extend,
 * release, check the keys are gone. */
static void lock_cycle(struct fixture *f, rl_client *c, const char *resource)
{
    rl_acquire_opts o = {0};
    const char *key = resource; /* fixture_config sets no prefix */
    rl_lock *l = NULL;
    int64_t t0;

    o.ttl_ms = 10000;
    assert_int_equal(rl_acquire(c, resource, &o, &l), RL_OK);
    /* Every node holds it before the extend (an extend creates no key). */
    assert_true(harness_all_hold_ttl(f->r, NODES, key, rl_lock_token(l), 0,
                                     0));
    t0 = harness_now_ms();
    assert_int_equal(rl_extend(l, 20000), RL_OK);
    assert_true(harness_all_hold_ttl(f->r, NODES, key, rl_lock_token(l), t0,
                                     20000));
    assert_int_equal(rl_release(l), RL_OK); /* frees l */
    for (int i = 0; i < NODES; i++)
        assert_true(harness_key_absent(&f->r[i], key));
}

/* A new client from cfg in f->c (replacing any) does a lock_cycle. */
static void cycle_with(struct fixture *f, const rl_config *cfg,
                       const char *resource)
{
    rl_client_free(f->c);
    f->c = fixture_client(cfg);
    assert_non_null(f->c);
    lock_cycle(f, f->c, resource);
}

/* Every node of a client from cfg (in f->c, replacing any, freed again)
 * that cannot talk to any of them: the acquire fails (promptly), and ping
 * names each node with the reason. */
static void expect_nodes_fail(struct fixture *f, const rl_config *cfg,
                              const char *reason)
{
    rl_node_info info[NODES];
    rl_lock *l = NULL;
    size_t count = 0;
    int64_t t0;
    rl_status st;

    rl_client_free(f->c);
    t0 = harness_now_ms();
    f->c = rl_client_new(cfg, &st);
    assert_non_null(f->c);
    assert_int_equal(st, RL_OK);
    assert_int_not_equal(rl_acquire(f->c, "tls:fail", NULL, &l), RL_OK);
    assert_null(l);
    assert_int_equal(rl_client_ping(f->c, info, NODES, &count),
                     RL_ENOQUORUM);
    assert_int_equal(count, NODES);
    for (int i = 0; i < NODES; i++) {
        fprintf(stderr, "  %s\n", info[i].error);
        assert_false(info[i].reachable);
        assert_non_null(strstr(info[i].error, info[i].name));
        assert_non_null(strstr(info[i].error, reason));
        assert_string_equal(info[i].tls, "");
    }
    /* Within a few connect timeouts (creation waits one, the acquire
     * fails fast on nodes known to be down). */
    assert_true(harness_now_ms() - t0 <
                4 * (int64_t)cfg->connect_timeout_ms +
                    harness_scale_ms(2000));
    rl_client_free(f->c);
    f->c = NULL;
}

static void test_lock_cycle_over_tls_on_three_nodes(void **state)
{
    struct fixture *f = *state;
    rl_node_info info[NODES];
    size_t count = 0;
    rl_config cfg;

    start_tls(f, &cfg, "server.pem", false, NULL, "127.0.0.1");
    f->c = fixture_client(&cfg);
    assert_non_null(f->c);
    for (int i = 0; i < 20; i++)
        lock_cycle(f, f->c, "tls:cycle");
    assert_int_equal(rl_client_ping(f->c, info, NODES, &count), RL_OK);
    for (size_t i = 0; i < count; i++) {
        fprintf(stderr, "  %s %s\n", info[i].name, info[i].tls);
        assert_true(info[i].reachable);
        assert_true(strncmp(info[i].tls, "TLSv1.", 6) == 0);
    }
}

static void test_config_tls_applies_to_every_tcp_node(void **state)
{
    struct fixture *f = *state;
    rl_config cfg;

    start_tls(f, &cfg, "server.pem", false, NULL, "127.0.0.1");
    set_nodes(f, NODES, "", "127.0.0.1", true);
    expect_nodes_fail(f, &cfg, "TLS"); /* plaintext client, TLS port */
    cfg.tls = true;
    cycle_with(f, &cfg, "tls:all");
}

static void test_mutual_tls_with_and_without_a_client_certificate(
    void **state)
{
    struct fixture *f = *state;
    rl_config cfg;

    start_tls(f, &cfg, "server.pem", true, NULL, "127.0.0.1");
    expect_nodes_fail(f, &cfg, "client certificate");
    cfg.tls_cert_file = harness_cert("client.pem");
    cfg.tls_key_file = harness_cert("client.key");
    cycle_with(f, &cfg, "tls:mutual");
}

static void test_wrong_ca_fails_each_node_naming_it(void **state)
{
    struct fixture *f = *state;
    rl_config cfg;

    start_tls(f, &cfg, "server.pem", false, NULL, "127.0.0.1");
    cfg.tls_ca_file = harness_cert("ca2.pem");
    expect_nodes_fail(f, &cfg, "unknown CA");
    cfg.tls_ca_file = NULL; /* the system store does not know it either */
    expect_nodes_fail(f, &cfg, "unknown CA");
    cfg.tls_ca_dir = harness_cert("cadir");
    cycle_with(f, &cfg, "tls:cadir");
}

static void test_host_name_mismatch_and_server_name(void **state)
{
    struct fixture *f = *state;
    rl_config cfg;

    start_tls(f, &cfg, "server.pem", false, NULL, "localhost");
    cycle_with(f, &cfg, "tls:localhost"); /* in the SANs */
    cfg.tls_server_name = "redis.example.com";
    expect_nodes_fail(f, &cfg, "host-name mismatch");
    cfg.tls_server_name = "localhost";
    cycle_with(f, &cfg, "tls:sni");
}

static void test_expired_certificate_fails_unless_insecure(void **state)
{
    struct fixture *f = *state;
    rl_config cfg;

    start_tls(f, &cfg, "expired.pem", false, NULL, "127.0.0.1");
    expect_nodes_fail(f, &cfg, "expired");
    cfg.tls_ca_file = NULL;
    cfg.tls_insecure = true;
    cycle_with(f, &cfg, "tls:insecure");
}

static void test_tls_with_acl_user_and_password(void **state)
{
    struct fixture *f = *state;
    struct harness_opts o = {0};
    rl_config cfg;

    o.acl_user = "locker";
    o.acl_pass = "s3cret";
    start_tls(f, &cfg, "server.pem", false, &o, "127.0.0.1");
    cycle_with(f, &cfg, "tls:acl");
    set_nodes(f, NODES, "rediss://locker:wrong@", "127.0.0.1", true);
    expect_nodes_fail(f, &cfg, "AUTH failed");
}

static void test_protocol_mismatch_both_ways_fails_promptly(void **state)
{
    struct fixture *f = *state;
    rl_config cfg;

    start_tls(f, &cfg, "server.pem", false, NULL, "127.0.0.1");
    /* TLS client on the plaintext port. */
    set_nodes(f, NODES, "rediss://", "127.0.0.1", false);
    cfg.connect_timeout_ms = (uint32_t)harness_scale_ms(500);
    expect_nodes_fail(f, &cfg, "TLS");
    /* Plaintext client on the TLS port. */
    set_nodes(f, NODES, "redis://", "127.0.0.1", true);
    expect_nodes_fail(f, &cfg, "TLS");
}

/* ---- A distant node: the handshake's time starts after TLS ------------*/

/* Nodes 300 ms away each way: TCP + TLS take about 600 ms of a 900 ms
 * connect timeout, then AUTH-less INFO, SCRIPT LOAD and TIME another
 * 600 ms. The handshake's deadline counts from the end of the TLS
 * handshake, so the client connects (once) and locks; when it counted
 * from the start, every handshake timed out and no lock was ever had.
 * (At 100 ms and 300 ms the 100 ms to spare ran out on a busy machine.) */
static void test_slow_tls_connect_leaves_the_handshake_its_timeout(
    void **state)
{
#ifndef RL_FAULTPROXY
    (void)state;
    fprintf(stderr, "SKIP: built without tools/faultproxy\n");
    skip();
#else
    struct fixture *f = *state;
    pid_t *proxies = f->priv;
    rl_acquire_opts o = {0};
    rl_config cfg;
    rl_stats s;
    char uri[64];

    start_tls(f, &cfg, "server.pem", false, NULL, "127.0.0.1");
    for (int i = 0; i < NODES; i++) {
        int port =
            fixture_proxy_start(&proxies[i], f->r[i].tls_port, 300, NULL);

        assert_true(port > 0);
        snprintf(uri, sizeof(uri), "rediss://127.0.0.1:%d", port);
        harness_nodes_set(&f->hn, i, uri);
    }
    cfg.connect_timeout_ms = (uint32_t)harness_scale_ms(900);
    cfg.op_timeout_ms = (uint32_t)harness_scale_ms(3000);
    f->c = fixture_client(&cfg);
    assert_non_null(f->c);
    o.ttl_ms = 10000;
    assert_int_equal(rl_acquire(f->c, "tls:far", &o, &f->l), RL_OK);
    assert_int_equal(rl_client_stats(f->c, &s), RL_OK);
    for (int i = 0; i < NODES; i++) {
        assert_int_equal(s.nodes[i].handshakes, 1);
        assert_true(harness_key_holds(&f->r[i], "tls:far",
                                      rl_lock_token(f->l)));
    }
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
#endif
}

/* The waiter's retry delay and the holder's TTL: without the notification
 * the waiter could not get the lock before about this long. */
#define TLS_FALLBACK_MS 30000

struct waiter {
    rl_client *c;
    rl_status st;
    rl_lock *l;
    int64_t done_ms;
};

static void *wait_for_lock(void *arg)
{
    struct waiter *w = arg;
    rl_acquire_opts o = {0};

    o.ttl_ms = 10000;
    o.wait_ms = 2 * TLS_FALLBACK_MS;
    w->st = rl_acquire(w->c, "tls:notify", &o, &w->l);
    w->done_ms = harness_now_ms();
    return NULL;
}

static void test_release_notification_wakes_a_waiter_over_tls(
    void **state)
{
    struct fixture *f = *state;
    struct waiter w = {0};
    pthread_t t;
    rl_config cfg;
    rl_acquire_opts o = {0};
    int64_t released_ms;
    int64_t bound = harness_scale_ms(2000);

    if (bound > TLS_FALLBACK_MS / 2)
        bound = TLS_FALLBACK_MS / 2;
    start_tls(f, &cfg, "server.pem", false, NULL, "127.0.0.1");
    f->c = fixture_client(&cfg);
    assert_non_null(f->c);
    cfg.retry_delay_ms = TLS_FALLBACK_MS; /* polling alone: 30 s */
    cfg.retry_jitter_ms = 0;
    f->c2 = fixture_client(&cfg);
    assert_non_null(f->c2);
    o.ttl_ms = TLS_FALLBACK_MS; /* B's sleep is capped by A's PTTL */
    assert_int_equal(rl_acquire(f->c, "tls:notify", &o, &f->l), RL_OK);
    w.c = f->c2;
    assert_int_equal(pthread_create(&t, NULL, wait_for_lock, &w), 0);
    /* B was refused (then it sleeps, subscribed). */
    assert_true(FIXTURE_WAIT_TOTAL(f->c2, contended, 1, 5000));
    /* and subscribed (over TLS) on every node, so the release's message
     * is what wakes it. */
    assert_true(harness_all_subscribed(f->r, NODES,
                                       "redlock:release:tls:notify", 5000));
    released_ms = harness_now_ms();
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
    assert_int_equal(pthread_join(t, NULL), 0);
    f->l2 = w.l;
    assert_int_equal(w.st, RL_OK);
    fprintf(stderr, "  hand-off after %lld ms\n",
            (long long)(w.done_ms - released_ms));
    /* Woken by the notification: far below the 30 s fallback. */
    assert_true(w.done_ms - released_ms < bound);
}

/* rl_client_stats's node stats of node i, waiting up to 5 s (scaled) for its
 * handshake count to reach want. */
static rl_node_stats wait_handshakes(rl_client *c, int i, uint64_t want)
{
    static rl_stats s; /* large: not on the stack */
    int64_t deadline = harness_now_ms() + harness_scale_ms(5000);

    do {
        rl_client_stats(c, &s);
        if (s.nodes[i].handshakes >= want)
            break;
        usleep(10000);
    } while (harness_now_ms() < deadline);
    return s.nodes[i];
}

/* A killed connection comes back by itself and resumes its TLS session
 * (issue 11: session resumption on reconnect); the stats count it. */
static void test_reconnect_resumes_the_tls_session(void **state)
{
    struct fixture *f = *state;
    rl_node_stats ns;
    redisReply *reply;
    rl_config cfg;

    start_tls(f, &cfg, "server.pem", false, NULL, "127.0.0.1");
    cycle_with(f, &cfg, "tls:resume");
    ns = wait_handshakes(f->c, 0, 1);
    assert_int_equal(ns.handshakes, 1);
    assert_int_equal(ns.tls_resumed, 0);
    /* The harness's own plaintext connection is skipped (SKIPME). */
    reply = harness_cmd(&f->r[0], "CLIENT KILL TYPE normal");
    assert_non_null(reply);
    assert_int_equal(reply->type, REDIS_REPLY_INTEGER);
    assert_true(reply->integer >= 1);
    freeReplyObject(reply);
    ns = wait_handshakes(f->c, 0, 2);
    assert_int_equal(ns.handshakes, 2);
    assert_int_equal(ns.tls_resumed, 1);
    ns = wait_handshakes(f->c, 1, 1);
    assert_int_equal(ns.handshakes, 1);
    assert_int_equal(ns.tls_resumed, 0);
    lock_cycle(f, f->c, "tls:resume");
}

static void test_unix_socket_and_plaintext_nodes_still_work(void **state)
{
    struct fixture *f = *state;
    struct harness_opts o = {.unix_socket = true};
    char uri[HARNESS_DIR_MAX + 32];
    rl_config cfg;

    /* Node 0 TLS, node 1 plaintext, node 2 a unix socket; rl_config.tls
     * leaves the socket alone. */
    start_tls(f, &cfg, "server.pem", false, NULL, "127.0.0.1");
    harness_stop(&f->r[2]);
    assert_int_equal(harness_start(&f->r[2], &o), 0);
    snprintf(uri, sizeof(uri), "redis://127.0.0.1:%d", f->r[1].port);
    harness_nodes_set(&f->hn, 1, uri);
    snprintf(uri, sizeof(uri), "unix://%s", f->r[2].unix_path);
    harness_nodes_set(&f->hn, 2, uri);
    cycle_with(f, &cfg, "tls:mixed");
    set_nodes(f, 2, "", "127.0.0.1", true);
    cfg.tls = true; /* TLS for both TCP nodes, not for the socket */
    cycle_with(f, &cfg, "tls:mixed2");
}

/* RL_EINVAL at creation, naming want (a file), never key material. */
static void expect_config_error(const rl_config *cfg, const char *want)
{
    rl_status st = RL_OK;
    rl_client *c = rl_client_new(cfg, &st);

    assert_null(c);
    assert_int_equal(st, RL_EINVAL);
    fprintf(stderr, "  %s\n", rl_last_error());
    assert_non_null(strstr(rl_last_error(), want));
    assert_null(strstr(rl_last_error(), "BEGIN"));
}

static void test_bad_files_are_einval_naming_the_file(void **state)
{
    struct fixture *f = *state;
    rl_config cfg;

    start_tls(f, &cfg, "server.pem", false, NULL, "127.0.0.1");
    cfg.tls_ca_file = "/nonexistent/ca.pem";
    expect_config_error(&cfg, "/nonexistent/ca.pem");
    tls_config(f, &cfg);
    cfg.tls_cert_file = harness_cert("client.pem");
    cfg.tls_key_file = harness_cert("server.key");
    expect_config_error(&cfg, "server.key");
    cfg.tls_key_file = "/nonexistent/client.key";
    expect_config_error(&cfg, "/nonexistent/client.key");
    cfg.tls_key_file = NULL;
    expect_config_error(&cfg, "client.pem");
    tls_config(f, &cfg);
    cfg.tls_ca_dir = "";
    expect_config_error(&cfg, "tls_ca_dir");
    /* A TLS setting with only plaintext nodes is still checked. */
    tls_config(f, &cfg);
    harness_nodes_fill(&f->hn, f->r, NODES);
    cfg.tls_ca_file = "/nonexistent/ca2.pem";
    expect_config_error(&cfg, "/nonexistent/ca2.pem");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lock_cycle_over_tls_on_three_nodes),
        cmocka_unit_test(test_config_tls_applies_to_every_tcp_node),
        cmocka_unit_test(test_mutual_tls_with_and_without_a_client_certificate),
        cmocka_unit_test(test_wrong_ca_fails_each_node_naming_it),
        cmocka_unit_test(test_host_name_mismatch_and_server_name),
        cmocka_unit_test(test_expired_certificate_fails_unless_insecure),
        cmocka_unit_test(test_tls_with_acl_user_and_password),
        cmocka_unit_test(test_protocol_mismatch_both_ways_fails_promptly),
        cmocka_unit_test(test_release_notification_wakes_a_waiter_over_tls),
        cmocka_unit_test(test_reconnect_resumes_the_tls_session),
        cmocka_unit_test(test_unix_socket_and_plaintext_nodes_still_work),
        cmocka_unit_test(test_bad_files_are_einval_naming_the_file),
        cmocka_unit_test(
            test_slow_tls_connect_leaves_the_handshake_its_timeout),
    };

    harness_require_certs();
    return FIXTURE_RUN("tls", &fx, tests);
}
