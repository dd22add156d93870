/* lock.h -- the rl_lock handle: keys, token, validity, lost flag. */
#ifndef REDLOCK_LOCK_H
#define REDLOCK_LOCK_H

#include <stdatomic.h>
#include <stdbool.h>

#include "client.h"
#include "quorum.h"
#include "token.h"

/* Longest token accepted by rl_lock_adopt (other clients use UUIDs,
 * base64 or hex). */
#define RL_MAX_TOKEN_LEN 128

struct extend_op;
struct watchdog;

struct rl_lock {
    struct rl_lock *prev;          /* client's registry (client mutex) */
    struct rl_lock *next;
    rl_client *client;             /* NULL once the client is freed */
    char **keys;                   /* prefix + resource, nkeys of them */
    size_t *key_lens;
    size_t nkeys;
    const char *resource;          /* first resource, without prefix */
    char *token;                   /* ours: TOKEN_HEX_LEN hex digits */
    uint32_t ttl_ms;               /* TTL acquired with (adopted: first
                                      extended with); 0 unknown */
    rl_mono_us acquired_us;        /* start of the winning round */
    _Atomic uint64_t deadline_us;  /* validity end, boottime µs; 0 unknown */
    atomic_bool lost;
    atomic_bool extending;         /* an extend is queued or in flight */
    atomic_uint nodes_ok;          /* voters of the last winning round */
    bool adopted;                  /* made from a token: validity unknown */
    struct extend_op *extend;      /* in flight (loop thread) */
    struct watchdog *watchdog;     /* renewing (loop thread), or NULL */
    atomic_bool watched;           /* a watchdog is running or starting */
    atomic_int lost_fd;            /* eventfd made on demand, -1 none */
    uint64_t fence;                /* fencing token, 0 without fencing */
    unsigned holds;                /* reentrant holds; 0 = not reentrant
                                      (client mutex) */
    pthread_t owner;               /* reentrant: the holding thread */
};

/* Build a handle: copies the names, applies the prefix, generates a token
 * (or copies token when not NULL). Not registered with the client yet. */
rl_status lock_new(rl_client *c, const char *const *resources, size_t count,
                   const char *token, struct rl_lock **out);
/* Mark the lock lost and make its fd readable. True the first time. */
bool lock_mark_lost(struct rl_lock *l);
/* Free the memory (the caller has unregistered it). */
void lock_destroy(struct rl_lock *l);
/* Validity left in µs (negative when spent); INT64_MAX when unknown. */
int64_t lock_remaining_us(const struct rl_lock *l);
/* A script call over the lock's keys: KEYS = keys, ARGV = token [, ttl]. */
struct lock_cmd {
    struct round_cmd cmd;
    const char *argv[RL_MAX_RESOURCES + 6];
    size_t lens[RL_MAX_RESOURCES + 6];
};
/* Fill out (which must outlive the round's sends; the strings are the
 * lock's and ttl's, not copied). ttl may be NULL. */
void lock_script_cmd(const struct rl_lock *l, enum script_id id,
                     const char *ttl, struct lock_cmd *out);

#endif
