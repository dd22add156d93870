/* fence.h -- fencing tokens (DESIGN §5.6). */
#ifndef REDLOCK_FENCE_H
#define REDLOCK_FENCE_H

#include <stdbool.h>
#include <stdint.h>

#include "node.h"

#define FENCE_KEY_PREFIX "redlock:fence:"

/* "redlock:fence:" + key, malloc'd (NULL on OOM). */
char *fence_key(const char *key, size_t key_len);
/* The token to write: max(max_read + 1, wall_us). */
uint64_t fence_candidate(uint64_t max_read, uint64_t wall_us);
/* A counter as stored in Redis (decimal string, or nil = 0). */
bool fence_parse(const struct node_reply *r, uint64_t *out);

#endif
