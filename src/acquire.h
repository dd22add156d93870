/* SPDX-License-Identifier: BSD-3-Clause */
/* acquire.h -- acquire one or several resources on a majority, with
 * retries, waits and fencing. Loop thread, except acquire_new (the
 * options are checked before, acquireopts.h). */
#ifndef REDLOCK_ACQUIRE_H
#define REDLOCK_ACQUIRE_H

#include "core.h"
#include "lockrec.h"

struct acquire_op;

/* What a won acquisition hands to the holder. */
struct acquire_grant {
    rl_mono_us t0;               /* start of the winning round, boottime */
    unsigned voters;             /* voting nodes that granted it */
    uint64_t fence;              /* fencing token, 0 without fencing */
    uint64_t holders;            /* bit i: node i's vote counted (holds
                                    our key from this round) */
};

/* Called exactly once unless aborted: RL_OK with the grant, or the
 * failure (RL_ENOTACQUIRED, RL_ENOQUORUM, RL_ETIMEOUT) with g NULL;
 * rl_last_error() says why. */
typedef void acquire_done_fn(void *owner, rl_status st,
                             const struct acquire_grant *g);

/* Prepare an acquisition of rec (borrowed until done or abort; each
 * attempt gives its token the next attempt digits, lockrec_next_attempt)
 * with the checked ttl and o (copied; may be NULL). Any thread. NULL on
 * OOM. */
struct acquire_op *acquire_new(rl_client *c, struct lock_rec *rec,
                               uint32_t ttl, const rl_acquire_opts *o,
                               acquire_done_fn *done, void *owner);
struct fair_wait;
/* A fair semaphore slot's attempt (before acquire_run): attempt with f
 * (queue.c), owned by the semaphore's operation, which takes the grant,
 * the wait and the leave; the attempt neither frees nor leaves it. */
void acquire_borrow_fair(struct acquire_op *op, struct fair_wait *f);
/* First attempt now; done may run before this returns. */
void acquire_run(struct acquire_op *op);
/* Stop (client freed): no callback; nothing else is sent. */
void acquire_abort(struct acquire_op *op);
/* Stop at the caller's request: release the token on every node (also
 * one whose SET is in flight), clear a writer intent; no callback. NULL
 * is a no-op. */
void acquire_cancel(struct acquire_op *op);

#endif
