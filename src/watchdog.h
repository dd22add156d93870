/* SPDX-License-Identifier: BSD-3-Clause */
/* watchdog.h -- a client's watchdog: renews its watched locks in batches
 * on one timer and makes them LOST at their safety margin. Private to
 * holder.c, which owns the handles and decides when a lock is watched.
 * Loop thread unless said otherwise. */
#ifndef REDLOCK_WATCHDOG_H
#define REDLOCK_WATCHDOG_H

#include "extend.h"
#include "lock.h"

struct watchdog;

/* The holder's side: the lock is gone (rl_fail has said why). */
typedef void watchdog_lose_fn(struct rl_lock *l);

/* A watchdog for c (NULL: out of memory). A renewal's outcome goes to
 * renewed (as an extend round's), a lock past its margin to lose. */
struct watchdog *watchdog_new(rl_client *c, extend_done_fn *renewed,
                              watchdog_lose_fn *lose);
/* After watchdog_stop (or none started). */
void watchdog_free(struct watchdog *w);

/* The timer, made on first need (any thread; RL_ENOMEM). */
rl_status watchdog_start(struct watchdog *w);
/* Client closing: the timer is freed; no lock is watched any more. */
void watchdog_stop(struct watchdog *w);

/* The watchdog's options in o (may be NULL) for a lock of ttl_ms: the
 * reserved bytes, the interval (at most ttl / 2) and max_hold_ms
 * (RL_EINVAL with rl_fail). */
rl_status watchdog_check_opts(const rl_acquire_opts *o, uint32_t ttl_ms);
/* o asks for caps or an interval: the lock needs struct lock_extra. */
bool watchdog_needs_extra(const rl_acquire_opts *o);

/* Watch l (HELD or renewing; the timer exists): its caps from o go into
 * its extra block, if it has one; first renewal an interval from now. */
void watchdog_watch(struct watchdog *w, struct rl_lock *l,
                    const rl_acquire_opts *o);
/* Stop watching l (w may be NULL once the client is gone): out of the
 * heaps, out of a batch in flight (its own round goes on). */
void watchdog_unwatch(struct watchdog *w, struct rl_lock *l);

/* l's round ended (ok: it was renewed) or its user's round was dropped
 * (now: renew at once): queue its next event. */
void watchdog_renewed(struct watchdog *w, struct rl_lock *l, bool ok);
void watchdog_renew_now(struct watchdog *w, struct rl_lock *l);
/* l started a round of its own: queued at its margin meanwhile. */
void watchdog_at_margin(struct watchdog *w, struct rl_lock *l);

/* Overloaded: a new watched acquire is refused (RL_EOVERLOAD). */
bool watchdog_behind(struct watchdog *w, rl_mono_us now);
/* Locks waiting for room. */
size_t watchdog_backlog(const struct watchdog *w);

#endif
