/* notify.h -- wake waiting acquires when a lock is released (§5.5). */
#ifndef REDLOCK_NOTIFY_H
#define REDLOCK_NOTIFY_H

#include "config.h"

struct ev_loop;
struct notify;
struct channel;

/* Embedded in a waiting operation; zero-initialised means "not waiting". */
struct notify_waiter {
    struct notify_waiter *prev;
    struct notify_waiter *next;
    struct channel *channel;     /* NULL when not waiting */
    void (*wake)(void *arg);
    void *arg;
};

struct notify *notify_new(struct ev_loop *loop, const struct config *cfg);
/* Close the subscriber connections (loop thread; no waiters left). */
void notify_free(struct notify *nt);
/* Call wake(arg) whenever the lock on key is released (until unwait).
 * Idempotent while already waiting. RL_ENOMEM. */
rl_status notify_wait(struct notify *nt, struct notify_waiter *w,
                      const char *key, size_t key_len,
                      void (*wake)(void *arg), void *arg);
/* Stop waiting (idempotent). */
void notify_unwait(struct notify *nt, struct notify_waiter *w);

#endif
