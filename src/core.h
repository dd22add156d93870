/* SPDX-License-Identifier: BSD-3-Clause */
/* core.h -- struct rl_client: what the operations and the holder layer
 * share (configuration, loop, nodes, notifications, counters). Data and
 * small helpers only; rl_client_new/free (client.c, the top layer) build
 * and tear it down. */
#ifndef REDLOCK_CORE_H
#define REDLOCK_CORE_H

#include <stdatomic.h>

#include "config.h"
#include "loop.h"
#include "node.h"

enum client_stat {
    STAT_ACQUIRED,
    STAT_CONTENDED,
    STAT_LOST,
    STAT_RENEWALS,
    STAT_FENCES,
    STAT_OVERLOAD_REFUSED,
    STAT_RENEWALS_WAITING,      /* a gauge: the watchdog's backlog */
    STAT_RENEWALS_EARLY,
    /* Fair waiting (queue.c): every registration ends once, granted or
     * left, so registrations = waiters + wait_count + leaves. */
    STAT_QUEUE_WAITERS,         /* a gauge: registered, not yet ended */
    STAT_QUEUE_REGISTRATIONS,
    STAT_QUEUE_WAIT_MS,         /* registration to grant, summed */
    STAT_QUEUE_WAIT_COUNT,      /* registrations that ended granted */
    STAT_QUEUE_LEAVES,          /* registrations that ended giving up */
    STAT_COUNT,
};

struct notify;
struct holders;
struct tls_ctx;
struct tls_target;

struct rl_client {
    struct config cfg;
    struct loop *loop;
    struct node **nodes;
    size_t node_count;
    struct notify *notify;       /* release notifications (loop thread) */
    struct tls_ctx *tls;         /* NULL: no TLS node, no TLS setting */
    struct tls_target **tls_targets; /* per node (NULL: plaintext node);
                                    the array is NULL without tls */
    struct holders *holders;     /* held locks (holder.c) */
    uint64_t rng;                /* jitter; loop thread only */
    bool fair_begun;             /* queue.c: a fair wait or attempt was
                                    made (loop thread) */
    atomic_uint_fast64_t stats[STAT_COUNT];
};

/* Bump a client-wide counter (any thread). */
static inline void client_count(rl_client *c, enum client_stat s)
{
    atomic_fetch_add(&c->stats[s], 1);
}

/* Uniform random in [0, bound) for jitter (loop thread). */
static inline uint32_t client_random(rl_client *c, uint32_t bound)
{
    if (bound == 0)
        return 0;
    return (uint32_t)(rl_xorshift64(&c->rng) % bound);
}

#endif
