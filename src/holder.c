/* holder.c -- the rl_lock handle and its life: the registry of a
 * client's handles, the requests other threads queue to the loop thread,
 * the lost signal, reentrant holds, renewals and releases, the public
 * async API and the getters. The state machine is lock.c's; the watchdog
 * that renews watched locks is watchdog.c's.
 *
 * Requests from any thread (acquire, extend, release, free, watchdog
 * start and stop) are queued to the loop thread as struct lock_req and
 * run in submission order; the caller owns the handle and may not use it
 * after a release or free it asked for. A release or free while a round
 * is in flight drops that round first; a lock that becomes lost drops its
 * round too, so no later reply can renew it.
 *
 * The handle, its keys and token are one allocation; what few locks use
 * (fence, reentrant holds, watchdog caps and interval) lives in struct
 * lock_extra. A semaphore's handle is made for its last slot's name (the
 * longest); semaphore.c rewrites it to each slot it tries.
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
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "abi.h"
#include "acquire.h"
#include "cancel.h"
#include "extend.h"
#include "holder.h"
#include "list.h"
#include "release.h"
#include "semaphore.h"
#include "watchdog.h"

/* Largest max_hold_ms that is not "no cap" (a century). */
#define MAX_HOLD_MS (UINT64_C(100) * 365 * 24 * 3600 * 1000)

struct holders {
    pthread_mutex_t mutex;       /* guards the list and hold counts */
    struct list locks;           /* struct rl_lock, newest first */
    struct watchdog *watchdog;
};

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

/* ---- Handles and the registry ------------------------------------------- */

static struct holders *registry(rl_client *c)
{
    return c->holders;
}

/* The lock on the registry at link; NULL at the end of the list. */
static struct rl_lock *lock_of(struct list_link *link)
{
    return list_entry(link, struct rl_lock, link);
}

static void registry_add(rl_client *c, struct rl_lock *l)
{
    struct holders *h = registry(c);

    pthread_mutex_lock(&h->mutex);
    list_push_front(&h->locks, &l->link);
    pthread_mutex_unlock(&h->mutex);
}

static void registry_remove(rl_client *c, struct rl_lock *l)
{
    struct holders *h = registry(c);

    pthread_mutex_lock(&h->mutex);
    /* A lock no longer on the list (holders_shutdown emptied it) is left
     * as it is. */
    if (l->link.prev != NULL || h->locks.first == &l->link)
        list_remove(&h->locks, &l->link);
    pthread_mutex_unlock(&h->mutex);
}

/* One allocation per handle (thousands may be held at once): the struct,
 * then the record's key pointers, lengths, keys and token. */
static rl_status lock_new(rl_client *c, const char *const *resources,
                          size_t count, const char *token, uint32_t delay_ms,
                          const char *owner, struct rl_lock **out)
{
    size_t tail = lockrec_tail_size(&c->cfg, resources, count, token,
                                    delay_ms, owner);
    struct rl_lock *l = calloc(1, sizeof(*l) + tail);
    rl_status st;

    if (l == NULL)
        return rl_fail(RL_ENOMEM, "out of memory for a lock");
    st = lockrec_init(&l->rec, l + 1, &c->cfg, resources, count, token,
                      delay_ms, owner);
    if (st != RL_OK) {
        free(l);
        return st;
    }
    atomic_init(&l->client, c);
    atomic_init(&l->lost_fd, -1);
    *out = l;
    return RL_OK;
}

static struct lock_extra *extra_new(void)
{
    struct lock_extra *e = calloc(1, sizeof(*e));

    if (e == NULL)
        rl_fail(RL_ENOMEM, "out of memory for a lock");
    return e;
}

/* lock_new for the kinds of o (may be NULL): a reader, the lock-delay, a
 * semaphore's record made for its last slot (semaphore.c rewrites it);
 * the extra block when o asks for fencing, reentrancy or watchdog caps. */
static rl_status lock_new_kind(rl_client *c, const char *const *resources,
                               size_t count, const char *token,
                               const rl_acquire_opts *o, struct rl_lock **out)
{
    size_t len = strlen(resources[0]);
    const char *owner = o != NULL ? o->owner : NULL;
    uint32_t delay_ms = o != NULL ? o->lock_delay_ms : 0;
    char *slot_name;
    rl_status st;

    if (o == NULL || o->limit == 0) {
        st = lock_new(c, resources, count, token, delay_ms, owner, out);
    } else {
        slot_name = malloc(len + LOCKREC_SLOT_SUFFIX_MAX);
        if (slot_name == NULL)
            return rl_fail(RL_ENOMEM, "out of memory for a lock");
        lockrec_slot_key(slot_name, resources[0], len, o->limit - 1);
        st = lock_new(c, (const char *const *)&slot_name, 1, token,
                      delay_ms, owner, out);
        free(slot_name);
        if (st == RL_OK) {
            (*out)->rec.slot = (int32_t)(o->limit - 1);
            (*out)->rec.limit = (uint16_t)o->limit;
        }
    }
    if (st != RL_OK || o == NULL)
        return st;
    (*out)->rec.shared = o->mode == RL_MODE_SHARED;
    (*out)->rec.fair = o->fair != 0 || o->priority != 0;
    if (o->fencing || o->reentrant || (o->auto_extend && watchdog_needs_extra(o))) {
        atomic_init(&(*out)->extra, extra_new());
        if (lock_extra_of(*out) == NULL) {
            free(*out);
            return RL_ENOMEM;
        }
    }
    return RL_OK;
}

static void lock_destroy(struct rl_lock *l)
{
    int fd = atomic_load(&l->lost_fd);

    if (fd >= 0)
        close(fd);
    free(lock_extra_of(l));
    free(l);
}

static void signal_fd(int fd)
{
    uint64_t one = 1;

    if (fd >= 0 && write(fd, &one, sizeof(one)) < 0) {
        /* EAGAIN: the counter is already non-zero, so it is readable. */
    }
}

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
        signal_fd(atomic_load(&l->lost_fd));
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

static rl_status check_watch_opts(const rl_acquire_opts *o, uint32_t ttl_ms)
{
    if (o == NULL)
        return RL_OK;
    if (abi_check(ABI_ACQUIRE_OPTS, o) != RL_OK)
        return RL_EINVAL;
    if (o->extend_interval_ms > ttl_ms / 2)
        return rl_fail(RL_EINVAL,
                       "extend_interval_ms %u must be at most half the "
                       "ttl (%u ms)",
                       o->extend_interval_ms, ttl_ms);
    if (o->max_hold_ms > MAX_HOLD_MS && o->max_hold_ms != UINT64_MAX)
        return rl_fail(RL_EINVAL,
                       "max_hold_ms %llu is too large (at most %llu, or "
                       "UINT64_MAX or 0 for no cap)",
                       (unsigned long long)o->max_hold_ms,
                       (unsigned long long)MAX_HOLD_MS);
    return RL_OK;
}

static struct watchdog *watchdog_of(const struct rl_lock *l)
{
    rl_client *c = atomic_load(&((struct rl_lock *)l)->client);

    return c != NULL ? registry(c)->watchdog : NULL;
}

/* Start watching l (the watchdog's timer exists: this cannot fail). Caps
 * in o go into l's extra block: made with the lock, or handed over in
 * *extra (then taken) by a watchdog start. */
static void watch(struct rl_lock *l, const rl_acquire_opts *o,
                  struct lock_extra **extra)
{
    rl_client *c = atomic_load(&l->client);

    if (lock_extra_of(l) == NULL && extra != NULL && *extra != NULL) {
        pthread_mutex_lock(&registry(c)->mutex); /* reenter() reads it */
        atomic_store(&l->extra, *extra);
        pthread_mutex_unlock(&registry(c)->mutex);
        *extra = NULL;
    }
    l->lost_cb = o->lost_cb;
    l->lost_privdata = o->lost_privdata;
    watchdog_watch(registry(c)->watchdog, l, o);
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
        registry_remove(c, l);
    lock_destroy(l);
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

/* HELD, RENEWING or LOST -> RELEASING: drop the renewal in flight, then
 * compare-and-delete on every node. */
static void start_release(struct rl_lock *l, struct lock_req *r)
{
    rl_client *c = atomic_load(&l->client);
    bool expired = lock_remaining_us(l) <= 0;
    struct release_round *release;

    drop_all(l, "released while extending");
    release = release_new(c, &l->rec, expired, released, l);
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
        lock_destroy(l);
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
        if (r->opts.reentrant) {
            lock_extra_of(l)->owner = r->caller;
            lock_extra_of(l)->holds = 1;
        }
    }
    registry_add(c, l);
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
    struct holders *h = registry(r->client);
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
    lock_destroy(l);
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
    lock_destroy(r->lock);
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
        lock_destroy(l);
        req_finish(r, RL_ECANCELED, NULL);
        return;
    case REQ_EXTEND:
        if (l->user == r && !lock_has(l, LOCK_USER_WAITS))
            lock_drop_flight(l);
        if (l->user == r) {
            l->user = NULL;
            lock_put(l, LOCK_USER_WAITS, false);
            watchdog_renew_now(registry(r->client)->watchdog, l);
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

static bool same_resource(const rl_client *c, const struct rl_lock *l,
                          const char *resource)
{
    return l->rec.nkeys == 1 &&
           strncmp(l->rec.keys[0], c->cfg.prefix, c->cfg.prefix_len) == 0 &&
           strcmp(l->rec.keys[0] + c->cfg.prefix_len, resource) == 0;
}

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
    struct holders *h = registry(c);
    pthread_t self = pthread_self();
    struct rl_lock *l;

    struct lock_extra *e = NULL;

    pthread_mutex_lock(&h->mutex);
    for (l = lock_of(h->locks.first); l != NULL; l = lock_of(l->link.next)) {
        e = lock_extra_of(l);
        if (e != NULL && e->holds > 0 && pthread_equal(e->owner, self) &&
            same_resource(c, l, resource) && !atomic_load(&l->lost) &&
            lock_remaining_us(l) > 0)
            break;
    }
    if (l != NULL)
        e->holds++;
    pthread_mutex_unlock(&h->mutex);
    if (l == NULL)
        return false;
    *st = queue_reentry(c, l, cb, NULL, privdata);
    if (*st != RL_OK) {
        pthread_mutex_lock(&h->mutex);
        e->holds--;
        pthread_mutex_unlock(&h->mutex);
    }
    return true;
}

/* Drop one hold. True when others remain (a nested release). Dropping the
 * last sets holds to 0 under the mutex, so no re-entry can find a lock
 * whose release is being queued. *was is the count before. */
static bool drop_hold(rl_client *c, struct rl_lock *l, unsigned *was)
{
    struct holders *h = registry(c);
    struct lock_extra *e;
    bool nested = false;

    pthread_mutex_lock(&h->mutex);
    e = lock_extra_of(l);
    *was = e != NULL ? e->holds : 0;
    if (e != NULL && e->holds > 0) {
        nested = e->holds > 1;
        e->holds--;
    }
    pthread_mutex_unlock(&h->mutex);
    return nested;
}

static void restore_hold(rl_client *c, struct rl_lock *l, unsigned was)
{
    struct holders *h = registry(c);

    pthread_mutex_lock(&h->mutex);
    if (lock_extra_of(l) != NULL)
        lock_extra_of(l)->holds = was;
    pthread_mutex_unlock(&h->mutex);
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
    st = acquire_check(c, resources, count, o, &ttl);
    if (st == RL_OK && o != NULL && o->auto_extend)
        st = check_watch_opts(o, ttl);
    if (st != RL_OK)
        return st;
    if (o != NULL && rl_cancel_fired(o->cancel))
        return rl_fail(RL_EABORTED, "'%s' not acquired: the cancel token "
                       "was already fired (nothing sent)", resources[0]);
    if (o != NULL && o->reentrant && count == 1 &&
        reenter(c, resources[0], cb, privdata, &st))
        return st;
    st = lock_new_kind(c, resources, count, NULL, o, &l);
    if (st != RL_OK)
        return st;
    r = req_new(c, REQ_ACQUIRE, l, privdata);
    if (r == NULL) {
        lock_destroy(l);
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
            lock_destroy(l);
            return RL_ENOMEM;
        }
    }
    if (r->opts.auto_extend && watchdog_start(registry(c)->watchdog) != RL_OK) {
        req_free(r);
        lock_destroy(l);
        return RL_ENOMEM;
    }
    st = submit(r);
    if (st != RL_OK)
        lock_destroy(l);
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
    if (!drop_hold(c, l, was))
        return false;
    *st = queue_reentry(c, l, NULL, cb, privdata);
    if (*st != RL_OK)
        restore_hold(c, l, *was);
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
        restore_hold(c, l, was);
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

/* ---- Public API ----------------------------------------------------------- */

rl_status rl_acquire_async(rl_client *c, const char *resource,
                           const rl_acquire_opts *o, rl_acquire_cb cb,
                           void *privdata)
{
    return holder_acquire(c, &resource, 1, o, cb, privdata);
}

rl_status rl_acquire_multi_async(rl_client *c, const char *const *resources,
                                 size_t count, const rl_acquire_opts *o,
                                 rl_acquire_cb cb, void *privdata)
{
    return holder_acquire(c, resources, count, o, cb, privdata);
}

rl_status holder_campaign_opts(const rl_acquire_opts *o,
                               rl_acquire_opts *out)
{
    rl_acquire_opts zero = {0};

    *out = o != NULL ? *o : zero;
    if (out->limit != 0 || out->mode != RL_MODE_EXCLUSIVE ||
        out->reentrant)
        return rl_fail(RL_EINVAL, "a campaign takes an exclusive lock: "
                       "limit, RL_MODE_SHARED and reentrant are not "
                       "allowed");
    if (out->wait_ms == 0)
        out->wait_ms = RL_WAIT_FOREVER;
    out->fencing = true;
    out->auto_extend = true;
    return RL_OK;
}

rl_status rl_campaign_async(rl_client *c, const char *name,
                            const rl_acquire_opts *o, rl_acquire_cb cb,
                            void *privdata)
{
    rl_acquire_opts opts;
    rl_status st = holder_campaign_opts(o, &opts);

    if (st != RL_OK)
        return st;
    return holder_acquire(c, &name, 1, &opts, cb, privdata);
}

rl_status rl_extend_async(rl_lock *l, uint32_t ttl_ms, rl_extend_cb cb,
                          void *privdata)
{
    return holder_extend(l, ttl_ms, cb, privdata, NULL);
}

rl_status rl_release_async(rl_lock *l, rl_release_cb cb, void *privdata)
{
    return holder_release(l, cb, privdata, NULL);
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
        lock_destroy(l);
}

rl_status rl_lock_adopt(rl_client *c, const char *resource, const char *token,
                        rl_lock **out)
{
    return rl_lock_adopt_opts(c, resource, token, NULL, out);
}

/* What rl_lock_adopt_opts takes from o: the mode and the lock-delay. */
static rl_status check_adopt_opts(rl_client *c, const rl_acquire_opts *o)
{
    if (abi_check(ABI_ACQUIRE_OPTS, o) != RL_OK)
        return RL_EINVAL;
    if (o->mode != RL_MODE_EXCLUSIVE && o->mode != RL_MODE_SHARED)
        return rl_fail(RL_EINVAL, "mode %u is not RL_MODE_EXCLUSIVE or "
                       "RL_MODE_SHARED", o->mode);
    if (o->limit != 0)
        return rl_fail(RL_EINVAL, "adopt a semaphore slot by its name "
                       "(\"<resource>:slot:<i>\"), without limit");
    if (o->lock_delay_ms >= c->cfg.max_ttl_ms)
        return rl_fail(RL_EINVAL, "lock_delay_ms %u must be below "
                       "max_ttl_ms %u", o->lock_delay_ms, c->cfg.max_ttl_ms);
    return RL_OK;
}

rl_status rl_lock_adopt_opts(rl_client *c, const char *resource,
                             const char *token, const rl_acquire_opts *o,
                             rl_lock **out)
{
    struct rl_lock *l;
    rl_status st;
    size_t len;

    if (c == NULL)
        return rl_fail(RL_EINVAL, "client is NULL");
    if (out == NULL)
        return rl_fail(RL_EINVAL, "out is NULL");
    *out = NULL;
    st = config_check_resource(&c->cfg, resource, "resource");
    if (st != RL_OK)
        return st;
    if (token == NULL)
        return rl_fail(RL_EINVAL, "token is NULL");
    len = strnlen(token, RL_MAX_TOKEN_LEN + 1);
    if (len == 0 || len > RL_MAX_TOKEN_LEN)
        return rl_fail(RL_EINVAL, "token must be 1..%d characters",
                       RL_MAX_TOKEN_LEN);
    st = o != NULL ? check_adopt_opts(c, o) : RL_OK;
    if (st == RL_OK)
        st = lock_new_kind(c, &resource, 1, token, o, &l);
    if (st != RL_OK)
        return st;
    /* Unknown: every node may hold it until it answers otherwise. */
    l->holders = c->node_count < 64 ? (UINT64_C(1) << c->node_count) - 1
                                    : UINT64_MAX;
    lock_set_state(l, LOCK_HELD, NULL);
    registry_add(c, l);
    *out = l;
    return RL_OK;
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
    if (watchdog_needs_extra(&r->opts) && (r->extra = extra_new()) == NULL)
        st = RL_ENOMEM;
    if (st == RL_OK)
        st = watchdog_start(registry(c)->watchdog);
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
    st = check_watch_opts(o, atomic_load(&l->ttl_ms));
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
    struct holders *h = registry(c);
    struct rl_lock *l, *next;

    pthread_mutex_lock(&orphan_mutex);
    pthread_mutex_lock(&h->mutex);
    for (l = lock_of(list_take(&h->locks).first); l != NULL; l = next) {
        next = lock_of(l->link.next);
        lock_drop_flight(l);
        unwatch(l);
        l->link.prev = l->link.next = NULL;
        if (atomic_load(&l->free_requested))
            lock_destroy(l);
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

/* ---- Getters (any thread) ----------------------------------------------- */

int64_t rl_lock_validity_ms(const rl_lock *l)
{
    int64_t us;

    if (l == NULL || atomic_load(&l->deadline_us) == 0)
        return 0;
    us = lock_remaining_us(l);
    return us > 0 ? us / 1000 : 0;
}

const char *rl_lock_token(const rl_lock *l)
{
    return l != NULL ? l->rec.token : NULL;
}

const char *rl_lock_resource(const rl_lock *l)
{
    return l != NULL ? l->rec.resource : NULL;
}

unsigned rl_lock_nodes_ok(const rl_lock *l)
{
    return l != NULL ? atomic_load(&l->voters) : 0;
}

bool rl_lock_lost(const rl_lock *l)
{
    return l != NULL && atomic_load(&l->lost);
}

/* The descriptor is made on first use: most locks never need one. If the
 * lock is already lost, or becomes lost while we install it, the counter
 * is bumped here too, so it is readable either way. */
int rl_lock_lost_fd(const rl_lock *l)
{
    struct rl_lock *m = (struct rl_lock *)l;
    int expected = -1;
    int fd;

    if (l == NULL)
        return -1;
    fd = atomic_load(&m->lost_fd);
    if (fd >= 0)
        return fd;
    fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0)
        return -1;
    if (!atomic_compare_exchange_strong(&m->lost_fd, &expected, fd)) {
        close(fd);
        return expected;
    }
    if (atomic_load(&m->lost))
        signal_fd(fd);
    return fd;
}

int rl_lock_slot(const rl_lock *l)
{
    return l != NULL ? l->rec.slot : -1;
}

int rl_lock_mode(const rl_lock *l)
{
    return l != NULL && l->rec.shared ? RL_MODE_SHARED : RL_MODE_EXCLUSIVE;
}

uint64_t rl_lock_fence(const rl_lock *l)
{
    return l != NULL && lock_extra_of(l) != NULL ? lock_extra_of(l)->fence : 0;
}
