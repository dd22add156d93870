/* release.c -- compare-and-delete on all nodes (DESIGN §5.3), and freeing
 * lock handles.
 *
 * The release script deletes each key only where it still holds our token
 * and publishes on redlock:release:<key> so waiters wake at once (§5.5).
 * It goes to every node; the result tells the caller the truth about the
 * lock it held --
 *   RL_OK           released while still valid (adopted token: released
 *                   or already free),
 *   RL_ELOST        validity had run out first, or no node still had it,
 *   RL_ENOTACQUIRED a majority holds another token,
 *   RL_ENOQUORUM    too few nodes answered (the keys expire on their own).
 * The handle is consumed whatever the result. A late reply lands on a
 * node-owned request record, never on this freed operation. */
#include <stdio.h>
#include <string.h>

#include "extend.h"
#include "lock.h"
#include "reentry.h"
#include "watchdog.h"

struct release_op {
    struct op base;
    rl_release_cb cb;           /* may be NULL */
    void *privdata;
    struct rl_lock *lock;
    bool expired_before;        /* validity was over when we started */
    size_t deleted;             /* nodes: ours, deleted */
    size_t absent;              /* nodes: no key */
    size_t other;               /* nodes: another token */
    struct quorum_round round;
    char detail[RL_ERRLEN];
};

static void unregister_and_destroy(struct rl_lock *l)
{
    if (l->client != NULL)
        client_lock_remove(l->client, l);
    lock_destroy(l);
}

static void finish(struct release_op *op, rl_status st)
{
    rl_client *c = op->base.client;
    rl_release_cb cb = op->cb;
    void *privdata = op->privdata;

    round_clear(&op->round);
    unregister_and_destroy(op->lock);
    if (st == RL_OK)
        rl_error_clear();
    else
        rl_error_set_text(op->detail);
    client_op_finished(c, &op->base);
    free(op);
    if (cb != NULL)
        cb(c, st, privdata);
}

static void cancel(struct op *base)
{
    struct release_op *op = (struct release_op *)base;

    snprintf(op->detail, sizeof(op->detail),
             "release of '%s' canceled: client freed", op->lock->resource);
    finish(op, RL_ECANCELED);
}

static enum vote classify(void *owner, size_t slot,
                          const struct node_reply *r)
{
    struct release_op *op = owner;

    RL_UNUSED(slot);
    if (r->kind != REPLY_INTEGER)
        return VOTE_ERROR;
    if (r->integer == 1) {
        op->deleted++;
        return VOTE_YES;
    }
    if (r->integer == 0)
        op->absent++;
    else
        op->other++;
    return VOTE_NO;
}

static void decided(void *owner, enum verdict v)
{
    struct release_op *op = owner;
    struct quorum_round *q = &op->round;
    size_t quorum = quorum_size(q->n);
    const char *name = op->lock->resource;

    RL_UNUSED(v);
    if (op->other >= quorum) {
        snprintf(op->detail, sizeof(op->detail),
                 "'%s' is held by another token on %zu of %zu nodes", name,
                 op->other, q->n);
        finish(op, RL_ENOTACQUIRED);
    } else if (op->deleted + op->absent + op->other < quorum) {
        snprintf(op->detail, sizeof(op->detail),
                 "'%s': only %zu of %zu nodes answered the release: %s",
                 name, op->deleted + op->absent + op->other, q->n,
                 q->detail);
        finish(op, RL_ENOQUORUM);
    } else if (!op->lock->adopted &&
               (op->expired_before || op->deleted == 0)) {
        snprintf(op->detail, sizeof(op->detail),
                 "'%s' was already lost before the release (%s)", name,
                 op->expired_before ? "validity had run out"
                                    : "no node still held it");
        finish(op, RL_ELOST);
    } else {
        finish(op, RL_OK);
    }
}

static void start(struct op *base)
{
    struct release_op *op = (struct release_op *)base;
    struct lock_cmd cmd;
    enum verdict v;

    watchdog_detach(op->lock);
    extend_cancel_inflight(op->lock);
    op->expired_before = lock_remaining_us(op->lock) <= 0;
    lock_script_cmd(op->lock, SCRIPT_RELEASE, NULL, &cmd);
    /* Our own lock: decide once a majority deleted it (or cannot have).
     * An adopted token waits for every node, so "held by another token"
     * is told apart from "already free" exactly (the CLI's exit code). */
    v = round_start(&op->round, op->lock->adopted ? ROUND_ALL : ROUND_EARLY,
                    &cmd.cmd, classify, decided, op);
    if (v != VERDICT_PENDING)
        decided(op, v);
}

rl_status rl_release_async(rl_lock *l, rl_release_cb cb, void *privdata)
{
    struct release_op *op;
    rl_status st;

    if (l == NULL)
        return rl_fail(RL_EINVAL, "lock is NULL");
    if (l->client == NULL)
        return rl_fail(RL_EMISUSE,
                       "the lock's client was freed: use rl_lock_free");
    if (reentry_release(l, cb, privdata, &st))
        return st;
    op = calloc(1, sizeof(*op));
    if (op == NULL)
        return rl_fail(RL_ENOMEM, "out of memory for a release");
    st = round_init(&op->round, l->client->nodes, l->client->node_count);
    if (st != RL_OK) {
        free(op);
        return st;
    }
    op->base.client = l->client;
    op->base.start = start;
    op->base.cancel = cancel;
    op->cb = cb;
    op->privdata = privdata;
    op->lock = l;
    st = client_submit(l->client, &op->base);
    if (st != RL_OK) {
        round_clear(&op->round);
        free(op);
    }
    return st;
}

/* ---- Freeing a handle without touching Redis ---------------------------- */

struct lock_free_op {
    struct op base;
    struct rl_lock *lock;
};

static void lock_free_run(struct op *base)
{
    struct lock_free_op *op = (struct lock_free_op *)base;

    watchdog_detach(op->lock);
    extend_cancel_inflight(op->lock);
    unregister_and_destroy(op->lock);
    if (op->base.started)
        client_op_finished(op->base.client, &op->base);
    free(op);
}

void rl_lock_free(rl_lock *l)
{
    struct lock_free_op *op;

    if (l == NULL)
        return;
    /* With a live client an extend may be running on the loop thread:
     * free the handle there. */
    op = l->client != NULL ? calloc(1, sizeof(*op)) : NULL;
    if (op != NULL) {
        op->base.client = l->client;
        op->base.start = lock_free_run;
        op->base.cancel = lock_free_run;
        op->lock = l;
        if (client_submit(l->client, &op->base) == RL_OK)
            return;
        free(op);
    }
    unregister_and_destroy(l);
}

rl_status rl_lock_adopt(rl_client *c, const char *resource, const char *token,
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
    st = config_check_resource(resource, "resource");
    if (st != RL_OK)
        return st;
    if (token == NULL)
        return rl_fail(RL_EINVAL, "token is NULL");
    len = strnlen(token, RL_MAX_TOKEN_LEN + 1);
    if (len == 0 || len > RL_MAX_TOKEN_LEN)
        return rl_fail(RL_EINVAL, "token must be 1..%d characters",
                       RL_MAX_TOKEN_LEN);
    st = lock_new(c, &resource, 1, token, &l);
    if (st != RL_OK)
        return st;
    client_lock_add(c, l);
    *out = l;
    return RL_OK;
}
