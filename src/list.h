/* SPDX-License-Identifier: BSD-3-Clause */
/* list.h -- an intrusive doubly linked list.
 *
 * A struct that goes on a list embeds a struct list_link; the list is a
 * struct list holding its first and last link. Both are all NULL when
 * zero-initialised (an empty list, a link on no list), and a link is on
 * at most one list at a time. list_entry turns a link back into the
 * struct around it. Nothing here allocates or locks: the owner of the
 * list serializes access. Header-only, on purpose: tools/faultproxy uses
 * it too, without linking the library. */
#ifndef REDLOCK_LIST_H
#define REDLOCK_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct list_link {
    struct list_link *prev;
    struct list_link *next;
};

struct list {
    struct list_link *first;
    struct list_link *last;
};

/* The struct of type whose member is link, or NULL when link is NULL (the
 * end of a walk). link is evaluated twice. */
#define list_entry(link, type, member)                                     \
    ((link) != NULL                                                        \
         ? (type *)(void *)((char *)(link) - offsetof(type, member))       \
         : (type *)NULL)

static inline bool list_empty(const struct list *l)
{
    return l->first == NULL;
}

/* Put e on l between prev and next, neighbours on l (NULL: that end). */
static inline void list_insert(struct list *l, struct list_link *prev,
                               struct list_link *e, struct list_link *next)
{
    e->prev = prev;
    e->next = next;
    if (prev != NULL)
        prev->next = e;
    else
        l->first = e;
    if (next != NULL)
        next->prev = e;
    else
        l->last = e;
}

static inline void list_push_front(struct list *l, struct list_link *e)
{
    list_insert(l, NULL, e, l->first);
}

static inline void list_push_back(struct list *l, struct list_link *e)
{
    list_insert(l, l->last, e, NULL);
}

/* e must be on l; afterwards it is on no list. */
static inline void list_remove(struct list *l, struct list_link *e)
{
    if (e->prev != NULL)
        e->prev->next = e->next;
    else
        l->first = e->next;
    if (e->next != NULL)
        e->next->prev = e->prev;
    else
        l->last = e->prev;
    e->prev = e->next = NULL;
}

/* Move every link of from to the returned list; from is left empty. */
static inline struct list list_take(struct list *from)
{
    struct list all = *from;

    from->first = from->last = NULL;
    return all;
}

#endif
