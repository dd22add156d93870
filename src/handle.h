/* SPDX-License-Identifier: BSD-3-Clause */
/* handle.h -- a client's rl_lock handles: their allocation, the registry
 * of the live ones, and reentrant hold counts (holder.c, asyncapi.c). The
 * lock getters of redlock.h are implemented in handle.c. */
#ifndef REDLOCK_HANDLE_H
#define REDLOCK_HANDLE_H

#include "lock.h"

/* The registry of a client's live handles (c->holders). */
struct holders {
    pthread_mutex_t mutex;       /* guards the list and hold counts */
    struct list locks;           /* struct rl_lock, newest first */
    struct watchdog *watchdog;
};

/* The lock on the registry at link; NULL at the end of the list. */
struct rl_lock *handle_of(struct list_link *link);
void handles_add(rl_client *c, struct rl_lock *l);
/* A lock no longer on the list (holders_shutdown emptied it) is left. */
void handles_remove(rl_client *c, struct rl_lock *l);

/* A handle for the kinds of o (may be NULL): a reader, the lock-delay, a
 * semaphore's record made for its last slot (semaphore.c rewrites it);
 * the extra block when o asks for fencing, reentrancy, a period
 * (at_least_ms) or watchdog caps.
 * token: an adopted lock's, or NULL for a new one. */
rl_status handle_new_kind(rl_client *c, const char *const *resources,
                          size_t count, const char *token,
                          const rl_acquire_opts *o, struct rl_lock **out);
/* The extra block alone (NULL on out of memory, with rl_fail). */
struct lock_extra *handle_extra_new(void);
/* Close the lost fd, free the extra block and the handle. */
void handle_destroy(struct rl_lock *l);
/* Make the lost fd (if any) readable. */
void handle_signal_fd(int fd);

/* The calling thread already holds resource reentrantly: count one more
 * hold and return the lock; NULL when it holds none. */
struct rl_lock *handle_reenter(rl_client *c, const char *resource);
/* Drop one hold. True when others remain (a nested release). Dropping the
 * last sets holds to 0 under the mutex, so no re-entry can find a lock
 * whose release is being queued. *was is the count before. */
bool handle_drop_hold(rl_client *c, struct rl_lock *l, unsigned *was);
/* Put the hold count back to was (a release that could not be queued). */
void handle_restore_hold(rl_client *c, struct rl_lock *l, unsigned was);

#endif
