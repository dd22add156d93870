/* SPDX-License-Identifier: BSD-3-Clause */
/* election.c -- leader election on top of the lock: proclaim
 * and observe.
 *
 * A leader is the holder of the lock on its name, acquired with an owner
 * (rl_campaign); the stored value is "<token digits>.<owner>" and its
 * owner is the leader's published value. rl_proclaim changes it without
 * giving the lock up: one round of the proclaim script, which on each
 * node, only where every key still holds our lock, sets the value to the
 * same digits with the new owner (keeping the expiry) and publishes it
 * on the release channel so observers re-read. It succeeds when a quorum
 * swapped while the lock was still valid; then the record publishes the
 * new value (a restarted node gets that one back at the next renewal).
 *
 * Nodes that did not swap (down, slow, or a proclaim that failed) keep
 * the old value: release, extend and proclaim match either (the scripts'
 * ours(): the same token digits), so the lock keeps working on every
 * node, and inspection reports the value most nodes hold. Loop thread
 * from submission to the callback.
 *
 * An observer reads the name's key, the node's fence counter and the
 * name's fence record on every node (the inspect script, one ROUND_ALL round: what
 * rl_resource_inspect reads) and reports each change of leader -- held or
 * not, the value (token and owner), the term -- in the order it read
 * them. A campaign takes the key in one round and writes its term in a
 * second: a leader whose term is not on a quorum yet (RL_TERM_PENDING) is
 * not reported; the observer reads again soon, backing off up to the
 * retry delay, until the election has settled either way. It re-reads when a release or a
 * proclaim is announced on the key's release channel (notify.c), and on
 * a timer: while a leader holds, when the validity it read has run out
 * (a leader that crashed publishes nothing; one that renews is read
 * again then), else every retry_delay_ms (a new leader announces
 * nothing either; candidates try that often). A read without a quorum of
 * answers reports nothing and is retried after retry_delay_ms. The
 * observer is an op of the loop that stays started until it stops, so a
 * client being freed cancels it (one RL_ECANCELED callback). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "election.h"
#include "fence.h"
#include "holder.h"
#include "inspect.h"
#include "lockrec.h"
#include "notify.h"
#include "token.h"

/* A read's timer after the validity it read ran out. */
#define OBSERVE_MARGIN_US 2000
/* The first re-read of an election in progress, doubled at each read
 * that still finds it in progress, up to retry_delay_ms. */
#define PENDING_REREAD_US 2000

struct proclaim_op {
    struct op base;
    rl_lock *lock;
    rl_proclaim_cb cb;
    void *privdata;
    char owner[RL_OWNER_MAX + 1];
    char value[LOCKREC_ID_MAX + RL_OWNER_MAX + 1];
    struct quorum_round round;
};

static void proclaim_end(struct proclaim_op *op, rl_status st)
{
    rl_proclaim_cb cb = op->cb;
    void *privdata = op->privdata;
    rl_lock *l = op->lock;

    round_clear(&op->round);
    loop_op_finished(&op->base);
    free(op);
    cb(l, st, privdata);
}

static void proclaim_cancel(struct op *base)
{
    rl_fail(RL_ECANCELED, "the client is being freed");
    proclaim_end((struct proclaim_op *)base, RL_ECANCELED);
}

static void proclaim_decided(void *owner, enum verdict v)
{
    struct proclaim_op *op = owner;
    struct quorum_round *q = &op->round;
    struct lock_rec *rec = holder_rec(op->lock);
    size_t n = q->n;
    rl_status st;

    if (v == VERDICT_SUCCESS && rl_lock_validity_ms(op->lock) > 0 &&
        !rl_lock_lost(op->lock)) {
        lockrec_publish(rec, op->value);
        rl_error_clear();
        st = RL_OK;
    } else if (v == VERDICT_SUCCESS || q->refused > n - quorum_size(n)) {
        st = rl_fail(RL_ELOST, "'%s' is no longer held: %zu of %zu nodes "
                     "hold no key with this token, or its validity ran out",
                     rec->resource, q->refused, n);
    } else {
        st = rl_fail(RL_ENOQUORUM, "'%s': proclaim reached %zu of %zu "
                     "nodes (need %zu; those keep either value): %s",
                     rec->resource, q->yes, n, quorum_size(n), q->detail);
    }
    proclaim_end(op, st);
}

static void proclaim_start(struct op *base)
{
    struct proclaim_op *op = (struct proclaim_op *)base;
    struct lock_rec *rec = holder_rec(op->lock);
    rl_client *c = holder_client(op->lock);
    const char *argv[RL_MAX_RESOURCES + 2];
    size_t lens[RL_MAX_RESOURCES + 2];
    struct round_cmd cmd;
    enum verdict v;
    size_t i;

    if (rl_lock_lost(op->lock) || rl_lock_validity_ms(op->lock) <= 0) {
        proclaim_end(op, rl_fail(RL_ELOST, "'%s' is no longer held",
                                 rec->resource));
        return;
    }
    if (round_init(&op->round, c->nodes, c->node_count) != RL_OK) {
        proclaim_end(op, rl_fail(RL_ENOMEM, "out of memory for a "
                                 "proclaim"));
        return;
    }
    snprintf(op->value, sizeof(op->value), "%.*s%s",
             (int)lockrec_id_len(rec->token), rec->token, op->owner);
    for (i = 0; i < rec->nkeys; i++) {
        argv[i] = rec->keys[i];
        lens[i] = rec->key_lens[i];
    }
    argv[i] = rec->token;
    lens[i++] = rec->token_len;
    argv[i] = op->value;
    lens[i++] = strlen(op->value);
    cmd.script = script_get(SCRIPT_PROCLAIM);
    cmd.nkeys = (int)rec->nkeys;
    cmd.argc = (int)i;
    cmd.argv = argv;
    cmd.lens = lens;
    v = round_start(&op->round, ROUND_EARLY, &cmd, round_classify_one,
                    proclaim_decided, op);
    if (v != VERDICT_PENDING)
        proclaim_decided(op, v);
}

rl_status election_proclaim(rl_lock *l, const char *owner, rl_proclaim_cb cb,
                            void *privdata, const char *blocking)
{
    struct proclaim_op *op;
    rl_status st;

    if (l == NULL)
        return rl_fail(RL_EINVAL, "lock is NULL");
    if (cb == NULL)
        return rl_fail(RL_EINVAL, "callback is NULL");
    if (owner == NULL || owner[0] == '\0')
        return rl_fail(RL_EINVAL, "owner is empty");
    st = lockrec_check_owner(owner);
    if (st != RL_OK)
        return st;
    if (!lockrec_can_proclaim(holder_rec(l)))
        return rl_fail(RL_EINVAL, "'%s' was not acquired with an owner "
                       "(or is adopted or shared): nothing to proclaim",
                       rl_lock_resource(l));
    op = calloc(1, sizeof(*op));
    if (op == NULL)
        return rl_fail(RL_ENOMEM, "out of memory for a proclaim");
    op->lock = l;
    op->cb = cb;
    op->privdata = privdata;
    op->base.start = proclaim_start;
    op->base.cancel = proclaim_cancel;
    /* The identity is copied on the loop thread; the owner now. */
    snprintf(op->owner, sizeof(op->owner), "%s", owner);
    st = holder_submit(l, &op->base, blocking);
    if (st != RL_OK)
        free(op);
    return st;
}

rl_status rl_proclaim_async(rl_lock *l, const char *owner, rl_proclaim_cb cb,
                            void *privdata)
{
    return election_proclaim(l, owner, cb, privdata, NULL);
}

/* ---- Observe ------------------------------------------------------------ */

struct rl_observer {
    struct op base;              /* started until stopped or canceled */
    rl_client *client;           /* NULL once canceled (client freed) */
    rl_observe_cb cb;
    void *privdata;
    char *key;                   /* prefix + name */
    char *fence_for;
    char *intent_key;            /* read with the others (inspect_keys) */
    rl_holder_info *holders;     /* one per node, the read in flight */
    struct quorum_round round;
    struct notify_waiter waiter;
    struct loop_timer *timer;
    rl_resource_info last;       /* last reported */
    bool reported;               /* last is set */
    unsigned pending;            /* reads in a row that found an
                                    election in progress */
    bool reading;                /* a round is in flight */
    bool again;                  /* re-read once the round is over */
    bool dead;                   /* stopped or canceled (loop thread) */
    bool orphan;                 /* stopped before it started: the queue
                                    frees it when it gets there */
};

static void observe_read(struct rl_observer *o);

/* Stop every watcher (loop thread); the memory stays. */
static void observe_halt(struct rl_observer *o)
{
    if (o->dead)
        return;
    o->dead = true;
    round_clear(&o->round);
    notify_unwait(o->client->notify, &o->waiter);
    loop_timer_free(o->timer);
    o->timer = NULL;
    loop_op_finished(&o->base);
}

static void observe_free(struct rl_observer *o)
{
    free(o->holders);
    free(o->intent_key);
    free(o->fence_for);
    free(o->key);
    free(o);
}

static void observe_woken(void *arg)
{
    observe_read(arg);
}

/* Held, but only its lock-delay is left: the holder's validity is
 * over. */
static bool in_lock_delay(const rl_resource_info *i)
{
    return i->held && i->validity_ms == 0 && i->blocked_ms != 0;
}

static bool leader_changed(const rl_resource_info *a,
                           const rl_resource_info *b)
{
    return a->held != b->held || in_lock_delay(a) != in_lock_delay(b) ||
           (a->held && (strcmp(a->token, b->token) != 0 ||
                        a->term != b->term));
}

/* When to read again after an election in progress was found. */
static uint64_t pending_reread_us(struct rl_observer *o)
{
    uint64_t cap = (uint64_t)o->client->cfg.retry_delay_ms * 1000;
    uint64_t us = PENDING_REREAD_US;
    unsigned i;

    if (cap < PENDING_REREAD_US)
        cap = PENDING_REREAD_US;
    for (i = 0; i < o->pending && us < cap; i++)
        us *= 2;
    o->pending++;
    return us < cap ? us : cap;
}

static void observe_decided(void *owner, enum verdict v)
{
    struct rl_observer *o = owner;
    uint64_t retry_us = (uint64_t)o->client->cfg.retry_delay_ms * 1000;
    rl_resource_info info;
    bool changed;

    o->reading = false;
    inspect_summarize(o->holders, o->client->node_count, &info);
    if (v == VERDICT_SUCCESS && info.held &&
        info.term_state == RL_TERM_PENDING) {
        loop_timer_arm(o->timer, o->again ? 0 : pending_reread_us(o));
        o->again = false;
        return;
    }
    o->pending = 0;
    if (v != VERDICT_SUCCESS) {
        loop_timer_arm(o->timer, o->again ? 0 : retry_us);
        o->again = false;
        return;
    }
    if (o->again)
        loop_timer_arm(o->timer, 0);
    else if (info.held && info.validity_ms > 0)
        loop_timer_arm(o->timer, (uint64_t)info.validity_ms * 1000 +
                                     OBSERVE_MARGIN_US);
    else if (info.held && info.blocked_ms >= 0) /* the lock-delay's end */
        loop_timer_arm(o->timer, (uint64_t)info.blocked_ms * 1000 +
                                     OBSERVE_MARGIN_US);
    else if (info.held)
        loop_timer_stop(o->timer); /* no expiry: notifications only */
    else
        loop_timer_arm(o->timer, retry_us);
    o->again = false;
    changed = !o->reported || leader_changed(&o->last, &info);
    o->last = info;
    o->reported = true;
    rl_error_clear();
    if (changed)
        o->cb(o, RL_OK, &info, o->privdata); /* may stop o: last */
}

static enum vote observe_classify(void *owner, size_t slot,
                                  const struct node_reply *r)
{
    struct rl_observer *o = owner;

    return inspect_read_holder(o->round.nodes[slot], &o->holders[slot], r);
}

static void observe_read(struct rl_observer *o)
{
    const char *argv[4];
    size_t lens[4];
    struct round_cmd cmd;
    enum verdict v;

    if (o->dead)
        return;
    inspect_keys(o->key, o->intent_key, o->fence_for,
                 script_get(SCRIPT_INSPECT), argv, lens, &cmd);
    if (o->reading) {
        o->again = true;
        return;
    }
    loop_timer_stop(o->timer);
    memset(o->holders, 0, o->client->node_count * sizeof(*o->holders));
    o->reading = true;
    v = round_start(&o->round, ROUND_ALL, &cmd, observe_classify,
                    observe_decided, o);
    if (v != VERDICT_PENDING)
        observe_decided(o, v);
}

static void observe_begin(struct op *base)
{
    struct rl_observer *o = (struct rl_observer *)base;
    rl_client *c = o->client;

    if (o->orphan) {
        loop_op_finished(base);
        observe_free(o);
        return;
    }
    o->timer = loop_timer_new(c->loop, observe_woken, o);
    if (o->timer == NULL ||
        round_init(&o->round, c->nodes, c->node_count) != RL_OK) {
        rl_fail(RL_ENOMEM, "out of memory for an observer");
        observe_halt(o);
        o->cb(o, RL_ENOMEM, NULL, o->privdata);
        return;
    }
    /* The token "" is nobody's: every announcement wakes us. */
    notify_wait(c->notify, &o->waiter, o->key, strlen(o->key), "",
                mono_now_us(), observe_woken, o);
    observe_read(o);
}

static void observe_cancel(struct op *base)
{
    struct rl_observer *o = (struct rl_observer *)base;

    if (o->orphan) {
        loop_op_finished(base);
        observe_free(o);
        return;
    }
    if (o->dead)
        return;
    observe_halt(o);
    o->client = NULL;
    rl_fail(RL_ECANCELED, "the client is being freed");
    o->cb(o, RL_ECANCELED, NULL, o->privdata);
}

rl_status rl_observe(rl_client *c, const char *name, rl_observe_cb cb,
                     void *privdata, rl_observer **out)
{
    struct rl_observer *o;
    rl_status st;

    if (out == NULL)
        return rl_fail(RL_EINVAL, "rl_observe: out is NULL");
    *out = NULL;
    if (c == NULL || cb == NULL)
        return rl_fail(RL_EINVAL, "rl_observe: %s is NULL",
                       c == NULL ? "client" : "callback");
    st = config_check_resource(&c->cfg, name, "name");
    if (st != RL_OK)
        return st;
    o = calloc(1, sizeof(*o));
    if (o != NULL) {
        o->holders = calloc(c->node_count, sizeof(*o->holders));
        o->key = malloc(c->cfg.prefix_len + strlen(name) + 1);
    }
    if (o == NULL || o->holders == NULL || o->key == NULL)
        goto oom;
    sprintf(o->key, "%s%s", c->cfg.prefix, name);
    o->fence_for = fence_key(FENCE_FOR_PREFIX, o->key, strlen(o->key));
    o->intent_key = lockrec_intent_key(o->key, strlen(o->key));
    if (o->fence_for == NULL || o->intent_key == NULL)
        goto oom;
    o->client = c;
    o->cb = cb;
    o->privdata = privdata;
    o->base.start = observe_begin;
    o->base.cancel = observe_cancel;
    st = loop_submit(c->loop, &o->base);
    if (st != RL_OK) {
        observe_free(o);
        return st;
    }
    *out = o;
    return RL_OK;
oom:
    if (o != NULL)
        observe_free(o);
    return rl_fail(RL_ENOMEM, "out of memory for an observer");
}

/* rl_observe_stop from another thread: halt on the loop thread. */
struct observe_stop {
    struct op base;
    struct rl_observer *o;
    struct waiter w;
};

static void observe_stop_run(struct op *base)
{
    struct observe_stop *s = (struct observe_stop *)base;

    observe_halt(s->o);
    loop_op_finished(base);
    waiter_done(&s->w, RL_OK);
}

void rl_observe_stop(rl_observer *o)
{
    struct loop *lp;
    struct observe_stop s;

    if (o == NULL)
        return;
    if (o->client == NULL) { /* canceled: the client was freed */
        observe_free(o);
        return;
    }
    lp = o->client->loop;
    if (loop_is_owned(lp) && !loop_on_thread(lp)) {
        memset(&s, 0, sizeof(s));
        s.o = o;
        s.base.start = observe_stop_run;
        s.base.cancel = observe_stop_run;
        waiter_init(&s.w);
        if (loop_submit(lp, &s.base) == RL_OK)
            waiter_wait(&s.w);
        else
            waiter_discard(&s.w);
    } else if (!o->base.started) {
        o->orphan = true; /* still queued on this thread's loop */
        return;
    } else {
        observe_halt(o);
    }
    observe_free(o);
}
