/* extend.h -- what release.c needs from extend.c. */
#ifndef REDLOCK_EXTEND_H
#define REDLOCK_EXTEND_H

struct rl_lock;

/* End the lock's in-flight extend, if any, with RL_ECANCELED (loop
 * thread). */
void extend_cancel_inflight(struct rl_lock *l);

#endif
