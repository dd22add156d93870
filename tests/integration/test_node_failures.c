/* SPDX-License-Identifier: BSD-3-Clause */
/* test_node_failures.c -- the quorum under node crashes, pauses, restarts,
 * authentication failures and unreachable addresses, against real
 * redis-server processes (DESIGN §2, §5.1, §5.7). Time bounds are
 * deliberately generous (they catch "waits for a dead node", not
 * slowness) and scale with RL_TEST_TIMEOUT_MULTIPLIER. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

/* Set by the log sink when a message contains forbidden text. */
static const char *forbidden_text;
static atomic_int forbidden_seen;
static atomic_int log_lines;

/* Counts the lines and watches for forbidden text, then prints as
 * fixture_log does. */
static void test_log(int level, const char *msg, void *privdata)
{
    atomic_fetch_add(&log_lines, 1);
    if (forbidden_text != NULL && strstr(msg, forbidden_text) != NULL)
        atomic_store(&forbidden_seen, 1);
    fixture_log(level, msg, privdata);
}

/* fixture_config, with the sink above. */
static void fast_config(rl_config *cfg, const struct harness_nodes *hn)
{
    fixture_config(cfg, hn);
    cfg->log = test_log;
}

/* A fast client on f->hn; password is cfg.password (may be NULL). */
static void start_client(struct fixture *f, const char *password)
{
    rl_config cfg;

    fast_config(&cfg, &f->hn);
    cfg.password = password;
    f->c = fixture_client(&cfg);
    assert_non_null(f->c);
}

/* Start n plain servers and a fast client on them. */
static void start_cluster(struct fixture *f, int n)
{
    f->n = n;
    assert_int_equal(harness_cluster_start_nodes(f->r, n, NULL, &f->hn), 0);
    start_client(f, NULL);
}

/* 5 servers and a client, then nodes 0, 2 and 4 killed: no quorum. */
static void start_with_majority_dead(struct fixture *f)
{
    start_cluster(f, 5);
    harness_kill(&f->r[0]);
    harness_kill(&f->r[2]);
    harness_kill(&f->r[4]);
}

/* ---- Async bookkeeping ---- */

#define INFLIGHT 50

struct acq_rec {
    atomic_int calls;
    rl_status st;
    rl_lock *lock;
    unsigned nodes_ok;
};

static struct acq_rec recs[INFLIGHT];
static atomic_int recs_done;

static void acq_cb(rl_client *c, rl_status st, rl_lock *lock, void *privdata)
{
    struct acq_rec *r = privdata;

    (void)c;
    r->st = st;
    r->lock = lock;
    r->nodes_ok = lock != NULL ? rl_lock_nodes_ok(lock) : 0;
    atomic_fetch_add(&r->calls, 1);
    atomic_fetch_add(&recs_done, 1);
}

/* Locks a failed test did not get to release (handles outlive the
 * client; their keys die with the servers). */
static void free_recs(struct fixture *f)
{
    (void)f;
    for (int i = 0; i < INFLIGHT; i++) {
        rl_lock_free(recs[i].lock);
        recs[i].lock = NULL;
    }
}

static int setup(struct fixture *f)
{
    (void)f;
    forbidden_text = NULL;
    atomic_store(&forbidden_seen, 0);
    return 0;
}

/* No servers: each test starts its own. */
static const struct fixture_opts fx = { .setup = setup,
                                        .cleanup = free_recs };

/* rl_acquire(key) of a ttl_ms lock on f->c must return want. Returns
 * the lock (NULL unless RL_OK). */
static rl_lock *acquire(struct fixture *f, const char *key, uint32_t ttl_ms,
                        rl_status want)
{
    rl_acquire_opts o = { .ttl_ms = ttl_ms };
    rl_lock *l = NULL;

    assert_int_equal(rl_acquire(f->c, key, &o, &l), want);
    return l;
}

/* acquire(), which must also return within harness_scale_ms(limit_ms);
 * prints how long it took, after what, and the error if it failed. */
static rl_lock *acquire_within(struct fixture *f, const char *key,
                               uint32_t ttl_ms, rl_status want,
                               int64_t limit_ms, const char *what)
{
    int64_t t0 = harness_now_ms();
    rl_lock *l = acquire(f, key, ttl_ms, want);
    int64_t elapsed = harness_now_ms() - t0;

    fprintf(stderr, "  %s after %lld ms: %s\n", what, (long long)elapsed,
            want == RL_OK ? "ok" : rl_last_error());
    assert_true(elapsed < harness_scale_ms(limit_ms));
    return l;
}

/* Node i of f->hn is 127.0.0.1:port, without the server's password. */
static void plain_node(struct fixture *f, int i, int port)
{
    char uri[32];

    snprintf(uri, sizeof(uri), "%s:%d", HARNESS_HOST, port);
    harness_nodes_set(&f->hn, i, uri);
}

/* On the 3 nodes of f->hn (client password: password, may be NULL): a
 * lock held on all of them, then released; the client never logs
 * forbidden. */
static void lock_on_three_quietly(struct fixture *f, const char *password,
                                  const char *forbidden, const char *key)
{
    rl_lock *l;

    forbidden_text = forbidden;
    start_client(f, password);
    l = acquire(f, key, 5000, RL_OK);
    assert_in_range(rl_lock_nodes_ok(l), 2, 3);
    assert_true(harness_live_hold(f->r, 3, key, rl_lock_token(l)));
    assert_int_equal(rl_release(l), RL_OK);
    assert_true(harness_all_empty(f->r, 3));
    assert_int_equal(atomic_load(&forbidden_seen), 0);
}

/* ---- Tests ---- */

static void test_acquire_succeeds_with_two_of_five_nodes_down(void **state)
{
    struct fixture *f = *state;
    rl_lock *l;
    int64_t t0;

    start_cluster(f, 5);
    harness_kill(&f->r[1]);
    harness_kill(&f->r[3]);
    t0 = harness_now_ms();
    l = acquire(f, "nf:two-down", 5000, RL_OK);
    assert_int_equal(rl_lock_nodes_ok(l), 3);
    assert_true(fixture_validity_from(l, t0, 5000 - 50 - 2));
    /* On the three live nodes 0, 2 and 4. */
    assert_true(harness_live_hold(f->r, 5, "nf:two-down", rl_lock_token(l)));
    assert_int_equal(rl_extend(l, 6000), RL_OK);
    assert_int_equal(rl_release(l), RL_OK);
    assert_true(harness_live_empty(f->r, 5));
}

static void test_acquire_without_quorum_fails_fast(void **state)
{
    struct fixture *f = *state;

    start_with_majority_dead(f);
    assert_null(acquire_within(f, "nf:no-quorum", 5000, RL_ENOQUORUM, 2000,
                               "no quorum"));
    assert_true(rl_last_error()[0] != '\0');
    /* Nodes already dead when the client is made: same verdict. */
    rl_client_free(f->c);
    start_client(f, NULL);
    acquire_within(f, "nf:no-quorum2", 5000, RL_ENOQUORUM, 2000,
                   "no quorum, dead before the client");
}

static void test_failed_acquire_leaves_no_keys_on_live_nodes(void **state)
{
    struct fixture *f = *state;
    const char *multi[] = { "nf:m1", "nf:m2" };
    rl_acquire_opts o = { .ttl_ms = 10000 };
    rl_lock *l = NULL;

    start_with_majority_dead(f);
    acquire(f, "nf:rollback", 10000, RL_ENOQUORUM);
    assert_int_equal(rl_acquire_multi(f->c, multi, 2, &o, &l),
                     RL_ENOQUORUM);
    /* The SETs that landed on the live minority are rolled back, not left
     * to block everybody for the TTL (§5.1). */
    assert_true(harness_empty(&f->r[1]));
    assert_true(harness_empty(&f->r[3]));
}

static void test_acquire_does_not_wait_for_a_paused_node(void **state)
{
    struct fixture *f = *state;
    rl_lock *l;
    int64_t t0;

    start_cluster(f, 5);
    assert_int_equal(harness_pause(&f->r[2]), 0);
    t0 = harness_now_ms();
    l = acquire_within(f, "nf:paused", 10000, RL_OK, 2000,
                       "acquired with a paused node");
    assert_in_range(rl_lock_nodes_ok(l), 3, 4);
    assert_true(fixture_validity_from(l, t0, 10000 - 100 - 2));
    /* On every node but the paused one. */
    assert_true(harness_live_hold(f->r, 5, "nf:paused", rl_lock_token(l)));
    t0 = harness_now_ms();
    assert_int_equal(rl_release(l), RL_OK);
    assert_true(harness_now_ms() - t0 < harness_scale_ms(2000));
    assert_true(harness_live_empty(f->r, 5));
    assert_int_equal(harness_resume(&f->r[2]), 0);
}

static void test_paused_node_holds_no_key_once_it_resumes(void **state)
{
    struct fixture *f = *state;

    start_cluster(f, 5);
    assert_int_equal(harness_pause(&f->r[2]), 0);
    assert_int_equal(rl_release(acquire(f, "nf:paused", 10000, RL_OK)),
                     RL_OK);
    assert_int_equal(harness_resume(&f->r[2]), 0);
    /* The paused node got our SET and then our release, queued in its
     * socket: once it runs again, nothing of ours may stay behind and
     * block the resource for the TTL. */
    assert_true(harness_empty(&f->r[2]));
}

/* Pause (or resume) nodes 0, 1 and 2 of five: the majority. */
static void pause_majority(struct fixture *f, bool pause)
{
    for (int i = 0; i < 3; i++)
        assert_int_equal(pause ? harness_pause(&f->r[i])
                               : harness_resume(&f->r[i]),
                         0);
}

static void test_acquire_without_quorum_ends_when_majority_is_paused(
    void **state)
{
    struct fixture *f = *state;

    start_cluster(f, 5);
    pause_majority(f, true);
    acquire_within(f, "nf:majority-paused", 5000, RL_ENOQUORUM, 2000,
                   "no quorum (paused)");
    assert_true(strcasestr(rl_last_error(), "reply") != NULL ||
                strcasestr(rl_last_error(), "time") != NULL);
    pause_majority(f, false);
}

static void test_paused_majority_holds_no_key_once_it_resumes(void **state)
{
    struct fixture *f = *state;

    start_cluster(f, 5);
    pause_majority(f, true);
    acquire(f, "nf:majority-paused", 10000, RL_ENOQUORUM);
    pause_majority(f, false);
    /* Timed-out nodes get the rollback too: their SET lands late. */
    for (int i = 0; i < 5; i++)
        assert_true(harness_empty(&f->r[i]));
}

static void test_ops_in_flight_survive_a_node_kill(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = { 0 };
    char name[64];

    start_cluster(f, 5);
    memset(recs, 0, sizeof(recs));
    atomic_store(&recs_done, 0);
    /* Paused first, so its requests are surely in flight when it dies. */
    assert_int_equal(harness_pause(&f->r[0]), 0);
    o.ttl_ms = 10000;
    for (int i = 0; i < INFLIGHT; i++) {
        snprintf(name, sizeof(name), "nf:inflight:%d", i);
        assert_int_equal(rl_acquire_async(f->c, name, &o, acq_cb, &recs[i]),
                         RL_OK);
    }
    harness_sleep_ms(10);
    harness_kill(&f->r[0]);
    assert_true(harness_wait_count(&recs_done, INFLIGHT, 5000));
    harness_sleep_ms(100);
    for (int i = 0; i < INFLIGHT; i++) {
        assert_int_equal(atomic_load(&recs[i].calls), 1);
        assert_int_equal(recs[i].st, RL_OK);
        assert_non_null(recs[i].lock);
        assert_in_range(recs[i].nodes_ok, 3, 4);
        snprintf(name, sizeof(name), "nf:inflight:%d", i);
        /* On nodes 1 to 4, the ones left. */
        assert_true(harness_live_hold(f->r, 5, name,
                                      rl_lock_token(recs[i].lock)));
    }
    for (int i = 0; i < INFLIGHT; i++) {
        rl_lock *l = recs[i].lock;

        recs[i].lock = NULL;
        assert_int_equal(rl_release(l), RL_OK);
    }
    assert_true(harness_live_empty(f->r, 5));
}

static void test_restarted_node_is_used_again_after_reconnect(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = { 0 };
    rl_lock *l = NULL;
    rl_status st;
    int64_t t0;

    start_cluster(f, 3);
    o.ttl_ms = 5000;
    harness_kill(&f->r[0]);
    l = acquire(f, "nf:restart", 5000, RL_OK);
    assert_int_equal(rl_lock_nodes_ok(l), 2);
    assert_int_equal(rl_release(l), RL_OK);
    assert_int_equal(harness_restart(&f->r[0]), 0);
    /* With node 1 gone, a quorum needs the restarted node 0's vote: the
     * client must have reconnected to it. */
    harness_kill(&f->r[1]);
    t0 = harness_now_ms();
    st = fixture_acquire_until_ok(f->c, "nf:restart", &o, &l, t0,
                                  harness_scale_ms(5000), 50, NULL);
    fprintf(stderr, "  reconnected after %lld ms\n",
            (long long)(harness_now_ms() - t0));
    assert_int_equal(st, RL_OK);
    assert_int_equal(rl_lock_nodes_ok(l), 2);
    /* On nodes 0 and 2. */
    assert_true(harness_live_hold(f->r, 3, "nf:restart", rl_lock_token(l)));
    assert_int_equal(rl_release(l), RL_OK);
    assert_true(harness_live_empty(f->r, 3));
}

static void test_restarted_node_does_not_vote_during_quarantine(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = { 0 };
    rl_config cfg;
    rl_lock *l = NULL;
    rl_status st = RL_ENOQUORUM;
    int64_t t_restart;
    int64_t t_voting;

    f->n = 3;
    assert_int_equal(harness_cluster_start_nodes(f->r, 3, NULL, &f->hn), 0);
    fast_config(&cfg, &f->hn);
    cfg.trust_restarted_nodes = false;
    cfg.max_ttl_ms = 3000;
    f->c = fixture_client(&cfg);
    assert_non_null(f->c);
    o.ttl_ms = 2000;
    /* Fresh servers are younger than max_ttl_ms: nobody votes yet. */
    assert_int_equal(rl_acquire(f->c, "nf:quarantine", &o, &l),
                     RL_ENOQUORUM);
    assert_true(harness_empty(&f->r[0]));
    /* max_ttl_ms + 3 s: see test_quarantine.c */
    assert_true(harness_wait_uptime(f->r, f->n, 6));
    assert_int_equal(rl_acquire(f->c, "nf:quarantine", &o, &l), RL_OK);
    assert_int_equal(rl_release(l), RL_OK);

    /* Node 0 restarts (empty), node 1 dies: a quorum needs node 0's vote,
     * which it may not give until it has been up for max_ttl_ms. */
    assert_int_equal(harness_restart(&f->r[0]), 0);
    t_restart = harness_now_ms();
    harness_kill(&f->r[1]);
    l = NULL;
    while (harness_now_ms() - t_restart < 2000) {
        st = rl_acquire(f->c, "nf:quarantine", &o, &l);
        /* A slow attempt (valgrind) begun before 2 s may return after
         * the quarantine ended: its vote is the one waited for below. */
        if (st == RL_OK && harness_now_ms() - t_restart >= 2900)
            break;
        if (st == RL_OK) {
            fprintf(stderr, "  quarantined node voted %lld ms after its "
                            "restart\n",
                    (long long)(harness_now_ms() - t_restart));
            rl_release(l);
        }
        assert_int_equal(st, RL_ENOQUORUM);
        l = NULL;
        harness_sleep_ms(100);
    }
    if (l == NULL)
        st = fixture_acquire_until_ok(f->c, "nf:quarantine", &o, &l,
                                      t_restart, harness_scale_ms(8000), 100,
                                      NULL);
    t_voting = harness_now_ms() - t_restart;
    fprintf(stderr, "  restarted node votes again %lld ms after restart\n",
            (long long)t_voting);
    assert_int_equal(st, RL_OK);
    /* (the server started a few ms before t_restart) */
    assert_true(t_voting >= 2900);
    /* On nodes 0 and 2: both votes were needed. */
    assert_true(harness_live_hold(f->r, 3, "nf:quarantine",
                                  rl_lock_token(l)));
    assert_int_equal(rl_release(l), RL_OK);
    assert_true(harness_live_empty(f->r, 3));
}

/* One server whose default user needs server_pass, in f->hn with
 * client_pass (NULL: no password at all). An acquire of key there fails
 * (no quorum) and leaves nothing behind. Returns its error (printed). */
static const char *acquire_refused(struct fixture *f, const char *server_pass,
                                   const char *client_pass, const char *key)
{
    struct harness_opts ho = { .requirepass = server_pass };
    const char *err;
    char uri[192];

    f->n = 1;
    assert_int_equal(harness_start(&f->r[0], &ho), 0);
    if (client_pass != NULL) {
        harness_uri_auth(&f->r[0], NULL, client_pass, uri, sizeof(uri));
        harness_nodes_set(&f->hn, 0, uri);
    } else {
        plain_node(f, 0, f->r[0].port);
    }
    start_client(f, NULL);
    acquire(f, key, 5000, RL_ENOQUORUM);
    err = rl_last_error();
    fprintf(stderr, "  %s: %s\n", key, err);
    assert_true(harness_empty(&f->r[0]));
    return err;
}

static void test_wrong_password_counts_as_failed_and_is_never_printed(
    void **state)
{
    struct fixture *f = *state;
    const char *err;

    forbidden_text = "wrong-staple-secret";
    err = acquire_refused(f, "right-horse-battery", "wrong-staple-secret",
                          "nf:auth");
    assert_true(strcasestr(err, "auth") != NULL ||
                strcasestr(err, "WRONGPASS") != NULL);
    assert_null(strstr(err, "wrong-staple-secret"));
    assert_null(strstr(err, "right-horse-battery"));
    assert_int_equal(atomic_load(&forbidden_seen), 0);
}

static void test_missing_password_counts_as_failed_node(void **state)
{
    struct fixture *f = *state;
    const char *err = acquire_refused(f, "needed-pass", NULL, "nf:noauth");

    assert_true(strcasestr(err, "auth") != NULL);
}

static void test_config_password_is_used_for_nodes_without_one(void **state)
{
    struct fixture *f = *state;
    struct harness_opts ho = { 0 };

    ho.requirepass = "shared-pass";
    f->n = 3;
    assert_int_equal(harness_cluster_start(f->r, 3, &ho), 0);
    for (int i = 0; i < 3; i++)
        plain_node(f, i, f->r[i].port);
    lock_on_three_quietly(f, "shared-pass", "shared-pass", "nf:cfgpass");
}

static void test_acl_user_and_password_in_uri_work(void **state)
{
    struct fixture *f = *state;
    struct harness_opts ho = { 0 };
    char uri[192];

    /* The default user needs another password: only the ACL user works. */
    ho.requirepass = "default-user-pass";
    ho.acl_user = "locker";
    ho.acl_pass = "locker-pass";
    f->n = 3;
    assert_int_equal(harness_cluster_start(f->r, 3, &ho), 0);
    for (int i = 0; i < 3; i++) {
        harness_uri_auth(&f->r[i], "locker", "locker-pass", uri,
                         sizeof(uri));
        harness_nodes_set(&f->hn, i, uri);
    }
    lock_on_three_quietly(f, NULL, "locker-pass", "nf:acl");
}

static void test_unreachable_node_does_not_fail_client_creation(
    void **state)
{
    struct fixture *f = *state;
    int port = harness_free_port();
    int64_t t0;

    assert_true(port > 0);
    plain_node(f, 0, port);
    t0 = harness_now_ms();
    start_client(f, NULL);
    assert_true(harness_now_ms() - t0 < harness_scale_ms(2000));
    assert_null(acquire_within(f, "nf:unreachable", 5000, RL_ENOQUORUM, 2000,
                               "unreachable"));
    assert_true(rl_last_error()[0] != '\0');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acquire_succeeds_with_two_of_five_nodes_down),
        cmocka_unit_test(test_acquire_without_quorum_fails_fast),
        cmocka_unit_test(test_failed_acquire_leaves_no_keys_on_live_nodes),
        cmocka_unit_test(test_acquire_does_not_wait_for_a_paused_node),
        cmocka_unit_test(test_paused_node_holds_no_key_once_it_resumes),
        cmocka_unit_test(
            test_acquire_without_quorum_ends_when_majority_is_paused),
        cmocka_unit_test(test_paused_majority_holds_no_key_once_it_resumes),
        cmocka_unit_test(test_ops_in_flight_survive_a_node_kill),
        cmocka_unit_test(test_restarted_node_is_used_again_after_reconnect),
        cmocka_unit_test(test_restarted_node_does_not_vote_during_quarantine),
        cmocka_unit_test(
            test_wrong_password_counts_as_failed_and_is_never_printed),
        cmocka_unit_test(test_missing_password_counts_as_failed_node),
        cmocka_unit_test(test_config_password_is_used_for_nodes_without_one),
        cmocka_unit_test(test_acl_user_and_password_in_uri_work),
        cmocka_unit_test(test_unreachable_node_does_not_fail_client_creation),
    };

    return FIXTURE_RUN("node_failures", &fx, tests);
}
