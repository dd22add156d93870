/* SPDX-License-Identifier: BSD-3-Clause */
/* fence.h -- fencing tokens (docs/fencing.md, docs/protocol.md). */
#ifndef REDLOCK_FENCE_H
#define REDLOCK_FENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "node.h"

/* The node's fencing counter, one for every resource, and beside it its
 * marker: the run_id of the server that vouches for it. Neither expires:
 * two keys per node, however many names were ever fenced. */
#define FENCE_COUNTER_KEY "redlock:fence"
#define FENCE_MARK_KEY "redlock:fencerun"
/* Per fenced lock: whom the counter was last raised for through this
 * key, so that readers never pair a holder with another holder's term.
 * "<token>" from the round that set the lock key (its term is not written
 * yet), "<token> <term>" from the fence write (fence_record_parse). It
 * expires with the lock key (renewals keep it beside the key). */
#define FENCE_FOR_PREFIX "redlock:fencefor:"

/* What the acquire round read from the nodes' counters. */
struct fence_read {
    uint64_t max_read; /* largest counter in any well-formed reply */
    size_t trusted;    /* granting voting nodes whose counter was written
                        * since their last restart */
};

/* What a node's fence record (FENCE_FOR_PREFIX) says of the value it
 * holds at the lock key. */
enum fence_record {
    FENCE_RECORD_NONE,    /* absent, or names another lock */
    FENCE_RECORD_PENDING, /* names it; its term is not written here yet */
    FENCE_RECORD_TERM,    /* names it with its term */
};

/* prefix + key, malloc'd (NULL on OOM). */
char *fence_key(const char *prefix, const char *key, size_t key_len);
/* Take one acquire-fenced reply {granted, counter or nil, trusted} of a
 * node (voting: node_voting) into fr; *granted says whether the node set
 * our keys. False: malformed. */
bool fence_read_reply(struct fence_read *fr, const struct node_reply *r,
                      bool voting, bool *granted);
/* The token to write: max_read + 1 when the counters of a quorum of the
 * n nodes granted and are trusted, else max(max_read + 1, wall_us) (the
 * wall-clock fallback). */
uint64_t fence_candidate(const struct fence_read *fr, size_t n,
                         uint64_t wall_us);
/* The run_ids of the voting nodes among nodes[0..n) whose current server
 * was out of its restart quarantine at t0 (round 1's start): round 2 may
 * mark their counters trusted (why no other: above fence_candidate; a
 * server that restarted since has another run_id). Into argv/lens;
 * returns how many. */
size_t fence_markable(struct node *const *nodes, size_t n, rl_mono_us t0,
                      const char **argv, size_t *lens);

/* Read a fence record (rec, len bytes; NULL: absent) against the value
 * the node holds at the lock key (""/NULL: none); *term is set for
 * FENCE_RECORD_TERM, else 0. */
enum fence_record fence_record_parse(const char *rec, size_t len,
                                     const char *value, uint64_t *term);

#endif
