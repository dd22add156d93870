/* SPDX-License-Identifier: BSD-3-Clause */
/* harness.h -- real redis-server processes for the integration tests
 * (DESIGN §8, STYLE 3.8). No mock Redis: every test starts its own servers
 * on free loopback ports, each in its own temp dir, and stops them again.
 *
 * Lifecycle of a struct rl_redis:
 *
 *   harness_start()    fork+exec redis-server, wait (<= 5 s) for PING,
 *                      refuse a non-empty instance          -> running
 *   harness_pause()    SIGSTOP (the socket stays open)      -> paused
 *   harness_resume()   SIGCONT                              -> running
 *   harness_kill()     SIGKILL + waitpid; port and dir kept -> down
 *   harness_restart()  start again on the same port, empty  -> running
 *   harness_stop()     SIGKILL + waitpid, temp dir removed  -> stopped
 *
 * Safety nets, so no server outlives the test program:
 *   - each child asks the kernel for SIGKILL when its parent *thread* dies
 *     (PR_SET_PDEATHSIG): start servers from the main thread (or a thread
 *     that outlives them);
 *   - every running server is in a global list that an atexit handler
 *     kills and cleans up (covers exit() and a return from main()).
 *
 * Threads: start/stop/kill/restart/pause/resume are not thread-safe (call
 * them from one thread). The sync command helpers open their own blocking
 * connection per call (or use a context from harness_connect, one per
 * thread) and may be called from any thread.
 *
 * Environment:
 *   REDIS_SERVER                 binary to run (default: redis-server in PATH)
 *   RL_TEST_TIMEOUT_MULTIPLIER   scales harness_scale_ms() and the start
 *                                timeout (slow CI, valgrind, sanitizers)
 *   RL_HARNESS_KEEP=1            keep temp dirs (redis.log) after stop
 */
#ifndef REDLOCK_TEST_HARNESS_H
#define REDLOCK_TEST_HARNESS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <hiredis/hiredis.h>

#define HARNESS_HOST "127.0.0.1"
#define HARNESS_CRED_MAX 64
#define HARNESS_DIR_MAX 256
#define HARNESS_MAX_SERVERS 64

/* Options for harness_start. All fields may be zero/NULL. Strings are
 * copied. */
struct harness_opts {
    const char *requirepass;       /* password of the default user */
    const char *acl_user;          /* extra ACL user with all rights ... */
    const char *acl_pass;          /* ... and this password (both or none) */
    const char *const *extra_args; /* more redis-server args, NULL-ended */
    const char *tls_cert;          /* set: also listen for TLS on tls_port */
    const char *tls_key;           /* ... with this key, */
    const char *tls_ca;            /* ... this CA for client certificates */
    bool tls_auth_clients;         /* ... demanded or not (plaintext port
                                      stays: the harness talks on it) */
    bool unix_socket;              /* also listen on a unix socket (mode
                                      700) at rl_redis.unix_path */
};

/* One redis-server. Zero it (or let harness_start do it) before use. */
struct rl_redis {
    int port;                            /* TCP port on 127.0.0.1 */
    pid_t pid;                           /* 0 when not running */
    char dir[HARNESS_DIR_MAX];           /* temp dir: --dir, redis.log */
    char requirepass[HARNESS_CRED_MAX];  /* "" when none */
    char acl_user[HARNESS_CRED_MAX];     /* "" when none */
    char acl_pass[HARNESS_CRED_MAX];     /* "" when none */
    const char *const *extra_args;       /* borrowed from the opts */
    int tls_port;                        /* TLS port, 0 when none */
    char tls_cert[HARNESS_DIR_MAX];      /* "" when no TLS */
    char tls_key[HARNESS_DIR_MAX];
    char tls_ca[HARNESS_DIR_MAX];
    bool tls_auth_clients;
    char unix_path[HARNESS_DIR_MAX + 16]; /* <dir>/redis.sock; "" when none */
    bool running;                        /* process alive (maybe paused) */
    bool paused;                         /* SIGSTOPped */
};

/* If no redis-server can be found ($REDIS_SERVER or PATH), print
 * "SKIP: redis-server not found in PATH" and exit(77) (CTest: skipped). */
void harness_require_redis(void);

/* TLS certificates for the tests, made once per program by the openssl
 * CLI in a temp dir (removed at exit unless RL_HARNESS_KEEP is set):
 *   ca.pem/ca.key     the CA every test trusts; cadir/ the same, hashed
 *   ca2.pem           a second CA nobody trusts
 *   server.pem        for 127.0.0.1 and localhost (SANs), key server.key
 *   expired.pem       the same, expired
 *   client.pem        a client certificate (clientAuth), key client.key;
 *                     client-both.pem has both
 * Without the openssl CLI: "SKIP: openssl CLI not found", exit(77). */
void harness_require_certs(void);
/* The path of one of those files (a few static buffers, reused). */
const char *harness_cert(const char *name);
/* base (may be NULL) with TLS on: certificate server_cert (a name for
 * harness_cert) with server.key, clients checked against ca.pem and
 * required to show a certificate when auth_clients. */
struct harness_opts harness_tls_opts(const struct harness_opts *base,
                                     const char *server_cert,
                                     bool auth_clients);

/* Start a fresh server (see top of file). o may be NULL. Returns 0 on
 * success, -1 with a message on stderr otherwise (nothing left behind). */
int harness_start(struct rl_redis *r, const struct harness_opts *o);
/* SIGKILL, wait, remove the temp dir. Idempotent; safe on a zeroed or a
 * killed struct. */
void harness_stop(struct rl_redis *r);
/* SIGKILL and wait, but keep port and dir for harness_restart. */
void harness_kill(struct rl_redis *r);
/* Start again on the same port and dir (empty data); waits until ready.
 * Kills the old process first if it still runs. 0 or -1. */
int harness_restart(struct rl_redis *r);
/* SIGSTOP / SIGCONT. 0 or -1. */
int harness_pause(struct rl_redis *r);
int harness_resume(struct rl_redis *r);

/* n servers with the same options. On failure the ones started are
 * stopped again and -1 is returned. */
int harness_cluster_start(struct rl_redis *arr, int n,
                          const struct harness_opts *o);
void harness_cluster_stop(struct rl_redis *arr, int n);

/* Node URIs for an rl_config: fill uri[i] with harness_uri(&arr[i]) and
 * ptr[i] = uri[i], so cfg.nodes = hn.ptr; cfg.node_count = hn.count. */
struct harness_nodes {
    char uri[HARNESS_MAX_SERVERS][192];
    const char *ptr[HARNESS_MAX_SERVERS];
    size_t count;
};
void harness_nodes_fill(struct harness_nodes *hn, const struct rl_redis *arr,
                        int n);
/* harness_cluster_start, then harness_nodes_fill(hn) for them. 0 or -1
 * (nothing left running). */
int harness_cluster_start_nodes(struct rl_redis *arr, int n,
                                const struct harness_opts *o,
                                struct harness_nodes *hn);
/* Node i of hn is uri (copied); count grows to i + 1 if needed. For
 * addresses harness_uri does not make (no password, a free port...). */
void harness_nodes_set(struct harness_nodes *hn, int i, const char *uri);
/* Wait until each running server of arr[0..n) reports uptime_in_seconds
 * >= secs (at most secs + 3 s per server). false, with a message, if INFO
 * fails or a server is too slow. */
bool harness_wait_uptime(const struct rl_redis *arr, int n, int secs);

/* A loopback port nobody listens on right now (e.g. for "unreachable
 * node" tests), or -1. */
int harness_free_port(void);

/* "127.0.0.1:PORT", or with a password "redis://:PASS@127.0.0.1:PORT".
 * Returns buf. */
char *harness_uri(const struct rl_redis *r, char *buf, size_t len);
/* "redis://USER:PASS@127.0.0.1:PORT" with any user/pass (NULL or "" leave
 * the part out), e.g. to try a wrong password. Returns buf. */
char *harness_uri_auth(const struct rl_redis *r, const char *user,
                       const char *pass, char *buf, size_t len);

/* A blocking connection (2 s connect and I/O timeout), authenticated with
 * requirepass if set. NULL on error (message on stderr). Free with
 * redisFree. One per thread. */
redisContext *harness_connect(const struct rl_redis *r);
/* Run one command on a fresh connection. The caller frees the reply with
 * freeReplyObject. NULL on connection/I-O error. */
redisReply *harness_cmd(const struct rl_redis *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Same with an argv vector (binary-safe). */
redisReply *harness_cmd_argv(const struct rl_redis *r, int argc,
                             const char **argv);
/* GET key: malloc'd copy of the string, NULL if absent, not a string or on
 * error. */
char *harness_get(const struct rl_redis *r, const char *key);
/* PTTL key: ms, -1 no expiry, -2 absent, -3 on error. */
long long harness_pttl(const struct rl_redis *r, const char *key);
/* DBSIZE, or -1 on error. */
long long harness_dbsize(const struct rl_redis *r);
/* Number of keys matching a glob pattern (KEYS), -1 on error. */
long long harness_count_keys(const struct rl_redis *r, const char *pattern);
/* The integer of an integer reply, else err (NULL-safe). Frees it. */
long long harness_int(redisReply *reply, long long err);
/* 1 if the reply is an OK/status reply, else 0 (NULL-safe). Frees it. */
int harness_ok(redisReply *reply);
/* PUBSUB NUMSUB channel: its subscribers on r, -1 on error. */
long long harness_numsub(const struct rl_redis *r, const char *channel);
/* Every server of arr[0..n) has a subscriber of channel (a waiter's
 * subscription confirmed), polled until harness_scale_ms(ms). false,
 * with a message, past it. */
bool harness_all_subscribed(const struct rl_redis *arr, int n,
                            const char *channel, int64_t ms);
/* Read "field:value" from INFO (section may be NULL) into buf. 0 or -1. */
int harness_info_field(const struct rl_redis *r, const char *section,
                       const char *field, char *buf, size_t len);

/* ---- Checks on what Redis holds ----
 *
 * Each returns a verdict and prints what it saw when that is "no", so a
 * test only has to assert_true() it. A lock call returns once a majority
 * answered: the other nodes' replies may still be on their way, so the
 * plain checks look again every 10 ms for up to harness_scale_ms(3000).
 * The _within variants poll until harness_scale_ms(ms) have passed (ms 0:
 * look once). */

/* GET key == value and PTTL > 0 (a lock key). */
bool harness_key_holds(const struct rl_redis *r, const char *key,
                       const char *value);
bool harness_key_holds_within(const struct rl_redis *r, const char *key,
                              const char *value, int64_t ms);
/* GET key == value and min_pttl <= PTTL <= max_pttl. */
bool harness_key_holds_ttl(const struct rl_redis *r, const char *key,
                           const char *value, long long min_pttl,
                           long long max_pttl);
/* key does not exist (PTTL -2). */
bool harness_key_absent(const struct rl_redis *r, const char *key);
/* DBSIZE 0 (on failure the keys left are printed too). */
bool harness_empty(const struct rl_redis *r);
bool harness_empty_within(const struct rl_redis *r, int64_t ms);
/* Every server of arr[0..n) empty: harness_empty on each, or polled
 * until one shared deadline. */
bool harness_all_empty(const struct rl_redis *arr, int n);
bool harness_all_empty_within(const struct rl_redis *arr, int n,
                              int64_t ms);
/* harness_key_holds / harness_empty on every server of arr[0..n) that
 * runs and is not paused (the ones a lock could reach); false also when
 * there is none. */
bool harness_live_hold(const struct rl_redis *arr, int n, const char *key,
                       const char *value);
bool harness_live_empty(const struct rl_redis *arr, int n);
/* Servers of arr[0..n), running and not paused, where GET key == value
 * with PTTL > 0 (looked at once). *max_pttl (may be NULL): the largest
 * PTTL of key seen on them, -3 if none. */
int harness_holders(const struct rl_redis *arr, int n, const char *key,
                    const char *value, long long *max_pttl);
/* Servers of arr[0..n), running and not paused, where key exists. */
int harness_key_count(const struct rl_redis *arr, int n, const char *key);
/* harness_key_count(...) == 0. */
bool harness_key_gone(const struct rl_redis *arr, int n, const char *key);
bool harness_key_gone_within(const struct rl_redis *arr, int n,
                             const char *key, int64_t ms);
/* harness_key_count(...), awaited up to ms (scaled) until want servers
 * have key at least, or none when want is 0: a call returns at a
 * majority and the last nodes' writes may land later. */
int harness_key_count_within(const struct rl_redis *arr, int n,
                             const char *key, int want, int64_t ms);
/* Every server of arr[0..n) holds key = value, awaited on one shared
 * deadline (harness_scale_ms(3000)) until all of them do at one look: a
 * call returns at a majority and the last nodes' writes may land later.
 * With ttl_ms > 0 the expiry must also be the one a write of ttl_ms at
 * since_ms (harness_now_ms() before the call) or later set: PTTL at most
 * ttl_ms, and the expiry, as an instant (PTTL plus the time of its
 * reply), at since_ms + ttl_ms or after. That is what the awaited event
 * is, so no window decays while the check waits for a late node; a
 * node that differs at the deadline is printed. ttl_ms <= 0: the value
 * alone, whatever the PTTL. */
bool harness_all_hold_ttl(const struct rl_redis *arr, int n, const char *key,
                          const char *value, int64_t since_ms,
                          long long ttl_ms);
/* Print up to 10 keys of r with their value (or type) and PTTL. */
void harness_print_keys(const struct rl_redis *r);

/* Milliseconds / microseconds / nanoseconds on CLOCK_MONOTONIC (one clock
 * for every process on the machine). */
int64_t harness_now_ms(void);
int64_t harness_now_us(void);
int64_t harness_now_ns(void);
/* Nanoseconds on any clock (e.g. CLOCK_BOOTTIME). */
int64_t harness_clock_ns(clockid_t id);
void harness_sleep_ms(int64_t ms);
/* ms scaled by $RL_TEST_TIMEOUT_MULTIPLIER (default 1). */
int64_t harness_scale_ms(int64_t ms);
/* Wait until *counter >= want (callbacks counting on another thread), at
 * most harness_scale_ms(ms). true if it got there. */
bool harness_wait_count(atomic_int *counter, int want, int64_t ms);

#endif
