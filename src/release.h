/* SPDX-License-Identifier: BSD-3-Clause */
/* release.h -- one compare-and-delete round on all nodes,
 * loop thread. */
#ifndef REDLOCK_RELEASE_H
#define REDLOCK_RELEASE_H

#include "core.h"
#include "lockrec.h"

struct release_round;

/* Outcome, called exactly once unless aborted (rl_last_error() says why).
 * It is release_verdict of what every node answered (a node that did not
 * answer in time is unknown), given as soon as the nodes still to answer
 * cannot change it, so the same keys give the same outcome in any reply
 * order. Our own lock:
 *   RL_OK           a quorum of voting nodes still held our key and
 *                   deleted it (held from the acquire up to the release),
 *   RL_ELOST        validity had run out first, or fewer than a quorum
 *                   still held it or did not answer (it may have been
 *                   taken meanwhile),
 *   RL_ENOTACQUIRED a majority holds another token,
 *   RL_ENOQUORUM    too few holders and too many unknown to tell (the keys
 *                   left expire on their own).
 * An adopted token (held or free, unknown to us): RL_OK when a quorum of
 * nodes has no key or deleted ours (released or already free),
 * RL_ENOTACQUIRED as above, else RL_ENOQUORUM. */
typedef void release_done_fn(void *owner, rl_status st);

/* What the nodes told one release round; each node counts once. */
struct release_facts {
    size_t n;       /* nodes */
    size_t held;    /* voting nodes that deleted our key */
    size_t gone;    /* no key, or ours on a node whose vote does not
                       count (deleted, never counted as held) */
    size_t other;   /* another token (or readers' hash) */
    size_t unknown; /* error reply, timeout or down */
};

/* The outcome for facts where every node is counted (no message set). */
rl_status release_verdict(const struct release_facts *f, bool adopted,
                          bool expired_before);
/* True when the nodes not counted in f yet cannot change release_verdict,
 * whatever each of them answers. */
bool release_settled(const struct release_facts *f, bool adopted,
                     bool expired_before);

/* expired_before: the holder's validity was over when it asked. keep_ms:
 * 0 deletes the keys; else they are kept, where they hold our token,
 * for keep_ms more (the keep script: the rest of an at_least_ms
 * period), with the same outcomes. NULL on out of memory. rec must live
 * until done or release_abort. */
struct release_round *release_new(rl_client *c, const struct lock_rec *rec,
                                  bool expired_before, uint32_t keep_ms,
                                  release_done_fn *done, void *owner);
/* Send it; done may run before this returns; frees itself after done. */
void release_run(struct release_round *r);
/* Drop a round whose done has not run (no callback). */
void release_abort(struct release_round *r);

#endif
