/* SPDX-License-Identifier: BSD-3-Clause */
/* watchdog.c -- a client's watchdog: one timer for all its watched locks,
 * each with one intrusive heap node, queued in one of two heaps.
 *
 * `timers` holds a lock at its next event: the next renewal when it is
 * HELD and renewals go on, else (a round in flight, or a cap reached) the
 * start of its safety margin (validity end - min(ttl/10, 1 s)); a renewal
 * due after the margin start is queued at the margin. When the timer
 * fires, locks past their margin become LOST (once the replies already
 * received are read: one may renew them); then every lock due by now
 * + the coalescing window is renewed in batches (extend.c). The window is
 * the first due lock's min(interval x renew_window_pct, 100 ms): renewals
 * go out that much early (counted: STAT_RENEWALS_EARLY; none with a
 * window of 0), never late, and the window is shorter than both
 * the interval and the retry pause, so a tick never renews a lock twice.
 *
 * At most BATCHES_MAX batches are alive at once (flow control): a lock
 * due when no batch can be started waits in `backlog`, ordered by its
 * margin start, and goes first when a batch is over. Its margin still
 * runs there, so nodes that cannot keep up make locks LOST in time, never
 * a silent lapse, and the timer never spins on them. A batched lock is
 * queued at its margin: a batch that cannot finish before the margin
 * never keeps its locks alive. Batches that are over are kept for reuse.
 *
 * Batches take one-key locks; a reader or a lock on several resources is
 * renewed by a round of its own, so each one's fate stays its own. Every
 * outcome goes to the holder's renewed(), as a user's round does. */
#include <stddef.h>

#include "abi.h"
#include "watchdog.h"

/* The renewals' grid (renewal_at). */
#define RENEW_GRID_US 1000000u
#define RENEW_GRID_MIN_US (8 * RENEW_GRID_US)

/* Largest max_hold_ms that is not "no cap" (a century). */
#define MAX_HOLD_MS (UINT64_C(100) * 365 * 24 * 3600 * 1000)

#define RETRY_PAUSE_MAX_MS 200 /* pause after a failed renewal round */
#define WINDOW_MAX_US 100000   /* coalescing window: at most 100 ms */
/* Batches alive at once: bounds the work queued on each node, so a burst
 * of renewals never makes a node miss op_timeout_ms. */
#define BATCHES_MAX 4
/* No renewal time: the lock is queued at its margin. */
#define NO_RENEWAL UINT64_MAX

struct watchdog {
    rl_client *client;
    extend_done_fn *renewed;
    watchdog_lose_fn *lose;
    pthread_mutex_t mutex;       /* guards making and freeing the timer */
    struct loop_timer *timer;    /* made by the first watch that needs it */
    rl_mono_us armed_at;         /* when the timer fires; 0 not armed */
    struct theap timers;         /* watched locks: next event */
    struct theap backlog;        /* due, waiting for room: margin start */
    unsigned batches;            /* batches alive */
    bool behind;                 /* overloaded until the backlog empties:
                                    see watchdog_behind() */
    unsigned spares;             /* batches over, kept for reuse */
    struct extend_batch *spare[BATCHES_MAX];
};

static void tick(void *arg);

struct watchdog *watchdog_new(rl_client *c, extend_done_fn *renewed,
                              watchdog_lose_fn *lose)
{
    struct watchdog *w = calloc(1, sizeof(*w));

    if (w == NULL)
        return NULL;
    w->client = c;
    w->renewed = renewed;
    w->lose = lose;
    pthread_mutex_init(&w->mutex, NULL);
    return w;
}

void watchdog_free(struct watchdog *w)
{
    if (w == NULL)
        return;
    loop_timer_free(w->timer); /* made after the stop: idle */
    while (w->spares > 0)
        extend_batch_free(w->spare[--w->spares]);
    pthread_mutex_destroy(&w->mutex);
    free(w);
}

rl_status watchdog_start(struct watchdog *w)
{
    rl_status st = RL_OK;

    pthread_mutex_lock(&w->mutex);
    if (w->timer == NULL)
        w->timer = loop_timer_new(w->client->loop, tick, w);
    if (w->timer == NULL)
        st = rl_fail(RL_ENOMEM, "out of memory for a watchdog");
    pthread_mutex_unlock(&w->mutex);
    return st;
}

void watchdog_stop(struct watchdog *w)
{
    pthread_mutex_lock(&w->mutex);
    loop_timer_free(w->timer);
    w->timer = NULL;
    w->armed_at = 0;
    pthread_mutex_unlock(&w->mutex);
}

/* ---- One lock's times ----------------------------------------------------- */

static bool capped(const struct rl_lock *l, rl_mono_us now)
{
    const struct lock_extra *e = lock_extra_of(l);

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
    const struct lock_extra *e = lock_extra_of(l);
    uint32_t ms = e != NULL && e->interval_ms != 0
                      ? e->interval_ms
                      : atomic_load(&l->ttl_ms) / 3;

    return (rl_mono_us)(ms != 0 ? ms : 1) * 1000u;
}

/* A renewal's time when the last one was confirmed at now. Intervals of
 * RENEW_GRID_MIN_US or more end at an instant of a grid of the wall
 * clock, one a second and the same for every client: the renewals of a
 * fleet's long-lived holders that fall in one second reach a node
 * together, and it serves them in about one wake-up, as it serves their
 * node checks (docs/idle-cost.md). A renewal goes out up to a second
 * early (an eighth of the interval at most), never late: a wall clock
 * that jumps moves it within that second. */
static rl_mono_us renewal_at(const struct rl_lock *l, rl_mono_us now)
{
    rl_mono_us iv = interval_us(l);

    if (iv < RENEW_GRID_MIN_US)
        return now + iv;
    return now + iv - (wall_now_us() + iv) % RENEW_GRID_US;
}

/* The pause after a failed renewal round. */
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

static uint64_t margin_us(const struct rl_lock *l)
{
    uint64_t tenth = (uint64_t)atomic_load(&l->ttl_ms) * 100u;

    return tenth < 1000000u ? tenth : 1000000u;
}

/* When the safety margin starts: past it, the lock is LOST. */
static rl_mono_us margin_at(const struct rl_lock *l)
{
    return atomic_load(&l->deadline_us) - margin_us(l);
}

/* The watchdog renews l (when its renewal is due). */
static bool renews(const struct rl_lock *l, rl_mono_us now)
{
    return lock_has(l, LOCK_WATCHED) && l->state == LOCK_HELD &&
           !capped(l, now);
}

/* ---- The heaps and the timer ------------------------------------------- */

/* Arm the timer at the earliest event (at once when locks wait for room
 * and there is room), unless it already fires no later (an early wake-up
 * finds nothing to do). */
static void arm(struct watchdog *w)
{
    struct theap_node *t = theap_min(&w->timers);
    struct theap_node *b = theap_min(&w->backlog);
    rl_mono_us at = UINT64_MAX, now = mono_now_us();

    if (w->timer == NULL || (t == NULL && b == NULL))
        return;
    if (t != NULL)
        at = t->key;
    if (b != NULL && w->batches < BATCHES_MAX)
        at = now;
    else if (b != NULL && b->key < at)
        at = b->key;
    if (at == 0)
        at = 1;
    if (w->armed_at != 0 && w->armed_at <= at)
        return;
    w->armed_at = at;
    loop_timer_arm(w->timer, at > now ? at - now : 0);
}

/* The backlog grew or shrank: publish its size (rl_stats). */
static void backlog_count_changed(struct watchdog *w)
{
    atomic_store_explicit(&w->client->stats[STAT_RENEWALS_WAITING],
                          w->backlog.count, memory_order_relaxed);
}

/* Take l's timer out of whichever heap holds it (no-op when none). */
static void timer_out(struct watchdog *w, struct rl_lock *l)
{
    if (!lock_has(l, LOCK_BACKLOGGED)) {
        theap_remove(&w->timers, &l->timer);
        return;
    }
    theap_remove(&w->backlog, &l->timer);
    lock_put(l, LOCK_BACKLOGGED, false);
    backlog_count_changed(w);
}

/* Queue l at its next event: its renewal at renew_at when it renews (and
 * that comes before the margin), else its margin; out of the heaps when
 * not watched or lost. A timer already queued there stays where it is. */
static void schedule(struct watchdog *w, struct rl_lock *l,
                     rl_mono_us renew_at)
{
    rl_mono_us at = margin_at(l);

    if (!lock_has(l, LOCK_WATCHED) || l->state == LOCK_LOST) {
        timer_out(w, l);
        return;
    }
    if (renew_at < at && renews(l, mono_now_us()))
        at = renew_at;
    if (lock_has(l, LOCK_BACKLOGGED) ||
        !theap_queued(&w->timers, &l->timer) || l->timer.key != at) {
        timer_out(w, l);
        theap_insert(&w->timers, &l->timer, at);
    }
    arm(w);
}

/* l is due but no batch can be started: wait for room, in margin order. */
static void backlog_put(struct watchdog *w, struct rl_lock *l)
{
    timer_out(w, l);
    theap_insert(&w->backlog, &l->timer, margin_at(l));
    lock_put(l, LOCK_BACKLOGGED, true);
    backlog_count_changed(w);
}

/* Overload is told: the watchdog is behind when the most urgent lock
 * waiting for room is past the midpoint between its renewal's due time
 * and its margin, or one was lost waiting; it stays behind until the
 * backlog is empty. A burst waits milliseconds for room, so this means
 * the nodes do not renew the locks as fast as they fall due: new watched
 * acquires are refused while the locks already held can still be renewed,
 * rather than adding renewals that would make them LOST. */
bool watchdog_behind(struct watchdog *w, rl_mono_us now)
{
    struct theap_node *b = theap_min(&w->backlog);
    const struct rl_lock *l;
    rl_mono_us due;

    if (b == NULL) {
        w->behind = false;
        return false;
    }
    l = timer_lock(b);
    due = l->confirmed_us + interval_us(l);
    if (b->key <= due || now >= due + (b->key - due) / 2)
        w->behind = true;
    return w->behind;
}

size_t watchdog_backlog(const struct watchdog *w)
{
    return w->backlog.count;
}

/* ---- Renewals ------------------------------------------------------------- */

/* A renewal could not be started (out of memory): again after the retry
 * pause. */
static void renewal_retry(struct watchdog *w, struct rl_lock *l)
{
    schedule(w, l, mono_now_us() + retry_pause_us(l));
}

/* Run the batch being filled (if any). */
static void flush_batch(struct extend_batch **b)
{
    if (*b != NULL)
        extend_batch_run(*b);
    *b = NULL;
}

/* A batch is over: kept for the next tick (a batch and its arguments are
 * large; allocating them each tick makes the allocator return and refault
 * that memory every time), and renewals waiting for room may go. */
static void batch_over(void *arg, struct extend_batch *b)
{
    struct watchdog *w = arg;

    w->batches--;
    w->spare[w->spares++] = b;
    arm(w);
}

/* A batch to fill: a spare one, else a new one (NULL on OOM). */
static struct extend_batch *batch_get(struct watchdog *w)
{
    if (w->spares > 0)
        return w->spare[--w->spares];
    return extend_batch_new(w->client, w->renewed, batch_over, w);
}

/* Put l (HELD, due) into batch b. */
static void batch_renewal(struct watchdog *w, struct rl_lock *l,
                          struct extend_batch *b)
{
    extend_batch_add(b, &l->rec, atomic_load(&l->ttl_ms), l->confirmed_us,
                     &l->holders, l);
    lock_set_state(l, LOCK_BATCHED, b);
    schedule(w, l, NO_RENEWAL); /* at its margin until the outcome */
}

/* A lock no batch takes (a reader, several keys; HELD, due): its own
 * round. */
static void own_renewal(struct watchdog *w, struct rl_lock *l)
{
    struct extend_round *round =
        extend_new(w->client, &l->rec, atomic_load(&l->ttl_ms),
                   l->confirmed_us, &l->holders, w->renewed, l);

    if (round == NULL) {
        renewal_retry(w, l);
        return;
    }
    lock_set_state(l, LOCK_RENEWING, round);
    schedule(w, l, NO_RENEWAL);
    extend_run(round);
}

static void lose_at_margin(struct watchdog *w, struct rl_lock *l)
{
    rl_fail(RL_ELOST, "'%s': no renewal succeeded before the safety margin",
            l->rec.resource);
    w->lose(l);
}

/* Renew l (HELD, due): in batch *b (a new one when *b is full or NULL)
 * or by its own round. False when it must wait: BATCHES_MAX batches are
 * alive. */
static bool renew(struct watchdog *w, struct rl_lock *l,
                  struct extend_batch **b)
{
    if (lock_remaining_us(l) <= 0) {
        rl_fail(RL_ELOST, "'%s': validity ran out before the extension",
                l->rec.resource);
        w->lose(l);
    } else if (!extend_batch_takes(&l->rec)) {
        own_renewal(w, l);
    } else {
        if (*b == NULL || extend_batch_full(*b)) {
            flush_batch(b);
            if (w->batches >= BATCHES_MAX)
                return false; /* batch_over re-arms the timer */
            *b = batch_get(w);
            if (*b == NULL) { /* out of memory: try again later */
                renewal_retry(w, l);
                return true;
            }
            w->batches++;
        }
        batch_renewal(w, l, *b);
    }
    return true;
}

/* A lock is past its margin: unless done already this tick (*read), read
 * the replies the nodes' sockets already hold first -- this timer runs
 * before them when both are due in one loop iteration (a loop thread
 * kept off the CPU past the margin), and one may renew the lock. True
 * when they were read now: look at the lock again. */
static bool replies_first(struct watchdog *w, bool *read)
{
    size_t i;

    if (*read)
        return false;
    *read = true;
    for (i = 0; i < w->client->node_count; i++)
        (void)node_read_now(w->client->nodes[i]);
    return true;
}

/* The timer: locks past their margin are lost (after the replies already
 * received); locks waiting for room go first; then every renewal due
 * within the window, in batches. */
static void tick(void *arg)
{
    struct watchdog *w = arg;
    rl_mono_us now = mono_now_us(), horizon = now;
    struct extend_batch *b = NULL;
    struct theap_node *n;
    struct rl_lock *l;
    bool read = false;

    w->armed_at = 0;
    while ((n = theap_min(&w->backlog)) != NULL) {
        l = timer_lock(n);
        if (n->key <= now && replies_first(w, &read)) {
            continue;
        } else if (n->key <= now) {
            w->behind = true;
            lose_at_margin(w, l);
        } else if (!renews(l, now)) {
            schedule(w, l, NO_RENEWAL); /* capped meanwhile: only its
                                           margin is left */
        } else if (!renew(w, l, &b)) {
            break;
        }
    }
    while ((n = theap_min(&w->timers)) != NULL && n->key <= horizon) {
        l = timer_lock(n);
        if (margin_at(l) <= now && replies_first(w, &read)) {
            continue;
        } else if (margin_at(l) <= now) {
            lose_at_margin(w, l);
        } else if (!renews(l, now)) {
            if (n->key > now)
                break; /* a margin ahead, inside the window */
            schedule(w, l, NO_RENEWAL); /* capped: only its margin is
                                           left */
        } else {
            bool early = n->key > now;

            if (horizon == now)
                horizon = now + window_us(w->client, l);
            if (!renew(w, l, &b)) {
                if (early)
                    break; /* only early renewals are left */
                backlog_put(w, l);
            } else if (early && lock_state_in_flight(l->state)) {
                client_count(w->client, STAT_RENEWALS_EARLY);
            }
        }
    }
    flush_batch(&b);
    arm(w);
}

/* ---- Watching ----------------------------------------------------------- */

rl_status watchdog_check_opts(const rl_acquire_opts *o, uint32_t ttl_ms)
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

bool watchdog_needs_extra(const rl_acquire_opts *o)
{
    return o->max_renewals != 0 || o->extend_interval_ms != 0 ||
           (o->max_hold_ms != 0 && o->max_hold_ms != UINT64_MAX);
}

void watchdog_watch(struct watchdog *w, struct rl_lock *l,
                    const rl_acquire_opts *o)
{
    rl_mono_us now = mono_now_us();
    struct lock_extra *e = lock_extra_of(l);

    lock_put(l, LOCK_WATCHED, true);
    if (e != NULL) {
        e->interval_ms = o->extend_interval_ms;
        e->max_renewals = o->max_renewals;
        e->renewals = 0;
        e->hold_end_us = 0;
        if (o->max_hold_ms != 0 && o->max_hold_ms != UINT64_MAX)
            e->hold_end_us = now + o->max_hold_ms * 1000u;
    }
    schedule(w, l, renewal_at(l, now));
}

void watchdog_unwatch(struct watchdog *w, struct rl_lock *l)
{
    lock_put(l, LOCK_WATCHED, false);
    if (l->state == LOCK_BATCHED)
        lock_drop_flight(l);
    if (w != NULL)
        timer_out(w, l);
}

void watchdog_renewed(struct watchdog *w, struct rl_lock *l, bool ok)
{
    rl_mono_us now = mono_now_us();

    schedule(w, l, ok ? renewal_at(l, now) : now + retry_pause_us(l));
}

void watchdog_renew_now(struct watchdog *w, struct rl_lock *l)
{
    schedule(w, l, mono_now_us());
}

void watchdog_at_margin(struct watchdog *w, struct rl_lock *l)
{
    schedule(w, l, NO_RENEWAL);
}
