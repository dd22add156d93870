/* SPDX-License-Identifier: BSD-3-Clause */
/* common.h -- the few helpers every module uses: allocation wrappers that
 * return NULL instead of aborting, ARRAY_SIZE, RL_UNUSED, and the detail
 * message of the current thread (error.c). */
#ifndef REDLOCK_COMMON_H
#define REDLOCK_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "redlock.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define RL_UNUSED(x) ((void)(x))

#if defined(__GNUC__)
#define RL_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define RL_PRINTF(fmt, args)
#endif

/* Next value of a xorshift64 generator (*state never 0): cheap jitter,
 * not for secrets. */
static inline uint64_t rl_xorshift64(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

/* FNV-1a (64 bits) of len bytes at p: a cheap hash, not for secrets. */
static inline uint64_t rl_fnv1a64(const void *p, size_t len)
{
    const unsigned char *b = p;
    uint64_t h = 14695981039346656037u;

    while (len-- > 0)
        h = (h ^ *b++) * 1099511628211u;
    return h;
}

/* Detail message buffer size: one line naming node, option or reply. */
#define RL_ERRLEN 256

/* Duplicate s (NULL stays NULL); NULL return with s != NULL means OOM. */
char *rl_strdup(const char *s);

/* Set this thread's rl_last_error() text and return st. */
rl_status rl_fail(rl_status st, const char *fmt, ...) RL_PRINTF(2, 3);
/* Copy msg (may be NULL) into this thread's rl_last_error(). */
void rl_error_set_text(const char *msg);
/* Clear this thread's rl_last_error(). */
void rl_error_clear(void);

/* User callbacks (acquire, extend, release, lost, log) run between
 * callback_enter and callback_leave, so a call that must not run inside
 * one (rl_client_free) can refuse. Counted per thread. */
void callback_enter(void);
void callback_leave(void);
bool in_callback(void);

#endif
