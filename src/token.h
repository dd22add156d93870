/* SPDX-License-Identifier: BSD-3-Clause */
/* token.h -- random lock tokens (>= 128 random bits, hex). */
#ifndef REDLOCK_TOKEN_H
#define REDLOCK_TOKEN_H

#include "common.h"

#define TOKEN_BYTES 20                   /* 160 random bits */
#define TOKEN_HEX_LEN (TOKEN_BYTES * 2)  /* characters, without the NUL */

/* The first TOKEN_STEM_LEN digits of a token are drawn once per
 * acquisition (128 random bits); the other TOKEN_HEX_LEN - TOKEN_STEM_LEN
 * count its attempts (token_next_attempt), so no two attempts of one
 * acquisition share a token: a rollback (compare-and-delete of its
 * attempt's token) that lands late, however late and on whatever
 * connection, finds no key of a later attempt (docs/protocol.md). */
#define TOKEN_STEM_LEN 32

/* Fill out with TOKEN_HEX_LEN lowercase hex digits and a NUL. Fails closed:
 * RL_ERANDOM when OpenSSL cannot produce random bytes. */
rl_status token_generate(char out[TOKEN_HEX_LEN + 1]);

/* The next attempt's token, in place: t's attempt digits (after
 * TOKEN_STEM_LEN; t has at least TOKEN_HEX_LEN digits) plus one, modulo
 * 16^(TOKEN_HEX_LEN - TOKEN_STEM_LEN); what follows the digits stays. */
void token_next_attempt(char *t);

/* a (len bytes) and b (a string) are tokens of one acquisition: equal, or
 * of the same length (at least TOKEN_HEX_LEN) and equal but for the
 * attempt digits. */
bool token_same_acquisition(const char *a, size_t len, const char *b);

#endif
