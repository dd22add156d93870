/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_common.h -- what `redlock-cli bench` and tools/bench/redlock-bench
 * share: latency samples with their percentiles and JSON form, a sleep,
 * and direct hiredis connections to a node (for what the library does not
 * expose: a node's CPU time, the bare fan-out round trip), reached from
 * the node's URI as the library parses it (rl_uri), never by a parser of
 * their own. */
#ifndef REDLOCK_BENCH_COMMON_H
#define REDLOCK_BENCH_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "cli.h"

#define BENCH_DIRECT_TIMEOUT_MS 300 /* per connect / exchange */

/* Latency samples in µs. */
struct bench_samples {
    uint64_t *v;
    size_t n;
    size_t cap;
};

/* Add one sample (dropped when memory runs out). */
void bench_samples_add(struct bench_samples *s, uint64_t us);
/* p50, p90, p99, max (nearest rank) into out; zeros when empty. Sorts. */
void bench_percentiles(struct bench_samples *s, uint64_t out[4]);
/* ,"name":{"p50":..,"p90":..,"p99":..,"max":..} on stdout. */
void bench_json_pct(const char *name, struct bench_samples *s);
/* Sleep s seconds (fractions allowed), through signals. */
void bench_sleep_s(double s);

/* The node u is reached over TLS (rediss://, or --tls for a TCP node):
 * the direct connections are plaintext only. */
bool bench_direct_is_tls(const struct cli_opts *o, const rl_uri *u);
/* A blocking connection to the node u the way the library reaches it: its
 * password or else the global one, its db; every wait bounded by
 * BENCH_DIRECT_TIMEOUT_MS, close-on-exec. NULL when it fails, u is NULL
 * or the node is reached over TLS. Free with redisFree. */
redisContext *bench_direct_connect(const struct cli_opts *o,
                                   const rl_uri *u);
/* used_cpu_sys + used_cpu_user of the node u, in seconds. 0 or -1. */
int bench_node_cpu(const struct cli_opts *o, const rl_uri *u, double *cpu_s);
/* A reply of the given type (an error reply never matches); frees it. */
bool bench_reply_is(redisReply *r, int type);

#endif
