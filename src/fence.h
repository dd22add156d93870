/* fence.h -- fencing tokens (docs/fencing.md, docs/protocol.md). */
#ifndef REDLOCK_FENCE_H
#define REDLOCK_FENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "node.h"

#define FENCE_KEY_PREFIX "redlock:fence:"
/* Beside each counter: the run_id of the server that last wrote it. */
#define FENCE_MARK_PREFIX "redlock:fencerun:"

/* What the acquire round read from the nodes' counters. */
struct fence_read {
    uint64_t max_read; /* largest counter in any well-formed reply */
    size_t trusted;    /* granting voting nodes whose counter was written
                        * since their last restart */
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

#endif
