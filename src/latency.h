/* SPDX-License-Identifier: BSD-3-Clause */
/* latency.h -- a histogram of reply latencies and its percentiles. */
#ifndef REDLOCK_LATENCY_H
#define REDLOCK_LATENCY_H

#include <stdint.h>

#define LATENCY_BUCKETS 128 /* 4 per power of two: up to ~2^32 µs */

/* Count a latency of us µs in hist[LATENCY_BUCKETS] and *max_us. */
void latency_record(uint64_t *hist, uint32_t *max_us, uint64_t us);
/* Percentile (0 < p <= 100) in µs of hist, at most max_us; 0 when
 * empty. */
uint32_t latency_percentile(const uint64_t *hist, uint32_t max_us, double p);

#endif
