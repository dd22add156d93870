/* lock.c -- the rl_lock handle and its getters (DESIGN §4, §6).
 *
 * A handle is created by an acquire (or rl_lock_adopt), owned by the
 * caller, and mutated only on the loop thread; fields other threads read
 * (validity deadline, lost flag, voters) are atomics. The client keeps a
 * registry of live handles so rl_client_free can orphan them: an orphan
 * (client == NULL) can only be freed. Key layout: K = prefix + resource,
 * value = token (same as redsync and node-redlock). */
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "clock.h"
#include "lock.h"

rl_status lock_new(rl_client *c, const char *const *resources, size_t count,
                   const char *token, struct rl_lock **out)
{
    struct rl_lock *l = calloc(1, sizeof(*l));
    rl_status st;
    size_t i, len;

    if (l == NULL)
        return rl_fail(RL_ENOMEM, "out of memory for a lock");
    l->client = c;
    atomic_init(&l->lost_fd, -1);
    l->nkeys = count;
    l->keys = calloc(count, sizeof(*l->keys));
    l->key_lens = calloc(count, sizeof(*l->key_lens));
    l->resource = rl_strdup(resources[0]);
    if (l->keys == NULL || l->key_lens == NULL || l->resource == NULL)
        goto out_nomem;
    for (i = 0; i < count; i++) {
        len = c->cfg.prefix_len + strlen(resources[i]);
        l->keys[i] = malloc(len + 1);
        if (l->keys[i] == NULL)
            goto out_nomem;
        snprintf(l->keys[i], len + 1, "%s%s", c->cfg.prefix, resources[i]);
        l->key_lens[i] = len;
    }
    if (token != NULL) {
        snprintf(l->token, sizeof(l->token), "%s", token);
        l->adopted = true;
    } else {
        st = token_generate(l->token);
        if (st != RL_OK) {
            lock_destroy(l);
            return st;
        }
    }
    *out = l;
    return RL_OK;

out_nomem:
    lock_destroy(l);
    return rl_fail(RL_ENOMEM, "out of memory for a lock");
}

void lock_destroy(struct rl_lock *l)
{
    size_t i;

    if (l == NULL)
        return;
    if (l->keys != NULL) {
        for (i = 0; i < l->nkeys; i++)
            free(l->keys[i]);
    }
    if (atomic_load(&l->lost_fd) >= 0)
        close(atomic_load(&l->lost_fd));
    free(l->keys);
    free(l->key_lens);
    free(l->resource);
    free(l);
}

static void signal_fd(int fd)
{
    uint64_t one = 1;

    if (fd >= 0 && write(fd, &one, sizeof(one)) < 0) {
        /* EAGAIN: the counter is already non-zero, so it is readable. */
    }
}

bool lock_mark_lost(struct rl_lock *l)
{
    if (atomic_exchange(&l->lost, true))
        return false;
    signal_fd(atomic_load(&l->lost_fd));
    return true;
}

int64_t lock_remaining_us(const struct rl_lock *l)
{
    uint64_t deadline = atomic_load(&l->deadline_us);

    if (deadline == 0)
        return INT64_MAX;
    return (int64_t)deadline - (int64_t)mono_now_us();
}

void lock_script_cmd(const struct rl_lock *l, enum script_id id,
                     const char *ttl, struct lock_cmd *out)
{
    size_t i;
    int argc = 0;

    for (i = 0; i < l->nkeys; i++) {
        out->argv[argc] = l->keys[i];
        out->lens[argc++] = l->key_lens[i];
    }
    out->argv[argc] = l->token;
    out->lens[argc++] = strlen(l->token);
    if (ttl != NULL) {
        out->argv[argc] = ttl;
        out->lens[argc++] = strlen(ttl);
    }
    out->cmd.script = script_get(id);
    out->cmd.nkeys = (int)l->nkeys;
    out->cmd.argc = argc;
    out->cmd.argv = out->argv;
    out->cmd.lens = out->lens;
}

/* ---- Public getters ----------------------------------------------------- */

int64_t rl_lock_validity_ms(const rl_lock *l)
{
    int64_t us;

    if (l == NULL)
        return 0;
    if (atomic_load(&l->deadline_us) == 0)
        return 0;
    us = lock_remaining_us(l);
    return us > 0 ? us / 1000 : 0;
}

const char *rl_lock_token(const rl_lock *l)
{
    return l != NULL ? l->token : NULL;
}

const char *rl_lock_resource(const rl_lock *l)
{
    return l != NULL ? l->resource : NULL;
}

unsigned rl_lock_nodes_ok(const rl_lock *l)
{
    return l != NULL ? atomic_load(&l->nodes_ok) : 0;
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
        signal_fd(fd);
    return fd;
}

uint64_t rl_lock_fence(const rl_lock *l)
{
    return l != NULL ? l->fence : 0;
}
