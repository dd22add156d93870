/* SPDX-License-Identifier: BSD-3-Clause */
/* clock.c -- monotonic time and validity math.
 *
 * All internal time is integer microseconds on CLOCK_BOOTTIME (typedef
 * rl_mono_us). A lock's validity ends at t0 + ttl - drift, where t0 is read
 * just before the first command of the winning round is sent; everything
 * else (remaining validity, safety margins) is derived from that deadline.
 * Never ev_now(): it is wall-clock double seconds, cached per iteration. */
#include <time.h>

#include "clock.h"

rl_mono_us mono_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (rl_mono_us)ts.tv_sec * 1000000u + (rl_mono_us)ts.tv_nsec / 1000u;
}

uint64_t drift_us(uint32_t ttl_ms, double drift_factor)
{
    /* Integer math: the factor is turned into parts per million once. */
    uint64_t ppm = (uint64_t)(drift_factor * 1e6 + 0.5);

    return (uint64_t)ttl_ms * ppm / 1000u + 2000u;
}

int64_t validity_compute_us(uint32_t ttl_ms, double drift_factor,
                            rl_mono_us t0, rl_mono_us now)
{
    int64_t elapsed = now > t0 ? (int64_t)(now - t0) : 0;

    return (int64_t)ttl_ms * 1000 - elapsed -
           (int64_t)drift_us(ttl_ms, drift_factor);
}

rl_mono_us validity_deadline(uint32_t ttl_ms, double drift_factor,
                             rl_mono_us t0)
{
    uint64_t ttl_us = (uint64_t)ttl_ms * 1000u;
    uint64_t drift = drift_us(ttl_ms, drift_factor);

    if (drift >= ttl_us)
        return t0;
    return t0 + ttl_us - drift;
}

uint64_t wall_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}
