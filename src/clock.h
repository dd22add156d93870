/* SPDX-License-Identifier: BSD-3-Clause */
/* clock.h -- monotonic time and the validity math. */
#ifndef REDLOCK_CLOCK_H
#define REDLOCK_CLOCK_H

#include <stdint.h>

/* Microseconds on CLOCK_BOOTTIME: monotonic, and keeps counting while the
 * machine is suspended, as Redis TTLs do. */
typedef uint64_t rl_mono_us;

rl_mono_us mono_now_us(void);

/* Drift allowance for a TTL: ttl * drift_factor + 2 ms, in µs. */
uint64_t drift_us(uint32_t ttl_ms, double drift_factor);

/* Remaining validity, in µs, of a lock whose round started at t0 (µs) and
 * was decided at now: ttl - (now - t0) - drift. Negative once spent. */
int64_t validity_compute_us(uint32_t ttl_ms, double drift_factor,
                            rl_mono_us t0, rl_mono_us now);

/* The instant validity ends for a round started at t0: t0 + ttl - drift. */
rl_mono_us validity_deadline(uint32_t ttl_ms, double drift_factor,
                             rl_mono_us t0);

/* Wall-clock microseconds since the epoch: only for fencing tokens and
 * for when a node check is sent (vote_next_check_us), never for
 * validity. */
uint64_t wall_now_us(void);

#endif
