/* blocking.h -- a caller thread waiting for one async operation. */
#ifndef REDLOCK_BLOCKING_H
#define REDLOCK_BLOCKING_H

#include <pthread.h>
#include <stdbool.h>

#include "client.h"

struct waiter {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    bool done;
    rl_status status;
    rl_lock *lock;             /* acquire result */
    char error[RL_ERRLEN];     /* the loop thread's detail text */
};

/* RL_EMISUSE when c has an external loop or we are on its loop thread;
 * name is the calling function, for the message. */
rl_status waiter_check(const rl_client *c, const char *name);
void waiter_init(struct waiter *w);
/* Loop thread: record the outcome (and rl_last_error()) and wake. */
void waiter_done(struct waiter *w, rl_status st);
/* Destroy a waiter whose operation was never submitted. */
void waiter_discard(struct waiter *w);
/* Caller thread: wait, copy the detail into this thread's rl_last_error,
 * destroy the waiter and return the status. */
rl_status waiter_wait(struct waiter *w);

#endif
