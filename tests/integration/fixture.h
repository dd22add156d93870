/* SPDX-License-Identifier: BSD-3-Clause */
/* fixture.h -- what every integration test starts from: one fixture
 * (servers, clients, locks, a loop) made by fixture_setup and undone by
 * fixture_teardown, the fast client configuration, client creation that
 * says why it failed, a retried acquire, and the steps many cases take
 * (acquire and check, record a callback, run threads). harness.h runs
 * the servers; this file adds what needs <redlock.h>.
 *
 * A test program names its options once and runs its cases with them:
 *
 *     static const struct fixture_opts five = { .nodes = 5 };
 *     const struct CMUnitTest tests[] = {
 *         cmocka_unit_test(test_something),
 *         FIXTURE_TEST(test_on_three_nodes, &three),
 *     };
 *     return FIXTURE_RUN("name", &five, tests);
 *
 * and each case gets a fresh struct fixture in *state.
 *
 * Environment:
 *   RL_TEST_LOG   print the library's log lines (debug level) on stderr
 */
#ifndef REDLOCK_TEST_FIXTURE_H
#define REDLOCK_TEST_FIXTURE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "harness.h"
#include "redlock.h"

/* The log sink fixture_config installs: prints "  [redlock LEVEL] msg"
 * on stderr when $RL_TEST_LOG is set. privdata, if not NULL, is a string
 * naming the client ("A", "pid 42"), printed before the level. */
void fixture_log(int level, const char *msg, void *privdata);

/* rl_config_init, then what the tests want: the nodes of hn (hn may be
 * NULL: the caller sets nodes itself), connect 200 ms and op 50 ms (both
 * harness_scale_ms), no retries (retry delay 20 ms, jitter 10 ms),
 * restarted nodes trusted (the harness's servers are all young), and
 * fixture_log at RL_LOG_DEBUG. Override fields afterwards. */
void fixture_config(rl_config *cfg, const struct harness_nodes *hn);

/* rl_client_new(cfg); on failure prints status and rl_last_error() and
 * returns NULL. */
rl_client *fixture_client(const rl_config *cfg);
/* Wait (up to harness_scale_ms(5000)) until every node of c is connected
 * and votes: rl_client_new waits only connect_timeout_ms for the
 * handshakes, which a busy machine can exceed, and a test that checks
 * what every node stores needs every node. false, with a message, past
 * the deadline. */
bool fixture_all_voting(rl_client *c);
/* fixture_client with fixture_config(hn). */
rl_client *fixture_fast_client(const struct harness_nodes *hn);
/* fixture_fast_client, but its retries wait retry_delay_ms exactly (no
 * jitter), and connected to every node (an acquire and release of
 * "fixture:warm" asserted): a node still connecting would fail a first
 * attempt instead of refusing it. */
rl_client *fixture_patient_client(const struct harness_nodes *hn,
                                  uint32_t retry_delay_ms);

/* Blocking acquires of resource on c, every sleep_ms, until one succeeds
 * or since_ms + limit_ms (harness_now_ms) has passed; none when it has
 * already. *lock is reset before each attempt. *attempts (may be NULL)
 * counts them. Returns the last status, RL_ENOQUORUM if none was made. */
rl_status fixture_acquire_until_ok(rl_client *c, const char *resource,
                                   const rl_acquire_opts *o, rl_lock **lock,
                                   int64_t since_ms, int64_t limit_ms,
                                   int64_t sleep_ms, int *attempts);

#define FIXTURE_MAX_NODES 8
#define FIXTURE_MAX_LOCKS 8

struct CMUnitTest;
struct ev_loop;
struct fixture;

/* What fixture_setup makes. Zero fields mean "no", NULL "none". */
struct fixture_opts {
    int nodes;                     /* servers to start (0: none, and no
                                      client; the test starts its own) */
    bool no_client;                /* start servers only: f->c stays NULL */
    bool second_client;            /* also f->c2, with the same config */
    bool external_loop;            /* f->loop, and f->c runs on it (f->c2
                                      runs its own thread) */
    bool all_voting;               /* wait until every node of f->c votes */
    void (*tune)(rl_config *cfg);  /* adjusts the clients' config after
                                      fixture_config */
    size_t priv_size;              /* f->priv: this many zeroed bytes */
    int (*setup)(struct fixture *f); /* fixture_setup's last step: 0, or
                                      -1 (the case fails) */
    void (*cleanup)(struct fixture *f); /* teardown's, once the clients
                                      and locks are freed */
};

/* One test case's world. Teardown frees what is not NULL here, whatever
 * the test left behind. */
struct fixture {
    const struct fixture_opts *opts;
    struct rl_redis r[FIXTURE_MAX_NODES];
    int n;                         /* servers in r (set by a test that
                                      starts its own) */
    struct harness_nodes hn;       /* their URIs */
    rl_client *c;
    rl_client *c2;
    rl_lock *l;
    rl_lock *l2;
    rl_lock *locks[FIXTURE_MAX_LOCKS];
    struct ev_loop *loop;
    void *priv;                    /* the test's own state (priv_size) */
};

/* cmocka setup: *state is the struct fixture_opts (NULL: 3 nodes, one
 * client) and becomes the struct fixture. 0, or -1 with a message. */
int fixture_setup(void **state);
/* cmocka teardown: resume paused servers, free the clients and then the
 * locks, opts->cleanup, destroy the loop, stop every server, free priv. */
int fixture_teardown(void **state);
/* main() of an integration program: skip (exit 77) without redis-server,
 * then run the count tests as group name; a case registered without a
 * setup (cmocka_unit_test) gets a fresh fixture made with opts. */
int fixture_run(const char *name, const struct fixture_opts *opts,
                const struct CMUnitTest *tests, size_t count);
#define FIXTURE_RUN(name, opts, tests)                                      \
    fixture_run(name, opts, tests, sizeof(tests) / sizeof((tests)[0]))
/* A case of fn with a fresh fixture made with opts (a pointer), for a
 * case whose options differ from the program's. */
#define FIXTURE_TEST(fn, opts)                                              \
    cmocka_unit_test_prestate_setup_teardown(fn, fixture_setup,             \
                                             fixture_teardown, (void *)(opts))

/* A client on f's nodes with fixture_config and then opts->tune, on loop
 * (NULL: its own thread). NULL on failure, with a message. */
rl_client *fixture_client_on(const struct fixture *f, struct ev_loop *loop);

/* tools/faultproxy in front of 127.0.0.1:upstream, holding every chunk
 * delay_ms in each direction (a distant node). *pid gets its process
 * (stop it with fixture_proxy_stop), *control (unless NULL) the port of
 * its control socket (fixture_proxy_say). Returns the port it listens
 * on, or -1 with a message on stderr; -1 and "SKIP" when the tests were
 * built without tools/faultproxy (RL_FAULTPROXY). */
int fixture_proxy_start(pid_t *pid, int upstream, int delay_ms,
                        int *control);
/* One command to the proxy's control socket (tools/faultproxy/README.md,
 * e.g. "refuse on"); true when it answered "ok". */
bool fixture_proxy_say(int control, const char *command);
/* SIGTERM and wait; *pid becomes 0. Nothing when *pid is 0. */
void fixture_proxy_stop(pid_t *pid);

/* ---- Steps many cases take ----
 * Those that fail the case (cmocka) when a step does not work must be
 * called from the thread that runs the case: fixture_acquire,
 * fixture_pause_all, fixture_resume_all, fixture_run_workers,
 * fixture_acquirer_start. */

/* rl_acquire of resource on c with ttl_ms (0: the default) and no other
 * option; anything but RL_OK fails the case, naming the status and
 * rl_last_error(). Returns the lock. */
rl_lock *fixture_acquire(rl_client *c, const char *resource, uint32_t ttl_ms);
/* Inside a lost callback: true when the watchdog lost the lock for being
 * too slow -- no renewal confirmed before the safety margin, or the
 * validity ran out first (rl_last_error() of the loop thread, set just
 * before, says why). A machine that keeps the client or the nodes off
 * the CPU loses locks so, truthfully; any other reason (a majority says
 * the key is gone, or its votes no longer count) is not load. */
bool fixture_lost_for_being_slow(void);

/* The counter field ("calls", "rejected_calls", ...) of command cmd
 * ("evalsha") in r's INFO commandstats: 0 before the first call, or
 * when INFO fails. */
long long fixture_command_stat(const struct rl_redis *r, const char *cmd,
                               const char *field);

/* harness_all_hold_ttl on f's nodes: every one holds key = value (one
 * shared deadline), and with ttl_ms > 0 its expiry is that of a write of
 * ttl_ms made at since_ms (harness_now_ms() before the call) or later.
 * Both 0: the value alone. */
bool fixture_all_hold(const struct fixture *f, const char *key,
                      const char *value, int64_t since_ms, long long ttl_ms);
/* l's validity as an instant: at most max_ms (the TTL less the drift),
 * and its end (the time of the read plus what it reports) at since_ms
 * (harness_now_ms() before the call that set it) + max_ms or later.
 * Unlike a window on what it reports, this does not depend on how long
 * the call took. Prints what it saw when not. */
bool fixture_validity_from(const rl_lock *l, int64_t since_ms,
                           int64_t max_ms);
/* Wait (up to harness_scale_ms(ms)) until the uint64_t counter of
 * rl_client_totals(c) at offset reaches want: the event a test waits for
 * (a refused attempt, a renewal), not a sleep. false, with a message,
 * past the deadline. Use FIXTURE_WAIT_TOTAL(c, contended, 1, 5000). */
bool fixture_wait_total(rl_client *c, size_t offset, uint64_t want,
                        int64_t ms);
#define FIXTURE_WAIT_TOTAL(c, field, want, ms)                              \
    fixture_wait_total((c), offsetof(rl_totals, field), (want), (ms))
/* harness_pause / harness_resume every node of f. */
void fixture_pause_all(struct fixture *f);
void fixture_resume_all(struct fixture *f);

/* What the callback of one async operation saw: the fixture_rec_*
 * callbacks fill it in (privdata is the record) and count their calls
 * last, so a test that sees calls == 1 (harness_wait_count) may read the
 * rest. */
struct fixture_rec {
    atomic_int calls;
    rl_status st;
    rl_lock *lock; /* an acquire's lock: the test owns it */
};
void fixture_rec_acquired(rl_client *c, rl_status st, rl_lock *lock,
                          void *privdata);
void fixture_rec_extended(rl_lock *l, rl_status st, void *privdata);
void fixture_rec_released(rl_client *c, rl_status st, void *privdata);

/* What each thread of fixture_run_workers gets. */
struct fixture_worker {
    int id;                       /* 0 .. n - 1 */
    void *shared;                 /* the state all n threads share */
};
/* Start fn on n threads at once, each with its own struct fixture_worker
 * (as fn's argument), and wait until every one has returned. */
void fixture_run_workers(int n, void *(*fn)(void *), void *shared);

/* A blocking rl_acquire_multi on a thread of its own (a contender that
 * is not the case's thread, or a wait the case cancels). Fill in the
 * first four fields (the rest zeroed), then fixture_acquirer_start; the
 * thread sets started just before the call and done just after it, once
 * st, lock and err are written. fixture_acquirer_join waits for it. */
struct fixture_acquirer {
    rl_client *c;
    const char *const *resources; /* must outlive the thread */
    size_t count;
    rl_acquire_opts o;
    atomic_int started;
    atomic_int done;
    rl_status st;
    rl_lock *lock;                /* the case owns it */
    char err[256];                /* rl_last_error() after the call */
    pthread_t thread;
};
void fixture_acquirer_start(struct fixture_acquirer *a);
void fixture_acquirer_join(struct fixture_acquirer *a);

#endif
