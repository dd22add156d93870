/* release.h -- one compare-and-delete round on all nodes,
 * loop thread. */
#ifndef REDLOCK_RELEASE_H
#define REDLOCK_RELEASE_H

#include "core.h"
#include "lockrec.h"

struct release_round;

/* Outcome, called exactly once unless aborted (rl_last_error() says why):
 *   RL_OK           released while still valid (adopted token: released
 *                   or already free),
 *   RL_ELOST        validity had run out first, or no node still had it,
 *   RL_ENOTACQUIRED a majority holds another token,
 *   RL_ENOQUORUM    too few nodes answered (the keys expire on their own). */
typedef void release_done_fn(void *owner, rl_status st);

/* expired_before: the holder's validity was over when it asked. NULL on
 * out of memory. rec must live until done or release_abort. */
struct release_round *release_new(rl_client *c, const struct lock_rec *rec,
                                  bool expired_before, release_done_fn *done,
                                  void *owner);
/* Send it; done may run before this returns; frees itself after done. */
void release_run(struct release_round *r);
/* Drop a round whose done has not run (no callback). */
void release_abort(struct release_round *r);

#endif
