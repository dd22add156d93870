/* SPDX-License-Identifier: BSD-3-Clause */
/* latency.c -- a histogram of reply latencies and its percentiles. */
#include "latency.h"

/* Histogram bucket of a latency: 4 linear sub-buckets per power of two
 * (bucket 4e + f covers [(4 + f) << (e - 2), (5 + f) << (e - 2)) µs), so
 * percentiles are within about 12%. */
static unsigned latency_bucket(uint64_t us)
{
    unsigned e, b;

    if (us < 4)
        return (unsigned)us;
    e = 63u - (unsigned)__builtin_clzll(us);
    b = 4u * (e - 1u) + (unsigned)((us >> (e - 2u)) & 3u);
    return b < LATENCY_BUCKETS ? b : LATENCY_BUCKETS - 1;
}

static uint64_t latency_bucket_top(unsigned b)
{
    unsigned e = b / 4u + 1u;

    if (b < 4)
        return b + 1;
    return (uint64_t)(5u + b % 4u) << (e - 2u);
}

void latency_record(uint64_t *hist, uint32_t *max_us, uint64_t us)
{
    hist[latency_bucket(us)]++;
    if (us > *max_us)
        *max_us = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

uint32_t latency_percentile(const uint64_t *hist, uint32_t max_us, double p)
{
    uint64_t total = 0, seen = 0, want, top;
    unsigned b;

    for (b = 0; b < LATENCY_BUCKETS; b++)
        total += hist[b];
    if (total == 0)
        return 0;
    want = (uint64_t)((double)total * p / 100.0 + 0.5);
    if (want == 0)
        want = 1;
    for (b = 0; b + 1 < LATENCY_BUCKETS; b++) {
        seen += hist[b];
        if (seen >= want)
            break;
    }
    top = latency_bucket_top(b);
    return top < max_us ? (uint32_t)top : max_us;
}
