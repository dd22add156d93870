/* SPDX-License-Identifier: BSD-3-Clause */
/* retry.c -- how long an acquisition keeps trying, and the pause
 * between its attempts (retry.h). */
#include <string.h>

#include "retry.h"

/* Waits longer than this (a century) are treated as RL_WAIT_FOREVER. */
#define MAX_WAIT_MS (INT64_C(100) * 365 * 24 * 3600 * 1000)

void retry_budget_init(struct retry_budget *b, const rl_client *c,
                       const rl_acquire_opts *o)
{
    memset(b, 0, sizeof(*b));
    b->retries_left = c->cfg.retry_count;
    if (o != NULL &&
        (o->wait_ms == RL_WAIT_FOREVER || o->wait_ms > MAX_WAIT_MS))
        b->forever = true;
    else if (o != NULL && o->wait_ms > 0)
        b->deadline_us = mono_now_us() + (rl_mono_us)o->wait_ms * 1000u;
}

void retry_budget_fair(struct retry_budget *b, const rl_client *c)
{
    /* A queued waiter attempts only at its turn: the retry count becomes
     * the time it would have taken (none: one attempt, or one round of a
     * semaphore's slots, as without fair). */
    if (!b->forever && b->deadline_us == 0 && b->retries_left > 0)
        b->deadline_us = mono_now_us() +
                         (rl_mono_us)c->cfg.retry_count *
                             (c->cfg.retry_delay_ms + c->cfg.retry_jitter_ms) *
                             1000u;
}

bool retry_budget_expired(const struct retry_budget *b, rl_mono_us now)
{
    return b->deadline_us != 0 && now >= b->deadline_us;
}

bool retry_budget_take(struct retry_budget *b, rl_mono_us now)
{
    if (b->forever)
        return true;
    if (b->deadline_us != 0)
        return !retry_budget_expired(b, now);
    if (b->retries_left == 0)
        return false;
    b->retries_left--;
    return true;
}

uint64_t retry_budget_pause_us(const struct retry_budget *b, rl_client *c,
                               rl_mono_us now)
{
    uint32_t jitter = c->cfg.retry_jitter_ms;
    uint64_t pause_us = ((uint64_t)c->cfg.retry_delay_ms - jitter +
                         client_random(c, 2 * jitter + 1)) *
                        1000u;

    if (b->deadline_us != 0 && now + pause_us > b->deadline_us)
        pause_us = b->deadline_us - now;
    return pause_us;
}

/* A waiter refused everywhere again and again polls at up to 1 << this
 * times its retry delay: twice, so a waiting writer's intent, PX 2 x
 * (delay + jitter) + 100 (acquire.c writer_waits), still outlives the
 * pause that its next attempt refreshes it after. */
#define MAX_POLL_SHIFT 1

/* A holder keeps a refused waiter out, and the holder's release message
 * or its key's expiry (acquire.c holder_ttl) wakes it; its poll is the
 * fallback for a message lost while a subscriber connection was down,
 * and dozens of waiters polling every retry delay while one holds cost
 * the nodes more than the lock (issue 45): twice the delay from the
 * second refusal on. An attempt granted somewhere (a split vote) keeps
 * the delay: the others lost too, no release is coming, only the timers
 * retry. */
uint64_t retry_poll_pause_us(const struct retry_budget *b,
                             unsigned *refusals, bool refused,
                             uint64_t delay_us, rl_mono_us now)
{
    if (!refused) {
        *refusals = 0;
        return delay_us;
    }
    delay_us <<= *refusals < MAX_POLL_SHIFT ? *refusals : MAX_POLL_SHIFT;
    (*refusals)++;
    if (b->deadline_us != 0 && now + delay_us > b->deadline_us)
        delay_us = b->deadline_us - now;
    return delay_us;
}

/* A release wakes every waiter of the key at once: each waits a random
 * time up to WAKE_SPREAD_MS << (releases it already saw another waiter
 * win, up to WAKE_SPREAD_SHIFT), and up to a quarter of its retry jitter
 * (a client tuned for fast hand-offs keeps them fast), before its probe,
 * so the first one's attempt has usually landed when the others look
 * (acquire.c probe_then_attempt). A lone waiter loses little time; a
 * crowd spreads wider (issue 45: 47 waiters, 16 ms: about 18 attempts per
 * release). */
#define WAKE_SPREAD_MS 8
#define WAKE_SPREAD_SHIFT 2

uint32_t retry_spread_us(unsigned lost_wakes, uint32_t jitter_ms)
{
    uint32_t spread_us = (WAKE_SPREAD_MS * 1000u)
                         << (lost_wakes < WAKE_SPREAD_SHIFT
                                 ? lost_wakes
                                 : WAKE_SPREAD_SHIFT);

    return spread_us < jitter_ms * 250u ? spread_us : jitter_ms * 250u;
}
