/* extend.h -- one re-quorum extension round (DESIGN §5.4), loop thread. */
#ifndef REDLOCK_EXTEND_H
#define REDLOCK_EXTEND_H

#include "core.h"
#include "lockrec.h"

struct extend_round;

/* Outcome of a round, called exactly once unless the round was aborted:
 * RL_OK (a quorum reset the expiry; t0 = the round's start, voters = how
 * many voting nodes agreed), RL_ELOST (a majority holds no key with our
 * token) or RL_ENOQUORUM (too few answers). rl_last_error() says why. */
typedef void extend_done_fn(void *owner, rl_status st, rl_mono_us t0,
                            unsigned voters);

/* Prepare a round over rec's keys with ttl_ms. acquired_us is when the
 * lock was won (0: unknown, adopted). NULL on out of memory. rec must
 * live until done or extend_abort. */
struct extend_round *extend_new(rl_client *c, const struct lock_rec *rec,
                                uint32_t ttl_ms, rl_mono_us acquired_us,
                                extend_done_fn *done, void *owner);
/* Send it. done may run before this returns; the round frees itself
 * after done. */
void extend_run(struct extend_round *e);
/* Drop a round whose done has not run: no callback, memory freed; replies
 * still in flight land on node-owned records. */
void extend_abort(struct extend_round *e);

#endif
