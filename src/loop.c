/* SPDX-License-Identifier: BSD-3-Clause */
/* loop.c -- the event loop layer.
 *
 * Own loop (default): a libev loop and a thread that runs it; everything
 * above this layer (nodes, requests, timers, operations, held locks) lives
 * on that thread. Other threads hand work over through a mutex-protected
 * queue of struct op and an ev_async wake-up; the loop thread starts ops
 * in submission order. External loop: the same queue and ev_async live on
 * the caller's loop (unref'ed, so they do not keep ev_run alive) and no
 * thread is started.
 *
 * Lifecycle: OPEN (submissions accepted) -> CLOSED (loop_close: every new
 * submission gets RL_ECANCELED) -> shut down (loop_shutdown runs the
 * owner's shutdown on the loop, which cancels every op through
 * loop_cancel_all, then the loop's watchers stop and the thread ends) ->
 * freed. Which thread is the loop thread is recorded by the thread itself
 * in a thread-local, so no other thread ever reads a half-written id. */
#include <ev.h>
#include <stdatomic.h>
#include <stdio.h>

#include "loop.h"

struct loop {
    struct ev_loop *ev;
    bool owned;                  /* our loop and thread */
    bool thread_started;         /* written and read by the freeing thread */
    pthread_t thread;
    ev_async wake;
    bool watching;               /* wake is started */
    void (*before_run)(void *arg);
    void *before_run_arg;
    void (*shutdown_fn)(void *arg);
    void *shutdown_arg;
    atomic_bool shutdown;        /* ask the loop thread to stop */
    pthread_mutex_t mutex;       /* guards closing and the queue */
    bool closing;
    struct list queued;          /* submitted, not started (mutex) */
    struct list active;          /* started, not finished (loop thread) */
};

struct loop_timer {
    ev_timer w;
    struct ev_loop *ev;
    void (*fn)(void *arg);
    void *arg;
};

static _Thread_local const struct loop *this_thread_loop;

/* ---- Timers ------------------------------------------------------------- */

static void on_loop_timer(struct ev_loop *ev, ev_timer *w, int revents)
{
    struct loop_timer *t = (struct loop_timer *)w;

    RL_UNUSED(ev);
    RL_UNUSED(revents);
    t->fn(t->arg);
}

struct loop_timer *loop_timer_new(struct loop *lp, void (*fn)(void *arg),
                                  void *arg)
{
    struct loop_timer *t = calloc(1, sizeof(*t));

    if (t == NULL)
        return NULL;
    ev_timer_init(&t->w, on_loop_timer, 0.0, 0.0);
    t->ev = lp->ev;
    t->fn = fn;
    t->arg = arg;
    return t;
}

void loop_timer_arm(struct loop_timer *t, uint64_t after_us)
{
    ev_timer_stop(t->ev, &t->w);
    ev_timer_set(&t->w, (double)after_us / 1e6, 0.0);
    ev_timer_start(t->ev, &t->w);
}

void loop_timer_stop(struct loop_timer *t)
{
    ev_timer_stop(t->ev, &t->w);
}

void loop_timer_free(struct loop_timer *t)
{
    if (t == NULL)
        return;
    ev_timer_stop(t->ev, &t->w);
    free(t);
}

/* ---- Operations --------------------------------------------------------- */

rl_status loop_submit(struct loop *lp, struct op *op)
{
    pthread_mutex_lock(&lp->mutex);
    if (lp->closing) {
        pthread_mutex_unlock(&lp->mutex);
        return rl_fail(RL_ECANCELED, "the client is being freed");
    }
    op->loop = lp;
    op->started = false;
    list_push_back(&lp->queued, &op->link);
    pthread_mutex_unlock(&lp->mutex);
    /* On the loop thread (a callback, or an external loop) there is no
     * need to wake anybody: make the watcher pending, which runs the queue
     * later in this same iteration, without a syscall. */
    if (!lp->owned || loop_on_thread(lp))
        ev_feed_event(lp->ev, &lp->wake, EV_ASYNC);
    else
        ev_async_send(lp->ev, &lp->wake);
    return RL_OK;
}

void loop_op_finished(struct op *op)
{
    if (op->started)
        list_remove(&op->loop->active, &op->link);
}

/* The first of the ops taken off the queue, in submission order (each
 * op's link.next leads to the next one). */
static struct op *take_queued(struct loop *lp)
{
    struct list ops;

    pthread_mutex_lock(&lp->mutex);
    ops = list_take(&lp->queued);
    pthread_mutex_unlock(&lp->mutex);
    return list_entry(ops.first, struct op, link);
}

static struct op *next_op(const struct op *op)
{
    return list_entry(op->link.next, struct op, link);
}

static void run_queued(struct loop *lp)
{
    struct op *op = take_queued(lp);
    struct op *next;

    for (; op != NULL; op = next) {
        next = next_op(op);
        op->started = true;
        list_push_front(&lp->active, &op->link);
        op->start(op); /* may finish (and free op) at once */
    }
}

void loop_cancel_all(struct loop *lp)
{
    struct op *op, *next;

    for (op = take_queued(lp); op != NULL; op = next) {
        next = next_op(op);
        op->cancel(op);
    }
    while (!list_empty(&lp->active)) {
        op = list_entry(lp->active.first, struct op, link);
        op->cancel(op);
    }
}

static void stop_watchers(struct loop *lp)
{
    if (!lp->watching)
        return;
    lp->watching = false;
    if (!lp->owned)
        ev_ref(lp->ev);
    ev_async_stop(lp->ev, &lp->wake);
}

static void on_wake(struct ev_loop *ev, ev_async *w, int revents)
{
    struct loop *lp = w->data;

    RL_UNUSED(revents);
    run_queued(lp);
    if (atomic_load(&lp->shutdown)) {
        lp->shutdown_fn(lp->shutdown_arg);
        stop_watchers(lp);
        ev_break(ev, EVBREAK_ALL);
    }
}

/* ---- Create / run / free ------------------------------------------------ */

rl_status loop_new(struct ev_loop *ext, struct loop **out)
{
    struct loop *lp = calloc(1, sizeof(*lp));

    *out = NULL;
    if (lp == NULL)
        return rl_fail(RL_ENOMEM, "out of memory for the event loop");
    pthread_mutex_init(&lp->mutex, NULL);
    lp->owned = ext == NULL;
    lp->ev = lp->owned ? ev_loop_new(EVFLAG_AUTO) : ext;
    if (lp->ev == NULL) {
        pthread_mutex_destroy(&lp->mutex);
        free(lp);
        return rl_fail(RL_ESYSTEM, "cannot create a libev loop");
    }
    ev_async_init(&lp->wake, on_wake);
    lp->wake.data = lp;
    ev_async_start(lp->ev, &lp->wake);
    if (!lp->owned) /* it may not keep the caller's ev_run alive */
        ev_unref(lp->ev);
    lp->watching = true;
    *out = lp;
    return RL_OK;
}

static void *loop_thread(void *arg)
{
    struct loop *lp = arg;

    this_thread_loop = lp;
    if (lp->before_run != NULL)
        lp->before_run(lp->before_run_arg);
    ev_run(lp->ev, 0);
    return NULL;
}

rl_status loop_run_thread(struct loop *lp, void (*before_run)(void *arg),
                          void *arg)
{
    lp->before_run = before_run;
    lp->before_run_arg = arg;
    if (pthread_create(&lp->thread, NULL, loop_thread, lp) != 0)
        return rl_fail(RL_ESYSTEM, "cannot start the client's loop thread");
    lp->thread_started = true;
    return RL_OK;
}

void loop_close(struct loop *lp)
{
    pthread_mutex_lock(&lp->mutex);
    lp->closing = true;
    pthread_mutex_unlock(&lp->mutex);
}

void loop_shutdown(struct loop *lp, void (*shutdown)(void *arg), void *arg)
{
    if (lp->owned && lp->thread_started) {
        lp->shutdown_fn = shutdown;
        lp->shutdown_arg = arg;
        atomic_store(&lp->shutdown, true);
        ev_async_send(lp->ev, &lp->wake);
        pthread_join(lp->thread, NULL);
        lp->thread_started = false;
        return;
    }
    shutdown(arg);
    stop_watchers(lp);
}

void loop_free(struct loop *lp)
{
    if (lp == NULL)
        return;
    stop_watchers(lp);
    if (lp->owned)
        ev_loop_destroy(lp->ev);
    pthread_mutex_destroy(&lp->mutex);
    free(lp);
}

struct ev_loop *loop_ev(const struct loop *lp)
{
    return lp->ev;
}

bool loop_is_owned(const struct loop *lp)
{
    return lp->owned;
}

bool loop_on_thread(const struct loop *lp)
{
    return this_thread_loop == lp;
}

/* ---- Waiter ------------------------------------------------------------- */

rl_status waiter_check(const struct loop *lp, const char *name)
{
    if (!lp->owned)
        return rl_fail(RL_EMISUSE,
                       "%s: blocking call on a client with an external "
                       "loop; use the _async API",
                       name);
    if (loop_on_thread(lp))
        return rl_fail(RL_EMISUSE,
                       "%s: blocking call from a callback (loop thread)",
                       name);
    return RL_OK;
}

void waiter_init(struct waiter *w)
{
    pthread_mutex_init(&w->mutex, NULL);
    pthread_cond_init(&w->cond, NULL);
    w->done = false;
    w->status = RL_OK;
    w->result = NULL;
    w->error[0] = '\0';
}

void waiter_done(struct waiter *w, rl_status st)
{
    pthread_mutex_lock(&w->mutex);
    w->status = st;
    snprintf(w->error, sizeof(w->error), "%s", rl_last_error());
    w->done = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->mutex);
}

void waiter_discard(struct waiter *w)
{
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->mutex);
}

rl_status waiter_wait(struct waiter *w)
{
    rl_status st;

    pthread_mutex_lock(&w->mutex);
    while (!w->done)
        pthread_cond_wait(&w->cond, &w->mutex);
    st = w->status;
    pthread_mutex_unlock(&w->mutex);
    waiter_discard(w);
    rl_error_set_text(w->error);
    return st;
}
