/* SPDX-License-Identifier: BSD-3-Clause */
/* scripts.c -- the table of Lua scripts the library embeds: one file per
 * script under src/lua (its README states what the scripts rely on;
 * docs/protocol.md section 3 their contract). The build expands their
 * includes and computes their SHA1 digests (cmake/lua-scripts.cmake):
 * node.c sends EVALSHA and falls back to EVAL on NOSCRIPT. */
#include "scripts.h"
#include "token.h"

/* member(), intent-clear, ours() and live_readers() spell the token
 * layout out in Lua (src/lua/README.md). */
_Static_assert(TOKEN_STEM_LEN == 32 && TOKEN_HEX_LEN == 40,
               "the scripts' attempt digits are 33..40");

#include "lua_scripts.inc"

const struct script *script_get(enum script_id id)
{
    return &scripts[id];
}
