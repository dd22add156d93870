/* SPDX-License-Identifier: BSD-3-Clause */
/* lock.h -- struct rl_lock, private to holder.c (the handle, its life, the
 * public calls) and watchdog.c (its renewals): what a held lock is and the
 * one function that changes its state.
 *
 *   ACQUIRING --won--> HELD --own round--> RENEWING --over--> HELD
 *                       |  \--in a batch--> BATCHED --over--> HELD
 *                       |--gone--> LOST --release--> RELEASING
 *                       +--release--> RELEASING --over--> RELEASED
 *
 * A round is dropped (its abort) before any other move: RENEWING and
 * BATCHED go back to HELD, RELEASING ends as RELEASED. LOST is final for
 * renewals; RELEASED is final, the handle is freed next. What is in flight
 * follows from the state: the extend round (RENEWING), the watchdog batch
 * (BATCHED) or the release round (RELEASING), in l->in_flight.
 *
 * Threads: state, in_flight, bits, the user request and the watchdog
 * fields belong to the loop thread. The atomics are read and written by
 * any thread (the public calls, the getters). */
#ifndef REDLOCK_LOCK_H
#define REDLOCK_LOCK_H

#include <pthread.h>

#include "core.h"
#include "list.h"
#include "lockrec.h"
#include "timeheap.h"

enum lock_state {
    LOCK_ACQUIRING, /* acquisition in flight; not the caller's yet */
    LOCK_HELD,      /* held as far as we know; nothing in flight */
    LOCK_RENEWING,  /* an extend round of its own is in flight */
    LOCK_BATCHED,   /* in a watchdog batch in flight */
    LOCK_RELEASING, /* the release round is in flight; handle consumed */
    LOCK_LOST,      /* known lost: never renewed again */
    LOCK_RELEASED,  /* the release is over or dropped: freed next */
    LOCK_STATES
};

/* Loop-thread bits of struct rl_lock.bits, each with its one writer. */
enum lock_bit {
    LOCK_WATCHED = 1u << 0,     /* watchdog.c: renewed by the watchdog, its
                                   timer node is in one of its heaps */
    LOCK_BACKLOGGED = 1u << 1,  /* watchdog.c: that heap is the backlog */
    LOCK_USER_WAITS = 1u << 2,  /* holder.c: the user's extend waits for
                                   the watchdog's renewal to end */
};

/* What few locks need, made with the lock (or by the watchdog start that
 * needs it), so the others do not pay for it. */
struct lock_extra {
    uint64_t fence;              /* fencing token, 0 without fencing */
    pthread_t owner;             /* reentrant: the holding thread */
    rl_mono_us hold_end_us;      /* watchdog: stop renewing after this; 0:
                                    no cap (loop thread) */
    unsigned holds;              /* reentrant holds; 0 = not reentrant
                                    (holders mutex) */
    uint32_t max_renewals;       /* watchdog: 0 no cap (loop thread) */
    uint32_t renewals;           /* watchdog renewals, for the cap */
    uint32_t interval_ms;        /* watchdog: renewal period; 0: ttl / 3 */
    rl_mono_us keep_until_us;    /* at_least_ms: a release before this
                                    keeps the keys until it; 0: none */
};

struct lock_req;

struct rl_lock {
    /* Ordered by size (no padding holes): thousands may be held. */
    struct list_link link;       /* registry (holders mutex) */
    _Atomic(rl_client *) client; /* NULL once the client is freed */
    struct lock_rec rec;         /* keys and token (tail of this block) */
    rl_mono_us confirmed_us;     /* start of the last round a quorum
                                    granted (acquire or renewal); 0 for an
                                    adopted lock not yet extended */
    _Atomic uint64_t deadline_us;/* validity end, boottime µs; 0 unknown */
    uint64_t holders;            /* bit i: node i's vote counts */
    void *in_flight;             /* by state: see lock_set_state */
    /* The user request on the lock: the extend whose round is in flight,
     * the extend waiting behind the watchdog's renewal (LOCK_USER_WAITS),
     * or the release in flight; NULL: none. */
    struct lock_req *user;
    _Atomic(struct lock_extra *) extra; /* NULL: no fence, not reentrant,
                                           no watchdog caps or interval */
    struct theap_node timer;     /* watchdog: in one of its heaps while
                                    LOCK_WATCHED */
    rl_lost_cb lost_cb;          /* called once, or NULL */
    void *lost_privdata;
    _Atomic uint32_t ttl_ms;     /* acquired with (adopted: first extended
                                    with); 0 unknown */
    atomic_uint voters;          /* voters of the last winning round */
    atomic_int lost_fd;          /* eventfd made on demand, -1 none */
    uint8_t state;               /* enum lock_state */
    uint8_t bits;                /* enum lock_bit */
    atomic_bool lost;
    atomic_bool user_extending;  /* a user extend is queued or running */
    /* A watchdog was asked for (rl_watchdog_start, a watched acquire)
     * and not stopped by rl_watchdog_stop: any thread, so a second start
     * is refused. Whether it runs now is the loop's LOCK_WATCHED. */
    atomic_bool watch_claimed;
    atomic_bool quiet;           /* given up: no more lost callbacks */
    atomic_bool in_lost_cb;      /* the lost callback is running */
    atomic_bool free_requested;  /* freed while the client was closing */
};

/* A held lock costs at most 300 bytes plus its name, and this struct is
 * most of it: growing it is a decision, not an accident. */
_Static_assert(sizeof(struct rl_lock) <= 192,
               "struct rl_lock outgrew the per-lock memory budget");

static inline bool lock_has(const struct rl_lock *l, enum lock_bit b)
{
    return (l->bits & b) != 0;
}

static inline void lock_put(struct rl_lock *l, enum lock_bit b, bool on)
{
    l->bits = (uint8_t)(on ? l->bits | b : l->bits & ~b);
}

static inline struct lock_extra *lock_extra_of(const struct rl_lock *l)
{
    return atomic_load(&((struct rl_lock *)l)->extra);
}

/* Validity left (µs; INT64_MAX while unknown, <= 0 once run out). */
static inline int64_t lock_remaining_us(const struct rl_lock *l)
{
    uint64_t deadline = atomic_load(&((struct rl_lock *)l)->deadline_us);

    if (deadline == 0)
        return INT64_MAX;
    return (int64_t)deadline - (int64_t)mono_now_us();
}

/* Whether the table allows from -> to. */
bool lock_transition_legal(enum lock_state from, enum lock_state to);

/* Whether state `s` has something in flight. */
bool lock_state_in_flight(enum lock_state s);

/* The only way a lock changes state (loop thread). in_flight is what the
 * new state has in flight (struct extend_round for RENEWING, struct
 * extend_batch for BATCHED, struct release_round for RELEASING), NULL for
 * the others. An illegal move or a missing or extra in_flight is a bug:
 * reported on stderr, then abort(). */
void lock_set_state(struct rl_lock *l, enum lock_state to, void *in_flight);

/* Drop what is in flight, if anything (its replies land on node-owned
 * records): RENEWING and BATCHED -> HELD, RELEASING -> RELEASED. */
void lock_drop_flight(struct rl_lock *l);

#endif
