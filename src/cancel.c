/* SPDX-License-Identifier: BSD-3-Clause */
/* cancel.c -- cancellation tokens (rl_cancel) and their hooks.
 *
 * A token is a flag and a list of hooks under a mutex; it is reference
 * counted: one reference for the caller (dropped by rl_cancel_free), one
 * per attached hook, so an operation may outlive the caller's handle.
 * A hook ties one operation (owner, on one loop) to a token. It is
 * reference counted too: one reference for the operation (dropped by
 * cancel_detach), one while its struct op is queued on the loop. Firing
 * unlinks every hook and queues it (an op) on its loop; there it calls
 * fn(owner) unless the operation detached first (owner is then NULL), so
 * a hook that fires after its operation ended touches nothing of it.
 * Lock order: token mutex, then the loop's queue mutex (loop_submit);
 * nothing takes them the other way round. */
#include <stdatomic.h>
#include <stdlib.h>

#include "cancel.h"
#include "list.h"

struct rl_cancel {
    pthread_mutex_t mutex;
    atomic_bool fired;
    atomic_uint refs;
    struct list hooks;           /* mutex: hooks not yet fired */
};

struct cancel_hook {
    struct op op;                /* queued on the loop when fired */
    struct list_link link;       /* on token->hooks, its mutex */
    bool linked;                 /* token's mutex */
    rl_cancel *token;
    struct loop *loop;
    void (*fn)(void *owner);
    _Atomic(void *) owner;       /* NULL once detached */
    atomic_uint refs;
};

static void token_unref(rl_cancel *t)
{
    if (atomic_fetch_sub(&t->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&t->mutex);
    free(t);
}

static void hook_unref(struct cancel_hook *h)
{
    if (atomic_fetch_sub(&h->refs, 1) != 1)
        return;
    token_unref(h->token);
    free(h);
}

static void unlink_hook(struct cancel_hook *h)
{
    if (!h->linked)
        return;
    list_remove(&h->token->hooks, &h->link);
    h->linked = false;
}

static void hook_run(struct op *op)
{
    struct cancel_hook *h = (struct cancel_hook *)op;
    void *owner = atomic_load(&h->owner);

    loop_op_finished(op);
    if (owner != NULL)
        h->fn(owner);
    hook_unref(h);
}

static void hook_drop(struct op *op)
{
    loop_op_finished(op);
    hook_unref((struct cancel_hook *)op);
}

rl_cancel *rl_cancel_new(void)
{
    rl_cancel *t = calloc(1, sizeof(*t));

    if (t == NULL) {
        rl_fail(RL_ENOMEM, "out of memory for a cancel token");
        return NULL;
    }
    if (pthread_mutex_init(&t->mutex, NULL) != 0) {
        free(t);
        rl_fail(RL_ESYSTEM, "pthread_mutex_init failed");
        return NULL;
    }
    atomic_init(&t->fired, false);
    atomic_init(&t->refs, 1);
    return t;
}

rl_status rl_cancel_fire(rl_cancel *t)
{
    struct cancel_hook *h;

    if (t == NULL)
        return rl_fail(RL_EINVAL, "cancel token is NULL");
    pthread_mutex_lock(&t->mutex);
    atomic_store(&t->fired, true);
    while (!list_empty(&t->hooks)) {
        h = list_entry(t->hooks.first, struct cancel_hook, link);
        unlink_hook(h);
        atomic_fetch_add(&h->refs, 1);
        h->op.start = hook_run;
        h->op.cancel = hook_drop;
        /* A loop that is closing cancels its operations itself. */
        if (loop_submit(h->loop, &h->op) != RL_OK)
            atomic_fetch_sub(&h->refs, 1); /* the operation keeps one */
    }
    pthread_mutex_unlock(&t->mutex);
    rl_error_clear();
    return RL_OK;
}

bool rl_cancel_fired(const rl_cancel *t)
{
    return t != NULL && atomic_load(&t->fired);
}

void rl_cancel_free(rl_cancel *t)
{
    if (t != NULL)
        token_unref(t);
}

struct cancel_hook *cancel_attach(rl_cancel *t, struct loop *lp,
                                  void (*fn)(void *owner), void *owner)
{
    struct cancel_hook *h = calloc(1, sizeof(*h));

    if (h == NULL) {
        rl_fail(RL_ENOMEM, "out of memory for a cancel hook");
        return NULL;
    }
    h->token = t;
    h->loop = lp;
    h->fn = fn;
    atomic_init(&h->owner, owner);
    atomic_init(&h->refs, 1);
    atomic_fetch_add(&t->refs, 1);
    pthread_mutex_lock(&t->mutex);
    if (!atomic_load(&t->fired)) {
        list_push_front(&t->hooks, &h->link);
        h->linked = true;
    }
    pthread_mutex_unlock(&t->mutex);
    return h;
}

void cancel_detach(struct cancel_hook *h)
{
    if (h == NULL)
        return;
    pthread_mutex_lock(&h->token->mutex);
    unlink_hook(h);
    pthread_mutex_unlock(&h->token->mutex);
    atomic_store(&h->owner, NULL);
    hook_unref(h);
}

bool cancel_fired(const struct cancel_hook *h)
{
    return h != NULL && atomic_load(&h->token->fired);
}
