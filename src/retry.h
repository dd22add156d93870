/* SPDX-License-Identifier: BSD-3-Clause */
/* retry.h -- the retry budget of an acquisition: acquire.c's over its
 * attempts, semaphore.c's over its rounds of slots, and queue.c's pause
 * when a fair waiter at the head polls as a plain one. */
#ifndef REDLOCK_RETRY_H
#define REDLOCK_RETRY_H

#include "core.h"

/* How long an acquisition keeps trying: retry_count more
 * attempts, or until opts.wait_ms has passed, or forever. Also used by
 * semaphore.c over its rounds of slots. */
struct retry_budget {
    bool forever;
    rl_mono_us deadline_us;      /* 0: count retries instead */
    uint32_t retries_left;
};

void retry_budget_init(struct retry_budget *b, const rl_client *c,
                       const rl_acquire_opts *o);
/* A fair wait counting retries waits as long as they would take
 * instead (it attempts only at its turn). */
void retry_budget_fair(struct retry_budget *b, const rl_client *c);
/* True when the wait has a deadline and now is past it. */
bool retry_budget_expired(const struct retry_budget *b, rl_mono_us now);
/* May another attempt start at now? Counts one retry when counting. */
bool retry_budget_take(struct retry_budget *b, rl_mono_us now);
/* The pause before the next attempt: retry_delay +- jitter, cut at the
 * deadline. */
uint64_t retry_budget_pause_us(const struct retry_budget *b, rl_client *c,
                               rl_mono_us now);

/* The pause before a waiter's next poll: delay_us (the jittered retry
 * delay within the wait) after an attempt some node granted or that
 * failed otherwise (refused false: *refusals restarts), stretched after
 * refusals everywhere in a row (refused: counts one in *refusals), cut
 * at the deadline. */
uint64_t retry_poll_pause_us(const struct retry_budget *b,
                             unsigned *refusals, bool refused,
                             uint64_t delay_us, rl_mono_us now);
/* The widest random pause, in µs, of a waiter woken by a release before
 * it probes, after lost_wakes releases it saw another waiter win, for a
 * client of retry jitter jitter_ms. */
uint32_t retry_spread_us(unsigned lost_wakes, uint32_t jitter_ms);

#endif
