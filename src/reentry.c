/* reentry.c -- reentrant locks (DESIGN §5.8, opt-in).
 *
 * The same thread acquiring the same resource on the same client, with
 * opts.reentrant, gets the same rl_lock back with its hold count raised;
 * Redis is touched only by the first acquire and the last release. The
 * owner thread is the one that called the first acquire. Hold counts and
 * the lookup are guarded by the client mutex (the same one that guards the
 * live-lock registry). A lost or expired lock is never re-entered: the
 * caller then goes to Redis like anybody else and is refused.
 * Callbacks of re-entries still run on the loop thread, exactly once, as
 * for every async call. */
#include <string.h>

#include "reentry.h"

struct reentry_op {
    struct op base;
    struct rl_lock *lock;
    rl_acquire_cb acquire_cb;    /* exactly one of the two is set */
    rl_release_cb release_cb;
    void *privdata;
};

static void reentry_run(struct op *base)
{
    struct reentry_op *op = (struct reentry_op *)base;
    rl_client *c = op->base.client;

    if (op->base.started)
        client_op_finished(c, &op->base);
    rl_error_clear();
    if (op->acquire_cb != NULL)
        op->acquire_cb(c, RL_OK, op->lock, op->privdata);
    else if (op->release_cb != NULL)
        op->release_cb(c, RL_OK, op->privdata);
    free(op);
}

/* Client freed first: the hold was already counted; report cancellation. */
static void reentry_cancel(struct op *base)
{
    struct reentry_op *op = (struct reentry_op *)base;
    rl_client *c = op->base.client;

    if (op->base.started)
        client_op_finished(c, &op->base);
    rl_fail(RL_ECANCELED, "the client is being freed");
    if (op->acquire_cb != NULL)
        op->acquire_cb(c, RL_ECANCELED, NULL, op->privdata);
    else if (op->release_cb != NULL)
        op->release_cb(c, RL_ECANCELED, op->privdata);
    free(op);
}

static rl_status queue_callback(rl_client *c, struct rl_lock *l,
                                rl_acquire_cb acb, rl_release_cb rcb,
                                void *privdata)
{
    struct reentry_op *op = calloc(1, sizeof(*op));
    rl_status st;

    if (op == NULL)
        return rl_fail(RL_ENOMEM, "out of memory");
    op->base.client = c;
    op->base.start = reentry_run;
    op->base.cancel = reentry_cancel;
    op->lock = l;
    op->acquire_cb = acb;
    op->release_cb = rcb;
    op->privdata = privdata;
    st = client_submit(c, &op->base);
    if (st != RL_OK)
        free(op);
    return st;
}

static bool same_resource(const rl_client *c, const struct rl_lock *l,
                          const char *resource)
{
    return l->nkeys == 1 &&
           strncmp(l->keys[0], c->cfg.prefix, c->cfg.prefix_len) == 0 &&
           strcmp(l->keys[0] + c->cfg.prefix_len, resource) == 0;
}

bool reentry_acquire(rl_client *c, const char *resource, rl_acquire_cb cb,
                     void *privdata, rl_status *st)
{
    pthread_t self = pthread_self();
    struct rl_lock *l;

    pthread_mutex_lock(&c->mutex);
    for (l = c->locks; l != NULL; l = l->next) {
        if (l->holds > 0 && pthread_equal(l->owner, self) &&
            same_resource(c, l, resource) && !atomic_load(&l->lost) &&
            lock_remaining_us(l) > 0)
            break;
    }
    if (l != NULL)
        l->holds++;
    pthread_mutex_unlock(&c->mutex);
    if (l == NULL)
        return false;
    *st = queue_callback(c, l, cb, NULL, privdata);
    if (*st != RL_OK) {
        pthread_mutex_lock(&c->mutex);
        l->holds--;
        pthread_mutex_unlock(&c->mutex);
    }
    return true;
}

bool reentry_release(struct rl_lock *l, rl_release_cb cb, void *privdata,
                     rl_status *st)
{
    rl_client *c = l->client;
    bool nested;

    pthread_mutex_lock(&c->mutex);
    nested = l->holds > 1;
    if (nested)
        l->holds--;
    pthread_mutex_unlock(&c->mutex);
    if (!nested)
        return false;
    *st = queue_callback(c, l, NULL, cb, privdata);
    if (*st != RL_OK) {
        pthread_mutex_lock(&c->mutex);
        l->holds++;
        pthread_mutex_unlock(&c->mutex);
    }
    return true;
}

void reentry_mark(struct rl_lock *l, pthread_t owner)
{
    l->owner = owner;
    l->holds = 1;
}
