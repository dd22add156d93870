/* SPDX-License-Identifier: BSD-3-Clause */
/* asyncapi.c -- the public async API of redlock.h: acquire, campaign,
 * extend and release (thin wrappers over holder.c's operations, which the
 * blocking facade calls too) and adopting a lock by its token. */
#include <string.h>

#include "abi.h"
#include "handle.h"
#include "holder.h"
#include "asyncapi.h"

rl_status rl_acquire_async(rl_client *c, const char *resource,
                           const rl_acquire_opts *o, rl_acquire_cb cb,
                           void *privdata)
{
    return holder_acquire(c, &resource, 1, o, cb, privdata);
}

rl_status rl_acquire_multi_async(rl_client *c, const char *const *resources,
                                 size_t count, const rl_acquire_opts *o,
                                 rl_acquire_cb cb, void *privdata)
{
    return holder_acquire(c, resources, count, o, cb, privdata);
}

rl_status asyncapi_campaign_opts(const rl_acquire_opts *o,
                                 rl_acquire_opts *out)
{
    rl_acquire_opts zero = {0};

    *out = o != NULL ? *o : zero;
    if (out->limit != 0 || out->mode != RL_MODE_EXCLUSIVE ||
        out->reentrant)
        return rl_fail(RL_EINVAL, "a campaign takes an exclusive lock: "
                       "limit, RL_MODE_SHARED and reentrant are not "
                       "allowed");
    if (out->wait_ms == 0)
        out->wait_ms = RL_WAIT_FOREVER;
    out->fencing = true;
    out->auto_extend = true;
    return RL_OK;
}

rl_status rl_campaign_async(rl_client *c, const char *name,
                            const rl_acquire_opts *o, rl_acquire_cb cb,
                            void *privdata)
{
    rl_acquire_opts opts;
    rl_status st = asyncapi_campaign_opts(o, &opts);

    if (st != RL_OK)
        return st;
    return holder_acquire(c, &name, 1, &opts, cb, privdata);
}

rl_status rl_extend_async(rl_lock *l, uint32_t ttl_ms, rl_extend_cb cb,
                          void *privdata)
{
    return holder_extend(l, ttl_ms, cb, privdata, NULL);
}

rl_status rl_release_async(rl_lock *l, rl_release_cb cb, void *privdata)
{
    return holder_release(l, cb, privdata, NULL);
}

rl_status rl_lock_adopt(rl_client *c, const char *resource, const char *token,
                        rl_lock **out)
{
    return rl_lock_adopt_opts(c, resource, token, NULL, out);
}

/* What rl_lock_adopt_opts takes from o: the mode and the lock-delay. */
static rl_status check_adopt_opts(rl_client *c, const rl_acquire_opts *o)
{
    if (abi_check(ABI_ACQUIRE_OPTS, o) != RL_OK)
        return RL_EINVAL;
    if (o->mode != RL_MODE_EXCLUSIVE && o->mode != RL_MODE_SHARED)
        return rl_fail(RL_EINVAL, "mode %u is not RL_MODE_EXCLUSIVE or "
                       "RL_MODE_SHARED", o->mode);
    if (o->limit != 0)
        return rl_fail(RL_EINVAL, "adopt a semaphore slot by its name "
                       "(\"<resource>:slot:<i>\"), without limit");
    if (o->lock_delay_ms >= c->cfg.max_ttl_ms)
        return rl_fail(RL_EINVAL, "lock_delay_ms %u must be below "
                       "max_ttl_ms %u", o->lock_delay_ms, c->cfg.max_ttl_ms);
    return RL_OK;
}

rl_status rl_lock_adopt_opts(rl_client *c, const char *resource,
                             const char *token, const rl_acquire_opts *o,
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
    st = config_check_resource(&c->cfg, resource, "resource");
    if (st != RL_OK)
        return st;
    if (token == NULL)
        return rl_fail(RL_EINVAL, "token is NULL");
    len = strnlen(token, RL_MAX_TOKEN_LEN + 1);
    if (len == 0 || len > RL_MAX_TOKEN_LEN)
        return rl_fail(RL_EINVAL, "token must be 1..%d characters",
                       RL_MAX_TOKEN_LEN);
    st = o != NULL ? check_adopt_opts(c, o) : RL_OK;
    if (st == RL_OK)
        st = handle_new_kind(c, &resource, 1, token, o, &l);
    if (st != RL_OK)
        return st;
    /* Unknown: every node may hold it until it answers otherwise. */
    l->holders = c->node_count < 64 ? (UINT64_C(1) << c->node_count) - 1
                                    : UINT64_MAX;
    lock_set_state(l, LOCK_HELD, NULL);
    handles_add(c, l);
    *out = l;
    return RL_OK;
}
