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

/* One allocation per handle (thousands may be held at once): the struct,
 * then the key pointers and lengths, the keys, and the token. The
 * resource name is the first key without the prefix. */
rl_status lock_new(rl_client *c, const char *const *resources, size_t count,
                   const char *token, struct rl_lock **out)
{
    size_t token_len = token != NULL ? strlen(token) : TOKEN_HEX_LEN;
    size_t size = sizeof(struct rl_lock) +
                  count * (sizeof(char *) + sizeof(size_t)) + token_len + 1;
    struct rl_lock *l;
    rl_status st;
    char *p;
    size_t i;

    for (i = 0; i < count; i++)
        size += c->cfg.prefix_len + strlen(resources[i]) + 1;
    l = calloc(1, size);
    if (l == NULL)
        return rl_fail(RL_ENOMEM, "out of memory for a lock");
    l->client = c;
    atomic_init(&l->lost_fd, -1);
    l->nkeys = count;
    l->keys = (char **)(l + 1);
    l->key_lens = (size_t *)(l->keys + count);
    p = (char *)(l->key_lens + count);
    for (i = 0; i < count; i++) {
        l->keys[i] = p;
        l->key_lens[i] = c->cfg.prefix_len + strlen(resources[i]);
        memcpy(p, c->cfg.prefix, c->cfg.prefix_len);
        strcpy(p + c->cfg.prefix_len, resources[i]);
        p += l->key_lens[i] + 1;
    }
    l->resource = l->keys[0] + c->cfg.prefix_len;
    l->token = p;
    if (token != NULL) {
        memcpy(l->token, token, token_len + 1);
        l->adopted = true;
    } else {
        st = token_generate(l->token);
        if (st != RL_OK) {
            free(l);
            return st;
        }
    }
    *out = l;
    return RL_OK;
}

void lock_destroy(struct rl_lock *l)
{
    if (l == NULL)
        return;
    if (atomic_load(&l->lost_fd) >= 0)
        close(atomic_load(&l->lost_fd));
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
