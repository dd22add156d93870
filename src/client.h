/* client.h -- what the operations need from rl_client: the nodes, the
 * config, operations handed to the loop thread, timers, and the registry
 * that cancels everything when the client is freed. */
#ifndef REDLOCK_CLIENT_H
#define REDLOCK_CLIENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "config.h"
#include "node.h"

struct client_loop; /* libev details, private to client.c */

enum client_stat {
    STAT_ACQUIRED,
    STAT_CONTENDED,
    STAT_LOST,
    STAT_RENEWALS,
    STAT_FENCES,
    STAT_COUNT,
};
struct rl_lock;

/* An asynchronous operation. It is queued by the calling thread, started
 * on the loop thread, and ends by calling its user callback exactly once:
 * either normally, or from cancel() when the client is freed. */
struct op {
    struct op *prev;
    struct op *next;
    rl_client *client;
    void (*start)(struct op *op); /* loop thread */
    void (*cancel)(struct op *op); /* loop thread: report ECANCELED, free */
    bool started;
};

struct rl_client {
    struct config cfg;
    struct node **nodes;
    size_t node_count;
    struct client_loop *loop;
    struct notify *notify;       /* release notifications (loop thread) */
    pthread_mutex_t mutex;       /* guards queued ops and the lock list */
    struct op *queued;           /* submitted, not started (mutex) */
    struct op *queued_tail;
    struct op *active;           /* started, not finished (loop thread) */
    struct rl_lock *locks;       /* live lock handles (mutex) */
    atomic_bool closing;
    uint64_t rng;                /* jitter; loop thread only */
    atomic_uint_fast64_t stats[STAT_COUNT];
};

/* Bump a client-wide counter (any thread). */
void client_count(rl_client *c, enum client_stat s);

/* Hand op to the loop thread; it starts on a later loop iteration, never
 * inside this call. RL_ECANCELED if the client is closing (op untouched). */
rl_status client_submit(rl_client *c, struct op *op);
/* A started op is done: remove it from the cancel registry. */
void client_op_finished(rl_client *c, struct op *op);

/* True on the client's own loop thread (always false with an external
 * loop, where the blocking API is refused anyway). */
bool client_on_loop_thread(const rl_client *c);
bool client_has_own_loop(const rl_client *c);

/* Uniform random in [0, bound) for jitter (loop thread). */
uint32_t client_random(rl_client *c, uint32_t bound);

/* One-shot timer on the client's loop (loop thread only). */
struct loop_timer;
struct loop_timer *loop_timer_new(rl_client *c, void (*fn)(void *arg),
                                  void *arg);
void loop_timer_arm(struct loop_timer *t, uint64_t after_us);
void loop_timer_stop(struct loop_timer *t);
void loop_timer_free(struct loop_timer *t);

/* Live lock registry, so rl_client_free can orphan handles (any thread). */
void client_lock_add(rl_client *c, struct rl_lock *l);
void client_lock_remove(rl_client *c, struct rl_lock *l);

#endif
