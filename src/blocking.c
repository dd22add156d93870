/* SPDX-License-Identifier: BSD-3-Clause */
/* blocking.c -- the thread-safe blocking API, built on the async core the
 * way curl_easy_perform is built on the multi interface.
 *
 * Each call submits the async operation with a struct waiter on the
 * caller's stack and sleeps on its condition variable; the loop thread
 * fills in the outcome and the detail text and signals. Because the async
 * core guarantees exactly one callback per accepted operation (also
 * RL_ECANCELED when the client is freed), the wait always ends.
 * Refused with RL_EMISUSE: on an external loop (nobody would run it) and
 * on the loop thread itself (it would wait for itself). */
#include <stdio.h>

#include "asyncapi.h"
#include "election.h"
#include "holder.h"

/* The outcome of an operation whose submission returned st: when it was
 * accepted, its callback's (waited for here); else st (no callback). */
static rl_status outcome(struct waiter *w, rl_status st)
{
    if (st != RL_OK) {
        waiter_discard(w);
        return st;
    }
    return waiter_wait(w);
}

/* The callback of an operation on a held lock (extend, proclaim). */
static void lock_done(rl_lock *l, rl_status st, void *privdata)
{
    RL_UNUSED(l);
    waiter_done(privdata, st);
}

/* ---- Acquire ------------------------------------------------------------ */

static void acquired(rl_client *c, rl_status st, rl_lock *lock,
                     void *privdata)
{
    struct waiter *w = privdata;

    RL_UNUSED(c);
    w->result = lock;
    waiter_done(w, st);
}

rl_status rl_acquire_multi(rl_client *c, const char *const *resources,
                           size_t count, const rl_acquire_opts *o,
                           rl_lock **out)
{
    struct waiter w;
    rl_status st;

    if (out == NULL)
        return rl_fail(RL_EINVAL, "out is NULL");
    *out = NULL;
    if (c == NULL)
        return rl_fail(RL_EINVAL, "client is NULL");
    st = waiter_check(c->loop, "rl_acquire");
    if (st != RL_OK)
        return st;
    waiter_init(&w);
    st = outcome(&w, holder_acquire(c, resources, count, o, acquired, &w));
    *out = w.result; /* NULL unless acquired */
    return st;
}

rl_status rl_acquire(rl_client *c, const char *resource,
                     const rl_acquire_opts *o, rl_lock **out)
{
    return rl_acquire_multi(c, &resource, 1, o, out);
}

rl_status rl_campaign(rl_client *c, const char *name,
                      const rl_acquire_opts *o, rl_lock **out)
{
    rl_acquire_opts opts;
    rl_status st;

    if (out == NULL)
        return rl_fail(RL_EINVAL, "out is NULL");
    *out = NULL;
    st = asyncapi_campaign_opts(o, &opts);
    if (st != RL_OK)
        return st;
    return rl_acquire(c, name, &opts, out);
}

/* ---- Extend / release / proclaim --------------------------------------- */

static void released(rl_client *c, rl_status st, void *privdata)
{
    RL_UNUSED(c);
    waiter_done(privdata, st);
}

rl_status rl_extend(rl_lock *l, uint32_t ttl_ms)
{
    struct waiter w;

    waiter_init(&w);
    return outcome(&w, holder_extend(l, ttl_ms, lock_done, &w, "rl_extend"));
}

rl_status rl_release(rl_lock *l)
{
    struct waiter w;
    rl_status st;

    waiter_init(&w);
    st = holder_release(l, released, &w, "rl_release");
    if (st == RL_OK)
        return waiter_wait(&w);
    waiter_discard(&w);
    if (st == RL_EINVAL || st == RL_EMISUSE)
        return st; /* l untouched */
    rl_lock_free(l); /* consumed whatever the result */
    return st == RL_ECANCELED
               ? rl_fail(RL_ECANCELED,
                         "the lock's client was freed; handle freed")
               : st;
}

rl_status rl_proclaim(rl_lock *l, const char *owner)
{
    struct waiter w;

    waiter_init(&w);
    return outcome(&w, election_proclaim(l, owner, lock_done, &w,
                                         "rl_proclaim"));
}

/* ---- Critical section --------------------------------------------------- */

rl_status rl_with_lock(rl_client *c, const char *resource,
                       const rl_acquire_opts *o,
                       int (*fn)(rl_lock *l, void *arg), void *arg,
                       int *fn_result)
{
    rl_acquire_opts opts = {0};
    char detail[RL_ERRLEN];
    rl_lock *l;
    rl_status st;
    int result;
    bool lost;

    if (fn == NULL)
        return rl_fail(RL_EINVAL, "fn is NULL");
    if (o != NULL)
        opts = *o;
    opts.auto_extend = true;
    st = rl_acquire(c, resource, &opts, &l);
    if (st != RL_OK)
        return st;
    result = fn(l, arg);
    if (fn_result != NULL)
        *fn_result = result;
    lost = rl_lock_lost(l) || rl_lock_validity_ms(l) <= 0;
    st = rl_release(l);
    if (lost) {
        snprintf(detail, sizeof(detail), "'%s' was lost while fn ran",
                 resource);
        return rl_fail(RL_ELOST, "%s", detail);
    }
    return st;
}
