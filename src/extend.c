/* extend.c -- re-quorum extension (DESIGN §5.4).
 *
 * The extend script resets the expiry only on nodes where every key still
 * holds our token, and never recreates an absent key: a key that vanished
 * while we were paused past its expiry may have been taken and released by
 * someone else meanwhile, and resurrecting it would hide that lapse.
 * The extension counts only if a quorum says yes in a round that started
 * inside the current validity; the new validity is computed from that
 * round's start (t0 + ttl - drift). A majority saying "absent / not ours"
 * means the lock is gone: it is marked lost and the caller gets RL_ELOST.
 * Fewer answers than a quorum leave the validity as it was (RL_ENOQUORUM),
 * so the caller can retry while validity remains.
 * Exception: a node that restarted since we acquired (its start time is
 * later than our acquisition) lost our key for a reason that hides
 * nothing; it gets SET NX again first so it blocks others.
 * At most one extend per lock is in flight (lock->extending). */
#include <stdio.h>
#include <string.h>

#include "extend.h"
#include "lock.h"

struct extend_op {
    struct op base;
    rl_extend_cb cb;
    void *privdata;
    struct rl_lock *lock;
    uint32_t ttl_ms;
    char ttl_buf[16];
    struct quorum_round round;
    char detail[RL_ERRLEN];
};

static void finish(struct extend_op *op, rl_status st)
{
    struct rl_lock *l = op->lock;
    rl_extend_cb cb = op->cb;
    void *privdata = op->privdata;

    round_clear(&op->round);
    l->extend = NULL;
    if (st == RL_ELOST && lock_mark_lost(l))
        client_count(op->base.client, STAT_LOST);
    if (st == RL_OK)
        client_count(op->base.client, STAT_RENEWALS);
    if (st == RL_OK)
        rl_error_clear();
    else
        rl_error_set_text(op->detail);
    client_op_finished(op->base.client, &op->base);
    free(op);
    atomic_store(&l->extending, false);
    cb(l, st, privdata);
}

static void cancel(struct op *base)
{
    struct extend_op *op = (struct extend_op *)base;

    snprintf(op->detail, sizeof(op->detail), "extend of '%s' canceled",
             op->lock->resource);
    finish(op, RL_ECANCELED);
}

void extend_cancel_inflight(struct rl_lock *l)
{
    if (l->extend != NULL)
        cancel(&l->extend->base);
}

static void decided(void *owner, enum verdict v)
{
    struct extend_op *op = owner;
    struct rl_lock *l = op->lock;
    rl_client *c = op->base.client;
    struct quorum_round *q = &op->round;
    uint64_t old_deadline = atomic_load(&l->deadline_us);
    rl_mono_us deadline;

    if (v == VERDICT_SUCCESS) {
        deadline = validity_deadline(op->ttl_ms, c->cfg.drift_factor, q->t0);
        if (old_deadline != 0 && q->t0 >= old_deadline) {
            snprintf(op->detail, sizeof(op->detail),
                     "'%s': validity ran out before the extension started",
                     l->resource);
            finish(op, RL_ELOST);
            return;
        }
        if (deadline <= mono_now_us()) {
            snprintf(op->detail, sizeof(op->detail),
                     "'%s': extension round took longer than the TTL",
                     l->resource);
            finish(op, RL_ELOST);
            return;
        }
        atomic_store(&l->deadline_us, deadline);
        atomic_store(&l->nodes_ok, (unsigned)q->yes);
        if (l->ttl_ms == 0) /* adopted: the first extension sets it */
            l->ttl_ms = op->ttl_ms;
        finish(op, RL_OK);
        return;
    }
    if (q->refused > q->n - quorum_size(q->n)) {
        snprintf(op->detail, sizeof(op->detail),
                 "'%s' is no longer held: %zu of %zu nodes hold no key with "
                 "this token",
                 l->resource, q->refused, q->n);
        finish(op, RL_ELOST);
        return;
    }
    snprintf(op->detail, sizeof(op->detail),
             "'%s': extension reached %zu of %zu nodes (need %zu): %s",
             l->resource, q->yes, q->n, quorum_size(q->n), q->detail);
    finish(op, RL_ENOQUORUM);
}

/* A node that started after we acquired has lost our key: put it back
 * with SET NX (never overwriting anybody) so the node blocks others
 * again. It only votes once it is older than max_ttl_ms (§5.7); the
 * extend round that follows counts it like any other node. */
static void restore_on_restarted_nodes(struct extend_op *op)
{
    struct rl_lock *l = op->lock;
    rl_client *c = op->base.client;
    const char *argv[6] = {"SET", NULL, l->token, "NX", "PX", op->ttl_buf};
    size_t lens[6];
    size_t i, k;
    rl_mono_us up;

    if (l->acquired_us == 0)
        return; /* adopted: we do not know when it was acquired */
    for (i = 0; i < c->node_count; i++) {
        up = node_up_since(c->nodes[i]);
        if (up == 0 || up <= l->acquired_us)
            continue;
        for (k = 0; k < l->nkeys; k++) {
            argv[1] = l->keys[k];
            for (int j = 0; j < 6; j++)
                lens[j] = strlen(argv[j]);
            node_send(c->nodes[i], 6, argv, lens, NULL, NULL, 0, NULL);
        }
    }
}

static void start(struct op *base)
{
    struct extend_op *op = (struct extend_op *)base;
    struct rl_lock *l = op->lock;
    struct lock_cmd cmd;
    enum verdict v;

    l->extend = op;
    if (atomic_load(&l->lost)) {
        snprintf(op->detail, sizeof(op->detail), "'%s' was already lost",
                 l->resource);
        finish(op, RL_ELOST);
        return;
    }
    if (lock_remaining_us(l) <= 0) {
        snprintf(op->detail, sizeof(op->detail),
                 "'%s': validity ran out before the extension", l->resource);
        finish(op, RL_ELOST);
        return;
    }
    restore_on_restarted_nodes(op);
    lock_script_cmd(l, SCRIPT_EXTEND, op->ttl_buf, &cmd);
    v = round_start(&op->round, ROUND_EARLY, &cmd.cmd, round_classify_one,
                    decided, op);
    if (v != VERDICT_PENDING)
        decided(op, v);
}

rl_status rl_extend_async(rl_lock *l, uint32_t ttl_ms, rl_extend_cb cb,
                          void *privdata)
{
    struct extend_op *op;
    rl_client *c;
    rl_status st;

    if (l == NULL)
        return rl_fail(RL_EINVAL, "lock is NULL");
    if (cb == NULL)
        return rl_fail(RL_EINVAL, "callback is NULL");
    c = l->client;
    if (c == NULL)
        return rl_fail(RL_EMISUSE, "the lock's client was freed");
    op = calloc(1, sizeof(*op));
    if (op == NULL)
        return rl_fail(RL_ENOMEM, "out of memory for an extend");
    st = config_effective_ttl(&c->cfg, ttl_ms != 0 ? ttl_ms : l->ttl_ms,
                              &op->ttl_ms);
    if (st == RL_OK)
        st = round_init(&op->round, c->nodes, c->node_count);
    if (st != RL_OK) {
        free(op);
        return st;
    }
    if (atomic_exchange(&l->extending, true)) {
        round_clear(&op->round);
        free(op);
        return rl_fail(RL_EMISUSE, "'%s': an extend is already in flight",
                       l->resource);
    }
    snprintf(op->ttl_buf, sizeof(op->ttl_buf), "%u", op->ttl_ms);
    op->base.client = c;
    op->base.start = start;
    op->base.cancel = cancel;
    op->cb = cb;
    op->privdata = privdata;
    op->lock = l;
    st = client_submit(c, &op->base);
    if (st != RL_OK) {
        atomic_store(&l->extending, false);
        round_clear(&op->round);
        free(op);
    }
    return st;
}
