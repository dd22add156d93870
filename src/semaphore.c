/* SPDX-License-Identifier: BSD-3-Clause */
/* semaphore.c -- a semaphore with K permits built from K slot locks
 * (README "Lock kinds").
 *
 * Slot i is an ordinary Redlock mutex on the key "<resource>:slot:<i>"
 * (prefix applied), so at most K holders exist by construction: each slot
 * has at most one holder on a majority, whatever the faults. Counting
 * holders on each node separately would not be safe (three nodes, limit
 * 2: A on {1,2}, B on {1,3}, C on {2,3} -- every node sees two, yet three
 * clients hold a majority).
 * A round tries the slots one at a time in a fresh random order (so
 * contenders spread over the slots instead of all fighting for slot 0),
 * each with one acquire attempt (acquire.c: a slot record gets no
 * retries), and stops at the first slot won. Tried one at a time, nothing
 * won needs rolling back, and an uncontended semaphore costs what a mutex
 * does; a full one costs K refused attempts per round. (Probing several
 * slots at once after a refusal was slower: the extra wins it has to
 * release cost the servers work.) When every slot refused, the operation
 * waits the retry delay (+- jitter, capped by the wait deadline), cut
 * short by a release notification on any slot's channel; a round started
 * by slot i's release tries slot i first (the one known to be free) --
 * until the retries or the wait run out, with the same policy as a mutex.
 * The record being acquired is the holder's: rewritten to each slot tried
 * (lockrec_set_slot), it names the slot won at the end, so the handle is
 * an ordinary lock on that slot (release, extend, watchdog, fencing per
 * slot). The token's stem serves every slot; each slot attempt has its own
 * attempt digits (acquire.c), so no rollback touches a later attempt.
 * A fair semaphore (docs/fair-queue.md) waits in its base key's queue
 * (queue.c, owned here; each slot attempt borrows it and runs
 * fair-acquire on its slot): a round whose every slot refused takes the
 * ticket and sleeps in the queue as a mutex's waiter does, and its turn
 * is a new round; the nodes grant a queued waiter a slot in queue
 * order. */
#include <stdio.h>
#include <string.h>

#include "notify.h"
#include "queue.h"
#include "retry.h"
#include "semaphore.h"

struct sem_op {
    rl_client *client;
    struct lock_rec *rec;         /* the holder's; names the slot tried */
    acquire_done_fn *done;
    void *owner;
    rl_acquire_opts opts;
    uint32_t ttl_ms;
    uint32_t limit;
    uint32_t tried;               /* slots tried this round */
    uint32_t refused;             /* ... that another client holds */
    uint32_t *order;              /* this round's order of the slots */
    struct sem_waiter *waiters;   /* one per slot, while sleeping */
    struct acquire_op *cur;       /* the slot attempt in flight (not
                                     ended), or NULL */
    struct loop_timer *timer;
    struct fair_wait *fair;       /* fair: the base key's queue, or NULL */
    struct retry_budget budget;
    rl_mono_us round_t0;
    bool sleeping;
    bool in_run;                  /* inside acquire_run */
    bool queued_out;              /* a fair round ended early (queued_out) */
    rl_status last;               /* the last slot attempt's outcome */
    struct acquire_grant grant;
    char detail[RL_ERRLEN];
    char fail_detail[RL_ERRLEN];  /* the last failure but a refusal */
};

/* Waiting for slot's release notification. */
struct sem_waiter {
    struct notify_waiter w;
    struct sem_op *op;
    uint32_t slot;
};

static void start_round(void *arg);
static void round_from(struct sem_op *op, int64_t first);
static void slot_done(void *owner, rl_status st,
                      const struct acquire_grant *g);

static void unwait_all(struct sem_op *op)
{
    uint32_t i;

    for (i = 0; i < op->limit; i++)
        notify_unwait(op->client->notify, &op->waiters[i].w);
}

void sem_abort(struct sem_op *op)
{
    if (op == NULL)
        return;
    acquire_abort(op->cur);
    fair_free(op->fair); /* still queued: leaves, not awaited */
    unwait_all(op);
    loop_timer_free(op->timer);
    free(op->order);
    free(op->waiters);
    free(op);
}

void sem_cancel(struct sem_op *op)
{
    if (op == NULL)
        return;
    acquire_cancel(op->cur); /* the earlier slots were rolled back */
    op->cur = NULL;
    sem_abort(op);
}

static void finish(struct sem_op *op, rl_status st)
{
    acquire_done_fn *done = op->done;
    void *owner = op->owner;
    struct acquire_grant g = op->grant;

    if (st == RL_OK) {
        if (op->fair != NULL)
            fair_granted(op->fair); /* the entry goes with the permit */
        rl_error_clear();
    } else {
        rl_error_set_text(op->detail);
    }
    op->cur = NULL;
    sem_abort(op);
    done(owner, st, st == RL_OK ? &g : NULL);
}

/* A slot was released: try again now, that slot first, rather than
 * after the delay. */
static void released_elsewhere(void *arg)
{
    struct sem_waiter *sw = arg;
    struct sem_op *op = sw->op;

    if (!op->sleeping)
        return;
    loop_timer_stop(op->timer);
    round_from(op, sw->slot);
}

/* A fair semaphore that gave up left the queue on every node that
 * answers. */
static void left_queue(void *owner)
{
    struct sem_op *op = owner;

    finish(op, op->last);
}

/* Give up with st; a queued fair waiter reports once its entry left
 * every node that answers (as acquire.c's finish), not while it may
 * still stand among the entitled there. */
static void fair_failed(struct sem_op *op, rl_status st)
{
    if (op->fair == NULL || !fair_queued(op->fair)) {
        finish(op, st);
        return;
    }
    op->last = st;
    fair_leave(op->fair, left_queue, op);
}

/* queue.c: our turn to run a round, or the wait ran out in the queue. */
static void fair_turn(void *arg, bool expired)
{
    struct sem_op *op = arg;

    if (expired)
        fair_failed(op, op->last);
    else
        round_from(op, -1);
}

/* Every slot failed: report, or sleep until the delay ends or any slot
 * is released (a fair one: until queue.c says it is its turn). */
static void round_failed(struct sem_op *op)
{
    rl_client *c = op->client;
    rl_mono_us now = mono_now_us();
    size_t base = lockrec_slot_base_len(op->rec);
    size_t name_len = base - (size_t)(op->rec->resource - op->rec->keys[0]);
    /* "held by another client" if any slot was refused, else the last
     * attempt's error */
    rl_status failure = op->refused > 0 ? RL_ENOTACQUIRED : op->last;
    char *key;
    uint64_t delay_us;
    size_t len;
    uint32_t i;

    if (op->refused > 0) {
        if (op->refused == op->limit)
            snprintf(op->detail, sizeof(op->detail),
                     "'%.*s': all %u slots are held by other clients",
                     (int)name_len, op->rec->resource, op->limit);
        else if (op->queued_out)
            snprintf(op->detail, sizeof(op->detail),
                     "'%.*s': no slot of %u is free for us on a majority "
                     "(held by other clients, or by earlier waiters in "
                     "the queue)",
                     (int)name_len, op->rec->resource, op->limit);
        else if (op->refused == op->tried)
            snprintf(op->detail, sizeof(op->detail),
                     "'%.*s': the wait ran out after %u of %u slots, all "
                     "held by other clients",
                     (int)name_len, op->rec->resource, op->tried,
                     op->limit);
        else
            snprintf(op->detail, sizeof(op->detail),
                     "'%.*s': %u of %u slots tried are held by other "
                     "clients, the others failed: %s",
                     (int)name_len, op->rec->resource, op->refused,
                     op->tried, op->fail_detail);
    }
    if (!retry_budget_take(&op->budget, now)) {
        fair_failed(op, failure);
        return;
    }
    if (op->fair != NULL) {
        op->last = failure; /* reported if the wait runs out */
        fair_wait_turn(op->fair, op->round_t0, op->budget.deadline_us);
        return;
    }
    delay_us = retry_budget_pause_us(&op->budget, c, now);
    /* Wake when any slot is released (best effort; the timer is the
     * fallback). */
    key = op->refused > 0 ? malloc(base + LOCKREC_SLOT_SUFFIX_MAX) : NULL;
    for (i = 0; key != NULL && i < op->limit; i++) {
        len = lockrec_slot_key(key, op->rec->keys[0], base, i);
        if (notify_wait(c->notify, &op->waiters[i].w, key, len,
                        op->rec->token, op->round_t0, released_elsewhere,
                        &op->waiters[i]))
            delay_us = 0; /* released while the round was in flight */
    }
    free(key);
    op->sleeping = true;
    loop_timer_arm(op->timer, delay_us);
}

/* A fair round ends at a refusal that says no other slot can be ours
 * now (queue.c fair_another_slot): the queue or full slots refuse every
 * slot alike, so trying the others would cost a round each for nothing;
 * an entitled waiter is told when a slot frees (announcements). */
static bool queued_out(struct sem_op *op)
{
    op->queued_out = op->fair != NULL && op->last == RL_ENOTACQUIRED &&
                     !fair_another_slot(op->fair);
    return op->queued_out;
}

/* Try the round's remaining slots, one attempt at a time, until one is
 * won or all failed. Attempts that end inside acquire_run are handled in
 * this loop (no recursion over K slots). */
static void try_slots(struct sem_op *op)
{
    uint32_t slot;

    while (op->tried < op->limit) {
        if (op->tried > 0 &&
            retry_budget_expired(&op->budget, mono_now_us()))
            break; /* the wait is over: no more slots this round */
        if (op->tried > 0 && queued_out(op))
            break;
        slot = op->order[op->tried++];
        lockrec_set_slot(op->rec, slot);
        op->cur = acquire_new(op->client, op->rec, op->ttl_ms, &op->opts,
                              slot_done, op);
        if (op->cur == NULL) {
            snprintf(op->detail, sizeof(op->detail), "%s", rl_last_error());
            fair_failed(op, RL_ENOMEM);
            return;
        }
        if (op->fair != NULL)
            acquire_borrow_fair(op->cur, op->fair);
        op->in_run = true;
        acquire_run(op->cur);
        op->in_run = false;
        if (op->cur != NULL)
            return; /* not ended: slot_done goes on */
        if (op->last == RL_OK) {
            finish(op, RL_OK);
            return;
        }
    }
    round_failed(op);
}

static void slot_done(void *owner, rl_status st, const struct acquire_grant *g)
{
    struct sem_op *op = owner;

    op->cur = NULL;
    op->last = st;
    if (st == RL_OK) {
        op->grant = *g;
    } else {
        op->refused += st == RL_ENOTACQUIRED;
        snprintf(op->detail, sizeof(op->detail), "%s", rl_last_error());
        if (st != RL_ENOTACQUIRED)
            snprintf(op->fail_detail, sizeof(op->fail_detail), "%s",
                     rl_last_error());
    }
    if (op->in_run)
        return;
    if (st == RL_OK)
        finish(op, RL_OK);
    else
        try_slots(op);
}

/* A round: every slot once, in a fresh random order; first (>= 0) goes
 * first. */
static void round_from(struct sem_op *op, int64_t first)
{
    uint32_t i, j, t;

    op->sleeping = false;
    unwait_all(op);
    for (i = op->limit - 1; i > 0; i--) {
        j = client_random(op->client, i + 1);
        t = op->order[i];
        op->order[i] = op->order[j];
        op->order[j] = t;
    }
    for (i = 0; first >= 0 && i < op->limit; i++) {
        if (op->order[i] == (uint32_t)first) {
            op->order[i] = op->order[0];
            op->order[0] = (uint32_t)first;
        }
    }
    op->tried = 0;
    op->refused = 0;
    op->queued_out = false;
    op->round_t0 = mono_now_us();
    try_slots(op);
}

static void start_round(void *arg)
{
    round_from(arg, -1);
}

struct sem_op *sem_new(rl_client *c, struct lock_rec *rec, uint32_t limit,
                       uint32_t ttl, const rl_acquire_opts *o,
                       acquire_done_fn *done, void *owner)
{
    struct sem_op *op = calloc(1, sizeof(*op));
    uint32_t i;

    if (op == NULL)
        goto out_nomem;
    op->order = malloc(limit * sizeof(*op->order));
    op->waiters = calloc(limit, sizeof(*op->waiters));
    op->timer = loop_timer_new(c->loop, start_round, op);
    if (op->order == NULL || op->waiters == NULL || op->timer == NULL)
        goto out_nomem;
    op->client = c;
    op->rec = rec;
    op->done = done;
    op->owner = owner;
    op->opts = *o;
    op->ttl_ms = ttl;
    op->limit = limit;
    for (i = 0; i < limit; i++) {
        op->order[i] = i;
        op->waiters[i].op = op;
        op->waiters[i].slot = i;
    }
    retry_budget_init(&op->budget, c, o);
    if (rec->fair) {
        op->fair = fair_new(c, rec, rec->keys[0], lockrec_slot_base_len(rec),
                            limit, o->priority, fair_turn, op);
        if (op->fair == NULL)
            goto out_nomem;
        retry_budget_fair(&op->budget, c);
    }
    return op;
out_nomem:
    if (op != NULL) {
        loop_timer_free(op->timer);
        free(op->order);
        free(op->waiters);
        free(op);
    }
    rl_fail(RL_ENOMEM, "out of memory for a semaphore acquire");
    return NULL;
}

void sem_run(struct sem_op *op)
{
    start_round(op);
}
