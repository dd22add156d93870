/* SPDX-License-Identifier: BSD-3-Clause */
/* token.c -- lock tokens from OpenSSL's CSPRNG.
 *
 * A token identifies one holder on every node; compare-and-delete and
 * touch-only extension trust it, so it must be unguessable and unique:
 * 160 bits from RAND_bytes. If the generator fails we refuse to lock
 * (RL_ERANDOM) rather than fall back to a weak source.
 * RAND_bytes has a high fixed cost per call, so each thread draws a batch
 * and hands out TOKEN_BYTES at a time. Bytes are never handed out twice,
 * and a batch drawn before a fork is dropped in the child (it would
 * otherwise repeat the parent's next tokens): each thread's batch lives
 * in a page of its own marked MADV_WIPEONFORK, which the kernel hands to
 * any child process zeroed -- fork(), _Fork() or a bare clone(), whether
 * or not atfork handlers run -- so the child finds no batch and draws
 * its own. (Asking getpid() per token instead cost a system call per
 * lock, 5 to 7 % of the client's CPU in bench.) Where the page cannot be
 * had (a kernel before 4.14, out of memory), every token draws its own
 * bytes. */
#include <openssl/rand.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "token.h"

#define POOL_TOKENS 64

struct token_pool {
    unsigned char bytes[POOL_TOKENS * TOKEN_BYTES];
    size_t used;   /* bytes already handed out */
    bool drawn;    /* bytes holds a batch (false in a child: wiped) */
};

static _Thread_local struct token_pool *pool; /* this thread's page */
static _Thread_local bool pool_tried;
static pthread_key_t pool_key; /* unmaps a thread's page when it exits */
static pthread_once_t pool_key_once = PTHREAD_ONCE_INIT;
static bool pool_key_made;

static void pool_unmap(void *page)
{
    munmap(page, sizeof(struct token_pool));
}

static void make_pool_key(void)
{
    pool_key_made = pthread_key_create(&pool_key, pool_unmap) == 0;
}

/* This thread's batch page, mapped on its first token; NULL where it
 * cannot be had. */
static struct token_pool *thread_pool(void)
{
    void *page;

    if (pool != NULL || pool_tried)
        return pool;
    pool_tried = true;
    pthread_once(&pool_key_once, make_pool_key);
    if (!pool_key_made)
        return NULL;
    page = mmap(NULL, sizeof(struct token_pool), PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED)
        return NULL;
    if (madvise(page, sizeof(struct token_pool), MADV_WIPEONFORK) != 0 ||
        pthread_setspecific(pool_key, page) != 0) {
        munmap(page, sizeof(struct token_pool));
        return NULL;
    }
    pool = page;
    return pool;
}

rl_status token_generate(char out[TOKEN_HEX_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    struct token_pool *p = thread_pool();
    unsigned char own[TOKEN_BYTES];
    unsigned char *raw = own;
    size_t i;

    if (p != NULL &&
        (!p->drawn || p->used + TOKEN_BYTES > sizeof(p->bytes))) {
        p->drawn = RAND_bytes(p->bytes, (int)sizeof(p->bytes)) == 1;
        p->used = 0;
    }
    if (p != NULL && p->drawn)
        raw = p->bytes + p->used;
    else if (RAND_bytes(own, (int)sizeof(own)) != 1) {
        out[0] = '\0';
        return rl_fail(RL_ERANDOM, "OpenSSL RAND_bytes failed: no token");
    }
    for (i = 0; i < TOKEN_BYTES; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 0xf];
    }
    memset(raw, 0, TOKEN_BYTES);
    if (raw != own)
        p->used += TOKEN_BYTES;
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
