/* acquire.h -- acquire one or several resources on a majority, with
 * retries, waits and fencing. Loop thread, except
 * acquire_check and acquire_new. */
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

/* Called exactly once unless aborted: RL_OK with the grant, or the
 * failure (RL_ENOTACQUIRED, RL_ENOQUORUM, RL_ETIMEOUT) with g NULL;
 * rl_last_error() says why. */
typedef void acquire_done_fn(void *owner, rl_status st,
                             const struct acquire_grant *g);

/* Validate the names and options (any thread); *ttl gets the TTL. */
rl_status acquire_check(rl_client *c, const char *const *resources,
                        size_t count, const rl_acquire_opts *o,
                        uint32_t *ttl);
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
