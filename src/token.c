/* SPDX-License-Identifier: BSD-3-Clause */
/* token.c -- lock tokens from OpenSSL's CSPRNG.
 *
 * A token identifies one holder on every node; compare-and-delete and
 * touch-only extension trust it, so it must be unguessable and unique:
 * 160 bits from RAND_bytes. If the generator fails we refuse to lock
 * (RL_ERANDOM) rather than fall back to a weak source.
 * RAND_bytes has a high fixed cost per call, so each thread draws a batch
 * and hands out TOKEN_BYTES at a time. Bytes are never handed out twice,
 * and a batch drawn before a fork() is dropped in the child (it would
 * otherwise repeat the parent's next tokens): an atfork handler counts
 * the forks this process descends from (fork() runs it; a raw clone()
 * system call does not), and a batch drawn under another count is drawn
 * again. (Asking getpid() per token instead cost a
 * system call per lock, 5 to 7 % of the client's CPU in bench.) */
#include <openssl/rand.h>
#include <pthread.h>
#include <string.h>

#include "token.h"

#define POOL_TOKENS 64

struct token_pool {
    unsigned char bytes[POOL_TOKENS * TOKEN_BYTES];
    size_t used;          /* bytes already handed out */
    unsigned forks;       /* fork_count when they were drawn */
};

static _Thread_local struct token_pool pool = {.used = sizeof(pool.bytes)};

/* Written only by a child right after fork(), while it has one thread;
 * the parent's threads only read their own process's copy. */
static unsigned fork_count;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
/* The handler is registered before the first batch is drawn, so every
 * fork after it is counted. If registering fails (out of memory), no
 * batch is kept: every token draws its own bytes. */
static bool pool_usable;

static void count_fork(void)
{
    fork_count++;
}

static void register_atfork(void)
{
    pool_usable = pthread_atfork(NULL, NULL, count_fork) == 0;
}

rl_status token_generate(char out[TOKEN_HEX_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *raw;
    size_t i;

    pthread_once(&atfork_once, register_atfork);
    if (pool.used + TOKEN_BYTES > sizeof(pool.bytes) ||
        pool.forks != fork_count) {
        size_t from = pool_usable ? 0 : sizeof(pool.bytes) - TOKEN_BYTES;

        if (RAND_bytes(pool.bytes + from,
                       (int)(sizeof(pool.bytes) - from)) != 1) {
            pool.used = sizeof(pool.bytes);
            out[0] = '\0';
            return rl_fail(RL_ERANDOM, "OpenSSL RAND_bytes failed: no token");
        }
        pool.used = from;
        pool.forks = fork_count;
    }
    raw = pool.bytes + pool.used;
    for (i = 0; i < TOKEN_BYTES; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 0xf];
    }
    memset(pool.bytes + pool.used, 0, TOKEN_BYTES);
    pool.used += TOKEN_BYTES;
    out[TOKEN_HEX_LEN] = '\0';
    return RL_OK;
}

void token_next_attempt(char *t)
{
    static const char hex[] = "0123456789abcdef";
    int i;

    /* Increment the hex number t[TOKEN_STEM_LEN .. TOKEN_HEX_LEN). */
    for (i = TOKEN_HEX_LEN - 1; i >= TOKEN_STEM_LEN; i--) {
        const char *d = strchr(hex, t[i]);
        size_t v = d != NULL ? (size_t)(d - hex) + 1 : 0;

        t[i] = hex[v % 16];
        if (v < 16)
            return;
    }
}

bool token_same_acquisition(const char *a, size_t len, const char *b)
{
    if (len != strlen(b))
        return false;
    if (len < TOKEN_HEX_LEN)
        return memcmp(a, b, len) == 0;
    return memcmp(a, b, TOKEN_STEM_LEN) == 0 &&
           memcmp(a + TOKEN_HEX_LEN, b + TOKEN_HEX_LEN,
                  len - TOKEN_HEX_LEN) == 0;
}
