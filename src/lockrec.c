/* SPDX-License-Identifier: BSD-3-Clause */
/* lockrec.c -- lock keys and token (docs/protocol.md). Key layout: K =
 * prefix + resource, value = token, the same as redsync and node-redlock.
 * The record lives inside the memory of its rl_lock (one allocation per
 * held lock); see lockrec.h. Lock kinds: a semaphore permit is the
 * key K + ":slot:<i>" (an ordinary lock), a reader lives in K as a hash
 * field (its record says shared), a lock-delay lengthens every PX. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockrec.h"

/* The record's narrow fields hold every accepted value. */
_Static_assert(RL_MAX_RESOURCES <= UINT8_MAX, "nkeys is a uint8_t");
_Static_assert(RL_MAX_TOKEN_LEN <= UINT8_MAX, "token_len is a uint8_t");
/* A token with its lock-delay and owner can be adopted (rl_lock_adopt). */
_Static_assert(LOCKREC_ID_MAX + RL_OWNER_MAX <= RL_MAX_TOKEN_LEN,
               "a token with its lock-delay and owner fits "
               "RL_MAX_TOKEN_LEN");
_Static_assert(RL_MAX_LIMIT <= INT16_MAX, "slot is an int16_t");
_Static_assert(RL_MAX_LIMIT <= UINT16_MAX, "limit is a uint16_t");
/* Prefix and resource are at most RL_MAX_RESOURCE_LEN each, plus a
 * semaphore's slot suffix. */
_Static_assert(2 * RL_MAX_RESOURCE_LEN + LOCKREC_SLOT_SUFFIX_MAX <= UINT16_MAX,
               "key_lens are uint16_t");

/* A new token with an owner is followed by room for the value a proclaim
 * publishes (the same identity, another owner), NUL-terminated. */
#define PUBLISHED_SIZE (LOCKREC_ID_MAX + RL_OWNER_MAX + 1)

/* "~<delay_ms>" of a new token (buf: 12 bytes), "" for no delay. */
static size_t delay_text(char *buf, uint32_t delay_ms)
{
    buf[0] = '\0';
    if (delay_ms == 0)
        return 0;
    return (size_t)snprintf(buf, 12, "%c%u", LOCKREC_DELAY_SEP, delay_ms);
}

/* The token's length: token's, or a new one with delay_ms's and owner's. */
static size_t token_size(const char *token, uint32_t delay_ms,
                         const char *owner)
{
    char delay[12];
    size_t len = TOKEN_HEX_LEN + delay_text(delay, delay_ms);

    if (token != NULL)
        return strlen(token);
    if (owner != NULL && owner[0] != '\0')
        return len + 1 + strlen(owner);
    return len;
}

size_t lockrec_tail_size(const struct config *cfg,
                         const char *const *resources, size_t count,
                         const char *token, uint32_t delay_ms,
                         const char *owner)
{
    size_t size = count * (sizeof(char *) + sizeof(uint16_t)) +
                  token_size(token, delay_ms, owner) + 1;

    if (token == NULL && owner != NULL && owner[0] != '\0')
        size += PUBLISHED_SIZE;
    size_t i;

    for (i = 0; i < count; i++)
        size += cfg->prefix_len + strlen(resources[i]) + 1;
    return size;
}

rl_status lockrec_init(struct lock_rec *r, void *tail,
                       const struct config *cfg,
                       const char *const *resources, size_t count,
                       const char *token, uint32_t delay_ms,
                       const char *owner)
{
    char delay[12];
    size_t delay_len = delay_text(delay, delay_ms);
    rl_status st;
    char *p;
    size_t i;

    r->nkeys = (uint8_t)count;
    r->keys = tail;
    r->key_lens = (uint16_t *)(r->keys + count);
    p = (char *)(r->key_lens + count);
    for (i = 0; i < count; i++) {
        r->keys[i] = p;
        r->key_lens[i] = (uint16_t)(cfg->prefix_len + strlen(resources[i]));
        memcpy(p, cfg->prefix, cfg->prefix_len);
        strcpy(p + cfg->prefix_len, resources[i]);
        p += r->key_lens[i] + 1;
    }
    r->resource = r->keys[0] + cfg->prefix_len;
    r->token = p;
    r->adopted = token != NULL;
    r->shared = false;
    r->fair = false;
    r->slot = -1;
    r->limit = 0;
    r->delay_ms = delay_ms;
    r->token_len = (uint8_t)token_size(token, delay_ms, owner);
    if (token != NULL) {
        strcpy(r->token, token);
        return RL_OK;
    }
    st = token_generate(r->token);
    if (st != RL_OK)
        return st;
    strcpy(r->token + TOKEN_HEX_LEN, delay);
    if (r->token_len > TOKEN_HEX_LEN + delay_len) {
        r->token[TOKEN_HEX_LEN + delay_len] = LOCKREC_OWNER_SEP;
        strcpy(r->token + TOKEN_HEX_LEN + delay_len + 1, owner);
        strcpy(r->token + r->token_len + 1, r->token);
    }
    return RL_OK;
}

bool lockrec_can_proclaim(const struct lock_rec *r)
{
    return !r->adopted && !r->shared && lockrec_id_len(r->token) > 0;
}

void lockrec_next_attempt(struct lock_rec *r)
{
    token_next_attempt(r->token);
    if (lockrec_can_proclaim(r))
        strcpy(r->token + r->token_len + 1, r->token);
}

const char *lockrec_published(const struct lock_rec *r)
{
    return lockrec_can_proclaim(r) ? r->token + r->token_len + 1 : r->token;
}

void lockrec_publish(struct lock_rec *r, const char *value)
{
    snprintf(r->token + r->token_len + 1, PUBLISHED_SIZE, "%s", value);
}

/* Past the TOKEN_HEX_LEN hex digits value starts with and its
 * "~<digits>" (*delay_len bytes, 0 when none); NULL when value does not
 * start with the digits. */
static const char *past_digits(const char *value, size_t *delay_len)
{
    size_t i;

    *delay_len = 0;
    for (i = 0; i < TOKEN_HEX_LEN; i++) {
        if (!isxdigit((unsigned char)value[i]))
            return NULL;
    }
    if (value[i] == LOCKREC_DELAY_SEP) {
        *delay_len = 1 + strspn(value + i + 1, "0123456789");
        if (*delay_len == 1)
            *delay_len = 0;
    }
    return value + i;
}

size_t lockrec_id_len(const char *value)
{
    size_t delay_len;
    const char *p = past_digits(value, &delay_len);

    if (p == NULL || p[delay_len] != LOCKREC_OWNER_SEP ||
        p[delay_len + 1] == '\0')
        return 0;
    return TOKEN_HEX_LEN + delay_len + 1;
}

uint32_t lockrec_delay_of(const char *value)
{
    size_t delay_len;
    const char *p = past_digits(value, &delay_len);
    unsigned long long v;

    if (p == NULL || delay_len == 0 || delay_len > 11 ||
        (p[delay_len] != '\0' && p[delay_len] != LOCKREC_OWNER_SEP))
        return 0;
    v = strtoull(p + 1, NULL, 10);
    return v <= UINT32_MAX ? (uint32_t)v : 0;
}

bool lockrec_same_lock(const char *a, const char *b)
{
    size_t id = lockrec_id_len(a);

    if (strcmp(a, b) == 0)
        return true;
    return id > 0 && lockrec_id_len(b) == id && memcmp(a, b, id) == 0;
}

rl_status lockrec_check_owner(const char *owner)
{
    size_t len, i;

    if (owner == NULL)
        return RL_OK;
    len = strnlen(owner, RL_OWNER_MAX + 1);
    if (len > RL_OWNER_MAX)
        return rl_fail(RL_EINVAL, "owner is longer than %d bytes",
                       RL_OWNER_MAX);
    for (i = 0; i < len; i++) {
        if (owner[i] < 0x21 || owner[i] > 0x7e)
            return rl_fail(RL_EINVAL, "owner: byte %zu (0x%02x) is not a "
                           "visible ASCII character (0x21..0x7e)", i,
                           (unsigned char)owner[i]);
    }
    return RL_OK;
}

void lockrec_owner_of(const char *value, char *out, size_t len)
{
    size_t i, id = lockrec_id_len(value);

    if (len == 0)
        return;
    out[0] = '\0';
    if (id == 0)
        return;
    for (i = 0; i < TOKEN_HEX_LEN; i++) {
        if (!((value[i] >= '0' && value[i] <= '9') ||
              (value[i] >= 'a' && value[i] <= 'f')))
            return;
    }
    snprintf(out, len, "%s", value + id);
}

uint64_t lockrec_px_ms(const struct lock_rec *r, uint32_t ttl_ms)
{
    return (uint64_t)ttl_ms + r->delay_ms;
}

void lockrec_px(const struct lock_rec *r, uint32_t ttl_ms, char *buf)
{
    snprintf(buf, LOCKREC_PX_LEN, "%llu",
             (unsigned long long)lockrec_px_ms(r, ttl_ms));
}

size_t lockrec_slot_key(char *buf, const char *key, size_t key_len,
                        uint32_t slot)
{
    memcpy(buf, key, key_len);
    return key_len + (size_t)snprintf(buf + key_len, LOCKREC_SLOT_SUFFIX_MAX,
                                      ":slot:%u", slot);
}

size_t lockrec_slot_base_len(const struct lock_rec *r)
{
    return (size_t)(strrchr(r->keys[0], ':') - r->keys[0]) -
           (sizeof(":slot") - 1);
}

void lockrec_set_slot(struct lock_rec *r, uint32_t slot)
{
    char *colon = strrchr(r->keys[0], ':');

    r->key_lens[0] = (uint16_t)((colon - r->keys[0]) + 1 +
                                sprintf(colon + 1, "%u", slot));
    r->slot = (int16_t)slot;
}

void lockrec_script_cmd(const struct lock_rec *r, enum script_id id,
                        const char *ttl, struct lock_cmd *out)
{
    size_t i;
    int argc = 0;

    if (r->shared && r->fair && id == SCRIPT_RELEASE)
        id = SCRIPT_FAIR_READER_RELEASE;
    else if (r->shared && id == SCRIPT_FAIR_ROLLBACK)
        id = SCRIPT_FAIR_READER_ROLLBACK;
    else if (r->shared && (id == SCRIPT_RELEASE || id == SCRIPT_ROLLBACK))
        id = SCRIPT_READER_RELEASE;
    else if (r->shared && id == SCRIPT_EXTEND)
        id = SCRIPT_READER_EXTEND;
    else if (r->fair && id == SCRIPT_RELEASE)
        id = SCRIPT_FAIR_RELEASE;

    for (i = 0; i < r->nkeys; i++) {
        out->argv[argc] = r->keys[i];
        out->lens[argc++] = r->key_lens[i];
    }
    out->argv[argc] = r->token;
    out->lens[argc++] = r->token_len;
    if (ttl != NULL) {
        out->argv[argc] = ttl;
        out->lens[argc++] = strlen(ttl);
    }
    if (r->fair && r->slot >= 0 &&
        (id == SCRIPT_FAIR_RELEASE || id == SCRIPT_FAIR_ROLLBACK)) {
        out->argv[argc] = r->keys[0]; /* its base key is a prefix */
        out->lens[argc++] = lockrec_slot_base_len(r);
        out->lens[argc] = (size_t)snprintf(out->limit, sizeof(out->limit),
                                           "%u", r->limit);
        out->argv[argc++] = out->limit;
    }
    out->cmd.script = script_get(id);
    out->cmd.nkeys = (int)r->nkeys;
    out->cmd.argc = argc;
    out->cmd.argv = out->argv;
    out->cmd.lens = out->lens;
}

char *lockrec_intent_key(const char *key, size_t len)
{
    static const char suffix[] = ":wintent";
    char *k = malloc(len + sizeof(suffix));

    if (k == NULL)
        return NULL;
    memcpy(k, key, len);
    memcpy(k + len, suffix, sizeof(suffix));
    return k;
}

struct round_cmd lockrec_set_nx_cmd(const struct lock_rec *r,
                                    const char *px, bool get,
                                    const char **argv, size_t *lens)
{
    size_t i, argc = get ? 7 : 6;

    argv[0] = "SET";
    argv[1] = r->keys[0];
    argv[2] = r->token;
    argv[3] = "NX";
    argv[4] = "PX";
    argv[5] = px;
    argv[6] = "GET";
    for (i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    lens[1] = r->key_lens[0];
    lens[2] = r->token_len;
    return (struct round_cmd){NULL, 0, (int)argc, argv, lens};
}
