/* fixture.h -- library-aware helpers shared by the integration tests: the
 * fast client configuration every test starts from, client creation that
 * says why it failed, and a retried acquire. harness.h runs the servers;
 * this file adds what needs <redlock.h>.
 *
 * Environment:
 *   RL_TEST_LOG   print the library's log lines (debug level) on stderr
 */
#ifndef REDLOCK_TEST_FIXTURE_H
#define REDLOCK_TEST_FIXTURE_H

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

/* Start n servers into arr (hn filled for them) and, if c is not NULL,
 * a fast client on them into *c. 0, or -1 with nothing left running. */
int fixture_start(struct rl_redis *arr, int n, struct harness_nodes *hn,
                  rl_client **c);

/* Blocking acquires of resource on c, every sleep_ms, until one succeeds
 * or since_ms + limit_ms (harness_now_ms) has passed; none when it has
 * already. *lock is reset before each attempt. *attempts (may be NULL)
 * counts them. Returns the last status, RL_ENOQUORUM if none was made. */
rl_status fixture_acquire_until_ok(rl_client *c, const char *resource,
                                   const rl_acquire_opts *o, rl_lock **lock,
                                   int64_t since_ms, int64_t limit_ms,
                                   int64_t sleep_ms, int *attempts);

/* tools/faultproxy in front of 127.0.0.1:upstream, holding every chunk
 * delay_ms in each direction (a distant node). *pid gets its process
 * (stop it with fixture_proxy_stop). Returns the port it listens on, or
 * -1 with a message on stderr; -1 and "SKIP" when the tests were built
 * without tools/faultproxy (RL_FAULTPROXY). */
int fixture_proxy_start(pid_t *pid, int upstream, int delay_ms);
/* SIGTERM and wait; *pid becomes 0. Nothing when *pid is 0. */
void fixture_proxy_stop(pid_t *pid);

#endif
