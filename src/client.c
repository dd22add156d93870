/* client.c -- rl_client: configuration, nodes, and the event loop they run
 * on (DESIGN §3 "Threading").
 *
 * Own loop (default): rl_client_new creates a libev loop and a thread that
 * runs it; every node, request, timer and operation lives on that thread.
 * Other threads hand work over through a mutex-protected queue of struct
 * op and an ev_async wake-up; the loop thread starts each op in submission
 * order. External loop (cfg.loop): the same queue and ev_async live on the
 * caller's loop (the ev_async is unref'ed so it does not keep ev_run
 * alive), and no thread is started.
 *
 * Lifecycle: rl_client_free marks the client closing (new submissions get
 * RL_ECANCELED), then on the loop thread cancels queued and active ops (each
 * reports RL_ECANCELED exactly once), orphans live lock handles, frees the
 * nodes (hiredis then calls every pending callback with NULL, which the
 * node-owned request records absorb), stops the loop and joins the thread.
 * Locks left in Redis expire by themselves. */
#include <ev.h>
#include <stdio.h>
#include <string.h>

#include "client.h"
#include "inspect.h"
#include "lock.h"
#include "notify.h"
#include "watchdog.h"

struct client_loop {
    struct ev_loop *loop;
    bool owned;
    pthread_t thread;
    bool thread_started;
    ev_async wake;
    ev_prepare flush;            /* before blocking: write queued commands */
    atomic_bool shutdown;        /* ask the loop thread to stop */
};

struct loop_timer {
    ev_timer w;
    struct ev_loop *loop;
    void (*fn)(void *arg);
    void *arg;
};

/* ---- Timers ------------------------------------------------------------- */

static void on_loop_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct loop_timer *t = (struct loop_timer *)w;

    RL_UNUSED(loop);
    RL_UNUSED(revents);
    t->fn(t->arg);
}

struct loop_timer *loop_timer_new(rl_client *c, void (*fn)(void *arg),
                                  void *arg)
{
    struct loop_timer *t = calloc(1, sizeof(*t));

    if (t == NULL)
        return NULL;
    ev_timer_init(&t->w, on_loop_timer, 0.0, 0.0);
    t->loop = c->loop->loop;
    t->fn = fn;
    t->arg = arg;
    return t;
}

void loop_timer_arm(struct loop_timer *t, uint64_t after_us)
{
    ev_timer_stop(t->loop, &t->w);
    ev_timer_set(&t->w, (double)after_us / 1e6, 0.0);
    ev_timer_start(t->loop, &t->w);
}

void loop_timer_stop(struct loop_timer *t)
{
    ev_timer_stop(t->loop, &t->w);
}

void loop_timer_free(struct loop_timer *t)
{
    if (t == NULL)
        return;
    ev_timer_stop(t->loop, &t->w);
    free(t);
}

/* ---- Operations --------------------------------------------------------- */

static void list_insert(struct op **head, struct op *op)
{
    op->prev = NULL;
    op->next = *head;
    if (*head != NULL)
        (*head)->prev = op;
    *head = op;
}

static void list_remove(struct op **head, struct op *op)
{
    if (op->prev != NULL)
        op->prev->next = op->next;
    else
        *head = op->next;
    if (op->next != NULL)
        op->next->prev = op->prev;
    op->prev = op->next = NULL;
}

rl_status client_submit(rl_client *c, struct op *op)
{
    pthread_mutex_lock(&c->mutex);
    if (atomic_load(&c->closing)) {
        pthread_mutex_unlock(&c->mutex);
        return rl_fail(RL_ECANCELED, "the client is being freed");
    }
    op->started = false;
    op->next = NULL;
    op->prev = c->queued_tail;
    if (c->queued_tail != NULL)
        c->queued_tail->next = op;
    else
        c->queued = op;
    c->queued_tail = op;
    pthread_mutex_unlock(&c->mutex);
    /* On the loop thread (a callback, or an external loop) there is no
     * need to wake anybody: make the watcher pending, which runs the queue
     * later in this same iteration, without a syscall. */
    if (!c->loop->owned || client_on_loop_thread(c))
        ev_feed_event(c->loop->loop, &c->loop->wake, EV_ASYNC);
    else
        ev_async_send(c->loop->loop, &c->loop->wake);
    return RL_OK;
}

void client_op_finished(rl_client *c, struct op *op)
{
    if (op->started)
        list_remove(&c->active, op);
}

static struct op *take_queued(rl_client *c)
{
    struct op *ops;

    pthread_mutex_lock(&c->mutex);
    ops = c->queued;
    c->queued = c->queued_tail = NULL;
    pthread_mutex_unlock(&c->mutex);
    return ops;
}

static void run_queued(rl_client *c)
{
    struct op *op = take_queued(c);
    struct op *next;

    for (; op != NULL; op = next) {
        next = op->next;
        op->started = true;
        list_insert(&c->active, op);
        op->start(op); /* may finish (and free op) at once */
    }
}

/* Loop thread: end everything, then free the nodes. */
static void shutdown_on_loop(rl_client *c)
{
    struct op *op, *next;
    struct rl_lock *l;
    size_t i;

    for (op = take_queued(c); op != NULL; op = next) {
        next = op->next;
        op->cancel(op);
    }
    while (c->active != NULL)
        c->active->cancel(c->active);
    pthread_mutex_lock(&c->mutex);
    for (l = c->locks; l != NULL; l = l->next) {
        watchdog_detach(l);
        l->client = NULL;
    }
    c->locks = NULL;
    pthread_mutex_unlock(&c->mutex);
    notify_free(c->notify);
    c->notify = NULL;
    for (i = 0; i < c->node_count; i++) {
        /* Commands queued in this iteration (e.g. the last releases to
         * the nodes a majority decision did not wait for) still leave. */
        node_flush(c->nodes[i]);
        node_free(c->nodes[i]);
        c->nodes[i] = NULL;
    }
    if (!c->loop->owned) {
        ev_ref(c->loop->loop);
        ev_ref(c->loop->loop);
    }
    ev_async_stop(c->loop->loop, &c->loop->wake);
    ev_prepare_stop(c->loop->loop, &c->loop->flush);
}

static void on_wake(struct ev_loop *loop, ev_async *w, int revents)
{
    rl_client *c = w->data;

    RL_UNUSED(revents);
    run_queued(c);
    if (atomic_load(&c->loop->shutdown)) {
        shutdown_on_loop(c);
        ev_break(loop, EVBREAK_ALL);
    }
}

/* Runs once per loop iteration, just before libev blocks: every command
 * queued during the iteration leaves in one write per node, and the write
 * watcher that hiredis armed is disarmed again before libev applies it. */
static void on_flush(struct ev_loop *loop, ev_prepare *w, int revents)
{
    rl_client *c = w->data;
    size_t i;

    RL_UNUSED(loop);
    RL_UNUSED(revents);
    for (i = 0; i < c->node_count; i++) {
        if (c->nodes[i] != NULL)
            node_flush(c->nodes[i]);
    }
}

static void *loop_thread(void *arg)
{
    rl_client *c = arg;
    size_t i;

    for (i = 0; i < c->node_count; i++)
        node_start(c->nodes[i]);
    ev_run(c->loop->loop, 0);
    return NULL;
}

bool client_on_loop_thread(const rl_client *c)
{
    return c->loop->thread_started &&
           pthread_equal(pthread_self(), c->loop->thread);
}

bool client_has_own_loop(const rl_client *c)
{
    return c->loop->owned;
}

void client_count(rl_client *c, enum client_stat s)
{
    atomic_fetch_add(&c->stats[s], 1);
}

uint32_t client_random(rl_client *c, uint32_t bound)
{
    if (bound == 0)
        return 0;
    c->rng ^= c->rng << 13;
    c->rng ^= c->rng >> 7;
    c->rng ^= c->rng << 17;
    return (uint32_t)(c->rng % bound);
}

/* ---- Lock registry ------------------------------------------------------ */

void client_lock_add(rl_client *c, struct rl_lock *l)
{
    pthread_mutex_lock(&c->mutex);
    l->prev = NULL;
    l->next = c->locks;
    if (c->locks != NULL)
        c->locks->prev = l;
    c->locks = l;
    pthread_mutex_unlock(&c->mutex);
}

void client_lock_remove(rl_client *c, struct rl_lock *l)
{
    pthread_mutex_lock(&c->mutex);
    if (l->client != NULL) {
        if (l->prev != NULL)
            l->prev->next = l->next;
        else
            c->locks = l->next;
        if (l->next != NULL)
            l->next->prev = l->prev;
    }
    l->prev = l->next = NULL;
    l->client = NULL;
    pthread_mutex_unlock(&c->mutex);
}

/* ---- Create / free ------------------------------------------------------ */

static void client_destroy(rl_client *c)
{
    size_t i;

    if (c->loop != NULL && c->loop->owned && c->loop->loop != NULL)
        ev_loop_destroy(c->loop->loop);
    if (c->nodes != NULL) {
        for (i = 0; i < c->node_count; i++)
            node_free(c->nodes[i]);
    }
    notify_free(c->notify);
    free(c->nodes);
    free(c->loop);
    pthread_mutex_destroy(&c->mutex);
    config_clear(&c->cfg);
    free(c);
}

static rl_status client_setup(rl_client *c)
{
    size_t i;

    c->loop = calloc(1, sizeof(*c->loop));
    c->nodes = calloc(c->cfg.node_count, sizeof(*c->nodes));
    if (c->loop == NULL || c->nodes == NULL)
        return rl_fail(RL_ENOMEM, "out of memory for the client");
    c->loop->owned = c->cfg.loop == NULL;
    c->loop->loop = c->loop->owned ? ev_loop_new(EVFLAG_AUTO) : c->cfg.loop;
    if (c->loop->loop == NULL)
        return rl_fail(RL_ESYSTEM, "cannot create a libev loop");
    c->notify = notify_new(c->loop->loop, &c->cfg);
    if (c->notify == NULL)
        return rl_fail(RL_ENOMEM, "out of memory for notifications");
    c->node_count = c->cfg.node_count;
    for (i = 0; i < c->node_count; i++) {
        c->nodes[i] = node_new(c->loop->loop, &c->cfg, i);
        if (c->nodes[i] == NULL)
            return rl_fail(RL_ENOMEM, "out of memory for node %zu", i);
    }
    ev_async_init(&c->loop->wake, on_wake);
    c->loop->wake.data = c;
    ev_async_start(c->loop->loop, &c->loop->wake);
    ev_prepare_init(&c->loop->flush, on_flush);
    c->loop->flush.data = c;
    ev_prepare_start(c->loop->loop, &c->loop->flush);
    if (!c->loop->owned) {
        /* Neither watcher may keep the caller's ev_run alive. */
        ev_unref(c->loop->loop);
        ev_unref(c->loop->loop);
        for (i = 0; i < c->node_count; i++)
            node_start(c->nodes[i]);
        return RL_OK;
    }
    if (pthread_create(&c->loop->thread, NULL, loop_thread, c) != 0) {
        ev_async_stop(c->loop->loop, &c->loop->wake);
        ev_prepare_stop(c->loop->loop, &c->loop->flush);
        return rl_fail(RL_ESYSTEM, "cannot start the client's loop thread");
    }
    c->loop->thread_started = true;
    return RL_OK;
}

rl_client *rl_client_new(const rl_config *cfg, rl_status *st)
{
    rl_client *c;
    rl_status s;

    rl_error_clear();
    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        s = rl_fail(RL_ENOMEM, "out of memory for the client");
        goto out;
    }
    pthread_mutex_init(&c->mutex, NULL);
    c->rng = mono_now_us() | 1u;
    s = config_load(cfg, &c->cfg);
    if (s == RL_OK)
        s = client_setup(c);
    if (s != RL_OK) {
        client_destroy(c);
        c = NULL;
        goto out;
    }
    /* Wait (bounded by connect_timeout_ms) for the first handshakes, so
     * the first acquire does not race the connections. */
    if (c->loop->owned)
        inspect_wait_connected(c);
    rl_error_clear();
out:
    if (st != NULL)
        *st = s;
    return c;
}

void rl_client_free(rl_client *c)
{
    if (c == NULL)
        return;
    if (client_on_loop_thread(c)) {
        rl_fail(RL_EMISUSE, "rl_client_free called from a callback");
        return;
    }
    pthread_mutex_lock(&c->mutex);
    atomic_store(&c->closing, true);
    pthread_mutex_unlock(&c->mutex);
    if (c->loop->owned) {
        atomic_store(&c->loop->shutdown, true);
        ev_async_send(c->loop->loop, &c->loop->wake);
        pthread_join(c->loop->thread, NULL);
    } else {
        shutdown_on_loop(c);
    }
    client_destroy(c);
}
