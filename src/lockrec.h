/* SPDX-License-Identifier: BSD-3-Clause */
/* lockrec.h -- what identifies a lock in Redis: its keys (prefix +
 * resource) and its token (docs/protocol.md). The holder layer embeds one
 * in each rl_lock; operations borrow it to build their commands and never
 * change it, but for the acquisition, which gives each of its attempts a
 * token of its own (lockrec_next_attempt). */
#ifndef REDLOCK_LOCKREC_H
#define REDLOCK_LOCKREC_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "quorum.h"
#include "token.h"

/* Longest token accepted by rl_lock_adopt (other clients use UUIDs,
 * base64 or hex). */
#define RL_MAX_TOKEN_LEN 128

struct lock_rec {
    /* Packed (no padding holes): one per held lock, thousands at once. */
    char **keys;                 /* prefix + resource, nkeys of them */
    uint16_t *key_lens;
    const char *resource;        /* first resource, without prefix */
    char *token;                 /* ours: TOKEN_HEX_LEN hex digits */
    uint32_t delay_ms;           /* lock-delay: keys live ttl + delay_ms */
    int16_t slot;                /* semaphore slot named by keys[0], -1:
                                    none; a slot is tried once per attempt
                                    (semaphore.c retries) */
    uint16_t limit;              /* the semaphore's permits (slot >= 0),
                                    for a fair one's release: 0 none */
    uint8_t nkeys;               /* 1..RL_MAX_RESOURCES */
    uint8_t token_len;           /* 1..RL_MAX_TOKEN_LEN */
    bool adopted;                /* token from elsewhere (rl_lock_adopt) */
    bool shared;                 /* a reader of a read-write lock: its
                                    scripts are the reader ones */
    bool fair;                   /* acquired through the fair queue
                                    (queue.c): released by fair-release */
    bool fenced;                 /* granted with a fencing token: its
                                    record beside keys[0] is renewed
                                    with it (touch-batch) */
};

/* Bytes lockrec_init needs after the record for these names and token
 * (token NULL: a new one is generated, with delay_ms and owner if not
 * 0 and NULL). */
size_t lockrec_tail_size(const struct config *cfg,
                         const char *const *resources, size_t count,
                         const char *token, uint32_t delay_ms,
                         const char *owner);
/* Lay the keys and token out in tail (lockrec_tail_size bytes): copies the
 * names, applies the prefix, sets delay_ms, generates a token
 * (TOKEN_HEX_LEN hex digits, then LOCKREC_DELAY_SEP and delay_ms in
 * decimal when it is not 0, then LOCKREC_OWNER_SEP and owner when owner
 * is not NULL) or copies token. RL_ERANDOM when no random token could be
 * made. */
rl_status lockrec_init(struct lock_rec *r, void *tail,
                       const struct config *cfg,
                       const char *const *resources, size_t count,
                       const char *token, uint32_t delay_ms,
                       const char *owner);

/* Holder identity: a value of the form <TOKEN_HEX_LEN hex digits>
 * [LOCKREC_DELAY_SEP <lock-delay ms>] LOCKREC_OWNER_SEP <owner> carries
 * its owner; the part before the owner is the lock's identity, which a
 * proclaim keeps. A value that is <TOKEN_HEX_LEN hex digits>
 * LOCKREC_DELAY_SEP <digits>, alone or before LOCKREC_OWNER_SEP, carries
 * its lock-delay: a reader of the key (inspect) tells the holder's
 * validity (PTTL - delay) from the delay after it. */
#define LOCKREC_OWNER_SEP '.'
#define LOCKREC_DELAY_SEP '~'
/* The longest identity: digits, LOCKREC_DELAY_SEP, a uint32_t, and
 * LOCKREC_OWNER_SEP. */
#define LOCKREC_ID_MAX (TOKEN_HEX_LEN + 1 + 10 + 1)
/* The identity's length, up to and with LOCKREC_OWNER_SEP, when value
 * carries an owner (1 or more bytes after it); else 0. */
size_t lockrec_id_len(const char *value);
/* The lock-delay value carries, 0 when none (or more than UINT32_MAX). */
uint32_t lockrec_delay_of(const char *value);
/* RL_OK when owner is NULL, "" or 1..RL_OWNER_MAX visible ASCII
 * characters; else RL_EINVAL naming the option. */
rl_status lockrec_check_owner(const char *owner);
/* The owner a stored value carries, or "" (written into out, len bytes). */
void lockrec_owner_of(const char *value, char *out, size_t len);
/* Proclaim (election): a lock whose token was made with an owner may
 * publish another owner with the same token digits. Nodes may hold
 * either value: release, extend and proclaim match both (the scripts'
 * ours(); lockrec_same_lock is the same rule in C: equal, or both carry
 * an owner after the same identity: lockrec_id_len). */
bool lockrec_can_proclaim(const struct lock_rec *r);
/* Before each attempt of an acquisition (loop thread; not for an adopted
 * record, which is never acquired): the token's next attempt digits
 * (token_next_attempt), the owner kept; what it publishes follows. */
void lockrec_next_attempt(struct lock_rec *r);
bool lockrec_same_lock(const char *a, const char *b);
/* The value the lock publishes now: its token, or (lockrec_can_proclaim)
 * the value of its last successful proclaim. What a restarted node gets
 * back. Loop thread. */
const char *lockrec_published(const struct lock_rec *r);
/* Loop thread, lockrec_can_proclaim: publish value (the token's identity
 * up to LOCKREC_OWNER_SEP, then an owner checked by
 * lockrec_check_owner). */
void lockrec_publish(struct lock_rec *r, const char *value);

/* <key>:wintent, the writer-intent key of a read-write lock at key
 * (len bytes), malloc'd; NULL on out of memory. */
char *lockrec_intent_key(const char *key, size_t len);

/* The PX its keys are written with for ttl_ms: ttl + the lock-delay;
 * lockrec_px writes it in decimal into buf (LOCKREC_PX_LEN bytes). */
#define LOCKREC_PX_LEN 16
uint64_t lockrec_px_ms(const struct lock_rec *r, uint32_t ttl_ms);
void lockrec_px(const struct lock_rec *r, uint32_t ttl_ms, char *buf);
/* Rewrite keys[0] (made for the semaphore's last slot, the longest name,
 * "<key>:slot:<limit - 1>") to name slot instead. */
void lockrec_set_slot(struct lock_rec *r, uint32_t slot);
/* The length of the base key "<key>" that keys[0] ("<key>:slot:<i>")
 * starts with (r->slot >= 0). */
size_t lockrec_slot_base_len(const struct lock_rec *r);
/* Write "<key>:slot:<slot>" (NUL-terminated) into buf; returns its
 * length. buf holds at least key_len + LOCKREC_SLOT_SUFFIX_MAX bytes. */
#define LOCKREC_SLOT_SUFFIX_MAX 20
size_t lockrec_slot_key(char *buf, const char *key, size_t key_len,
                        uint32_t slot);

/* A script call over the lock's keys: KEYS = keys, ARGV = token [, ttl].
 * A reader's record runs the reader variant of release and extend, a
 * fair one fair-release (its queue entry leaves with the lock); a fair
 * semaphore slot's fair-release and fair-rollback also name the base key
 * and the limit (the queue's, src/lua/fair-release.lua). */
struct lock_cmd {
    struct round_cmd cmd;
    const char *argv[RL_MAX_RESOURCES + 6];
    size_t lens[RL_MAX_RESOURCES + 6];
    char limit[8];
};
/* Fill out (which must outlive the round's sends; the strings are the
 * record's and ttl's, not copied). ttl may be NULL. */
/* SET key token NX PX px [GET] of r's first key (argv and lens: the
 * caller's, 7 each; px: the TTL as text). GET (Redis 7.0) answers the
 * holder's value or nil, and WRONGTYPE where readers hold the key. */
struct round_cmd lockrec_set_nx_cmd(const struct lock_rec *r,
                                    const char *px, bool get,
                                    const char **argv, size_t *lens);
void lockrec_script_cmd(const struct lock_rec *r, enum script_id id,
                        const char *ttl, struct lock_cmd *out);

#endif
