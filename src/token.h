/* token.h -- random lock tokens (>= 128 random bits, hex). */
#ifndef REDLOCK_TOKEN_H
#define REDLOCK_TOKEN_H

#include "common.h"

#define TOKEN_BYTES 20                   /* 160 random bits */
#define TOKEN_HEX_LEN (TOKEN_BYTES * 2)  /* characters, without the NUL */

/* Fill out with TOKEN_HEX_LEN lowercase hex digits and a NUL. Fails closed:
 * RL_ERANDOM when OpenSSL cannot produce random bytes. */
rl_status token_generate(char out[TOKEN_HEX_LEN + 1]);

#endif
