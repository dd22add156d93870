/* SPDX-License-Identifier: BSD-3-Clause */
/* lock.c -- a held lock's state machine: the table of legal moves, the
 * one function that makes them, and dropping what is in flight. */
#include <stdio.h>
#include <stdlib.h>

#include "extend.h"
#include "lock.h"
#include "release.h"

#define TO(s) (1u << (s))

/* legal[from]: the states it may move to. */
static const unsigned legal[LOCK_STATES] = {
    [LOCK_ACQUIRING] = TO(LOCK_HELD),
    [LOCK_HELD] = TO(LOCK_RENEWING) | TO(LOCK_BATCHED) | TO(LOCK_RELEASING) |
                  TO(LOCK_LOST),
    [LOCK_RENEWING] = TO(LOCK_HELD),
    [LOCK_BATCHED] = TO(LOCK_HELD),
    [LOCK_RELEASING] = TO(LOCK_RELEASED),
    [LOCK_LOST] = TO(LOCK_RELEASING),
    [LOCK_RELEASED] = 0,
};

bool lock_transition_legal(enum lock_state from, enum lock_state to)
{
    return from < LOCK_STATES && to < LOCK_STATES &&
           (legal[from] & TO(to)) != 0;
}

bool lock_state_in_flight(enum lock_state s)
{
    return s == LOCK_RENEWING || s == LOCK_BATCHED || s == LOCK_RELEASING;
}

void lock_set_state(struct rl_lock *l, enum lock_state to, void *in_flight)
{
    if (!lock_transition_legal((enum lock_state)l->state, to) ||
        lock_state_in_flight(to) != (in_flight != NULL)) {
        fprintf(stderr, "redlock: bug: lock state %u -> %u (%s in flight)\n",
                (unsigned)l->state, (unsigned)to,
                in_flight != NULL ? "something" : "nothing");
        abort();
    }
    l->state = (uint8_t)to;
    l->in_flight = in_flight;
}

void lock_drop_flight(struct rl_lock *l)
{
    switch ((enum lock_state)l->state) {
    case LOCK_RENEWING:
        extend_abort(l->in_flight);
        lock_set_state(l, LOCK_HELD, NULL);
        break;
    case LOCK_BATCHED:
        extend_batch_drop(l->in_flight, l);
        lock_set_state(l, LOCK_HELD, NULL);
        break;
    case LOCK_RELEASING:
        release_abort(l->in_flight);
        lock_set_state(l, LOCK_RELEASED, NULL);
        break;
    default:
        break;
    }
}
