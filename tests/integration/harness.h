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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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
    bool running;                        /* process alive (maybe paused) */
    bool paused;                         /* SIGSTOPped */
};

/* If no redis-server can be found ($REDIS_SERVER or PATH), print
 * "SKIP: redis-server not found in PATH" and exit(77) (CTest: skipped). */
void harness_require_redis(void);

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
/* 1 if the reply is an OK/status reply, else 0 (NULL-safe). Frees it. */
int harness_ok(redisReply *reply);
/* Read "field:value" from INFO (section may be NULL) into buf. 0 or -1. */
int harness_info_field(const struct rl_redis *r, const char *section,
                       const char *field, char *buf, size_t len);

/* Milliseconds on CLOCK_MONOTONIC. */
int64_t harness_now_ms(void);
void harness_sleep_ms(int64_t ms);
/* ms scaled by $RL_TEST_TIMEOUT_MULTIPLIER (default 1). */
int64_t harness_scale_ms(int64_t ms);

#endif
