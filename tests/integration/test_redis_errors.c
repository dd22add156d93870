/* SPDX-License-Identifier: BSD-3-Clause */
/* test_redis_errors.c -- Redis error replies (WRONGTYPE, OOM, NOSCRIPT,
 * READONLY) are outcomes of a node, never crashes (STYLE 3.2): the quorum
 * counts them as failed nodes, the message quotes them, and other data in
 * Redis is left alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

static const struct fixture_opts three = { .nodes = 3 };
static const struct fixture_opts five = { .nodes = 5 };
static void stop_proxy(struct fixture *f);
static const struct fixture_opts proxied = {
    .nodes = 3, .priv_size = sizeof(pid_t), .cleanup = stop_proxy};

/* The nodes lists_on() turns into lists: a majority of five. */
#define LIST_NODES 3

/* key on r is still the list ["x"] lists_on() made, without expiry. */
static bool list_untouched(const struct rl_redis *r, const char *key)
{
    redisReply *rep = harness_cmd(r, "LRANGE %s 0 -1", key);
    bool ok = rep != NULL && rep->type == REDIS_REPLY_ARRAY &&
              rep->elements == 1 &&
              rep->element[0]->type == REDIS_REPLY_STRING &&
              strcmp(rep->element[0]->str, "x") == 0;

    if (rep != NULL)
        freeReplyObject(rep);
    if (harness_pttl(r, key) != -1)
        ok = false;
    if (!ok)
        fprintf(stderr, "port %d: list %s was modified\n", r->port, key);
    return ok;
}

/* On nodes 0 .. LIST_NODES - 1, key becomes the list ["x"], whatever it
 * was before. */
static void lists_on(struct fixture *f, const char *key)
{
    for (int i = 0; i < LIST_NODES; i++) {
        redisReply *del = harness_cmd(&f->r[i], "DEL %s", key);
        redisReply *push = harness_cmd(&f->r[i], "RPUSH %s x", key);

        assert_non_null(del);
        freeReplyObject(del);
        assert_non_null(push);
        assert_int_equal(push->type, REDIS_REPLY_INTEGER);
        assert_int_equal(push->integer, 1);
        freeReplyObject(push);
    }
}

/* list_untouched on each node lists_on() used. */
static bool lists_untouched(const struct fixture *f, const char *key)
{
    bool ok = true;

    for (int i = 0; i < LIST_NODES; i++)
        ok = list_untouched(&f->r[i], key) && ok;
    return ok;
}

/* A 5 s lock on the n resources res (one: rl_acquire, more:
 * rl_acquire_multi), which a majority of nodes refuses: no lock, and with
 * quote set, no quorum and the nodes' error quoted in the message. */
static void majority_refuses(struct fixture *f, const char *const *res,
                             size_t n, const char *quote)
{
    rl_acquire_opts o = { .ttl_ms = 5000 };
    rl_lock *l = NULL;
    rl_status st = n == 1 ? rl_acquire(f->c, res[0], &o, &l)
                          : rl_acquire_multi(f->c, res, n, &o, &l);

    fprintf(stderr, "  acquire of %s: %s: %s\n", res[0], rl_status_name(st),
            rl_last_error());
    assert_null(l);
    if (quote == NULL) {
        assert_true(st == RL_ENOTACQUIRED || st == RL_ENOQUORUM);
    } else {
        assert_int_equal(st, RL_ENOQUORUM);
        assert_non_null(strstr(rl_last_error(), quote));
    }
}

/* ---- WRONGTYPE ---- */

static void test_wrongtype_key_on_a_majority_fails_acquire_and_stays(
    void **state)
{
    struct fixture *f = *state;
    const char *single[] = { "we:list" };
    const char *multi[] = { "we:free", "we:list" };

    lists_on(f, "we:list");
    majority_refuses(f, single, 1, NULL);
    assert_true(lists_untouched(f, "we:list"));
    /* Rolled back where it was set. */
    assert_true(harness_all_empty_within(f->r + LIST_NODES, 2, 500));

    majority_refuses(f, multi, 2, NULL);
    assert_true(lists_untouched(f, "we:list"));
    for (int i = 0; i < LIST_NODES; i++)
        assert_true(harness_key_absent(&f->r[i], "we:free"));
    assert_true(harness_all_empty_within(f->r + LIST_NODES, 2, 500));
}

static void test_wrongtype_replies_to_extend_and_release_are_node_failures(
    void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = { .ttl_ms = 5000 };
    rl_status st;

    assert_int_equal(rl_acquire(f->c, "we:swap", &o, &f->l), RL_OK);
    /* Someone replaces our key by a list on 3 of 5 nodes: the scripts'
     * GET then fails there with WRONGTYPE. */
    lists_on(f, "we:swap");
    st = rl_extend(f->l, 8000);
    fprintf(stderr, "  extend over lists: %s: %s\n", rl_status_name(st),
            rl_last_error());
    assert_true(st == RL_ENOQUORUM || st == RL_ELOST);
    if (st == RL_ENOQUORUM)
        assert_non_null(strstr(rl_last_error(), "WRONGTYPE"));
    assert_true(lists_untouched(f, "we:swap"));
    for (int i = LIST_NODES; i < 5; i++)
        assert_true(harness_key_holds(&f->r[i], "we:swap",
                                      rl_lock_token(f->l)));
    st = rl_release(f->l); /* frees the lock */
    f->l = NULL;
    fprintf(stderr, "  release over lists: %s: %s\n", rl_status_name(st),
            rl_last_error());
    assert_true(st != RL_OK);
    assert_true(lists_untouched(f, "we:swap"));
    /* Where the key was still ours, it is gone. */
    for (int i = LIST_NODES; i < 5; i++)
        assert_true(harness_key_absent(&f->r[i], "we:swap"));
}

/* ---- OOM ---- */

static void set_maxmemory(const struct rl_redis *r, const char *bytes)
{
    assert_true(harness_ok(
        harness_cmd(r, "CONFIG SET maxmemory-policy noeviction")));
    assert_true(harness_ok(harness_cmd(r, "CONFIG SET maxmemory %s", bytes)));
}

static void test_oom_on_a_majority_is_no_quorum_quoting_the_error(
    void **state)
{
    struct fixture *f = *state;
    const char *single[] = { "oom:res" };
    const char *multi[] = { "oom:a", "oom:b" };
    rl_acquire_opts o = { .ttl_ms = 5000 };
    rl_lock *l = NULL;

    for (int i = 0; i < 3; i++)
        set_maxmemory(&f->r[i], "1");
    majority_refuses(f, single, 1, "OOM");
    majority_refuses(f, multi, 2, "OOM");
    assert_true(harness_all_empty_within(f->r, 3, 0));
    /* Memory back: the same client works again, on every node. */
    for (int i = 0; i < 3; i++)
        set_maxmemory(&f->r[i], "0");
    assert_int_equal(rl_acquire(f->c, "oom:after", &o, &l), RL_OK);
    assert_true(harness_live_hold(f->r, 5, "oom:after", rl_lock_token(l)));
    assert_int_equal(rl_release(l), RL_OK);
    /* Last: the failed attempts were rolled back on the healthy nodes. */
    assert_true(harness_all_empty_within(f->r, 5, 200));
}

/* Node bad of three fails every write: a lock on key is still had (on
 * the other two), extended and released, and no key of it stays. While it
 * is held, node bad has no key when bad_empty (a replica does: its master
 * sends it). */
static void lock_without_node(struct fixture *f, const char *key, int bad,
                              bool bad_empty)
{
    rl_acquire_opts o = { .ttl_ms = 5000 };
    rl_lock *l = NULL;

    assert_int_equal(rl_acquire(f->c, key, &o, &l), RL_OK);
    assert_int_equal(rl_lock_nodes_ok(l), 2);
    for (int i = 0; i < 3; i++) {
        if (i != bad)
            assert_true(harness_key_holds(&f->r[i], key, rl_lock_token(l)));
    }
    assert_true(!bad_empty || harness_key_absent(&f->r[bad], key));
    assert_int_equal(rl_extend(l, 6000), RL_OK);
    assert_int_equal(rl_release(l), RL_OK);
    assert_true(harness_all_empty_within(f->r, 3, 1000));
}

static void test_oom_on_a_minority_still_acquires(void **state)
{
    struct fixture *f = *state;

    set_maxmemory(&f->r[0], "1");
    lock_without_node(f, "oom:minor", 0, true);
}

/* ---- NOSCRIPT ---- */

static void flush_scripts(const struct fixture *f)
{
    for (int i = 0; i < f->n; i++)
        assert_true(harness_ok(harness_cmd(&f->r[i], "SCRIPT FLUSH")));
}

/* Replace f->c with a client whose op timeout is 2 s (scaled), once every
 * node votes. */
static void generous_client(struct fixture *f)
{
    rl_config cfg;

    fixture_config(&cfg, &f->hn);
    cfg.op_timeout_ms = (uint32_t)harness_scale_ms(2000);
    rl_client_free(f->c);
    f->c = fixture_client(&cfg);
    assert_non_null(f->c);
    assert_true(fixture_all_voting(f->c));
}

static void test_release_and_extend_work_after_script_flush(void **state)
{
    struct fixture *f = *state;
    const char *multi[] = { "ns:a", "ns:b", "ns:c" };
    rl_acquire_opts o = { 0 };
    rl_lock *l = NULL;
    int64_t t0;

    /* Long enough that no key expires between the steps under valgrind
     * on a busy machine, and a client that drops no healthy node for a
     * slow reply there (the test counts the nodes that store keys). */
    o.ttl_ms = 30000;
    generous_client(f);
    /* Load every script once, then make them all unknown again. Each
     * call returns at a majority: every node has its result before the
     * next one, so the last extend is the only one a node can show. */
    t0 = harness_now_ms();
    assert_int_equal(rl_acquire(f->c, "ns:single", &o, &l), RL_OK);
    assert_true(fixture_all_hold(f, "ns:single", rl_lock_token(l), t0, 30000));
    t0 = harness_now_ms();
    assert_int_equal(rl_extend(l, 6000), RL_OK);
    assert_true(fixture_all_hold(f, "ns:single", rl_lock_token(l), t0, 6000));
    flush_scripts(f);
    t0 = harness_now_ms();
    assert_int_equal(rl_extend(l, 7000), RL_OK);
    assert_true(fixture_all_hold(f, "ns:single", rl_lock_token(l), t0, 7000));
    flush_scripts(f);
    assert_int_equal(rl_release(l), RL_OK);
    for (int i = 0; i < f->n; i++)
        assert_true(harness_key_absent(&f->r[i], "ns:single"));

    assert_int_equal(rl_acquire_multi(f->c, multi, 3, &o, &l), RL_OK);
    assert_int_equal(rl_release(l), RL_OK);
    flush_scripts(f);
    assert_int_equal(rl_acquire_multi(f->c, multi, 3, &o, &l), RL_OK);
    /* A quorum stored every key (the EVAL resend after NOSCRIPT). Nodes
     * that answered after the decision may not: a key-creating script
     * nobody waits for any more is not resent (it could overtake a
     * rollback). Each node is looked at once: a voter has run the script
     * before it answered, and waiting out the settle time of a node that
     * stored nothing let the others' keys expire under valgrind. */
    {
        int holding = 0;

        for (int i = 0; i < f->n; i++) {
            int all = 1;

            for (int k = 0; k < 3; k++)
                all &= harness_holders(&f->r[i], 1, multi[k],
                                       rl_lock_token(l), NULL);
            holding += all;
        }
        assert_true(holding >= f->n / 2 + 1);
    }
    flush_scripts(f);
    assert_int_equal(rl_extend(l, 9000), RL_OK);
    flush_scripts(f);
    assert_int_equal(rl_release(l), RL_OK);
    assert_true(harness_all_empty(f->r, f->n));
}

static void test_rollback_after_script_flush_leaves_no_keys(void **state)
{
    struct fixture *f = *state;
    const char *multi[] = { "nsr:a", "nsr:b" };
    rl_acquire_opts o = { 0 };
    rl_lock *l = NULL;

    o.ttl_ms = 10000;
    /* Scripts gone; then only the release script is cached again. */
    flush_scripts(f);
    assert_int_equal(rl_acquire(f->c, "nsr:warm", &o, &l), RL_OK);
    assert_int_equal(rl_release(l), RL_OK);
    /* nsr:b is taken on nodes 0 and 1: the attempt fails there, and node
     * 2, briefly paused (less than op_timeout_ms), answers last: NOSCRIPT
     * for the acquire script, after the rollback was already queued. */
    for (int i = 0; i < 2; i++)
        assert_true(harness_ok(
            harness_cmd(&f->r[i], "SET nsr:b other PX 10000")));
    assert_int_equal(harness_pause(&f->r[2]), 0);
    assert_int_equal(rl_acquire_multi(f->c, multi, 2, &o, &l),
                     RL_ENOTACQUIRED);
    assert_int_equal(harness_resume(&f->r[2]), 0);
    /* Whatever order the node runs them in, our keys must not stay (the
     * pause: a late EVAL resend would land after an early look). */
    harness_sleep_ms(300);
    assert_true(harness_empty(&f->r[2]));
}

static long long command_calls(const struct rl_redis *r, const char *cmd)
{
    return fixture_command_stat(r, cmd, "calls");
}

/* Poll command_calls(r, cmd) until it is above seen (up to 10 s scaled). */
static bool calls_above(const struct rl_redis *r, const char *cmd,
                        long long seen)
{
    int64_t until = harness_now_ms() + harness_scale_ms(10000);

    while (harness_now_ms() < until) {
        if (command_calls(r, cmd) > seen)
            return true;
        harness_sleep_ms(1);
    }
    fprintf(stderr, "port %d: no %s after %lld calls\n", r->port, cmd, seen);
    return false;
}

/* Poll the client's refused attempts until above seen (10 s scaled). */
static bool contended_above(rl_client *c, uint64_t seen)
{
    int64_t until = harness_now_ms() + harness_scale_ms(10000);
    rl_stats s;

    while (harness_now_ms() < until) {
        if (rl_client_stats(c, &s) == RL_OK && s.contended > seen)
            return true;
        harness_sleep_ms(1);
    }
    return false;
}

/* A late rollback cannot delete a later attempt's key: each attempt has
 * its own token (a semaphore's slot attempts as a mutex's retries; a
 * semaphore's retry is a plain SET NX, not a script that would itself
 * wait for NOSCRIPT). Node 2 is far (a faultproxy, d each way) and has an
 * empty script cache; the slot is held by another client on every node.
 * The first attempt is refused by 0 and 1 at once and rolled back on 2,
 * which has not answered: the rollback goes right behind the SET. Node 2
 * runs both at d (its SET refused: the other holder). The other holder
 * leaves nodes 0 and 2 meanwhile; the retry, sent at d, is granted by 0 at
 * once and by 2 at 2 d, a minimal quorum. The rollback, sent as EVALSHA,
 * gets NOSCRIPT back at 2 d and is resent as EVAL behind the retry's SET:
 * it runs on node 2 at 3 d, after the retry. With one token for both
 * attempts it deleted the retry's key there (the holder held one node of
 * three); with the first attempt's own token it finds nothing of its own.
 * The client may not SUBSCRIBE, so only its retry delay (d) starts the
 * retry. */
static void test_late_rollback_cannot_delete_the_retrys_key(void **state)
{
    struct fixture *f = *state;
    static const char slot[] = "nsl:sem:slot:0";
    int64_t d = harness_scale_ms(300);
    rl_acquire_opts o = { .ttl_ms = 30000, .limit = 1 };
    struct fixture_rec a = {0};
    struct harness_nodes hn = {0};
    pid_t *proxy = f->priv;
    rl_stats s;
    rl_config cfg;
    char uri[96];
    long long sets;
    int port;

    for (int i = 0; i < 3; i++)
        assert_true(harness_ok(harness_cmd(
            &f->r[i], "ACL SETUSER far on >farpw ~* &* +@all -subscribe "
                      "-psubscribe -ssubscribe")));
    port = fixture_proxy_start(proxy, f->r[2].port, (int)d, NULL);
    if (port < 0)
        skip();
    for (int i = 0; i < 2; i++)
        harness_nodes_set(&hn, i,
                          harness_uri_auth(&f->r[i], "far", "farpw", uri,
                                           sizeof(uri)));
    snprintf(uri, sizeof(uri), "redis://far:farpw@127.0.0.1:%d", port);
    harness_nodes_set(&hn, 2, uri);
    fixture_config(&cfg, &hn);
    cfg.connect_timeout_ms = (uint32_t)(4 * d + harness_scale_ms(300));
    cfg.op_timeout_ms = (uint32_t)(2 * d + harness_scale_ms(1000));
    cfg.retry_delay_ms = (uint32_t)d;
    cfg.retry_jitter_ms = 0;
    f->c2 = fixture_client(&cfg);
    assert_non_null(f->c2);
    assert_true(fixture_all_voting(f->c2));
    o.wait_ms = harness_scale_ms(30000);
    assert_true(harness_ok(harness_cmd(&f->r[2], "SCRIPT FLUSH")));
    for (int i = 0; i < 3; i++)
        assert_true(harness_ok(
            harness_cmd(&f->r[i], "SET %s other PX 60000", slot)));
    sets = command_calls(&f->r[2], "set");
    assert_int_equal(rl_acquire_async(f->c2, "nsl:sem", &o,
                                      fixture_rec_acquired, &a),
                     RL_OK);
    /* Refused by 0 and 1: node 0 is free before the retry reaches it
     * (at d); node 2 once it has run the first SET (at d), before the
     * retry's lands there (at 2 d). */
    assert_true(contended_above(f->c2, 0));
    assert_int_equal(harness_int(harness_cmd(&f->r[0], "DEL %s", slot), -1),
                     1);
    assert_true(calls_above(&f->r[2], "set", sets));
    assert_int_equal(harness_int(harness_cmd(&f->r[2], "DEL %s", slot), -1),
                     1);
    assert_true(harness_wait_count(&a.calls, 1, harness_scale_ms(10000)));
    f->l = a.lock;
    assert_int_equal(a.st, RL_OK);
    /* The scenario ran as planned: one refused attempt, then the retry,
     * which node 2 ran (its second SET). */
    assert_int_equal(rl_client_stats(f->c2, &s), RL_OK);
    assert_int_equal(s.contended, 1);
    assert_int_equal(command_calls(&f->r[2], "set"), sets + 2);
    /* The rollback has run on node 2, after the retry (as EVAL). */
    assert_true(calls_above(&f->r[2], "eval", 0));
    assert_true(harness_holders(f->r, 3, slot, rl_lock_token(a.lock),
                                NULL) >= 2);
}

/* The faultproxy of test_late_rollback_cannot_delete_the_retrys_key. */
static void stop_proxy(struct fixture *f)
{
    fixture_proxy_stop(f->priv);
}

/* The watchdog's batched renewals (one touch-batch call of 200 locks
 * per node, too long for the stack arrays) go on as EVAL after the
 * scripts were flushed: every key is renewed, none is lost, no
 * connection is dropped. */
static void test_batched_renewals_go_on_after_script_flush(void **state)
{
    enum { LOCKS = 200 };
    struct fixture *f = *state;
    rl_acquire_opts o = { 0 };
    rl_lock *l[LOCKS];
    rl_stats before, after;
    char name[32];

    o.ttl_ms = 600;
    o.auto_extend = true;
    for (int i = 0; i < LOCKS; i++) {
        snprintf(name, sizeof(name), "nsw:%d", i);
        assert_int_equal(rl_acquire(f->c, name, &o, &l[i]), RL_OK);
    }
    assert_int_equal(rl_client_stats(f->c, &before), RL_OK);
    flush_scripts(f);
    /* Three TTLs: the keys outlive their first TTL only if renewed. */
    harness_sleep_ms(1800);
    assert_int_equal(rl_client_stats(f->c, &after), RL_OK);
    assert_true(after.renewals >= before.renewals + 2 * LOCKS);
    /* ... on the same connections (a malformed resend would make the
     * server drop them, and the next handshake would load the scripts
     * again). */
    for (size_t k = 0; k < after.node_count; k++)
        assert_int_equal(after.nodes[k].handshakes,
                         before.nodes[k].handshakes);
    for (int i = 0; i < LOCKS; i++) {
        snprintf(name, sizeof(name), "nsw:%d", i);
        assert_false(rl_lock_lost(l[i]));
        for (int k = 0; k < f->n; k++)
            assert_true(harness_key_holds(&f->r[k], name,
                                          rl_lock_token(l[i])));
    }
    for (int i = 0; i < LOCKS; i++)
        assert_int_equal(rl_release(l[i]), RL_OK);
}

/* ---- READONLY ---- */

/* Make r a replica of master and wait until the link is up. */
static void make_replica(const struct rl_redis *r,
                         const struct rl_redis *master)
{
    char buf[64];
    int64_t deadline = harness_now_ms() + harness_scale_ms(5000);

    assert_true(harness_ok(
        harness_cmd(master, "CONFIG SET repl-diskless-sync-delay 0")));
    assert_true(harness_ok(harness_cmd(r, "REPLICAOF %s %d", HARNESS_HOST,
                                       master->port)));
    for (;;) {
        if (harness_info_field(r, "replication", "master_link_status", buf,
                               sizeof(buf)) == 0 &&
            strcmp(buf, "up") == 0)
            break;
        assert_true(harness_now_ms() < deadline);
        harness_sleep_ms(20);
    }
}

static void test_readonly_replica_counts_as_a_failed_node(void **state)
{
    struct fixture *f = *state;

    make_replica(&f->r[2], &f->r[0]);
    lock_without_node(f, "ro:res", 2, false);
}

static void test_readonly_majority_is_no_quorum_quoting_the_error(
    void **state)
{
    struct fixture *f = *state;
    const char *single[] = { "ro:major" };

    for (int i = 2; i < 5; i++)
        make_replica(&f->r[i], &f->r[0]);
    majority_refuses(f, single, 1, "READONLY");
    /* The master (and so its replicas) and node 1 are rolled back. */
    assert_true(harness_all_empty_within(f->r, 5, 1000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        FIXTURE_TEST(test_wrongtype_key_on_a_majority_fails_acquire_and_stays,
                     &five),
        FIXTURE_TEST(
            test_wrongtype_replies_to_extend_and_release_are_node_failures,
            &five),
        FIXTURE_TEST(test_oom_on_a_majority_is_no_quorum_quoting_the_error,
                     &five),
        cmocka_unit_test(test_oom_on_a_minority_still_acquires),
        cmocka_unit_test(test_release_and_extend_work_after_script_flush),
        cmocka_unit_test(test_rollback_after_script_flush_leaves_no_keys),
        FIXTURE_TEST(test_late_rollback_cannot_delete_the_retrys_key,
                     &proxied),
        cmocka_unit_test(test_batched_renewals_go_on_after_script_flush),
        cmocka_unit_test(test_readonly_replica_counts_as_a_failed_node),
        FIXTURE_TEST(test_readonly_majority_is_no_quorum_quoting_the_error,
                     &five),
    };

    return FIXTURE_RUN("redis_errors", &three, tests);
}
