/* token.c -- lock tokens from OpenSSL's CSPRNG (DESIGN §6).
 *
 * A token identifies one holder on every node; compare-and-delete and
 * touch-only extension trust it, so it must be unguessable and unique:
 * 160 bits from RAND_bytes. If the generator fails we refuse to lock
 * (RL_ERANDOM) rather than fall back to a weak source. */
#include <openssl/rand.h>

#include "token.h"

rl_status token_generate(char out[TOKEN_HEX_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[TOKEN_BYTES];
    size_t i;

    if (RAND_bytes(raw, (int)sizeof(raw)) != 1) {
        out[0] = '\0';
        return rl_fail(RL_ERANDOM, "OpenSSL RAND_bytes failed: no token");
    }
    for (i = 0; i < sizeof(raw); i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 0xf];
    }
    out[TOKEN_HEX_LEN] = '\0';
    return RL_OK;
}
