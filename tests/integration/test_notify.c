/* SPDX-License-Identifier: BSD-3-Clause */
/* test_notify.c -- release notifications (DESIGN §5.2, §5.5; issue 3
 * item 5) against real redis-server processes.
 *
 * Two clients: A holds a resource (TTL 30 s), B waits for it with a retry
 * delay of 30 s and no jitter, so without the notification B could not
 * try again before about 30 s (its sleep, or A's PTTL that caps it). When
 * A releases, B must wake on the notification: each hand-off has to end
 * far below that fallback (harness_scale_ms(1000), at most half of it).
 * How fast the hand-off is (B's rl_acquire returning minus A's rl_release
 * returning; it may be negative when B wins before A's call returns) is
 * only printed, as p50/p99 on stderr: speed belongs to the benchmarks. A
 * holder that crashes publishes nothing: B must still get the lock right
 * after the TTL, as its wait is capped by the holder's PTTL, not by its
 * 30 s retry delay. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

#define NODES 5
#define HANDOFFS 20
/* Refused attempts B may make in one hand-off: the first one, one wake
 * from its SUBSCRIBE confirmation, and one per node whose release message
 * arrives before the others deleted the key. More means the waiter spins
 * instead of sleeping. */
#define MAX_REFUSED_PER_HANDOFF 10
/* B's retry delay, and A's TTL in the hand-offs: the polling fallback. */
#define B_RETRY_MS 30000

/* The bound on one hand-off (and on the crashed holder's expiry past its
 * TTL): generous for a slow machine, far below the polling fallback. */
static int64_t woken_bound_ms(void)
{
    int64_t b = harness_scale_ms(1000);

    return b < B_RETRY_MS / 2 ? b : B_RETRY_MS / 2;
}

/* A fast client with this retry delay and jitter; its log lines are
 * tagged with name. */
static rl_client *client_for(struct fixture *f, uint32_t retry_delay_ms,
                             uint32_t jitter_ms, const char *name)
{
    rl_config cfg;

    fixture_config(&cfg, &f->hn);
    cfg.retry_delay_ms = retry_delay_ms;
    cfg.retry_jitter_ms = jitter_ms;
    cfg.log_privdata = (void *)name;
    return fixture_client(&cfg);
}

/* The fixture with two clients: A (f->c) retries fast, B (f->c2) every
 * B_RETRY_MS. */
static int two_clients(struct fixture *f)
{
    f->c = client_for(f, 20, 10, "A");
    f->c2 = client_for(f, B_RETRY_MS, 0, "B");
    return f->c != NULL && f->c2 != NULL ? 0 : -1;
}

static const struct fixture_opts fx = { .nodes = NODES, .no_client = true,
                                        .setup = two_clients };

/* B's side of one hand-off: a blocking acquire on its own thread. */
struct waiter {
    rl_client *c;
    const char *resource;
    int64_t wait_ms;
    rl_cancel *cancel;           /* NULL: none */
    rl_status st;
    rl_lock *lock;
    int64_t t_start_us;
    int64_t t_done_us;
    char err[256];
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    rl_acquire_opts o = { 0 };

    o.ttl_ms = 10000;
    o.wait_ms = w->wait_ms;
    o.cancel = w->cancel;
    w->t_start_us = harness_now_us();
    w->st = rl_acquire(w->c, w->resource, &o, &w->lock);
    w->t_done_us = harness_now_us();
    snprintf(w->err, sizeof(w->err), "%s", rl_last_error());
    return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a;
    int64_t y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

/* Nodes (running) where key holds token. */
static int holders(struct fixture *f, const char *key, const char *token)
{
    int n = 0;

    for (int i = 0; i < NODES; i++) {
        char *v;

        if (!f->r[i].running)
            continue;
        v = harness_get(&f->r[i], key);
        if (v != NULL && strcmp(v, token) == 0)
            n++;
        free(v);
    }
    return n;
}

/* count hand-offs A -> B on resource; fills lat_us (sorted). */
static void handoffs(struct fixture *f, const char *resource, int count,
                     int64_t *lat_us)
{
    rl_acquire_opts o = { 0 };
    rl_stats s0;
    rl_stats s1;
    rl_stats si;
    uint64_t max_refused = 0;
    int done = 0;

    assert_int_equal(rl_client_stats(f->c2, &s0), RL_OK);
    o.ttl_ms = B_RETRY_MS;
    for (int i = 0; i < count; i++) {
        struct waiter w = { .c = f->c2, .resource = resource,
                            .wait_ms = 2 * B_RETRY_MS };
        int64_t deadline;
        pthread_t th;
        int64_t t_rel;
        rl_lock *la;
        rl_status st;
        uint64_t before;

        assert_int_equal(rl_acquire(f->c, resource, &o, &f->l), RL_OK);
        assert_int_equal(rl_client_stats(f->c2, &si), RL_OK);
        before = si.contended;
        assert_int_equal(pthread_create(&th, NULL, waiter_main, &w), 0);
        /* B is waiting once its first attempt was refused. */
        deadline = harness_now_ms() + harness_scale_ms(5000);
        do {
            harness_sleep_ms(5);
            assert_int_equal(rl_client_stats(f->c2, &si), RL_OK);
        } while (si.contended == before && harness_now_ms() < deadline);
        la = f->l;
        f->l = NULL;
        st = rl_release(la);
        t_rel = harness_now_us();
        pthread_join(th, NULL);
        f->l2 = w.lock;
        assert_int_equal(st, RL_OK);
        if (w.st != RL_OK)
            fail_msg("hand-off %d: B got %s: %s", i, rl_status_name(w.st),
                     w.err);
        lat_us[i] = w.t_done_us - t_rel;
        done++;
        assert_int_equal(rl_client_stats(f->c2, &si), RL_OK);
        if (si.contended - before > max_refused)
            max_refused = si.contended - before;
        /* B really held it afterwards. */
        assert_true(holders(f, resource, rl_lock_token(f->l2)) >= 3);
        f->l2 = NULL;
        assert_int_equal(rl_release(w.lock), RL_OK);
        /* Woken by the release, not by the fallback: one miss fails
         * (the next would cost another 30 s). */
        if (lat_us[i] >= woken_bound_ms() * 1000)
            fail_msg("hand-off %d took %lld ms (B waited %lld ms in all): "
                     "not woken by the notification",
                     i, (long long)(lat_us[i] / 1000),
                     (long long)((w.t_done_us - w.t_start_us) / 1000));
    }
    assert_int_equal(rl_client_stats(f->c2, &s1), RL_OK);
    qsort(lat_us, (size_t)done, sizeof(*lat_us), cmp_i64);
    fprintf(stderr, "  %s: %d hand-offs, latency p50 %.3f ms, p99 %.3f ms, "
                    "min %.3f ms, max %.3f ms; B refused %llu times (at "
                    "most %llu in one hand-off)\n",
            resource, done, lat_us[done / 2] / 1000.0,
            lat_us[(done * 99) / 100 < done ? (done * 99) / 100 : done - 1] /
                1000.0,
            lat_us[0] / 1000.0, lat_us[done - 1] / 1000.0,
            (unsigned long long)(s1.contended - s0.contended),
            (unsigned long long)max_refused);
    assert_int_equal(done, count);
    /* B was really waiting each time: its first attempt was refused. */
    assert_true(s1.contended - s0.contended >= (uint64_t)count);
    /* ... and slept between attempts instead of spinning. */
    assert_true(max_refused <= MAX_REFUSED_PER_HANDOFF);
}

static void test_waiter_acquires_right_after_release(void **state)
{
    struct fixture *f = *state;
    int64_t lat[HANDOFFS];

    handoffs(f, "notify:handoff", HANDOFFS, lat);
}

/* The TYPE commands clients sent node r since mon started MONITOR (a
 * script's own, shown as "[0 lua]", are not counted): read up to an ECHO
 * sent now, which marks the end. -1 on a read error. */
static int clients_type_commands(redisContext *mon, const struct rl_redis *r)
{
    static const char end[] = "end-of-the-type-count";
    redisReply *rep = harness_cmd(r, "ECHO %s", end);
    int n = 0;

    freeReplyObject(rep);
    for (;;) {
        void *v = NULL;

        if (redisGetReply(mon, &v) != REDIS_OK || v == NULL)
            return -1;
        rep = v;
        if (rep->type == REDIS_REPLY_STATUS && strstr(rep->str, end)) {
            freeReplyObject(rep);
            return n;
        }
        if (rep->type == REDIS_REPLY_STATUS &&
            strstr(rep->str, "\"TYPE\"") != NULL &&
            strstr(rep->str, "[0 lua]") == NULL)
            n++;
        freeReplyObject(rep);
    }
}

/* B is the key's only subscriber: the release's message says so (1
 * listener), and B attempts at once -- no spread, no TYPE probe first
 * (to the first node), which a crowd of waiters needs and a lone one
 * only waits for. (The first hand-off subscribes B to the channel; the
 * confirmation of a new subscription wakes a waiter with a probe, as it
 * carries no count.) */
static void test_a_lone_waiter_attempts_without_a_probe(void **state)
{
    struct fixture *f = *state;
    int64_t lat[5];
    redisContext *mon;
    redisReply *rep;

    handoffs(f, "notify:lone", 1, lat);
    mon = harness_connect(&f->r[0]);
    assert_non_null(mon);
    rep = redisCommand(mon, "MONITOR");
    assert_true(rep != NULL && rep->type == REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    handoffs(f, "notify:lone", 5, lat);
    assert_int_equal(clients_type_commands(mon, &f->r[0]), 0);
    redisFree(mon);
}

static void test_waiter_is_woken_with_two_nodes_down(void **state)
{
    struct fixture *f = *state;
    int64_t lat[5];

    harness_kill(&f->r[0]);
    harness_kill(&f->r[3]);
    handoffs(f, "notify:degraded", 5, lat);
}

/* Clients subscribed to the key's release channel on node r. */
static long long channel_subscribers(const struct rl_redis *r,
                                     const char *key)
{
    redisReply *rep = harness_cmd(r, "PUBSUB NUMSUB redlock:release:%s", key);
    long long n = -1;

    if (rep != NULL && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
        rep->element[1]->type == REDIS_REPLY_INTEGER)
        n = rep->element[1]->integer;
    freeReplyObject(rep);
    return n;
}

/* One of the crowd's threads: wait for the key, hold it a moment,
 * release it (which wakes the next). */
static void *crowd_main(void *arg)
{
    struct waiter *w = arg;

    waiter_main(w);
    if (w->st == RL_OK) {
        harness_sleep_ms(5);
        if (rl_release(w->lock) != RL_OK)
            w->st = RL_ELOST;
        w->lock = NULL;
    }
    return NULL;
}

#define CROWD 6

/* Threads of one client waiting for one key: each release message
 * counts one listener (their client), and one attempt of theirs is
 * enough, the oldest; it holds, and its release wakes the next. Every
 * thread woken for each release (one attempt won, the rest refused)
 * cost the nodes CROWD - 1 refused rounds per hand-off. */
static void test_threads_of_one_client_take_turns_on_one_wake(void **state)
{
    struct fixture *f = *state;
    struct waiter w[CROWD];
    pthread_t th[CROWD];
    rl_acquire_opts o = { 0 };
    uint64_t before, after_release;
    int64_t deadline;
    rl_stats s;
    rl_lock *la;
    int i;

    o.ttl_ms = B_RETRY_MS;
    assert_int_equal(rl_acquire(f->c, "notify:crowd", &o, &f->l), RL_OK);
    assert_int_equal(rl_client_stats(f->c2, &s), RL_OK);
    before = s.contended;
    for (i = 0; i < CROWD; i++) {
        w[i] = (struct waiter){ .c = f->c2, .resource = "notify:crowd",
                                .wait_ms = 2 * B_RETRY_MS };
        assert_int_equal(pthread_create(&th[i], NULL, crowd_main, &w[i]), 0);
    }
    /* Each thread was refused once, and the channel is subscribed on
     * every node (its confirmations woke them: a probe each). */
    deadline = harness_now_ms() + harness_scale_ms(5000);
    do {
        harness_sleep_ms(5);
        assert_int_equal(rl_client_stats(f->c2, &s), RL_OK);
    } while ((s.contended < before + CROWD ||
              channel_subscribers(&f->r[NODES - 1], "notify:crowd") != 1) &&
             harness_now_ms() < deadline);
    harness_sleep_ms(harness_scale_ms(200)); /* the probes' answers */
    assert_int_equal(rl_client_stats(f->c2, &s), RL_OK);
    after_release = s.contended;
    la = f->l;
    f->l = NULL;
    assert_int_equal(rl_release(la), RL_OK);
    for (i = 0; i < CROWD; i++) {
        pthread_join(th[i], NULL);
        if (w[i].st != RL_OK)
            fail_msg("thread %d got %s: %s", i, rl_status_name(w[i].st),
                     w[i].err);
        /* Woken by a release, never by the 30 s poll. */
        assert_true(w[i].t_done_us - w[i].t_start_us <
                    (int64_t)B_RETRY_MS * 1000);
    }
    assert_int_equal(rl_client_stats(f->c2, &s), RL_OK);
    fprintf(stderr, "  %d threads: %llu refused attempts before the first "
                    "release, %llu after it\n",
            CROWD, (unsigned long long)(after_release - before),
            (unsigned long long)(s.contended - after_release));
    /* One attempt per release, not one per thread: at most a stray one
     * each (a thread busy with a probe when the message came). */
    assert_true(s.contended - after_release <= CROWD);
}

/* B's refused attempts, awaited (5 s scaled) until above seen. */
static uint64_t refused_after(struct fixture *f, uint64_t seen)
{
    int64_t deadline = harness_now_ms() + harness_scale_ms(5000);
    rl_stats s;

    for (;;) {
        assert_int_equal(rl_client_stats(f->c2, &s), RL_OK);
        if (s.contended > seen || harness_now_ms() >= deadline)
            return s.contended;
        harness_sleep_ms(2);
    }
}

/* The thread a release woke (the oldest) gives up: the next is woken in
 * its place, or it would sleep out its retry delay while the lock is
 * free. A foreign holder (plain SET, no release message, as a client of
 * another library) refuses the first's attempt on a release message the
 * test publishes, then vanishes silently; the first is cancelled. */
static void test_a_woken_thread_that_gives_up_wakes_the_next(void **state)
{
    static const char key[] = "notify:passon";
    struct fixture *f = *state;
    struct waiter first = { .c = f->c2, .resource = key,
                            .wait_ms = 2 * B_RETRY_MS };
    struct waiter next = first;
    pthread_t t1, t2;
    uint64_t seen;
    int64_t fired;
    rl_stats s;
    int i;

    first.cancel = rl_cancel_new();
    assert_non_null(first.cancel);
    for (i = 0; i < NODES; i++)
        assert_true(harness_ok(
            harness_cmd(&f->r[i], "SET %s foreign PX 60000", key)));
    assert_int_equal(rl_client_stats(f->c2, &s), RL_OK);
    assert_int_equal(pthread_create(&t1, NULL, waiter_main, &first), 0);
    seen = refused_after(f, s.contended);
    assert_int_equal(pthread_create(&t2, NULL, waiter_main, &next), 0);
    seen = refused_after(f, seen);
    for (i = 0; i < NODES; i++) {
        int64_t until = harness_now_ms() + harness_scale_ms(5000);

        while (channel_subscribers(&f->r[i], key) != 1 &&
               harness_now_ms() < until)
            harness_sleep_ms(5);
    }
    harness_sleep_ms(harness_scale_ms(200)); /* the confirmations' probes */
    assert_int_equal(rl_client_stats(f->c2, &s), RL_OK);
    /* A release message: the first takes it on and is refused. */
    assert_int_equal(harness_int(harness_cmd(&f->r[0],
                                             "PUBLISH redlock:release:%s "
                                             "%s",
                                             key, "gone 1"),
                                 0),
                     1);
    assert_true(refused_after(f, s.contended) > s.contended);
    for (i = 0; i < NODES; i++)
        harness_int(harness_cmd(&f->r[i], "DEL %s", key), 0);
    fired = harness_now_us();
    assert_int_equal(rl_cancel_fire(first.cancel), RL_OK);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    f->l2 = next.lock;
    rl_cancel_free(first.cancel);
    assert_int_equal(first.st, RL_EABORTED);
    if (next.st != RL_OK)
        fail_msg("the next got %s: %s", rl_status_name(next.st), next.err);
    fprintf(stderr, "  the next acquired %lld ms after the first gave up\n",
            (long long)((next.t_done_us - fired) / 1000));
    assert_true(next.t_done_us - fired < woken_bound_ms() * 1000);
}

/* ms as a client's timeout: at most the 60 s rl_config allows. */
static uint32_t timeout_ms(int64_t ms)
{
    return ms < 60000 ? (uint32_t)ms : 60000u;
}

/* f's node i reached through proxy port (when not 0): a client for
 * the late-subscription case, A's or B's timing, with room in its
 * timeouts for slack_ms of A's replies held at the proxy. */
static rl_client *client_via(struct fixture *f, int i, int port,
                             uint32_t retry_delay_ms, uint32_t jitter_ms,
                             int64_t slack_ms, const char *name)
{
    struct harness_nodes nodes = {0};
    struct rl_redis hop;
    rl_config cfg;
    char uri[192];

    for (int k = 0; k < NODES; k++) {
        hop = f->r[k];
        if (k == i)
            hop.port = port;
        harness_nodes_set(&nodes, k, harness_uri(&hop, uri, sizeof(uri)));
    }
    fixture_config(&cfg, &nodes);
    cfg.connect_timeout_ms = timeout_ms(slack_ms + harness_scale_ms(300));
    cfg.op_timeout_ms = timeout_ms(slack_ms + harness_scale_ms(1000));
    cfg.retry_delay_ms = retry_delay_ms;
    cfg.retry_jitter_ms = jitter_ms;
    cfg.log_privdata = (void *)name;
    return fixture_client(&cfg);
}

/* A release at a node where B's subscription is not active yet reaches
 * nobody; when that node confirms the subscription, B must try again
 * (only a channel's first confirmation used to wake, and B slept out its
 * retry delay: CI saw a 60 s hand-off with two nodes down). Nodes 0 and 3
 * are down, so B needs each of 1, 2 and 4. B reaches node 1 through a
 * proxy that refuses B's subscriber connection until A's release is
 * over; A reaches node 1 through a proxy that holds A's release there
 * until B, woken by the messages of nodes 2 and 4, was refused by node 1
 * (a fixed delay there let a slow B come after the release: CI). */
static void test_a_late_subscription_wakes_the_waiter(void **state)
{
    static const char key[] = "notify:late";
    struct fixture *f = *state;
    int64_t wait = harness_scale_ms(5000);
    int64_t bound = harness_scale_ms(3000);
    struct waiter w = { .resource = key, .wait_ms = 2 * B_RETRY_MS };
    struct fixture_rec rel = { 0 };
    rl_acquire_opts o = { 0 };
    pid_t pa = 0, pb = 0;
    int port_a, port_b, ctl_a = -1, ctl_b = -1;
    uint64_t refused;
    int64_t deadline, t_open;
    pthread_t th;
    rl_stats s;

    port_a = fixture_proxy_start(&pa, f->r[1].port, 0, &ctl_a);
    port_b = fixture_proxy_start(&pb, f->r[1].port, 0, &ctl_b);
    if (port_a < 0 || port_b < 0) {
        fixture_proxy_stop(&pa);
        fixture_proxy_stop(&pb);
        skip();
    }
    rl_client_free(f->c);
    rl_client_free(f->c2);
    /* A's release may wait at the proxy as long as the wait for B. */
    f->c = client_via(f, 1, port_a, 20, 10, wait, "A");
    f->c2 = client_via(f, 1, port_b, B_RETRY_MS, 0, 0, "B");
    assert_true(f->c != NULL && f->c2 != NULL);
    assert_true(fixture_all_voting(f->c) && fixture_all_voting(f->c2));
    harness_kill(&f->r[0]);
    harness_kill(&f->r[3]);
    o.ttl_ms = B_RETRY_MS;
    assert_int_equal(fixture_acquire_until_ok(f->c, key, &o, &f->l,
                                              harness_now_ms(),
                                              harness_scale_ms(5000), 20,
                                              NULL),
                     RL_OK);
    assert_true(fixture_proxy_say(ctl_b, "refuse on"));
    w.c = f->c2;
    assert_int_equal(pthread_create(&th, NULL, waiter_main, &w), 0);
    /* B was refused and listens on nodes 2 and 4, not on node 1. */
    deadline = harness_now_ms() + wait;
    do {
        harness_sleep_ms(5);
        assert_int_equal(rl_client_stats(f->c2, &s), RL_OK);
    } while ((s.contended == 0 || channel_subscribers(&f->r[2], key) != 1 ||
              channel_subscribers(&f->r[4], key) != 1) &&
             harness_now_ms() < deadline);
    assert_true(s.contended > 0);
    assert_int_equal(channel_subscribers(&f->r[2], key), 1);
    assert_int_equal(channel_subscribers(&f->r[4], key), 1);
    assert_int_equal(channel_subscribers(&f->r[1], key), 0);
    refused = s.contended;
    assert_true(fixture_proxy_say(ctl_a, "hold on"));
    assert_int_equal(rl_release_async(f->l, fixture_rec_released, &rel),
                     RL_OK);
    f->l = NULL;
    /* Woken by nodes 2 and 4, B tried again and node 1 refused it. */
    deadline = harness_now_ms() + wait;
    for (;;) {
        assert_int_equal(rl_client_stats(f->c2, &s), RL_OK);
        if (s.contended > refused || harness_now_ms() >= deadline)
            break;
        harness_sleep_ms(5);
    }
    assert_true(fixture_proxy_say(ctl_a, "hold off"));
    assert_true(harness_wait_count(&rel.calls, 1, wait));
    assert_int_equal(rel.st, RL_OK);
    if (s.contended == refused)
        fail_msg("B did not try again after the release");
    t_open = harness_now_us();
    assert_true(fixture_proxy_say(ctl_b, "refuse off"));
    pthread_join(th, NULL);
    f->l2 = w.lock;
    fixture_proxy_stop(&pa);
    fixture_proxy_stop(&pb);
    fprintf(stderr, "  B acquired %lld ms after its subscription could "
                    "start on node 1 (%s)\n",
            (long long)((w.t_done_us - t_open) / 1000),
            rl_status_name(w.st));
    if (w.st != RL_OK)
        fail_msg("B got %s: %s", rl_status_name(w.st), w.err);
    if (w.t_done_us - t_open >= bound * 1000)
        fail_msg("B acquired %lld ms after node 1 let it subscribe: not "
                 "woken by the confirmation",
                 (long long)((w.t_done_us - t_open) / 1000));
}

/* A holder's key that is gone from the node B asks for its PTTL (-2),
 * with no release heard during the attempt, is a key that expired (a
 * crashed holder) or was rolled back: B looks again now, not after its
 * retry delay (CI: a crashed holder's keys expired during B's attempt,
 * and B slept 10 s). Nodes 0, 1 and 2 hold a foreign value. B reaches
 * node 0 through a proxy; once B listens everywhere, the proxy holds
 * every chunk d ms, and a release message (one listener) makes B try.
 * Its attempt is split (3 and 4 grant, 1 and 2 refuse, node 0 refuses
 * last), so B asks node 0, the first that refused, for the PTTL, which
 * arrives there d ms after the test, seeing the refusal, deleted the
 * value everywhere without publishing. */
static void test_a_key_gone_without_a_release_wakes_the_waiter(void **state)
{
    static const char key[] = "notify:gone";
    struct fixture *f = *state;
    int64_t d = harness_scale_ms(500);
    struct waiter w = { .resource = key, .wait_ms = 2 * B_RETRY_MS };
    pid_t pb = 0;
    int port_b, ctl_b = -1;
    uint64_t refused;
    int64_t deadline, t_gone;
    char delay[32];
    pthread_t th;
    rl_stats s;

    port_b = fixture_proxy_start(&pb, f->r[0].port, 0, &ctl_b);
    if (port_b < 0)
        skip();
    rl_client_free(f->c2);
    f->c2 = client_via(f, 0, port_b, B_RETRY_MS, 0, 4 * d, "B");
    assert_non_null(f->c2);
    assert_true(fixture_all_voting(f->c2));
    for (int i = 0; i < 3; i++)
        assert_true(harness_ok(harness_cmd(&f->r[i], "SET %s foreign PX %d",
                                           key, 2 * B_RETRY_MS)));
    w.c = f->c2;
    assert_int_equal(pthread_create(&th, NULL, waiter_main, &w), 0);
    deadline = harness_now_ms() + harness_scale_ms(5000);
    for (;;) {
        int listening = 0;

        assert_int_equal(rl_client_stats(f->c2, &s), RL_OK);
        for (int i = 0; i < NODES; i++)
            listening += channel_subscribers(&f->r[i], key) == 1;
        if ((s.contended > 0 && listening == NODES) ||
            harness_now_ms() >= deadline)
            break;
        harness_sleep_ms(5);
    }
    assert_true(s.contended > 0);
    snprintf(delay, sizeof(delay), "delay %lld", (long long)d);
    assert_true(fixture_proxy_say(ctl_b, delay));
    /* A message that finds B asleep makes it attempt at once; one that
     * finds it probing (its wake-up after subscribing) does not, so the
     * message goes again until B was refused once more. */
    refused = s.contended;
    deadline = harness_now_ms() + harness_scale_ms(5000) + 8 * d;
    for (int n = 0; s.contended == refused && harness_now_ms() < deadline;
         n++) {
        int64_t until = harness_now_ms() + 4 * d;
        char msg[32];

        snprintf(msg, sizeof(msg), "gone%d 1", n); /* token, listeners */
        assert_true(harness_int(harness_cmd(&f->r[3], "PUBLISH "
                                            "redlock:release:%s %s", key,
                                            msg), -1) >= 0);
        do {
            harness_sleep_ms(2);
            assert_int_equal(rl_client_stats(f->c2, &s), RL_OK);
        } while (s.contended == refused && harness_now_ms() < until);
    }
    for (int i = 0; i < 3; i++)
        assert_true(harness_int(harness_cmd(&f->r[i], "DEL %s", key), -1) >=
                    0);
    t_gone = harness_now_us();
    assert_true(s.contended > refused);
    pthread_join(th, NULL);
    f->l2 = w.lock;
    fixture_proxy_stop(&pb);
    fprintf(stderr, "  B acquired %lld ms after the key went (%s)\n",
            (long long)((w.t_done_us - t_gone) / 1000),
            rl_status_name(w.st));
    if (w.st != RL_OK)
        fail_msg("B got %s: %s", rl_status_name(w.st), w.err);
    /* The PTTL's way there and back, a probe and an attempt: 6 d. */
    if (w.t_done_us - t_gone >= (6 * d + woken_bound_ms()) * 1000)
        fail_msg("B acquired %lld ms after the key went: it slept out "
                 "its retry delay",
                 (long long)((w.t_done_us - t_gone) / 1000));
}

static void test_waiter_gets_crashed_holders_lock_after_ttl(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = { 0 };
    struct waiter w = { .c = f->c2, .resource = "notify:crash",
                        .wait_ms = 10000 };
    pthread_t th;
    int64_t t_a;
    int64_t took_ms;

    o.ttl_ms = 1500;
    t_a = harness_now_us();
    assert_int_equal(rl_acquire(f->c, "notify:crash", &o, &f->l), RL_OK);
    /* Every node holds it, expiring 1500 ms after the call or later (the
     * acquire returned at a majority). */
    assert_true(fixture_all_hold(f, "notify:crash", rl_lock_token(f->l),
                                 t_a / 1000, 1500));
    /* The holder "crashes": its handle goes, nothing is released or
     * published. */
    rl_lock_free(f->l);
    f->l = NULL;
    assert_int_equal(pthread_create(&th, NULL, waiter_main, &w), 0);
    pthread_join(th, NULL);
    f->l2 = w.lock;
    took_ms = (w.t_done_us - t_a) / 1000;
    fprintf(stderr, "  crashed holder (TTL 1500 ms): B acquired %lld ms "
                    "after A did (%s)\n",
            (long long)took_ms, rl_status_name(w.st));
    if (w.st != RL_OK)
        fail_msg("B got %s: %s", rl_status_name(w.st), w.err);
    /* Not before the key expired, ... */
    assert_true(took_ms >= 1500 - 20);
    /* ... and soon after it: the wait is capped by the holder's PTTL
     * (§5.2), not the 30 s retry delay. */
    assert_true(took_ms < 1500 + woken_bound_ms());
    assert_true(holders(f, "notify:crash", rl_lock_token(f->l2)) >= 3);
    assert_int_equal(rl_release(f->l2), RL_OK);
    f->l2 = NULL;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_waiter_acquires_right_after_release),
        cmocka_unit_test(test_a_lone_waiter_attempts_without_a_probe),
        cmocka_unit_test(test_waiter_is_woken_with_two_nodes_down),
        cmocka_unit_test(test_waiter_gets_crashed_holders_lock_after_ttl),
        cmocka_unit_test(test_a_late_subscription_wakes_the_waiter),
        cmocka_unit_test(test_a_key_gone_without_a_release_wakes_the_waiter),
        cmocka_unit_test(test_threads_of_one_client_take_turns_on_one_wake),
        cmocka_unit_test(test_a_woken_thread_that_gives_up_wakes_the_next),
    };

    return FIXTURE_RUN("notify", &fx, tests);
}
