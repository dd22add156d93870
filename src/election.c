/* election.c -- leader election on top of the lock (DESIGN §7): proclaim.
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
 * from submission to the callback. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "holder.h"
#include "lockrec.h"
#include "token.h"

struct proclaim_op {
    struct op base;
    rl_lock *lock;
    rl_proclaim_cb cb;
    void *privdata;
    char value[TOKEN_HEX_LEN + 1 + RL_OWNER_MAX + 1];
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
    memcpy(op->value, rec->token, TOKEN_HEX_LEN + 1);
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

static rl_status proclaim(rl_lock *l, const char *owner, rl_proclaim_cb cb,
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
    /* The digits are copied on the loop thread; the owner now. */
    snprintf(op->value + TOKEN_HEX_LEN + 1, RL_OWNER_MAX + 1, "%s", owner);
    st = holder_submit(l, &op->base, blocking);
    if (st != RL_OK)
        free(op);
    return st;
}

rl_status rl_proclaim_async(rl_lock *l, const char *owner, rl_proclaim_cb cb,
                            void *privdata)
{
    return proclaim(l, owner, cb, privdata, NULL);
}

static void proclaimed(rl_lock *l, rl_status st, void *privdata)
{
    RL_UNUSED(l);
    waiter_done(privdata, st);
}

rl_status rl_proclaim(rl_lock *l, const char *owner)
{
    struct waiter w;
    rl_status st;

    waiter_init(&w);
    st = proclaim(l, owner, proclaimed, &w, "rl_proclaim");
    if (st != RL_OK) {
        waiter_discard(&w);
        return st;
    }
    return waiter_wait(&w);
}
