/* reentry.h -- reentrant acquisition (DESIGN §5.8). */
#ifndef REDLOCK_REENTRY_H
#define REDLOCK_REENTRY_H

#include <stdbool.h>

#include "lock.h"

/* If the calling thread already holds resource reentrantly on c, count
 * one more hold and queue cb with that lock: *st is the submit status and
 * true is returned. False: acquire normally. */
bool reentry_acquire(rl_client *c, const char *resource, rl_acquire_cb cb,
                     void *privdata, rl_status *st);
/* If l is held more than once, drop one hold and queue cb (may be NULL)
 * with RL_OK: *st is the submit status and true is returned. False:
 * release normally. */
bool reentry_release(struct rl_lock *l, rl_release_cb cb, void *privdata,
                     rl_status *st);
/* Mark a freshly acquired lock as reentrant, held once by owner. */
void reentry_mark(struct rl_lock *l, pthread_t owner);

#endif
