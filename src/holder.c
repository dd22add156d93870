/* SPDX-License-Identifier: BSD-3-Clause */
/* holder.c -- the life of an rl_lock handle: the requests other threads
 * queue to the loop thread, the lost signal, reentrant holds, renewals
 * and releases. The handles, their registry and getters are handle.c's;
 * the public async API is asyncapi.c's; the state machine is lock.c's;
 * the watchdog that renews watched locks is watchdog.c's.
 *
 * Requests from any thread (acquire, extend, release, free, watchdog
 * start and stop) are queued to the loop thread as struct lock_req and
 * run in submission order; the caller owns the handle and may not use it
 * after a release or free it asked for. A release or free while a round
 * is in flight drops that round first; a lock that becomes lost drops its
 * round too, so no later reply can renew it.
 *
 * Threads: the state, the rounds and the watchdog are loop-thread only;
 * the getters read atomics. Reentrant hold counts and the registry are
 * guarded by the registry mutex: the last hold's release sets holds to 0
 * under it before the release is queued, so a concurrent re-entry never
 * finds a lock about to be freed. A call on a handle holds orphan_mutex
 * while it uses the lock's client, so the client cannot be freed under
 * it. Client freed: queued and started requests are canceled first (each
 * reports RL_ECANCELED once), then holders_shutdown stops the watchdog
 * and orphans the handles. */
#include <stdio.h>
#include <sched.h>

#include "acquire.h"
#include "acquireopts.h"
#include "cancel.h"
#include "extend.h"
#include "handle.h"
#include "holder.h"
#include "release.h"
#include "semaphore.h"
#include "watchdog.h"

enum req_kind {
    REQ_ACQUIRE,
    REQ_EXTEND,
    REQ_RELEASE,
    REQ_FREE,
    REQ_WATCH,
    REQ_UNWATCH,
    REQ_REENTRY, /* a nested hold was taken or dropped: just call back */
};

/* A request from any thread, run on the loop thread (struct op). */
struct lock_req {
    struct op base;
    enum req_kind kind;
    rl_client *client;
    struct rl_lock *lock;
    rl_acquire_cb acquire_cb;    /* at most one of the three is set */
    rl_extend_cb extend_cb;
    rl_release_cb release_cb;
    void *privdata;
    uint32_t ttl_ms;             /* acquire, extend */
    struct acquire_op *acquire;  /* REQ_ACQUIRE */
    struct sem_op *sem;          /* REQ_ACQUIRE of a semaphore */
    rl_acquire_opts opts;        /* REQ_ACQUIRE, REQ_WATCH */
    pthread_t caller;            /* REQ_ACQUIRE: for reentrancy */
    struct cancel_hook *hook;    /* REQ_ACQUIRE with opts.cancel, or NULL */
    struct lock_extra *extra;    /* REQ_WATCH: for a lock without one */
};

/* Orders reading a lock's client against orphaning it (client freed), so
 * calls on a lock may race rl_client_free. Held only briefly, never while
 * a user callback runs. */
static pthread_mutex_t orphan_mutex = PTHREAD_MUTEX_INITIALIZER;

static void unwatch(struct rl_lock *l);
static void resume_waiting(struct rl_lock *l);

/* ---- Requests ----------------------------------------------------------- */

static struct lock_req *req_new(rl_client *c, enum req_kind kind,
                                struct rl_lock *l, void *privdata)
{
    struct lock_req *r = calloc(1, sizeof(*r));

    if (r == NULL) {
        rl_fail(RL_ENOMEM, "out of memory for a request");
        return NULL;
    }
    r->kind = kind;
    r->client = c;
    r->lock = l;
    r->privdata = privdata;
    return r;
}

static void req_free(struct lock_req *r)
{
    cancel_detach(r->hook);
    free(r->extra);
    free(r);
}

/* End a request: out of the loop's registry, freed, its callback called
 * once (lock: the acquired lock, or the extended one). rl_last_error()
 * already describes st. */
static void req_finish(struct lock_req *r, rl_status st, struct rl_lock *l)
{
    rl_client *c = r->client;
    rl_acquire_cb acb = r->acquire_cb;
    rl_extend_cb ecb = r->extend_cb;
    rl_release_cb rcb = r->release_cb;
    void *privdata = r->privdata;
    bool user_extend = r->kind == REQ_EXTEND;

    loop_op_finished(&r->base);
    req_free(r);
    if (user_extend && l != NULL)
        atomic_store(&l->user_extending, false);
    callback_enter();
    if (acb != NULL)
        acb(c, st, l, privdata);
    else if (ecb != NULL)
        ecb(l, st, privdata);
    else if (rcb != NULL)
        rcb(c, st, privdata);
    callback_leave();
}

/* ---- Lost --------------------------------------------------------------- */

/* The lock is gone: final (never while RELEASING). Drop the round in
 * flight (a user extend, running or waiting, gets RL_ELOST), stop the
 * watchdog, raise the flag and the fd, call lost_cb once. reason has been
 * set with rl_fail. */
static void become_lost(struct rl_lock *l)
{
    rl_client *c = atomic_load(&l->client);
    struct lock_req *user = l->user;
    rl_lost_cb cb = l->lost_cb;
    char reason[RL_ERRLEN];

    snprintf(reason, sizeof(reason), "%s", rl_last_error());
    lock_drop_flight(l);
    l->user = NULL;
    lock_put(l, LOCK_USER_WAITS, false);
    lock_set_state(l, LOCK_LOST, NULL);
    l->lost_cb = NULL;
    unwatch(l);
    if (!atomic_exchange(&l->lost, true)) {
        handle_signal_fd(atomic_load(&l->lost_fd));
        client_count(c, STAT_LOST);
    }
    /* Pairs with silence(): either it sees in_lost_cb and waits, or we
     * see quiet and stay silent (both seq_cst). */
    atomic_store(&l->in_lost_cb, true);
    if (cb != NULL && !atomic_load(&l->quiet)) {
        callback_enter();
        cb(l, l->lost_privdata);
        callback_leave();
    }
    atomic_store(&l->in_lost_cb, false);
    if (user != NULL) {
        rl_error_set_text(reason);
        req_finish(user, RL_ELOST, l);
    }
}

/* ---- Watching ------------------------------------------------------------ */

static struct watchdog *watchdog_of(const struct rl_lock *l)
{
    rl_client *c = atomic_load(&((struct rl_lock *)l)->client);

    return c != NULL ? c->holders->watchdog : NULL;
}

/* Start watching l (the watchdog's timer exists: this cannot fail). Caps
 * in o go into l's extra block: made with the lock, or handed over in
 * *extra (then taken) by a watchdog start. */
static void watch(struct rl_lock *l, const rl_acquire_opts *o,
                  struct lock_extra **extra)
{
    rl_client *c = atomic_load(&l->client);

    if (lock_extra_of(l) == NULL && extra != NULL && *extra != NULL) {
        pthread_mutex_lock(&c->holders->mutex); /* reenter() reads it */
        atomic_store(&l->extra, *extra);
        pthread_mutex_unlock(&c->holders->mutex);
        *extra = NULL;
    }
    l->lost_cb = o->lost_cb;
    l->lost_privdata = o->lost_privdata;
    watchdog_watch(c->holders->watchdog, l, o);
}

/* Stop watching: no lost callback, out of the watchdog (a user's round
 * goes on). */
static void unwatch(struct rl_lock *l)
{
    l->lost_cb = NULL;
    watchdog_unwatch(watchdog_of(l), l);
}

/* ---- Renewal ------------------------------------------------------------ */

/* A round ended (l->round already freed itself). Apply the outcome: a
 * success counts only if the round started inside the validity and the
 * new validity (from the round's start) has not already run out. */
static void renewed(void *owner, rl_status st, rl_mono_us t0,
                    unsigned voters)
{
    struct rl_lock *l = owner;
    struct lock_req *user = /* the round's */
        lock_has(l, LOCK_USER_WAITS) ? NULL : l->user;
    rl_client *c = atomic_load(&l->client);
    uint32_t ttl = user != NULL ? user->ttl_ms : atomic_load(&l->ttl_ms);
    uint64_t old_deadline = atomic_load(&l->deadline_us);
    struct lock_extra *e = lock_extra_of(l);
    rl_mono_us deadline;

    lock_set_state(l, LOCK_HELD, NULL);
    if (st == RL_OK) {
        deadline = validity_deadline(ttl, c->cfg.drift_factor, t0);
        if (old_deadline != 0 && t0 >= old_deadline)
            st = rl_fail(RL_ELOST,
                         "'%s': validity ran out before the extension "
                         "started",
                         l->rec.resource);
        else if (deadline <= mono_now_us())
            st = rl_fail(RL_ELOST,
                         "'%s': extension round took longer than the TTL",
                         l->rec.resource);
    }
    if (st == RL_ELOST) {
        become_lost(l); /* reports l->user, the round's or waiting */
        return;
    }
    if (user != NULL)
        l->user = NULL;
    if (st == RL_OK) {
        atomic_store(&l->deadline_us, deadline);
        atomic_store(&l->voters, voters);
        l->confirmed_us = t0;
        if (atomic_load(&l->ttl_ms) == 0) /* adopted: the first extension
                                             sets it */
            atomic_store(&l->ttl_ms, ttl);
        client_count(c, STAT_RENEWALS);
        if (user == NULL && e != NULL)
            e->renewals++;
    }
    if (user != NULL)
        req_finish(user, st, l);
    /* The user's callback may have asked for a release or free: those are
     * queued requests, so l is still here. */
    resume_waiting(l);
    /* After a failed round (not lost yet): again after the retry pause. */
    watchdog_renewed(c->holders->watchdog, l, st == RL_OK);
}

/* HELD -> RENEWING for a user extend (the watchdog renews in batches). */
static void start_renewal(struct rl_lock *l, struct lock_req *user)
{
    rl_client *c = atomic_load(&l->client);
    uint32_t ttl = user != NULL ? user->ttl_ms : atomic_load(&l->ttl_ms);

    struct extend_round *round;

    l->user = user;
    lock_put(l, LOCK_USER_WAITS, false);
    if (lock_remaining_us(l) <= 0) {
        rl_fail(RL_ELOST, "'%s': validity ran out before the extension",
                l->rec.resource);
        become_lost(l);
        return;
    }
    round = extend_new(c, &l->rec, ttl, l->confirmed_us, &l->holders,
                       renewed, l);
    if (round == NULL) {
        l->user = NULL;
        req_finish(user, RL_ENOMEM, l);
        return;
    }
    lock_set_state(l, LOCK_RENEWING, round);
    watchdog_at_margin(c->holders->watchdog, l);
    extend_run(round);
}

/* A user extend waited behind the watchdog's renewal, which ended or was
 * dropped (watchdog stopped or restarted): start it now. */
static void resume_waiting(struct rl_lock *l)
{
    if (lock_has(l, LOCK_USER_WAITS) && l->state == LOCK_HELD)
        start_renewal(l, l->user);
}

/* ---- Release and free --------------------------------------------------- */

/* Drop what is in flight on l (a user request still attached to it ends
 * with RL_ECANCELED: `why`), stop its watchdog. */
static void drop_all(struct rl_lock *l, const char *why)
{
    struct lock_req *user = l->user;

    lock_drop_flight(l);
    unwatch(l);
    l->user = NULL;
    lock_put(l, LOCK_USER_WAITS, false);
    if (user != NULL) {
        rl_fail(RL_ECANCELED, "'%s': %s", l->rec.resource, why);
        req_finish(user, RL_ECANCELED, user->kind == REQ_RELEASE ? NULL : l);
    }
}

/* Drop everything on l, unregister and free it. */
static void lock_free_now(struct rl_lock *l)
{
    rl_client *c = atomic_load(&l->client);

    drop_all(l, "the lock was released or freed");
    if (c != NULL)
        handles_remove(c, l);
    handle_destroy(l);
}

static void released(void *owner, rl_status st)
{
    struct rl_lock *l = owner;
    struct lock_req *r = l->user;

    lock_set_state(l, LOCK_RELEASED, NULL);
    l->user = NULL;
    lock_free_now(l);
    req_finish(r, st, NULL);
}

/* What is left of l's period (at_least_ms), in whole ms rounded up; 0
 * when it has none or it is over. */
static uint32_t period_left_ms(const struct rl_lock *l)
{
    struct lock_extra *e = lock_extra_of(l);
    rl_mono_us now = mono_now_us();

    if (e == NULL || e->keep_until_us <= now)
        return 0;
    return (uint32_t)((e->keep_until_us - now + 999u) / 1000u);
}

/* HELD, RENEWING or LOST -> RELEASING: drop the renewal in flight, then
 * compare-and-delete on every node (compare-and-keep for the rest of the
 * period). */
static void start_release(struct rl_lock *l, struct lock_req *r)
{
    rl_client *c = atomic_load(&l->client);
    bool expired = lock_remaining_us(l) <= 0;
    struct release_round *release;

    drop_all(l, "released while extending");
    release = release_new(c, &l->rec, expired, period_left_ms(l), released,
                          l);
    if (release == NULL) {
        lock_free_now(l);
        req_finish(r, RL_ENOMEM, NULL);
        return;
    }
    lock_set_state(l, LOCK_RELEASING, release);
    l->user = r;
    release_run(release);
}

/* ---- Request handlers (loop thread) ------------------------------------- */

static void acquired(void *owner, rl_status st, const struct acquire_grant *g)
{
    struct lock_req *r = owner;
    struct rl_lock *l = r->lock;
    rl_client *c = r->client;

    r->acquire = NULL;
    r->sem = NULL;
    if (st != RL_OK) {
        handle_destroy(l);
        req_finish(r, st, NULL);
        return;
    }
    atomic_store(&l->ttl_ms, r->ttl_ms);
    atomic_store(&l->deadline_us,
                 validity_deadline(r->ttl_ms, c->cfg.drift_factor, g->t0));
    atomic_store(&l->voters, g->voters);
    l->confirmed_us = g->t0;
    l->holders = g->holders;
    lock_set_state(l, LOCK_HELD, NULL);
    l->rec.fenced = g->fence != 0;
    if (lock_extra_of(l) != NULL) { /* made for these options */
        lock_extra_of(l)->fence = g->fence;
        if (r->opts.at_least_ms != 0)
            lock_extra_of(l)->keep_until_us =
                g->t0 + (rl_mono_us)r->opts.at_least_ms * 1000u;
        if (r->opts.reentrant) {
            lock_extra_of(l)->owner = r->caller;
            lock_extra_of(l)->holds = 1;
        }
    }
    handles_add(c, l);
    if (r->opts.auto_extend) {
        atomic_store(&l->watch_claimed, true);
        watch(l, &r->opts, NULL);
    }
    req_finish(r, RL_OK, l);
}

/* Start an acquisition: a semaphore's or a lock's round; refused at once
 * when the lock would be watched and the watchdog is behind. */
static void start_acquire(struct lock_req *r)
{
    struct holders *h = r->client->holders;
    struct rl_lock *l = r->lock;
    rl_status st = RL_ENOMEM;

    if (cancel_fired(r->hook)) {
        st = rl_fail(RL_EABORTED, "'%s' not acquired: canceled before it "
                     "started", l->rec.resource);
    } else if (r->opts.auto_extend &&
               watchdog_behind(h->watchdog, mono_now_us())) {
        st = rl_fail(RL_EOVERLOAD,
                     "'%s' not acquired: the watchdog is behind (%zu "
                     "renewals wait for the nodes, the most urgent late "
                     "by half its slack); hold fewer watched locks, use "
                     "longer TTLs or faster nodes",
                     l->rec.resource, watchdog_backlog(h->watchdog));
        atomic_fetch_add(&r->client->stats[STAT_OVERLOAD_REFUSED], 1);
    } else if (r->opts.limit != 0) {
        r->sem = sem_new(r->client, &l->rec, r->opts.limit, r->ttl_ms,
                         &r->opts, acquired, r);
        if (r->sem != NULL) {
            sem_run(r->sem);
            return;
        }
    } else {
        r->acquire = acquire_new(r->client, &l->rec, r->ttl_ms, &r->opts,
                                 acquired, r);
        if (r->acquire != NULL) {
            acquire_run(r->acquire);
            return;
        }
    }
    handle_destroy(l);
    req_finish(r, st, NULL);
}

/* The acquire's cancel token fired (loop thread): stop the acquisition
 * in flight, releasing what it may hold, and report RL_EABORTED. Not yet
 * started: start_acquire sees the token. */
static void acquire_canceled(void *owner)
{
    struct lock_req *r = owner;

    if (r->acquire == NULL && r->sem == NULL)
        return;
    acquire_cancel(r->acquire);
    sem_cancel(r->sem);
    r->acquire = NULL;
    r->sem = NULL;
    rl_fail(RL_EABORTED, "'%s' not acquired: canceled while waiting",
            r->lock->rec.resource);
    handle_destroy(r->lock);
    req_finish(r, RL_EABORTED, NULL);
}

static void run_request(struct op *base)
{
    struct lock_req *r = (struct lock_req *)base;
    struct rl_lock *l = r->lock;

    switch (r->kind) {
    case REQ_ACQUIRE:
        start_acquire(r);
        return;
    case REQ_EXTEND:
        if (l->state == LOCK_LOST) {
            rl_fail(RL_ELOST, "'%s' was already lost", l->rec.resource);
            req_finish(r, RL_ELOST, l);
        } else if (l->state == LOCK_RENEWING ||
                   l->state == LOCK_BATCHED) {
            l->user = r; /* after the watchdog's renewal */
            lock_put(l, LOCK_USER_WAITS, true);
        } else {
            start_renewal(l, r);
        }
        return;
    case REQ_RELEASE:
        start_release(l, r);
        return;
    case REQ_FREE:
        lock_free_now(l);
        break;
    case REQ_WATCH:
        atomic_store(&l->quiet, false);
        if (l->state == LOCK_HELD || l->state == LOCK_RENEWING ||
            l->state == LOCK_BATCHED) {
            unwatch(l);
            watch(l, &r->opts, &r->extra);
            resume_waiting(l);
        }
        break;
    case REQ_UNWATCH:
        unwatch(l);
        resume_waiting(l);
        break;
    case REQ_REENTRY:
        rl_error_clear();
        req_finish(r, RL_OK, l);
        return;
    }
    loop_op_finished(&r->base);
    req_free(r);
}

/* Client freed: end the request with RL_ECANCELED. A release or free the
 * caller asked for still frees the handle. */
static void cancel_request(struct op *base)
{
    struct lock_req *r = (struct lock_req *)base;
    struct rl_lock *l = r->lock;

    rl_fail(RL_ECANCELED, "canceled: the client is being freed");
    switch (r->kind) {
    case REQ_ACQUIRE:
        acquire_abort(r->acquire);
        sem_abort(r->sem);
        handle_destroy(l);
        req_finish(r, RL_ECANCELED, NULL);
        return;
    case REQ_EXTEND:
        if (l->user == r && !lock_has(l, LOCK_USER_WAITS))
            lock_drop_flight(l);
        if (l->user == r) {
            l->user = NULL;
            lock_put(l, LOCK_USER_WAITS, false);
            watchdog_renew_now(r->client->holders->watchdog, l);
        }
        req_finish(r, RL_ECANCELED, l);
        return;
    case REQ_RELEASE:
        if (l->user == r)
            l->user = NULL;
        lock_free_now(l);
        req_finish(r, RL_ECANCELED, NULL);
        return;
    case REQ_FREE:
        lock_free_now(l);
        break;
    case REQ_REENTRY:
        req_finish(r, RL_ECANCELED, r->acquire_cb != NULL ? NULL : l);
        return;
    case REQ_WATCH:
    case REQ_UNWATCH:
        break;
    }
    loop_op_finished(&r->base);
    req_free(r);
}

static rl_status submit(struct lock_req *r)
{
    rl_status st;

    r->base.start = run_request;
    r->base.cancel = cancel_request;
    st = loop_submit(r->client->loop, &r->base);
    if (st != RL_OK)
        req_free(r);
    return st;
}

/* ---- Reentrancy --------------------------------------------------------- */

/* Queue a callback for a hold taken (acb) or dropped (rcb). */
static rl_status queue_reentry(rl_client *c, struct rl_lock *l,
                               rl_acquire_cb acb, rl_release_cb rcb,
                               void *privdata)
{
    struct lock_req *r = req_new(c, REQ_REENTRY, l, privdata);

    if (r == NULL)
        return RL_ENOMEM;
    r->acquire_cb = acb;
    r->release_cb = rcb;
    return submit(r);
}

/* The calling thread already holds resource reentrantly: count one more
 * hold. True when it did (*st: the submit status). */
static bool reenter(rl_client *c, const char *resource, rl_acquire_cb cb,
                    void *privdata, rl_status *st)
{
    struct rl_lock *l = handle_reenter(c, resource);
    unsigned was;

    if (l == NULL)
        return false;
    *st = queue_reentry(c, l, cb, NULL, privdata);
    if (*st != RL_OK)
        handle_drop_hold(c, l, &was);
    return true;
}

/* ---- Operations behind the public API ----------------------------------- */

rl_status holder_acquire(rl_client *c, const char *const *resources,
                         size_t count, const rl_acquire_opts *o,
                         rl_acquire_cb cb, void *privdata)
{
    struct lock_req *r;
    struct rl_lock *l;
    rl_status st;
    uint32_t ttl;

    if (c == NULL)
        return rl_fail(RL_EINVAL, "client is NULL");
    if (cb == NULL)
        return rl_fail(RL_EINVAL, "callback is NULL");
    st = acquireopts_check(c, resources, count, o, &ttl);
    if (st == RL_OK && o != NULL && o->auto_extend)
        st = watchdog_check_opts(o, ttl);
    if (st != RL_OK)
        return st;
    if (o != NULL && rl_cancel_fired(o->cancel))
        return rl_fail(RL_EABORTED, "'%s' not acquired: the cancel token "
                       "was already fired (nothing sent)", resources[0]);
    if (o != NULL && o->reentrant && count == 1 &&
        reenter(c, resources[0], cb, privdata, &st))
        return st;
    st = handle_new_kind(c, resources, count, NULL, o, &l);
    if (st != RL_OK)
        return st;
    r = req_new(c, REQ_ACQUIRE, l, privdata);
    if (r == NULL) {
        handle_destroy(l);
        return RL_ENOMEM;
    }
    r->acquire_cb = cb;
    r->ttl_ms = ttl;
    r->caller = pthread_self();
    if (o != NULL)
        r->opts = *o;
    if (r->opts.cancel != NULL) {
        r->hook = cancel_attach(r->opts.cancel, c->loop, acquire_canceled, r);
        if (r->hook == NULL) {
            req_free(r);
            handle_destroy(l);
            return RL_ENOMEM;
        }
    }
    if (r->opts.auto_extend && watchdog_start(c->holders->watchdog) != RL_OK) {
        req_free(r);
        handle_destroy(l);
        return RL_ENOMEM;
    }
    st = submit(r);
    if (st != RL_OK)
        handle_destroy(l);
    return st;
}

/* Before a handle is given up (release, free, watchdog stop): no lost
 * callback may start after this returns, and one running on the loop
 * thread is waited for -- the caller may free what lost_privdata points
 * to next. Not needed on the loop's own thread, where the callback is
 * either below us on the stack or not running. */
static void silence(struct rl_lock *l)
{
    rl_client *c;
    bool wait;

    pthread_mutex_lock(&orphan_mutex);
    c = atomic_load(&l->client);
    wait = c != NULL && loop_is_owned(c->loop) && !loop_on_thread(c->loop);
    pthread_mutex_unlock(&orphan_mutex);
    if (c == NULL)
        return;
    atomic_store(&l->quiet, true);
    while (wait && atomic_load(&l->in_lost_cb))
        sched_yield();
}

static rl_status orphaned(void)
{
    return rl_fail(RL_ECANCELED, "the lock's client was freed: free the "
                                 "handle with rl_lock_free");
}

rl_status holder_submit(rl_lock *l, struct op *op, const char *blocking)
{
    rl_client *c;
    rl_status st;

    pthread_mutex_lock(&orphan_mutex);
    c = atomic_load(&l->client);
    st = c == NULL           ? orphaned()
         : blocking != NULL ? waiter_check(c->loop, blocking)
                            : RL_OK;
    if (st == RL_OK)
        st = loop_submit(c->loop, op);
    pthread_mutex_unlock(&orphan_mutex);
    return st;
}

struct lock_rec *holder_rec(rl_lock *l)
{
    return &l->rec;
}

rl_client *holder_client(rl_lock *l)
{
    return atomic_load(&l->client);
}

/* holder_extend on l's client c (orphan_mutex held by the caller). */
static rl_status queue_extend(rl_client *c, rl_lock *l, uint32_t ttl_ms,
                              rl_extend_cb cb, void *privdata,
                              const char *blocking)
{
    struct lock_req *r;
    rl_status st;
    uint32_t ttl;

    st = blocking != NULL ? waiter_check(c->loop, blocking) : RL_OK;
    if (st == RL_OK)
        st = config_effective_ttl(
            &c->cfg, ttl_ms != 0 ? ttl_ms : atomic_load(&l->ttl_ms), &ttl);
    if (st == RL_OK && l->rec.delay_ms > c->cfg.max_ttl_ms - ttl)
        st = rl_fail(RL_EINVAL,
                     "ttl_ms %u + the lock-delay %u is above max_ttl_ms %u",
                     ttl, l->rec.delay_ms, c->cfg.max_ttl_ms);
    if (st != RL_OK)
        return st;
    if (atomic_exchange(&l->user_extending, true))
        return rl_fail(RL_EMISUSE, "'%s': an extend is already in flight",
                       l->rec.resource);
    r = req_new(c, REQ_EXTEND, l, privdata);
    st = r != NULL ? RL_OK : RL_ENOMEM;
    if (r != NULL) {
        r->extend_cb = cb;
        r->ttl_ms = ttl;
        st = submit(r);
    }
    if (st != RL_OK)
        atomic_store(&l->user_extending, false);
    return st;
}

rl_status holder_extend(rl_lock *l, uint32_t ttl_ms, rl_extend_cb cb,
                        void *privdata, const char *blocking)
{
    rl_client *c;
    rl_status st;

    if (l == NULL)
        return rl_fail(RL_EINVAL, "lock is NULL");
    if (cb == NULL)
        return rl_fail(RL_EINVAL, "callback is NULL");
    pthread_mutex_lock(&orphan_mutex);
    c = atomic_load(&l->client);
    st = c != NULL ? queue_extend(c, l, ttl_ms, cb, privdata, blocking)
                   : orphaned();
    pthread_mutex_unlock(&orphan_mutex);
    return st;
}

/* The first part of a release on l's client c (orphan_mutex held by the
 * caller): the blocking check, then one hold dropped. True when that ends
 * the call (*st: its status): refused, or a nested hold released. */
static bool release_nested(rl_client *c, rl_lock *l, rl_release_cb cb,
                           void *privdata, const char *blocking,
                           unsigned *was, rl_status *st)
{
    *st = blocking != NULL ? waiter_check(c->loop, blocking) : RL_OK;
    if (*st != RL_OK)
        return true;
    if (!handle_drop_hold(c, l, was))
        return false;
    *st = queue_reentry(c, l, NULL, cb, privdata);
    if (*st != RL_OK)
        handle_restore_hold(c, l, *was);
    return true;
}

/* The release of the last hold, queued on c (orphan_mutex held by the
 * caller); was: the hold count to restore when it cannot be. */
static rl_status queue_release(rl_client *c, rl_lock *l, rl_release_cb cb,
                               void *privdata, unsigned was)
{
    struct lock_req *r = req_new(c, REQ_RELEASE, l, privdata);
    rl_status st = r != NULL ? RL_OK : RL_ENOMEM;

    if (r != NULL) {
        r->release_cb = cb;
        st = submit(r);
    }
    if (st != RL_OK) {
        handle_restore_hold(c, l, was);
        atomic_store(&l->quiet, false);
    }
    return st;
}

rl_status holder_release(rl_lock *l, rl_release_cb cb, void *privdata,
                         const char *blocking)
{
    rl_client *c;
    rl_status st = RL_OK;
    unsigned was = 0;
    bool done;

    if (l == NULL)
        return rl_fail(RL_EINVAL, "lock is NULL");
    pthread_mutex_lock(&orphan_mutex);
    c = atomic_load(&l->client);
    done = c == NULL ||
           release_nested(c, l, cb, privdata, blocking, &was, &st);
    pthread_mutex_unlock(&orphan_mutex);
    if (c == NULL)
        return orphaned();
    if (done)
        return st;
    silence(l);
    pthread_mutex_lock(&orphan_mutex);
    c = atomic_load(&l->client);
    st = c != NULL ? queue_release(c, l, cb, privdata, was) : orphaned();
    pthread_mutex_unlock(&orphan_mutex);
    return st;
}

void rl_lock_free(rl_lock *l)
{
    struct lock_req *r;
    rl_client *c;

    if (l == NULL)
        return;
    silence(l);
    pthread_mutex_lock(&orphan_mutex);
    c = atomic_load(&l->client);
    /* A renewal may be running on the loop thread: free it there. If that
     * cannot be queued (the client is being freed, or out of memory), the
     * client's shutdown frees it. */
    r = c != NULL ? req_new(c, REQ_FREE, l, NULL) : NULL;
    if (c != NULL && (r == NULL || submit(r) != RL_OK))
        atomic_store(&l->free_requested, true);
    pthread_mutex_unlock(&orphan_mutex);
    if (c == NULL) /* orphaned: nothing else refers to it */
        handle_destroy(l);
}

/* The watchdog start request for l, queued on c (orphan_mutex held by
 * the caller). */
static rl_status queue_watch(rl_client *c, rl_lock *l,
                             const rl_acquire_opts *o)
{
    static const rl_acquire_opts defaults;
    struct lock_req *r = req_new(c, REQ_WATCH, l, NULL);
    rl_status st = RL_OK;

    if (r == NULL)
        return RL_ENOMEM;
    r->opts = o != NULL ? *o : defaults;
    /* Caps need the extra block: made here, where failing is allowed (the
     * loop thread keeps it if l has none). */
    if (watchdog_needs_extra(&r->opts) && (r->extra = handle_extra_new()) == NULL)
        st = RL_ENOMEM;
    if (st == RL_OK)
        st = watchdog_start(c->holders->watchdog);
    if (st == RL_OK)
        return submit(r);
    req_free(r);
    return st;
}

rl_status rl_watchdog_start(rl_lock *l, const rl_acquire_opts *o)
{
    rl_client *c;
    rl_status st;

    if (l == NULL)
        return rl_fail(RL_EINVAL, "lock is NULL");
    if (atomic_load(&l->ttl_ms) == 0)
        return rl_fail(RL_EMISUSE,
                       "'%s': adopted lock has no known TTL; extend it first",
                       l->rec.resource);
    st = watchdog_check_opts(o, atomic_load(&l->ttl_ms));
    if (st == RL_OK && o != NULL &&
        (o->mode != (l->rec.shared ? RL_MODE_SHARED : RL_MODE_EXCLUSIVE) ||
         (o->limit != 0 && l->rec.slot < 0)))
        st = rl_fail(RL_EINVAL,
                     "'%s': mixing modes on one handle: the lock is %s, "
                     "the options ask for %s",
                     l->rec.resource,
                     l->rec.shared ? "a shared (reader) lock"
                                   : "an exclusive lock",
                     o->mode == RL_MODE_SHARED ? "a shared one"
                     : o->limit != 0           ? "a semaphore"
                                               : "an exclusive one");
    if (st != RL_OK)
        return st;
    pthread_mutex_lock(&orphan_mutex);
    c = atomic_load(&l->client);
    if (c == NULL)
        st = orphaned();
    else if (atomic_exchange(&l->watch_claimed, true))
        st = rl_fail(RL_EMISUSE, "'%s': the watchdog is already running",
                     l->rec.resource);
    else if ((st = queue_watch(c, l, o)) != RL_OK)
        atomic_store(&l->watch_claimed, false);
    pthread_mutex_unlock(&orphan_mutex);
    return st;
}

void rl_watchdog_stop(rl_lock *l)
{
    struct lock_req *r;
    rl_client *c;

    if (l == NULL || !atomic_exchange(&l->watch_claimed, false))
        return;
    silence(l);
    pthread_mutex_lock(&orphan_mutex);
    c = atomic_load(&l->client);
    r = c != NULL ? req_new(c, REQ_UNWATCH, l, NULL) : NULL;
    if (c != NULL && (r == NULL || submit(r) != RL_OK)) {
        atomic_store(&l->watch_claimed, true);
        atomic_store(&l->quiet, false);
    }
    pthread_mutex_unlock(&orphan_mutex);
}

/* ---- Registry lifecycle ------------------------------------------------- */

rl_status holders_new(rl_client *c)
{
    c->holders = calloc(1, sizeof(*c->holders));
    if (c->holders == NULL)
        return rl_fail(RL_ENOMEM, "out of memory for the client");
    c->holders->watchdog = watchdog_new(c, renewed, become_lost);
    if (c->holders->watchdog == NULL) {
        free(c->holders);
        c->holders = NULL;
        return rl_fail(RL_ENOMEM, "out of memory for the client");
    }
    pthread_mutex_init(&c->holders->mutex, NULL);
    return RL_OK;
}

void holders_shutdown(rl_client *c)
{
    struct holders *h = c->holders;
    struct rl_lock *l, *next;

    pthread_mutex_lock(&orphan_mutex);
    pthread_mutex_lock(&h->mutex);
    for (l = handle_of(list_take(&h->locks).first); l != NULL; l = next) {
        next = handle_of(l->link.next);
        lock_drop_flight(l);
        unwatch(l);
        l->link.prev = l->link.next = NULL;
        if (atomic_load(&l->free_requested))
            handle_destroy(l);
        else
            atomic_store(&l->client, NULL);
    }
    watchdog_stop(h->watchdog);
    pthread_mutex_unlock(&h->mutex);
    pthread_mutex_unlock(&orphan_mutex);
}

void holders_free(rl_client *c)
{
    if (c->holders == NULL)
        return;
    watchdog_free(c->holders->watchdog);
    pthread_mutex_destroy(&c->holders->mutex);
    free(c->holders);
    c->holders = NULL;
}
