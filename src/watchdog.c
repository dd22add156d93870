/* watchdog.c -- keep a lock held by re-quorum renewal, and say so the
 * moment it is lost (DESIGN §5.4, guarantee §2.4 "no silent loss").
 *
 * A watchdog belongs to one lock and lives on the loop thread. One timer
 * wakes it at the earlier of two instants:
 *   - the next renewal (every interval, default ttl/3; after a failed
 *     round, again after a short pause while validity remains);
 *   - the safety margin before the validity ends (min(ttl/10, 1 s)).
 * A renewal is an ordinary extend (touch-only, round started inside the
 * validity, new validity from the round's start). When an extend answers
 * RL_ELOST, or the margin is reached without a successful renewal, the
 * lock is LOST: flag set, eventfd readable, lost callback called once --
 * all while validity still remains, so the holder can stop in time.
 * Caps (max renewals, max hold time) stop renewing a runaway holder; its
 * lock then runs out and is reported lost at the margin like any other.
 *
 * Lifetime: detached by release, rl_lock_free, rl_watchdog_stop and client
 * shutdown. If an extend is in flight when it is detached, its callback
 * (which always comes: ECANCELED at worst) frees the watchdog. */
#include <string.h>

#include "watchdog.h"

#define RETRY_PAUSE_MAX_MS 200 /* pause after a failed renewal round */

struct watchdog {
    struct rl_lock *lock;
    struct loop_timer *timer;
    uint32_t interval_ms;
    uint32_t max_renewals;       /* 0: no cap */
    uint32_t renewals;
    rl_mono_us hold_end_us;      /* stop renewing after this; 0: no cap */
    rl_mono_us next_renewal_us;  /* boottime */
    rl_lost_cb lost_cb;
    void *privdata;
    bool in_flight;              /* an extend is running */
    bool detached;               /* free when the extend comes back */
};

static void tick(void *arg);

static uint64_t margin_us(const struct rl_lock *l)
{
    uint64_t tenth = (uint64_t)l->ttl_ms * 100u;

    return tenth < 1000000u ? tenth : 1000000u;
}

static bool capped(const struct watchdog *w, rl_mono_us now)
{
    return (w->max_renewals != 0 && w->renewals >= w->max_renewals) ||
           (w->hold_end_us != 0 && now >= w->hold_end_us);
}

static void report_lost(struct watchdog *w)
{
    rl_lost_cb cb = w->lost_cb;

    loop_timer_stop(w->timer);
    if (lock_mark_lost(w->lock))
        client_count(w->lock->client, STAT_LOST);
    w->lost_cb = NULL; /* once */
    if (cb != NULL)
        cb(w->lock, w->privdata);
}

/* Arm the timer for the next renewal or the margin, whichever is first. */
static void schedule(struct watchdog *w)
{
    rl_mono_us now = mono_now_us();
    uint64_t deadline = atomic_load(&w->lock->deadline_us);
    rl_mono_us wake = deadline - margin_us(w->lock);

    if (!w->in_flight && !capped(w, now) && w->next_renewal_us < wake)
        wake = w->next_renewal_us;
    loop_timer_arm(w->timer, wake > now ? wake - now : 0);
}

static void extended(rl_lock *l, rl_status st, void *privdata)
{
    struct watchdog *w = privdata;
    rl_mono_us now = mono_now_us();
    uint32_t pause_ms;

    RL_UNUSED(l);
    w->in_flight = false;
    if (w->detached) {
        loop_timer_free(w->timer);
        free(w);
        return;
    }
    if (st == RL_ELOST) {
        report_lost(w);
        return;
    }
    if (st == RL_OK) {
        w->renewals++;
        w->next_renewal_us = now + (rl_mono_us)w->interval_ms * 1000u;
    } else {
        pause_ms = w->interval_ms / 4 < RETRY_PAUSE_MAX_MS
                       ? w->interval_ms / 4
                       : RETRY_PAUSE_MAX_MS;
        w->next_renewal_us = now + (rl_mono_us)pause_ms * 1000u;
    }
    schedule(w);
}

static void tick(void *arg)
{
    struct watchdog *w = arg;
    struct rl_lock *l = w->lock;
    rl_mono_us now = mono_now_us();

    if (atomic_load(&l->lost) ||
        lock_remaining_us(l) <= (int64_t)margin_us(l)) {
        report_lost(w);
        return;
    }
    if (!w->in_flight && !capped(w, now) && now >= w->next_renewal_us) {
        if (rl_extend_async(l, l->ttl_ms, extended, w) == RL_OK)
            w->in_flight = true;
        else /* the caller's own extend is running: look again soon */
            w->next_renewal_us = now + 10000u;
    }
    schedule(w);
}

rl_status watchdog_check_opts(const rl_acquire_opts *o, uint32_t ttl_ms)
{
    if (o != NULL && o->extend_interval_ms > ttl_ms / 2)
        return rl_fail(RL_EINVAL,
                       "extend_interval_ms %u must be at most half the "
                       "ttl (%u ms)",
                       o->extend_interval_ms, ttl_ms);
    return RL_OK;
}

rl_status watchdog_attach(struct rl_lock *l, const rl_acquire_opts *o)
{
    struct watchdog *w = calloc(1, sizeof(*w));
    rl_mono_us now = mono_now_us();

    if (w == NULL)
        return rl_fail(RL_ENOMEM, "out of memory for a watchdog");
    w->timer = loop_timer_new(l->client, tick, w);
    if (w->timer == NULL) {
        free(w);
        return rl_fail(RL_ENOMEM, "out of memory for a watchdog");
    }
    w->lock = l;
    w->interval_ms = o != NULL && o->extend_interval_ms != 0
                         ? o->extend_interval_ms
                         : l->ttl_ms / 3;
    if (w->interval_ms == 0)
        w->interval_ms = 1;
    w->max_renewals = o != NULL ? o->max_renewals : 0;
    if (o != NULL && o->max_hold_ms != 0)
        w->hold_end_us = now + o->max_hold_ms * 1000u;
    w->lost_cb = o != NULL ? o->lost_cb : NULL;
    w->privdata = o != NULL ? o->lost_privdata : NULL;
    w->next_renewal_us = now + (rl_mono_us)w->interval_ms * 1000u;
    l->watchdog = w;
    schedule(w);
    return RL_OK;
}

void watchdog_detach(struct rl_lock *l)
{
    struct watchdog *w = l->watchdog;

    if (w == NULL)
        return;
    l->watchdog = NULL;
    atomic_store(&l->watched, false);
    loop_timer_stop(w->timer);
    if (w->in_flight) {
        w->detached = true;
        return;
    }
    loop_timer_free(w->timer);
    free(w);
}

/* ---- Public start/stop: handed to the loop thread ----------------------- */

struct watchdog_op {
    struct op base;
    struct rl_lock *lock;
    bool stop;
    rl_acquire_opts opts;
};

static void watchdog_op_run(struct op *base)
{
    struct watchdog_op *op = (struct watchdog_op *)base;

    if (op->stop)
        watchdog_detach(op->lock);
    else if (watchdog_attach(op->lock, &op->opts) != RL_OK)
        atomic_store(&op->lock->watched, false);
    if (op->base.started)
        client_op_finished(op->base.client, &op->base);
    free(op);
}

static void watchdog_op_cancel(struct op *base)
{
    struct watchdog_op *op = (struct watchdog_op *)base;

    if (op->base.started)
        client_op_finished(op->base.client, &op->base);
    free(op);
}

static rl_status submit(struct rl_lock *l, bool stop,
                        const rl_acquire_opts *o)
{
    struct watchdog_op *op = calloc(1, sizeof(*op));
    rl_status st;

    if (op == NULL)
        return rl_fail(RL_ENOMEM, "out of memory for a watchdog");
    op->base.client = l->client;
    op->base.start = watchdog_op_run;
    op->base.cancel = watchdog_op_cancel;
    op->lock = l;
    op->stop = stop;
    if (o != NULL)
        op->opts = *o;
    st = client_submit(l->client, &op->base);
    if (st != RL_OK)
        free(op);
    return st;
}

rl_status rl_watchdog_start(rl_lock *l, const rl_acquire_opts *o)
{
    rl_status st;

    if (l == NULL)
        return rl_fail(RL_EINVAL, "lock is NULL");
    if (l->client == NULL)
        return rl_fail(RL_EMISUSE, "the lock's client was freed");
    if (l->ttl_ms == 0)
        return rl_fail(RL_EMISUSE,
                       "'%s': adopted lock has no known TTL; extend it first",
                       l->resource);
    st = watchdog_check_opts(o, l->ttl_ms);
    if (st != RL_OK)
        return st;
    if (atomic_exchange(&l->watched, true))
        return rl_fail(RL_EMISUSE, "'%s': the watchdog is already running",
                       l->resource);
    st = submit(l, false, o);
    if (st != RL_OK)
        atomic_store(&l->watched, false);
    return st;
}

void rl_watchdog_stop(rl_lock *l)
{
    if (l == NULL || l->client == NULL || !atomic_load(&l->watched))
        return;
    submit(l, true, NULL);
}
