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
