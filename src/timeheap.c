/* SPDX-License-Identifier: BSD-3-Clause */
/* timeheap.c -- intrusive pairing heap of instants (one timer structure
 * for every watched lock of a client).
 *
 * Invariants: every node's key is >= its parent's; a queued node other
 * than the root has prev set (its previous sibling, or its parent when it
 * is the first child); an unqueued node has child, next and prev NULL.
 * Merging the root's children is iterative (two passes), so a root with
 * 100,000 children (after as many inserts) costs no recursion depth. */
#include "timeheap.h"

/* Link two roots (neither has siblings); returns the new root. */
static struct theap_node *meld(struct theap_node *a, struct theap_node *b)
{
    struct theap_node *t;

    if (a == NULL)
        return b;
    if (b == NULL)
        return a;
    if (b->key < a->key) {
        t = a;
        a = b;
        b = t;
    }
    b->prev = a;
    b->next = a->child;
    if (a->child != NULL)
        a->child->prev = b;
    a->child = b;
    a->next = a->prev = NULL;
    return a;
}

/* Merge a sibling list into one tree: meld pairs left to right, then the
 * pairs right to left. */
static struct theap_node *merge_pairs(struct theap_node *first)
{
    struct theap_node *pairs = NULL; /* melded pairs, in reverse */
    struct theap_node *a, *b, *rest, *root;

    while (first != NULL) {
        a = first;
        b = a->next;
        rest = b != NULL ? b->next : NULL;
        a->next = a->prev = NULL;
        if (b != NULL)
            b->next = b->prev = NULL;
        a = meld(a, b);
        a->next = pairs;
        pairs = a;
        first = rest;
    }
    root = NULL;
    while (pairs != NULL) {
        rest = pairs->next;
        pairs->next = NULL;
        root = meld(root, pairs);
        pairs = rest;
    }
    return root;
}

void theap_insert(struct theap *h, struct theap_node *n, uint64_t key)
{
    n->key = key;
    n->child = n->next = n->prev = NULL;
    h->root = meld(h->root, n);
    h->count++;
}

void theap_remove(struct theap *h, struct theap_node *n)
{
    struct theap_node *sub;

    if (!theap_queued(h, n))
        return;
    if (n == h->root) {
        h->root = merge_pairs(n->child);
    } else {
        if (n->prev->child == n)
            n->prev->child = n->next;
        else
            n->prev->next = n->next;
        if (n->next != NULL)
            n->next->prev = n->prev;
        sub = merge_pairs(n->child);
        h->root = meld(h->root, sub);
    }
    n->child = n->next = n->prev = NULL;
    h->count--;
}
