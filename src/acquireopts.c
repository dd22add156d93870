/* SPDX-License-Identifier: BSD-3-Clause */
/* acquireopts.c -- what an acquire's names and options must be, checked
 * before anything is sent (any thread): each message names the option
 * and the bound it broke. */
#include <stdint.h>

#include "abi.h"
#include "acquireopts.h"
#include "config.h"
#include "lockrec.h"

/* Fair waiting: one queue per acquire (a semaphore's is its base
 * key's), every kind. */
static rl_status check_fair(size_t count, const rl_acquire_opts *o)
{
    if (o->fair > 1)
        return rl_fail(RL_EINVAL, "fair %u is not 0 or 1", o->fair);
    if (o->priority > RL_MAX_PRIORITY)
        return rl_fail(RL_EINVAL, "priority %u is above the maximum %u",
                       o->priority, RL_MAX_PRIORITY);
    if (!o->fair && o->priority == 0)
        return RL_OK;
    if (count != 1)
        return rl_fail(RL_EINVAL, "a fair acquire takes exactly one "
                       "resource (one queue per acquire)");
    return RL_OK;
}

/* The lock-kind options: each kind alone, on one resource. */
static rl_status check_kind(rl_client *c, size_t count,
                            const rl_acquire_opts *o, uint32_t ttl)
{
    if (o->lock_delay_ms > c->cfg.max_ttl_ms - ttl)
        return rl_fail(RL_EINVAL,
                       "lock_delay_ms %u + ttl_ms %u is above max_ttl_ms "
                       "%u (the restart quarantine must outlast every key)",
                       o->lock_delay_ms, ttl, c->cfg.max_ttl_ms);
    if (o->mode != RL_MODE_EXCLUSIVE && o->mode != RL_MODE_SHARED)
        return rl_fail(RL_EINVAL, "mode %u is not RL_MODE_EXCLUSIVE or "
                       "RL_MODE_SHARED", o->mode);
    if (o->limit > RL_MAX_LIMIT)
        return rl_fail(RL_EINVAL, "limit %u is above the maximum %u",
                       o->limit, RL_MAX_LIMIT);
    if ((o->limit != 0 || o->mode == RL_MODE_SHARED) && count != 1)
        return rl_fail(RL_EINVAL, "%s takes exactly one resource",
                       o->limit != 0 ? "a semaphore (limit)"
                                     : "a shared (reader) lock");
    if (o->limit != 0 && o->mode == RL_MODE_SHARED)
        return rl_fail(RL_EINVAL, "limit and RL_MODE_SHARED cannot be "
                       "combined: a semaphore's slots are exclusive");
    if (o->mode == RL_MODE_SHARED && o->fencing)
        return rl_fail(RL_EINVAL, "fencing needs an exclusive lock: readers "
                       "share theirs (use it on the writer)");
    if (o->limit != 0 && o->reentrant)
        return rl_fail(RL_EINVAL, "a semaphore (limit) is not reentrant: "
                       "each acquire takes its own permit");
    if (o->mode == RL_MODE_SHARED && o->reentrant)
        return rl_fail(RL_EINVAL, "a shared (reader) lock is not "
                       "reentrant: readers already share it");
    if (o->at_least_ms != 0 &&
        (o->mode == RL_MODE_SHARED || o->fair || o->priority != 0 ||
         o->lock_delay_ms != 0))
        return rl_fail(RL_EINVAL, "at_least_ms is for an exclusive lock or "
                       "a semaphore, without fair waiting or a lock-delay");
    if (o->at_least_ms > c->cfg.max_ttl_ms)
        return rl_fail(RL_EINVAL,
                       "at_least_ms %llu is above max_ttl_ms %u (the "
                       "restart quarantine must outlast every key: a key "
                       "kept longer could be forgotten by a restarted node "
                       "that votes again)",
                       (unsigned long long)o->at_least_ms,
                       c->cfg.max_ttl_ms);
    return check_fair(count, o);
}

rl_status acquireopts_check(rl_client *c, const char *const *resources,
                        size_t count, const rl_acquire_opts *o,
                        uint32_t *ttl)
{
    rl_status st;
    size_t i;

    if (resources == NULL || count == 0 || count > RL_MAX_RESOURCES)
        return rl_fail(RL_EINVAL, "resources: 1..%d names required",
                       RL_MAX_RESOURCES);
    for (i = 0; i < count; i++) {
        st = config_check_resource(&c->cfg, resources[i], "resource");
        if (st != RL_OK)
            return st;
    }
    if (o != NULL) {
        st = abi_check(ABI_ACQUIRE_OPTS, o);
        if (st != RL_OK)
            return st;
    }
    st = config_effective_ttl(&c->cfg, o != NULL ? o->ttl_ms : 0, ttl);
    if (st != RL_OK)
        return st;
    if (o != NULL && o->wait_ms < 0 && o->wait_ms != RL_WAIT_FOREVER)
        return rl_fail(RL_EINVAL,
                       "wait_ms must be >= 0 or RL_WAIT_FOREVER, got %lld",
                       (long long)o->wait_ms);
    if (o != NULL && lockrec_check_owner(o->owner) != RL_OK)
        return RL_EINVAL;
    if (o != NULL && o->min_validity_ms >= *ttl)
        return rl_fail(RL_EINVAL, "min_validity_ms %u must be below ttl %u",
                       o->min_validity_ms, *ttl);
    return o != NULL ? check_kind(c, count, o, *ttl) : RL_OK;
}
