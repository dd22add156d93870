/* SPDX-License-Identifier: BSD-3-Clause */
/* timeheap.h -- an intrusive min-heap of instants (a pairing heap): one
 * timer structure for many deadlines without an allocation per insert.
 * Not thread-safe: its owner serializes access. */
#ifndef REDLOCK_TIMEHEAP_H
#define REDLOCK_TIMEHEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Embedded in each element; zeroed (or after theap_remove) = not queued. */
struct theap_node {
    uint64_t key;              /* the instant, smallest first */
    struct theap_node *child;  /* first child */
    struct theap_node *next;   /* next sibling */
    struct theap_node *prev;   /* previous sibling, or the parent */
};

struct theap {
    struct theap_node *root;
    size_t count;
};

/* Queue n (not queued) at key. O(1). */
void theap_insert(struct theap *h, struct theap_node *n, uint64_t key);
/* Take n out; no-op when it is not queued. O(log count) amortized. */
void theap_remove(struct theap *h, struct theap_node *n);
/* The smallest key's node, or NULL when empty. */
static inline struct theap_node *theap_min(const struct theap *h)
{
    return h->root;
}
/* True when n is queued in h. */
static inline bool theap_queued(const struct theap *h,
                                const struct theap_node *n)
{
    return n->prev != NULL || h->root == n;
}

#endif
