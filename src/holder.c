/* holder.c -- one held lock's life: the rl_lock handle, its state machine,
 * the watchdog, the lost signal, reentrant holds (DESIGN §3, §5.4, §5.10).
 *
 * Every transition of a lock happens here, on the loop thread:
 *
 *   ACQUIRING --won--> HELD <--------------------------+
 *      |                |  \--renewal starts--> RENEWING --ok/no quorum
 *    failed             |         (watchdog or user)   |
 *      v                |                              +--"not ours", ran
 *    freed              |                                 out, margin --> LOST
 *                       +--release--> RELEASING --done--> freed
 *   HELD, RENEWING, LOST --rl_lock_free--> freed
 *
 * LOST is final (once lost, always lost): the round in flight, if any, is
 * dropped when the lock becomes lost, so no later reply can renew it. A
 * release or free while a renewal is in flight drops that round first (its
 * replies land on node-owned records). Requests from other threads
 * (acquire, extend, release, free, watchdog start/stop) are queued to the
 * loop thread as struct lock_req and run in submission order; the caller
 * owns the handle and may not use it after a release or free it asked for.
 * The watchdog never calls the public API: it starts its rounds here.
 *
 * Watchdog at scale (issue 16): a client has one timer for all its watched
 * locks, and each watched lock one intrusive heap node, queued in one of
 * two heaps. `timers` holds the lock at its next event: the next renewal
 * when it is HELD and renewals go on, else (a renewal in flight, or a cap
 * reached) the instant its safety margin starts (validity end -
 * min(ttl/10, 1 s)); a renewal due after the margin start is queued at
 * the margin. When the timer fires, locks past their margin become LOST;
 * then every lock due by now + the coalescing window is renewed in batches
 * (extend.c), at most EXTEND_BATCH_MAX_LOCKS per touch-batch call per
 * node. The window is the first due lock's min(interval x
 * renew_window_pct (default 12 %), 100 ms): renewals go out up to that
 * much early, never late, and the window is always shorter than both the
 * interval and the retry pause, so a tick never renews a lock twice. At
 * most BATCHES_MAX batches are alive at once (flow control): a lock due
 * when no batch can be started waits in `backlog`, ordered by its margin
 * start, and goes first (most urgent first) when a batch is over; there
 * its margin still runs, so nodes that cannot keep up make locks LOST in
 * time, never a silent lapse, and the timer never spins on them. A lock
 * in a batch is queued at its margin: a batch that cannot finish before
 * the margin never keeps its locks alive; the lock is dropped from the
 * batch when it becomes lost, is released or freed.
 * Each lock's outcome is applied by renewed(), the same as a single round.
 * Batches that are over are kept for the next tick. Batches take one-key
 * locks; a reader (issue 13; the touch-batch script knows only string
 * keys) and a lock on several resources are renewed by their own round
 * (own_renewal), so each one's fate stays its own.
 *
 * Memory (issue 16: at most 300 bytes plus the name per held lock): the
 * handle, its keys and token are one allocation; one timer node, one
 * in-flight slot (flight says what it holds) and one user-request slot
 * serve every state, and what few locks use (fence, reentrant holds,
 * watchdog caps and interval) lives in struct lock_extra, made with the
 * lock or by the watchdog start that needs it.
 *
 * Semaphores (issue 13): the handle's record is made for the last slot's
 * name (the longest); semaphore.c rewrites it to each slot it tries, so
 * the lock won is an ordinary lock on its slot's key.
 *
 * Threads: the state, the rounds and the watchdog fields are loop-thread
 * only. Getters read atomics (deadline, voters, lost, ttl). Reentrant hold
 * counts and the registry of live handles are guarded by the registry
 * mutex: the last hold's release sets holds to 0 under it before the
 * release is queued, so a concurrent re-entry never finds a lock that is
 * about to be freed.
 *
 * Client freed: queued and started requests are canceled first (each
 * reports RL_ECANCELED once), then holders_shutdown drops the watchdogs'
 * rounds and orphans the handles. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "acquire.h"
#include "cancel.h"
#include "extend.h"
#include "holder.h"
#include "lockrec.h"
#include "release.h"
#include "semaphore.h"
#include "timeheap.h"

#define RETRY_PAUSE_MAX_MS 200 /* pause after a failed renewal round */
#define WINDOW_MAX_US 100000   /* coalescing window: at most 100 ms */
/* Watchdog batches alive at once per client: bounds the work queued on
 * each node (4 x 256 keys, about a millisecond of a node's time), so a
 * burst of renewals never makes a node miss op_timeout_ms. */
#define BATCHES_MAX 4
/* Largest max_hold_ms that is not "no cap" (a century). */
#define MAX_HOLD_MS (UINT64_C(100) * 365 * 24 * 3600 * 1000)

enum lock_state {
    LOCK_ACQUIRING, /* acquisition in flight; not the caller's yet */
    LOCK_HELD,      /* held as far as we know; no round in flight */
    LOCK_RENEWING,  /* an extension round is in flight */
    LOCK_RELEASING, /* the release round is in flight; handle consumed */
    LOCK_LOST,      /* known lost: final */
};

struct lock_req;

struct holders {
    pthread_mutex_t mutex;       /* guards the list and hold counts */
    struct rl_lock *head;
    /* Watchdog (loop thread); the timer is made, under the mutex, by the
     * first acquire or watchdog start that needs it. */
    struct loop_timer *timer;
    rl_mono_us armed_at;         /* when the timer fires; 0 not armed */
    struct theap timers;         /* watched locks: next event */
    struct theap backlog;        /* due, waiting for room: margin start */
    atomic_uint_fast64_t *waiting; /* the client's gauge of the backlog */
    unsigned batches;            /* watchdog batches alive */
    bool behind;                 /* overloaded until the backlog empties:
                                    see watchdog_behind() */
    unsigned spares;             /* batches over, kept for reuse */
    struct extend_batch *spare[BATCHES_MAX];
};

/* What is in flight on a lock (loop thread): a round of its own (a
 * user's extend, or the watchdog's renewal of a lock no batch takes), its
 * place in a watchdog batch, or its release. */
enum flight_kind {
    FLIGHT_NONE,
    FLIGHT_ROUND,   /* RENEWING */
    FLIGHT_BATCH,   /* RENEWING */
    FLIGHT_RELEASE, /* RELEASING */
};

/* What few locks need, made with the lock (or by the watchdog start that
 * needs it), so the others do not pay for it. */
struct lock_extra {
    uint64_t fence;              /* fencing token, 0 without fencing */
    pthread_t owner;             /* reentrant: the holding thread */
    rl_mono_us hold_end_us;      /* watchdog: stop renewing after this; 0:
                                    no cap (loop thread) */
    unsigned holds;              /* reentrant holds; 0 = not reentrant
                                    (holders mutex) */
    uint32_t max_renewals;       /* watchdog: 0 no cap (loop thread) */
    uint32_t renewals;           /* watchdog renewals, for the cap */
    uint32_t interval_ms;        /* watchdog: renewal period; 0: ttl / 3 */
};

struct rl_lock {
    /* Ordered by size (no padding holes): thousands may be held. */
    struct rl_lock *prev;        /* registry (holders mutex) */
    struct rl_lock *next;
    _Atomic(rl_client *) client; /* NULL once the client is freed */
    struct lock_rec rec;         /* keys and token (tail of this block) */
    rl_mono_us confirmed_us;     /* start of the last round a quorum
                                    granted (acquire or renewal); 0 for an
                                    adopted lock not yet extended */
    _Atomic uint64_t deadline_us;/* validity end, boottime µs; 0 unknown */
    uint64_t holders;            /* bit i: node i's vote counts (issue 15;
                                    loop thread) */
    /* What is in flight (loop thread), by flight. */
    union {
        struct extend_round *round;
        struct extend_batch *batch;
        struct release_round *release;
    } in_flight;
    /* The user request on the lock (loop thread): the extend whose round
     * is in flight, the extend waiting behind the watchdog's renewal
     * (user_waits), or the release in flight; NULL: none. */
    struct lock_req *user;
    _Atomic(struct lock_extra *) extra; /* NULL: no fence, not reentrant,
                                           no watchdog caps or interval */
    /* Watchdog (loop thread). */
    struct theap_node timer;     /* in holders.timers or .backlog when
                                    watched */
    rl_lost_cb lost_cb;          /* called once, or NULL */
    void *lost_privdata;
    _Atomic uint32_t ttl_ms;     /* acquired with (adopted: first extended
                                    with); 0 unknown */
    atomic_uint voters;          /* voters of the last winning round */
    atomic_int lost_fd;          /* eventfd made on demand, -1 none */
    uint8_t state;               /* enum lock_state (loop thread) */
    uint8_t flight;              /* enum flight_kind (loop thread) */
    bool user_waits;             /* user waits behind the watchdog */
    bool watching;               /* watchdog (loop thread) */
    bool backlogged;             /* timer is in holders.backlog */
    atomic_bool lost;
    atomic_bool user_extending;  /* a user extend is queued or running */
    atomic_bool watched;         /* a watchdog runs or is being started */
    atomic_bool quiet;           /* given up: no more lost callbacks */
    atomic_bool in_lost_cb;      /* the lost callback is running */
    atomic_bool free_requested;  /* freed while the client was closing */
};

/* Issue 16's budget: a held lock costs at most 300 bytes plus its name,
 * and this struct is most of it (the rest: keys, token, malloc's header).
 * Growing it is a decision, not an accident. */
_Static_assert(sizeof(struct rl_lock) <= 192,
               "struct rl_lock outgrew the per-lock memory budget");

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

static void tick(void *arg);
static void unwatch(struct rl_lock *l);
static void renewed(void *owner, rl_status st, rl_mono_us t0,
                    unsigned voters);
static void start_renewal(struct rl_lock *l, struct lock_req *user);
static void resume_waiting(struct rl_lock *l);

/* ---- Handles and the registry ------------------------------------------- */

static struct holders *registry(rl_client *c)
{
    return c->holders;
}

static void registry_add(rl_client *c, struct rl_lock *l)
{
    struct holders *h = registry(c);

    pthread_mutex_lock(&h->mutex);
    l->prev = NULL;
    l->next = h->head;
    if (h->head != NULL)
        h->head->prev = l;
    h->head = l;
    pthread_mutex_unlock(&h->mutex);
}

static void registry_remove(rl_client *c, struct rl_lock *l)
{
    struct holders *h = registry(c);

    pthread_mutex_lock(&h->mutex);
    if (l->prev != NULL)
        l->prev->next = l->next;
    else if (h->head == l)
        h->head = l->next;
    if (l->next != NULL)
        l->next->prev = l->prev;
    l->prev = l->next = NULL;
    pthread_mutex_unlock(&h->mutex);
}

/* One allocation per handle (thousands may be held at once): the struct,
 * then the record's key pointers, lengths, keys and token. */
static rl_status lock_new(rl_client *c, const char *const *resources,
                          size_t count, const char *token, const char *owner,
                          struct rl_lock **out)
{
    size_t tail = lockrec_tail_size(&c->cfg, resources, count, token, owner);
    struct rl_lock *l = calloc(1, sizeof(*l) + tail);
    rl_status st;

    if (l == NULL)
        return rl_fail(RL_ENOMEM, "out of memory for a lock");
    st = lockrec_init(&l->rec, l + 1, &c->cfg, resources, count, token,
                      owner);
    if (st != RL_OK) {
        free(l);
        return st;
    }
    atomic_init(&l->client, c);
    atomic_init(&l->lost_fd, -1);
    l->state = LOCK_ACQUIRING;
    *out = l;
    return RL_OK;
}

/* The watchdog options o need the extra block: a cap, an interval. */
static bool watch_needs_extra(const rl_acquire_opts *o)
{
    return o->max_renewals != 0 || o->extend_interval_ms != 0 ||
           (o->max_hold_ms != 0 && o->max_hold_ms != UINT64_MAX);
}

static struct lock_extra *extra_new(void)
{
    struct lock_extra *e = calloc(1, sizeof(*e));

    if (e == NULL)
        rl_fail(RL_ENOMEM, "out of memory for a lock");
    return e;
}

static struct lock_extra *extra_of(const struct rl_lock *l)
{
    return atomic_load(&((struct rl_lock *)l)->extra);
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
    char *slot_name;
    rl_status st;

    if (o == NULL || o->limit == 0) {
        st = lock_new(c, resources, count, token, owner, out);
    } else {
        slot_name = malloc(len + LOCKREC_SLOT_SUFFIX_MAX);
        if (slot_name == NULL)
            return rl_fail(RL_ENOMEM, "out of memory for a lock");
        lockrec_slot_key(slot_name, resources[0], len, o->limit - 1);
        st = lock_new(c, (const char *const *)&slot_name, 1, token, owner,
                      out);
        free(slot_name);
        if (st == RL_OK)
            (*out)->rec.slot = (int32_t)(o->limit - 1);
    }
    if (st != RL_OK || o == NULL)
        return st;
    (*out)->rec.shared = o->mode == RL_MODE_SHARED;
    (*out)->rec.delay_ms = o->lock_delay_ms;
    if (o->fencing || o->reentrant || (o->auto_extend && watch_needs_extra(o))) {
        atomic_init(&(*out)->extra, extra_new());
        if (extra_of(*out) == NULL) {
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
    free(extra_of(l));
    free(l);
}

static int64_t remaining_us(const struct rl_lock *l)
{
    uint64_t deadline = atomic_load(&l->deadline_us);

    if (deadline == 0)
        return INT64_MAX;
    return (int64_t)deadline - (int64_t)mono_now_us();
}

static uint64_t margin_us(const struct rl_lock *l)
{
    uint64_t tenth = (uint64_t)atomic_load(&l->ttl_ms) * 100u;

    return tenth < 1000000u ? tenth : 1000000u;
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

/* Drop what is in flight, if anything: a round, l's place in a watchdog
 * batch, the release (their replies land on node-owned records). */
static void drop_flight(struct rl_lock *l)
{
    switch ((enum flight_kind)l->flight) {
    case FLIGHT_ROUND:
        extend_abort(l->in_flight.round);
        break;
    case FLIGHT_BATCH:
        extend_batch_drop(l->in_flight.batch, l);
        break;
    case FLIGHT_RELEASE:
        release_abort(l->in_flight.release);
        break;
    case FLIGHT_NONE:
        break;
    }
    l->flight = FLIGHT_NONE;
}

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
    drop_flight(l);
    l->user = NULL;
    l->user_waits = false;
    l->state = LOCK_LOST;
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

/* ---- Watchdog ----------------------------------------------------------- */

static bool capped(const struct rl_lock *l, rl_mono_us now)
{
    const struct lock_extra *e = extra_of(l);

    return e != NULL &&
           ((e->max_renewals != 0 && e->renewals >= e->max_renewals) ||
            (e->hold_end_us != 0 && now >= e->hold_end_us));
}

static struct rl_lock *timer_lock(struct theap_node *n)
{
    return (struct rl_lock *)((char *)n - offsetof(struct rl_lock, timer));
}

static rl_mono_us interval_us(const struct rl_lock *l)
{
    const struct lock_extra *e = extra_of(l);
    uint32_t ms = e != NULL && e->interval_ms != 0
                      ? e->interval_ms
                      : atomic_load(&l->ttl_ms) / 3;

    return (rl_mono_us)(ms != 0 ? ms : 1) * 1000u;
}

/* The watchdog's pause after a failed renewal round. */
static rl_mono_us retry_pause_us(const struct rl_lock *l)
{
    return interval_us(l) / 4 < RETRY_PAUSE_MAX_MS * 1000u
               ? interval_us(l) / 4
               : RETRY_PAUSE_MAX_MS * 1000u;
}

/* How early a renewal may go out to join a batch (renew_window_pct of
 * the interval, at most WINDOW_MAX_US): shorter than the retry pause, so
 * never twice in a tick. */
static rl_mono_us window_us(const rl_client *c, const struct rl_lock *l)
{
    rl_mono_us w = interval_us(l) * c->cfg.renew_window_pct / 100;

    return w < WINDOW_MAX_US ? w : WINDOW_MAX_US;
}

/* When the safety margin starts: past it, the lock is LOST. */
static rl_mono_us margin_at(const struct rl_lock *l)
{
    return atomic_load(&l->deadline_us) - margin_us(l);
}

/* The watchdog renews l (when its renewal is due). */
static bool renews(const struct rl_lock *l, rl_mono_us now)
{
    return l->watching && l->state == LOCK_HELD && !capped(l, now);
}

/* Arm the client's timer at the earliest event (at once when locks wait
 * for room and there is room), unless it already fires no later (an early
 * wake-up finds nothing to do). */
static void arm(struct holders *h)
{
    struct theap_node *t = theap_min(&h->timers);
    struct theap_node *w = theap_min(&h->backlog);
    rl_mono_us at = UINT64_MAX, now = mono_now_us();

    if (h->timer == NULL || (t == NULL && w == NULL))
        return;
    if (t != NULL)
        at = t->key;
    if (w != NULL && h->batches < BATCHES_MAX)
        at = now;
    else if (w != NULL && w->key < at)
        at = w->key;
    if (at == 0)
        at = 1;
    if (h->armed_at != 0 && h->armed_at <= at)
        return;
    h->armed_at = at;
    loop_timer_arm(h->timer, at > now ? at - now : 0);
}

/* The backlog grew or shrank: publish its size (rl_stats). */
static void backlog_count_changed(struct holders *h)
{
    atomic_store_explicit(h->waiting, h->backlog.count,
                          memory_order_relaxed);
}

/* Take l's timer out of whichever heap holds it (no-op when none). */
static void timer_out(struct holders *h, struct rl_lock *l)
{
    if (!l->backlogged) {
        theap_remove(&h->timers, &l->timer);
        return;
    }
    theap_remove(&h->backlog, &l->timer);
    l->backlogged = false;
    backlog_count_changed(h);
}

/* No renewal time: the lock is queued at its margin. */
#define NO_RENEWAL UINT64_MAX

/* Queue l at its next event: its renewal at renew_at when it renews (and
 * that comes before the margin), else its margin; out of the heaps when
 * not watched or lost. A timer already queued there stays where it is. */
static void schedule(struct rl_lock *l, rl_mono_us renew_at)
{
    rl_client *c = atomic_load(&l->client);
    struct holders *h = registry(c);
    rl_mono_us at = margin_at(l);

    if (!l->watching || l->state == LOCK_LOST) {
        timer_out(h, l);
        return;
    }
    if (renew_at < at && renews(l, mono_now_us()))
        at = renew_at;
    if (l->backlogged || !theap_queued(&h->timers, &l->timer) ||
        l->timer.key != at) {
        timer_out(h, l);
        theap_insert(&h->timers, &l->timer, at);
    }
    arm(h);
}

/* l is due but no batch can be started: wait for room, in margin order. */
static void backlog_put(struct holders *h, struct rl_lock *l)
{
    timer_out(h, l);
    theap_insert(&h->backlog, &l->timer, margin_at(l));
    l->backlogged = true;
    backlog_count_changed(h);
}

/* Overload is told (issue 16): the watchdog is behind when the most
 * urgent lock waiting for room is past the midpoint between its renewal's
 * due time and its margin (with a 3 s TTL: 0.83 s late of its 1.67 s of
 * slack), or one was lost waiting; it stays behind until the backlog is
 * empty. A burst waits milliseconds for room, so this means the nodes do
 * not renew the locks as fast as they fall due: new watched acquires are
 * refused (RL_EOVERLOAD) while the locks already held can still be
 * renewed, rather than adding renewals that would make them LOST. */
static bool watchdog_behind(struct holders *h, rl_mono_us now)
{
    struct theap_node *w = theap_min(&h->backlog);
    const struct rl_lock *l;
    rl_mono_us due;

    if (w == NULL) {
        h->behind = false;
        return false;
    }
    l = timer_lock(w);
    due = l->confirmed_us + interval_us(l);
    if (w->key <= due || now >= due + (w->key - due) / 2)
        h->behind = true;
    return h->behind;
}

/* The watchdog could not start a renewal (out of memory): try again after
 * the retry pause. */
static void renewal_retry(struct rl_lock *l)
{
    schedule(l, mono_now_us() + retry_pause_us(l));
}

/* Run the batch being filled (if any). */
static void flush_batch(struct extend_batch **b)
{
    if (*b != NULL)
        extend_batch_run(*b);
    *b = NULL;
}

/* A batch is over: kept for the next tick (a batch and its arguments
 * are tens of KB: allocating them each tick made the allocator return
 * and refault that memory every time), and renewals waiting for room may
 * go. */
static void batch_over(void *arg, struct extend_batch *b)
{
    struct holders *h = arg;

    h->batches--;
    h->spare[h->spares++] = b;
    arm(h);
}

/* A batch to fill: a spare one, else a new one (NULL on OOM). */
static struct extend_batch *batch_get(rl_client *c, struct holders *h)
{
    if (h->spares > 0)
        return h->spare[--h->spares];
    return extend_batch_new(c, renewed, batch_over, h);
}

/* Put l (HELD, due) into batch b: HELD -> RENEWING. */
static void batch_renewal(struct rl_lock *l, struct extend_batch *b)
{
    l->in_flight.batch = b;
    l->flight = FLIGHT_BATCH;
    extend_batch_add(b, &l->rec, atomic_load(&l->ttl_ms), l->confirmed_us,
                     &l->holders, l);
    l->state = LOCK_RENEWING;
    schedule(l, NO_RENEWAL); /* at its margin until the outcome */
}

/* A lock no batch takes (a reader, several keys; HELD, due): its own
 * round, HELD -> RENEWING. */
static void own_renewal(struct rl_lock *l)
{
    rl_client *c = atomic_load(&l->client);
    struct extend_round *round =
        extend_new(c, &l->rec, atomic_load(&l->ttl_ms), l->confirmed_us,
                   &l->holders, renewed, l);

    if (round == NULL) {
        renewal_retry(l);
        return;
    }
    l->in_flight.round = round;
    l->flight = FLIGHT_ROUND;
    l->state = LOCK_RENEWING;
    schedule(l, NO_RENEWAL);
    extend_run(round);
}

static void lose_at_margin(struct rl_lock *l)
{
    rl_fail(RL_ELOST, "'%s': no renewal succeeded before the safety margin",
            l->rec.resource);
    become_lost(l);
}

/* Renew l (HELD, due): in batch *b (a new one when *b is full or NULL)
 * or by its own round. False when it must wait: BATCHES_MAX batches are
 * alive. */
static bool renew(rl_client *c, struct holders *h, struct rl_lock *l,
                  struct extend_batch **b)
{
    if (remaining_us(l) <= 0) {
        rl_fail(RL_ELOST, "'%s': validity ran out before the extension",
                l->rec.resource);
        become_lost(l);
    } else if (!extend_batch_takes(&l->rec)) {
        own_renewal(l);
    } else {
        if (*b == NULL || extend_batch_full(*b)) {
            flush_batch(b);
            if (h->batches >= BATCHES_MAX)
                return false; /* batch_over re-arms the timer */
            *b = batch_get(c, h);
            if (*b == NULL) { /* out of memory: try again later */
                renewal_retry(l);
                return true;
            }
            h->batches++;
        }
        batch_renewal(l, *b);
    }
    return true;
}

/* The client's watchdog timer: locks past their margin are lost; locks
 * waiting for room go first; then every renewal due within the window,
 * in batches. */
static void tick(void *arg)
{
    rl_client *c = arg;
    struct holders *h = registry(c);
    rl_mono_us now = mono_now_us(), horizon = now;
    struct extend_batch *b = NULL;
    struct theap_node *n;
    struct rl_lock *l;

    h->armed_at = 0;
    while ((n = theap_min(&h->backlog)) != NULL) {
        l = timer_lock(n);
        if (n->key <= now) {
            h->behind = true;
            lose_at_margin(l);
        } else if (!renews(l, now)) {
            schedule(l, NO_RENEWAL); /* capped meanwhile: only its margin
                                        is left */
        } else if (!renew(c, h, l, &b)) {
            break;
        }
    }
    while ((n = theap_min(&h->timers)) != NULL && n->key <= horizon) {
        l = timer_lock(n);
        if (margin_at(l) <= now) {
            lose_at_margin(l);
        } else if (!renews(l, now)) {
            if (n->key > now)
                break; /* a margin ahead, inside the window */
            schedule(l, NO_RENEWAL); /* capped: only its margin is left */
        } else {
            if (horizon == now)
                horizon = now + window_us(c, l);
            if (!renew(c, h, l, &b)) {
                if (n->key > now)
                    break; /* only early renewals are left */
                backlog_put(h, l);
            }
        }
    }
    flush_batch(&b);
    arm(h);
}

static rl_status check_watch_opts(const rl_acquire_opts *o, uint32_t ttl_ms)
{
    if (o == NULL)
        return RL_OK;
    if (rl_check_reserved(o->reserved_, sizeof(o->reserved_),
                          "watchdog options") != RL_OK)
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

/* Start watching l (the client's timer exists: this cannot fail). Caps in
 * o go into l's extra block: made with the lock, or handed over in
 * *extra (then taken) by a watchdog start. */
static void watch(struct rl_lock *l, const rl_acquire_opts *o,
                  struct lock_extra **extra)
{
    rl_client *c = atomic_load(&l->client);
    rl_mono_us now = mono_now_us();
    struct lock_extra *e = extra_of(l);

    if (e == NULL && extra != NULL && *extra != NULL) {
        e = *extra;
        *extra = NULL;
        pthread_mutex_lock(&registry(c)->mutex); /* reenter() reads it */
        atomic_store(&l->extra, e);
        pthread_mutex_unlock(&registry(c)->mutex);
    }
    l->watching = true;
    if (e != NULL) {
        e->interval_ms = o->extend_interval_ms;
        e->max_renewals = o->max_renewals;
        e->renewals = 0;
        e->hold_end_us = 0;
        if (o->max_hold_ms != 0 && o->max_hold_ms != UINT64_MAX)
            e->hold_end_us = now + o->max_hold_ms * 1000u;
    }
    l->lost_cb = o->lost_cb;
    l->lost_privdata = o->lost_privdata;
    schedule(l, now + interval_us(l));
}

/* Stop watching: out of the heaps and out of a batch in flight (a user's
 * round goes on). */
static void unwatch(struct rl_lock *l)
{
    rl_client *c = atomic_load(&l->client);

    l->watching = false;
    l->lost_cb = NULL;
    if (l->flight == FLIGHT_BATCH) {
        drop_flight(l);
        if (l->state == LOCK_RENEWING)
            l->state = LOCK_HELD;
    }
    if (c != NULL)
        timer_out(registry(c), l);
}

/* The client's watchdog timer, made on first need (any thread). */
static rl_status ensure_timer(rl_client *c)
{
    struct holders *h = registry(c);
    rl_status st = RL_OK;

    pthread_mutex_lock(&h->mutex);
    if (h->timer == NULL)
        h->timer = loop_timer_new(c->loop, tick, c);
    if (h->timer == NULL)
        st = rl_fail(RL_ENOMEM, "out of memory for a watchdog");
    pthread_mutex_unlock(&h->mutex);
    return st;
}

/* ---- Renewal ------------------------------------------------------------ */

/* A round ended (l->round already freed itself). Apply the outcome: a
 * success counts only if the round started inside the validity and the
 * new validity (from the round's start) has not already run out. */
static void renewed(void *owner, rl_status st, rl_mono_us t0,
                    unsigned voters)
{
    struct rl_lock *l = owner;
    struct lock_req *user = l->user_waits ? NULL : l->user; /* the round's */
    rl_client *c = atomic_load(&l->client);
    uint32_t ttl = user != NULL ? user->ttl_ms : atomic_load(&l->ttl_ms);
    uint64_t old_deadline = atomic_load(&l->deadline_us);
    struct lock_extra *e = extra_of(l);
    rl_mono_us deadline;

    l->flight = FLIGHT_NONE;
    l->state = LOCK_HELD;
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
    schedule(l, mono_now_us() +
                    (st == RL_OK ? interval_us(l) : retry_pause_us(l)));
}

/* HELD -> RENEWING for a user extend (the watchdog renews in batches). */
static void start_renewal(struct rl_lock *l, struct lock_req *user)
{
    rl_client *c = atomic_load(&l->client);
    uint32_t ttl = user != NULL ? user->ttl_ms : atomic_load(&l->ttl_ms);

    struct extend_round *round;

    l->user = user;
    l->user_waits = false;
    if (remaining_us(l) <= 0) {
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
    l->in_flight.round = round;
    l->flight = FLIGHT_ROUND;
    l->state = LOCK_RENEWING;
    schedule(l, NO_RENEWAL); /* at its margin while renewing */
    extend_run(round);
}

/* A user extend waited behind the watchdog's renewal, which ended or was
 * dropped (watchdog stopped or restarted): start it now. */
static void resume_waiting(struct rl_lock *l)
{
    if (l->user_waits && l->state == LOCK_HELD)
        start_renewal(l, l->user);
}

/* ---- Release and free --------------------------------------------------- */

/* Drop what is in flight on l (a user request still attached to it ends
 * with RL_ECANCELED: `why`), stop its watchdog. */
static void drop_all(struct rl_lock *l, const char *why)
{
    struct lock_req *user = l->user;

    drop_flight(l);
    unwatch(l);
    l->user = NULL;
    l->user_waits = false;
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

    l->flight = FLIGHT_NONE;
    l->user = NULL;
    lock_free_now(l);
    req_finish(r, st, NULL);
}

/* HELD, RENEWING or LOST -> RELEASING: drop the renewal in flight, then
 * compare-and-delete on every node. */
static void start_release(struct rl_lock *l, struct lock_req *r)
{
    rl_client *c = atomic_load(&l->client);
    bool expired = remaining_us(l) <= 0;
    struct release_round *release;

    drop_all(l, "released while extending");
    release = release_new(c, &l->rec, expired, released, l);
    if (release == NULL) {
        lock_free_now(l);
        req_finish(r, RL_ENOMEM, NULL);
        return;
    }
    l->in_flight.release = release;
    l->flight = FLIGHT_RELEASE;
    l->state = LOCK_RELEASING;
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
    l->state = LOCK_HELD;
    if (extra_of(l) != NULL) { /* made for these options */
        extra_of(l)->fence = g->fence;
        if (r->opts.reentrant) {
            extra_of(l)->owner = r->caller;
            extra_of(l)->holds = 1;
        }
    }
    registry_add(c, l);
    if (r->opts.auto_extend) {
        atomic_store(&l->watched, true);
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
    } else if (r->opts.auto_extend && watchdog_behind(h, mono_now_us())) {
        st = rl_fail(RL_EOVERLOAD,
                     "'%s' not acquired: the watchdog is behind (%zu "
                     "renewals wait for the nodes, the most urgent late "
                     "by half its slack); hold fewer watched locks, use "
                     "longer TTLs or faster nodes",
                     l->rec.resource, h->backlog.count);
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
        } else if (l->state == LOCK_RENEWING) {
            l->user = r; /* after the watchdog's renewal */
            l->user_waits = true;
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
        if (l->state == LOCK_HELD || l->state == LOCK_RENEWING) {
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
        if (l->user == r && !l->user_waits) {
            drop_flight(l);
            l->state = LOCK_HELD;
        }
        if (l->user == r) {
            l->user = NULL;
            l->user_waits = false;
            schedule(l, mono_now_us());
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
    for (l = h->head; l != NULL; l = l->next) {
        e = extra_of(l);
        if (e != NULL && e->holds > 0 && pthread_equal(e->owner, self) &&
            same_resource(c, l, resource) && !atomic_load(&l->lost) &&
            remaining_us(l) > 0)
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
    e = extra_of(l);
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
    if (extra_of(l) != NULL)
        extra_of(l)->holds = was;
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
    if (r->opts.auto_extend && ensure_timer(c) != RL_OK) {
        req_free(r);
        lock_destroy(l);
        return RL_ENOMEM;
    }
    st = submit(r);
    if (st != RL_OK)
        lock_destroy(l);
    return st;
}

/* Pin l's client: with orphan_mutex held it cannot be orphaned (and so
 * not freed) under us. NULL, with the mutex released, once orphaned. */
static rl_client *pin_client(struct rl_lock *l)
{
    rl_client *c;

    pthread_mutex_lock(&orphan_mutex);
    c = atomic_load(&l->client);
    if (c == NULL)
        pthread_mutex_unlock(&orphan_mutex);
    return c;
}

static void unpin_client(void)
{
    pthread_mutex_unlock(&orphan_mutex);
}

/* Before a handle is given up (release, free, watchdog stop): no lost
 * callback may start after this returns, and one running on the loop
 * thread is waited for -- the caller may free what lost_privdata points
 * to next. Not needed on the loop's own thread, where the callback is
 * either below us on the stack or not running. */
static void silence(struct rl_lock *l)
{
    rl_client *c = pin_client(l);
    bool wait;

    if (c == NULL)
        return;
    wait = loop_is_owned(c->loop) && !loop_on_thread(c->loop);
    unpin_client();
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
    rl_client *c = pin_client(l);
    rl_status st;

    if (c == NULL)
        return orphaned();
    st = blocking != NULL ? waiter_check(c->loop, blocking) : RL_OK;
    if (st == RL_OK)
        st = loop_submit(c->loop, op);
    unpin_client();
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

rl_status holder_extend(rl_lock *l, uint32_t ttl_ms, rl_extend_cb cb,
                        void *privdata, const char *blocking)
{
    struct lock_req *r;
    rl_client *c;
    rl_status st;
    uint32_t ttl;

    if (l == NULL)
        return rl_fail(RL_EINVAL, "lock is NULL");
    if (cb == NULL)
        return rl_fail(RL_EINVAL, "callback is NULL");
    c = pin_client(l);
    if (c == NULL)
        return orphaned();
    st = blocking != NULL ? waiter_check(c->loop, blocking) : RL_OK;
    if (st == RL_OK)
        st = config_effective_ttl(
            &c->cfg, ttl_ms != 0 ? ttl_ms : atomic_load(&l->ttl_ms), &ttl);
    if (st == RL_OK && l->rec.delay_ms > c->cfg.max_ttl_ms - ttl)
        st = rl_fail(RL_EINVAL,
                     "ttl_ms %u + the lock-delay %u is above max_ttl_ms %u",
                     ttl, l->rec.delay_ms, c->cfg.max_ttl_ms);
    if (st == RL_OK && atomic_exchange(&l->user_extending, true))
        st = rl_fail(RL_EMISUSE, "'%s': an extend is already in flight",
                     l->rec.resource);
    else if (st == RL_OK) {
        r = req_new(c, REQ_EXTEND, l, privdata);
        st = r != NULL ? RL_OK : RL_ENOMEM;
        if (r != NULL) {
            r->extend_cb = cb;
            r->ttl_ms = ttl;
            st = submit(r);
        }
        if (st != RL_OK)
            atomic_store(&l->user_extending, false);
    }
    unpin_client();
    return st;
}

rl_status holder_release(rl_lock *l, rl_release_cb cb, void *privdata,
                         const char *blocking)
{
    struct lock_req *r;
    rl_client *c;
    rl_status st;
    unsigned was;

    if (l == NULL)
        return rl_fail(RL_EINVAL, "lock is NULL");
    c = pin_client(l);
    if (c == NULL)
        return orphaned();
    st = blocking != NULL ? waiter_check(c->loop, blocking) : RL_OK;
    if (st != RL_OK) {
        unpin_client();
        return st;
    }
    if (drop_hold(c, l, &was)) {
        st = queue_reentry(c, l, NULL, cb, privdata);
        if (st != RL_OK)
            restore_hold(c, l, was);
        unpin_client();
        return st;
    }
    unpin_client();
    silence(l);
    c = pin_client(l);
    if (c == NULL)
        return orphaned();
    r = req_new(c, REQ_RELEASE, l, privdata);
    st = r != NULL ? RL_OK : RL_ENOMEM;
    if (r != NULL) {
        r->release_cb = cb;
        st = submit(r);
    }
    if (st != RL_OK) {
        restore_hold(c, l, was);
        atomic_store(&l->quiet, false);
    }
    unpin_client();
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
    c = pin_client(l);
    if (c == NULL) { /* orphaned: nothing else refers to it */
        lock_destroy(l);
        return;
    }
    /* A renewal may be running on the loop thread: free it there. If that
     * cannot be queued (the client is being freed, or out of memory), the
     * client's shutdown frees it. */
    r = req_new(c, REQ_FREE, l, NULL);
    if (r == NULL || submit(r) != RL_OK)
        atomic_store(&l->free_requested, true);
    unpin_client();
}

rl_status rl_lock_adopt(rl_client *c, const char *resource, const char *token,
                        rl_lock **out)
{
    return rl_lock_adopt_opts(c, resource, token, NULL, out);
}

/* What rl_lock_adopt_opts takes from o: the mode and the lock-delay. */
static rl_status check_adopt_opts(rl_client *c, const rl_acquire_opts *o)
{
    if (o->reserved32_ != 0 ||
        rl_check_reserved(o->reserved_, sizeof(o->reserved_),
                          "adopt options") != RL_OK)
        return rl_fail(RL_EINVAL, "adopt options: reserved bytes are not "
                       "zero (built against a newer redlock.h?)");
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
    l->state = LOCK_HELD;
    registry_add(c, l);
    *out = l;
    return RL_OK;
}

rl_status rl_watchdog_start(rl_lock *l, const rl_acquire_opts *o)
{
    static const rl_acquire_opts defaults;
    struct lock_req *r;
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
    c = pin_client(l);
    if (c == NULL)
        return orphaned();
    if (atomic_exchange(&l->watched, true)) {
        unpin_client();
        return rl_fail(RL_EMISUSE, "'%s': the watchdog is already running",
                       l->rec.resource);
    }
    r = req_new(c, REQ_WATCH, l, NULL);
    st = r != NULL ? RL_OK : RL_ENOMEM;
    if (r != NULL) {
        r->opts = o != NULL ? *o : defaults;
        /* Caps need the extra block: made here, where failing is allowed
         * (the loop thread keeps it if l has none). */
        if (watch_needs_extra(&r->opts) && (r->extra = extra_new()) == NULL)
            st = RL_ENOMEM;
        if (st == RL_OK)
            st = ensure_timer(c);
        if (st != RL_OK)
            req_free(r);
        else
            st = submit(r);
    }
    if (st != RL_OK)
        atomic_store(&l->watched, false);
    unpin_client();
    return st;
}

void rl_watchdog_stop(rl_lock *l)
{
    struct lock_req *r;
    rl_client *c;

    if (l == NULL || !atomic_exchange(&l->watched, false))
        return;
    silence(l);
    c = pin_client(l);
    if (c == NULL)
        return;
    r = req_new(c, REQ_UNWATCH, l, NULL);
    if (r == NULL || submit(r) != RL_OK) {
        atomic_store(&l->watched, true);
        atomic_store(&l->quiet, false);
    }
    unpin_client();
}

/* ---- Registry lifecycle ------------------------------------------------- */

rl_status holders_new(rl_client *c)
{
    c->holders = calloc(1, sizeof(*c->holders));
    if (c->holders == NULL)
        return rl_fail(RL_ENOMEM, "out of memory for the client");
    pthread_mutex_init(&c->holders->mutex, NULL);
    c->holders->waiting = &c->stats[STAT_RENEWALS_WAITING];
    return RL_OK;
}

void holders_shutdown(rl_client *c)
{
    struct holders *h = registry(c);
    struct rl_lock *l, *next;

    pthread_mutex_lock(&orphan_mutex);
    pthread_mutex_lock(&h->mutex);
    for (l = h->head; l != NULL; l = next) {
        next = l->next;
        drop_flight(l);
        if (l->state == LOCK_RENEWING)
            l->state = LOCK_HELD;
        unwatch(l);
        l->prev = l->next = NULL;
        if (atomic_load(&l->free_requested))
            lock_destroy(l);
        else
            atomic_store(&l->client, NULL);
    }
    h->head = NULL;
    loop_timer_free(h->timer);
    h->timer = NULL;
    h->armed_at = 0;
    pthread_mutex_unlock(&h->mutex);
    pthread_mutex_unlock(&orphan_mutex);
}

void holders_free(rl_client *c)
{
    if (c->holders == NULL)
        return;
    loop_timer_free(c->holders->timer); /* made after the shutdown: idle */
    while (c->holders->spares > 0)
        extend_batch_free(c->holders->spare[--c->holders->spares]);
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
    us = remaining_us(l);
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
    return l != NULL && extra_of(l) != NULL ? extra_of(l)->fence : 0;
}
