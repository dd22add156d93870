/* semaphore.c -- a semaphore with K permits built from K slot locks
 * (issue 13; README "Lock kinds").
 *
 * Slot i is an ordinary Redlock mutex on the key "<resource>:slot:<i>"
 * (prefix applied), so at most K holders exist by construction: each slot
 * has at most one holder on a majority, whatever the faults. Counting
 * holders on each node separately would not be safe (three nodes, limit
 * 2: A on {1,2}, B on {1,3}, C on {2,3} -- every node sees two, yet three
 * clients hold a majority).
 * A round tries the slots in a fresh random order (so contenders spread
 * over the slots instead of all fighting for slot 0), each with one
 * acquire attempt (acquire.c: a slot record gets no retries), and stops
 * at the first slot won. The first slot is tried alone: when a permit is
 * free that usually wins, at the cost of a mutex. Once a slot refused,
 * the rest are tried SEM_PARALLEL at a time (a probe each), so a nearly
 * full semaphore costs K / SEM_PARALLEL round trips rather than K. When a
 * probe wins, the others in flight are dropped and their slots released
 * on every node (compare-and-delete of our token, queued behind their
 * SET on each connection), so extra wins never stay held. When every
 * slot refused, the operation waits the retry delay (+- jitter, capped by
 * the wait deadline), cut short by a release notification on any slot's
 * channel, and starts another round -- until the retries or the wait run
 * out, with the same policy as a mutex.
 * Probes have records of their own; the holder's record (made for the
 * longest slot name) is rewritten to the slot won (lockrec_set_slot), so
 * the handle is an ordinary lock on that slot (release, extend, watchdog,
 * fencing per slot). One token serves every slot. */
#include <stdio.h>
#include <string.h>

#include "notify.h"
#include "semaphore.h"

/* Waits longer than this (a century) are treated as RL_WAIT_FOREVER. */
#define MAX_WAIT_MS (INT64_C(100) * 365 * 24 * 3600 * 1000)
/* Slot attempts in flight at once, after the first refusal of a round. */
#define SEM_PARALLEL 4

struct sem_op;

/* One slot attempt: its own record (key, our token), its acquire. */
struct probe {
    struct sem_op *sem;
    struct lock_rec rec;
    void *tail;                   /* rec's keys and token */
    struct acquire_op *acquire;   /* in flight, or NULL */
};

struct sem_op {
    rl_client *client;
    struct lock_rec *rec;         /* the holder's; names the slot tried */
    acquire_done_fn *done;
    void *owner;
    rl_acquire_opts opts;
    uint32_t ttl_ms;
    uint32_t limit;
    uint32_t tried;               /* slots started this round */
    uint32_t failed;              /* ... that ended without a win */
    uint32_t refused;             /* ... that another client holds */
    uint32_t inflight;            /* probes in flight */
    uint32_t *order;              /* this round's order of the slots */
    struct notify_waiter *waiters;/* one per slot, while sleeping */
    struct probe probes[SEM_PARALLEL];
    struct probe *winner;         /* the probe that won, or NULL */
    struct loop_timer *timer;
    bool wait_forever;
    rl_mono_us wait_deadline_us;  /* 0: count retries instead */
    uint32_t retries_left;
    rl_mono_us round_t0;
    bool sleeping;
    bool in_run;                  /* inside acquire_run */
    rl_status failure;            /* the round's outcome when all failed */
    struct acquire_grant grant;
    char detail[RL_ERRLEN];
    char fail_detail[RL_ERRLEN];  /* the last failure but a refusal */
};

static void start_round(void *arg);
static void probe_done(void *owner, rl_status st,
                       const struct acquire_grant *g);

static void unwait_all(struct sem_op *op)
{
    uint32_t i;

    for (i = 0; i < op->limit; i++)
        notify_unwait(op->client->notify, &op->waiters[i]);
}

/* Drop the probes in flight; their SET may still land on a node, so
 * their slots are released everywhere, behind it on each connection. */
static void drop_probes(struct sem_op *op)
{
    struct lock_cmd release;
    struct probe *p;
    size_t i;

    for (i = 0; i < SEM_PARALLEL; i++) {
        p = &op->probes[i];
        if (p->acquire == NULL)
            continue;
        acquire_abort(p->acquire);
        p->acquire = NULL;
        lockrec_script_cmd(&p->rec, SCRIPT_RELEASE, NULL, &release);
        round_broadcast(op->client->nodes, op->client->node_count,
                        &release.cmd);
    }
    op->inflight = 0;
}

static void sem_free(struct sem_op *op)
{
    size_t i;

    unwait_all(op);
    loop_timer_free(op->timer);
    for (i = 0; i < SEM_PARALLEL; i++)
        free(op->probes[i].tail);
    free(op->order);
    free(op->waiters);
    free(op);
}

void sem_abort(struct sem_op *op)
{
    if (op == NULL)
        return;
    drop_probes(op);
    sem_free(op);
}

static void finish(struct sem_op *op, rl_status st)
{
    acquire_done_fn *done = op->done;
    void *owner = op->owner;
    struct acquire_grant g = op->grant;
    char detail[RL_ERRLEN];

    snprintf(detail, sizeof(detail), "%s", op->detail);
    if (st == RL_OK)
        lockrec_set_slot(op->rec, (uint32_t)op->winner->rec.slot);
    drop_probes(op); /* a win: the others' slots are released */
    sem_free(op);
    if (st == RL_OK)
        rl_error_clear();
    else
        rl_error_set_text(detail);
    done(owner, st, st == RL_OK ? &g : NULL);
}

static bool may_retry(struct sem_op *op, rl_mono_us now)
{
    if (op->wait_forever)
        return true;
    if (op->wait_deadline_us != 0)
        return now < op->wait_deadline_us;
    if (op->retries_left == 0)
        return false;
    op->retries_left--;
    return true;
}

/* A slot was released: try again now rather than after the delay. */
static void released_elsewhere(void *arg)
{
    struct sem_op *op = arg;

    if (!op->sleeping)
        return;
    loop_timer_stop(op->timer);
    start_round(op);
}

/* Every slot failed: report, or sleep until the delay ends or any slot
 * is released. */
static void round_failed(struct sem_op *op)
{
    rl_client *c = op->client;
    rl_mono_us now = mono_now_us();
    uint32_t jitter = c->cfg.retry_jitter_ms;
    size_t base = (size_t)(strrchr(op->rec->keys[0], ':') -
                           op->rec->keys[0]) - (sizeof(":slot") - 1);
    size_t name_len = base - (size_t)(op->rec->resource - op->rec->keys[0]);
    char *key;
    uint64_t delay_us;
    size_t len;
    uint32_t i;

    if (op->refused > 0) {
        op->failure = RL_ENOTACQUIRED;
        if (op->refused == op->limit)
            snprintf(op->detail, sizeof(op->detail),
                     "'%.*s': all %u slots are held by other clients",
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
    if (!may_retry(op, now)) {
        finish(op, op->failure);
        return;
    }
    delay_us = ((uint64_t)c->cfg.retry_delay_ms - jitter +
                client_random(c, 2 * jitter + 1)) *
               1000u;
    if (op->wait_deadline_us != 0 && now + delay_us > op->wait_deadline_us)
        delay_us = op->wait_deadline_us - now;
    /* Wake when any slot is released (best effort; the timer is the
     * fallback). */
    key = op->refused > 0 ? malloc(base + LOCKREC_SLOT_SUFFIX_MAX) : NULL;
    for (i = 0; key != NULL && i < op->limit; i++) {
        len = lockrec_slot_key(key, op->rec->keys[0], base, i);
        if (notify_wait(c->notify, &op->waiters[i], key, len,
                        op->rec->token, op->round_t0, released_elsewhere,
                        op))
            delay_us = 0; /* released while the round was in flight */
    }
    free(key);
    op->sleeping = true;
    loop_timer_arm(op->timer, delay_us);
}

/* Start a probe on the round's next slot. False when none could be made
 * (out of memory: the operation is over). */
static bool launch(struct sem_op *op)
{
    struct probe *p = op->probes;

    while (p->acquire != NULL)
        p++; /* inflight < SEM_PARALLEL: one is free */
    lockrec_set_slot(&p->rec, op->order[op->tried++]);
    p->acquire = acquire_new(op->client, &p->rec, op->ttl_ms, &op->opts,
                             probe_done, p);
    if (p->acquire == NULL) {
        snprintf(op->detail, sizeof(op->detail), "%s", rl_last_error());
        finish(op, RL_ENOMEM);
        return false;
    }
    op->inflight++;
    op->in_run = true;
    acquire_run(p->acquire);
    op->in_run = false;
    return true;
}

/* Drive the round: finish on a win, start probes while there is room
 * (one until a slot refused, then SEM_PARALLEL), fail the round when
 * every slot failed or the wait ran out. Probes that end inside
 * acquire_run are handled here, in a loop (no recursion over K slots). */
static void pump(struct sem_op *op)
{
    uint32_t width;
    bool over;

    for (;;) {
        if (op->winner != NULL) {
            finish(op, RL_OK);
            return;
        }
        over = op->tried == op->limit ||
               (op->tried > 0 && op->wait_deadline_us != 0 &&
                mono_now_us() >= op->wait_deadline_us);
        width = op->failed == 0 ? 1 : SEM_PARALLEL;
        if (!over && op->inflight < width) {
            if (!launch(op))
                return;
            continue;
        }
        if (op->inflight == 0)
            round_failed(op);
        return;
    }
}

static void probe_done(void *owner, rl_status st,
                       const struct acquire_grant *g)
{
    struct probe *p = owner;
    struct sem_op *op = p->sem;

    p->acquire = NULL;
    op->inflight--;
    if (st == RL_OK) {
        /* The first win; drop_probes aborts the others before any
         * other can report. */
        op->winner = p;
        op->grant = *g;
    } else {
        op->failed++;
        op->refused += st == RL_ENOTACQUIRED;
        if (op->refused == 0 || st == RL_ENOTACQUIRED)
            op->failure = st;
        snprintf(op->detail, sizeof(op->detail), "%s", rl_last_error());
        if (st != RL_ENOTACQUIRED)
            snprintf(op->fail_detail, sizeof(op->fail_detail), "%s",
                     rl_last_error());
    }
    if (!op->in_run)
        pump(op);
}

/* A round: every slot once, in a fresh random order. */
static void start_round(void *arg)
{
    struct sem_op *op = arg;
    uint32_t i, j, t;

    op->sleeping = false;
    unwait_all(op);
    for (i = op->limit - 1; i > 0; i--) {
        j = client_random(op->client, i + 1);
        t = op->order[i];
        op->order[i] = op->order[j];
        op->order[j] = t;
    }
    op->tried = 0;
    op->failed = 0;
    op->refused = 0;
    op->round_t0 = mono_now_us();
    pump(op);
}

struct sem_op *sem_new(rl_client *c, struct lock_rec *rec, uint32_t limit,
                       uint32_t ttl, const rl_acquire_opts *o,
                       acquire_done_fn *done, void *owner)
{
    struct sem_op *op = calloc(1, sizeof(*op));
    size_t tail = lockrec_tail_size(&c->cfg, &rec->resource, 1, rec->token);
    struct probe *p;
    uint32_t i;

    if (op == NULL)
        goto out_nomem;
    op->order = malloc(limit * sizeof(*op->order));
    op->waiters = calloc(limit, sizeof(*op->waiters));
    op->timer = loop_timer_new(c->loop, start_round, op);
    if (op->order == NULL || op->waiters == NULL || op->timer == NULL)
        goto out_nomem;
    /* Probe records: the holder's name (the longest slot), our token. */
    for (i = 0; i < SEM_PARALLEL; i++) {
        p = &op->probes[i];
        p->sem = op;
        p->tail = malloc(tail);
        if (p->tail == NULL ||
            lockrec_init(&p->rec, p->tail, &c->cfg, &rec->resource, 1,
                         rec->token) != RL_OK)
            goto out_nomem;
        p->rec.adopted = false;
        p->rec.delay_ms = rec->delay_ms;
    }
    op->client = c;
    op->rec = rec;
    op->done = done;
    op->owner = owner;
    op->opts = *o;
    op->ttl_ms = ttl;
    op->limit = limit;
    for (i = 0; i < limit; i++)
        op->order[i] = i;
    op->retries_left = c->cfg.retry_count;
    if (o->wait_ms == RL_WAIT_FOREVER || o->wait_ms > MAX_WAIT_MS)
        op->wait_forever = true;
    else if (o->wait_ms > 0)
        op->wait_deadline_us = mono_now_us() + (rl_mono_us)o->wait_ms * 1000u;
    return op;
out_nomem:
    if (op != NULL)
        sem_free(op);
    rl_fail(RL_ENOMEM, "out of memory for a semaphore acquire");
    return NULL;
}

void sem_run(struct sem_op *op)
{
    start_round(op);
}
