/* SPDX-License-Identifier: BSD-3-Clause */
/* handle.c -- a client's rl_lock handles: each one allocation, the
 * registry of the live ones, the hold counts of reentrant locks, and the
 * getters. What a handle does (requests, renewals, release, the lost
 * signal) is holder.c's.
 *
 * The handle, its keys and token are one allocation; what few locks use
 * (fence, reentrant holds, watchdog caps and interval) lives in struct
 * lock_extra. A semaphore's handle is made for its last slot's name (the
 * longest); semaphore.c rewrites it to each slot it tries.
 *
 * Threads: the registry and the hold counts are guarded by the
 * registry's mutex; the getters read atomics (any thread). */
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "handle.h"
#include "watchdog.h"

/* ---- Handles and the registry ------------------------------------------- */

struct rl_lock *handle_of(struct list_link *link)
{
    return list_entry(link, struct rl_lock, link);
}

void handles_add(rl_client *c, struct rl_lock *l)
{
    struct holders *h = c->holders;

    pthread_mutex_lock(&h->mutex);
    list_push_front(&h->locks, &l->link);
    pthread_mutex_unlock(&h->mutex);
}

void handles_remove(rl_client *c, struct rl_lock *l)
{
    struct holders *h = c->holders;

    pthread_mutex_lock(&h->mutex);
    /* A lock no longer on the list (holders_shutdown emptied it) is left
     * as it is. */
    if (l->link.prev != NULL || h->locks.first == &l->link)
        list_remove(&h->locks, &l->link);
    pthread_mutex_unlock(&h->mutex);
}

/* One allocation per handle (thousands may be held at once): the struct,
 * then the record's key pointers, lengths, keys and token. */
static rl_status handle_new(rl_client *c, const char *const *resources,
                            size_t count, const char *token,
                            uint32_t delay_ms, const char *owner,
                            struct rl_lock **out)
{
    size_t tail = lockrec_tail_size(&c->cfg, resources, count, token,
                                    delay_ms, owner);
    struct rl_lock *l = calloc(1, sizeof(*l) + tail);
    rl_status st;

    if (l == NULL)
        return rl_fail(RL_ENOMEM, "out of memory for a lock");
    st = lockrec_init(&l->rec, l + 1, &c->cfg, resources, count, token,
                      delay_ms, owner);
    if (st != RL_OK) {
        free(l);
        return st;
    }
    atomic_init(&l->client, c);
    atomic_init(&l->lost_fd, -1);
    *out = l;
    return RL_OK;
}

struct lock_extra *handle_extra_new(void)
{
    struct lock_extra *e = calloc(1, sizeof(*e));

    if (e == NULL)
        rl_fail(RL_ENOMEM, "out of memory for a lock");
    return e;
}

rl_status handle_new_kind(rl_client *c, const char *const *resources,
                          size_t count, const char *token,
                          const rl_acquire_opts *o, struct rl_lock **out)
{
    size_t len = strlen(resources[0]);
    const char *owner = o != NULL ? o->owner : NULL;
    uint32_t delay_ms = o != NULL ? o->lock_delay_ms : 0;
    char *slot_name;
    rl_status st;

    if (o == NULL || o->limit == 0) {
        st = handle_new(c, resources, count, token, delay_ms, owner, out);
    } else {
        slot_name = malloc(len + LOCKREC_SLOT_SUFFIX_MAX);
        if (slot_name == NULL)
            return rl_fail(RL_ENOMEM, "out of memory for a lock");
        lockrec_slot_key(slot_name, resources[0], len, o->limit - 1);
        st = handle_new(c, (const char *const *)&slot_name, 1, token,
                        delay_ms, owner, out);
        free(slot_name);
        if (st == RL_OK) {
            (*out)->rec.slot = (int32_t)(o->limit - 1);
            (*out)->rec.limit = (uint16_t)o->limit;
        }
    }
    if (st != RL_OK || o == NULL)
        return st;
    (*out)->rec.shared = o->mode == RL_MODE_SHARED;
    (*out)->rec.fair = o->fair != 0 || o->priority != 0;
    if (o->fencing || o->reentrant || o->at_least_ms != 0 ||
        (o->auto_extend && watchdog_needs_extra(o))) {
        atomic_init(&(*out)->extra, handle_extra_new());
        if (lock_extra_of(*out) == NULL) {
            free(*out);
            return RL_ENOMEM;
        }
    }
    return RL_OK;
}

void handle_destroy(struct rl_lock *l)
{
    int fd = atomic_load(&l->lost_fd);

    if (fd >= 0)
        close(fd);
    free(lock_extra_of(l));
    free(l);
}

void handle_signal_fd(int fd)
{
    uint64_t one = 1;

    if (fd >= 0 && write(fd, &one, sizeof(one)) < 0) {
        /* EAGAIN: the counter is already non-zero, so it is readable. */
    }
}

/* ---- Reentrant holds ---------------------------------------------------- */

static bool same_resource(const rl_client *c, const struct rl_lock *l,
                          const char *resource)
{
    return l->rec.nkeys == 1 &&
           strncmp(l->rec.keys[0], c->cfg.prefix, c->cfg.prefix_len) == 0 &&
           strcmp(l->rec.keys[0] + c->cfg.prefix_len, resource) == 0;
}

struct rl_lock *handle_reenter(rl_client *c, const char *resource)
{
    struct holders *h = c->holders;
    pthread_t self = pthread_self();
    struct rl_lock *l;

    struct lock_extra *e = NULL;

    pthread_mutex_lock(&h->mutex);
    for (l = handle_of(h->locks.first); l != NULL;
         l = handle_of(l->link.next)) {
        e = lock_extra_of(l);
        if (e != NULL && e->holds > 0 && pthread_equal(e->owner, self) &&
            same_resource(c, l, resource) && !atomic_load(&l->lost) &&
            lock_remaining_us(l) > 0)
            break;
    }
    if (l != NULL)
        e->holds++;
    pthread_mutex_unlock(&h->mutex);
    return l;
}

bool handle_drop_hold(rl_client *c, struct rl_lock *l, unsigned *was)
{
    struct holders *h = c->holders;
    struct lock_extra *e;
    bool nested = false;

    pthread_mutex_lock(&h->mutex);
    e = lock_extra_of(l);
    *was = e != NULL ? e->holds : 0;
    if (e != NULL && e->holds > 0) {
        nested = e->holds > 1;
        e->holds--;
    }
    pthread_mutex_unlock(&h->mutex);
    return nested;
}

void handle_restore_hold(rl_client *c, struct rl_lock *l, unsigned was)
{
    struct holders *h = c->holders;

    pthread_mutex_lock(&h->mutex);
    if (lock_extra_of(l) != NULL)
        lock_extra_of(l)->holds = was;
    pthread_mutex_unlock(&h->mutex);
}

/* ---- Getters (any thread) ----------------------------------------------- */

int64_t rl_lock_validity_ms(const rl_lock *l)
{
    int64_t us;

    if (l == NULL || atomic_load(&l->deadline_us) == 0)
        return 0;
    us = lock_remaining_us(l);
    return us > 0 ? us / 1000 : 0;
}

const char *rl_lock_token(const rl_lock *l)
{
    return l != NULL ? l->rec.token : NULL;
}

const char *rl_lock_resource(const rl_lock *l)
{
    return l != NULL ? l->rec.resource : NULL;
}

unsigned rl_lock_nodes_ok(const rl_lock *l)
{
    return l != NULL ? atomic_load(&l->voters) : 0;
}

bool rl_lock_lost(const rl_lock *l)
{
    return l != NULL && atomic_load(&l->lost);
}

/* The descriptor is made on first use: most locks never need one. If the
 * lock is already lost, or becomes lost while we install it, the counter
 * is bumped here too, so it is readable either way. */
int rl_lock_lost_fd(const rl_lock *l)
{
    struct rl_lock *m = (struct rl_lock *)l;
    int expected = -1;
    int fd;

    if (l == NULL)
        return -1;
    fd = atomic_load(&m->lost_fd);
    if (fd >= 0)
        return fd;
    fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0)
        return -1;
    if (!atomic_compare_exchange_strong(&m->lost_fd, &expected, fd)) {
        close(fd);
        return expected;
    }
    if (atomic_load(&m->lost))
        handle_signal_fd(fd);
    return fd;
}

int rl_lock_slot(const rl_lock *l)
{
    return l != NULL ? l->rec.slot : -1;
}

int rl_lock_mode(const rl_lock *l)
{
    return l != NULL && l->rec.shared ? RL_MODE_SHARED : RL_MODE_EXCLUSIVE;
}

uint64_t rl_lock_fence(const rl_lock *l)
{
    return l != NULL && lock_extra_of(l) != NULL ? lock_extra_of(l)->fence : 0;
}
