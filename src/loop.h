/* SPDX-License-Identifier: BSD-3-Clause */
/* loop.h -- the event loop a client runs on: its own thread or the
 * caller's libev loop, the queue that hands operations to it, one-shot
 * timers, a hook that runs before the loop blocks, and the waiter a
 * blocking caller sleeps on. The lowest layer above base. */
#ifndef REDLOCK_LOOP_H
#define REDLOCK_LOOP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common.h"
#include "list.h"

struct ev_loop;
struct loop;

/* An operation handed to the loop thread. It is queued by any thread,
 * started on the loop thread in submission order, and ends by calling
 * loop_op_finished (then its owner frees it). cancel() runs instead of, or
 * after, start() when the loop shuts down, and must end the op too. */
struct op {
    struct list_link link;         /* on the loop's queued or active list */
    struct loop *loop;
    void (*start)(struct op *op);  /* loop thread */
    void (*cancel)(struct op *op); /* loop thread: report ECANCELED, end */
    bool started;
};

/* ext NULL: create a loop and (loop_run_thread) a thread for it. Else use
 * the caller's loop, start no thread. RL_ENOMEM, RL_ESYSTEM. */
rl_status loop_new(struct ev_loop *ext, struct loop **out);
/* Start the loop thread (own loop only); before_run runs first on it. */
rl_status loop_run_thread(struct loop *lp, void (*before_run)(void *arg),
                          void *arg);
/* Stop accepting submissions (they get RL_ECANCELED from now on). */
void loop_close(struct loop *lp);
/* Loop thread (or, external loop, the caller): cancel every queued and
 * started op, in that order, and stop the loop's own watchers. */
void loop_cancel_all(struct loop *lp);
/* Own loop: make the thread run shutdown(arg) on the loop, then stop;
 * join it. External loop: run shutdown(arg) here. */
void loop_shutdown(struct loop *lp, void (*shutdown)(void *arg), void *arg);
/* Free (after loop_shutdown, or when the thread never started). */
void loop_free(struct loop *lp);

struct ev_loop *loop_ev(const struct loop *lp);
bool loop_is_owned(const struct loop *lp);
/* True on this loop's own thread (never for an external loop). */
bool loop_on_thread(const struct loop *lp);

/* Hand op to the loop thread; it starts on a later loop iteration, never
 * inside this call. RL_ECANCELED if the loop is closing (op untouched). */
rl_status loop_submit(struct loop *lp, struct op *op);
/* A started op is done: remove it from the cancel registry. */
void loop_op_finished(struct op *op);

/* One-shot timer (loop thread only). */
struct loop_timer;
struct loop_timer *loop_timer_new(struct loop *lp, void (*fn)(void *arg),
                                  void *arg);
void loop_timer_arm(struct loop_timer *t, uint64_t after_us);
void loop_timer_stop(struct loop_timer *t);
void loop_timer_free(struct loop_timer *t);

/* A caller thread waiting for one operation's outcome. */
struct waiter {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    bool done;
    rl_status status;
    void *result;              /* operation-specific (acquire: the lock) */
    char error[RL_ERRLEN];     /* the loop thread's detail text */
};

/* RL_EMISUSE on an external loop or on the loop thread; name is the
 * calling function, for the message. */
rl_status waiter_check(const struct loop *lp, const char *name);
void waiter_init(struct waiter *w);
/* Loop thread: record the outcome (and rl_last_error()) and wake. */
void waiter_done(struct waiter *w, rl_status st);
/* Destroy a waiter whose operation was never submitted. */
void waiter_discard(struct waiter *w);
/* Caller thread: wait, copy the detail into this thread's rl_last_error,
 * destroy the waiter and return the status. */
rl_status waiter_wait(struct waiter *w);

#endif
