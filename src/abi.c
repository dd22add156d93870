/* SPDX-License-Identifier: BSD-3-Clause */
/* abi.c -- where each public struct keeps its reserved bytes, and the check
 * that they are zero (abi.h). */
#include "abi.h"

/* Sizes frozen within a SOVERSION: a field is only ever carved out of the
 * reserved tail. These structs hold only 64-bit words, so their size is the
 * same on every platform. */
_Static_assert(sizeof(rl_totals) == 128, "rl_totals is 128 bytes");

#define TAIL(type, field)                                                     \
    { offsetof(type, field), sizeof(((type *)0)->field) }

static const struct {
    const char *name;
    struct {
        size_t off, len;        /* len 0: unused */
    } tail[2];
} structs[] = {
    [ABI_CONFIG] = {"rl_config", {TAIL(rl_config, reserved_)}},
    [ABI_ACQUIRE_OPTS] = {"rl_acquire_opts",
                          {TAIL(rl_acquire_opts, reserved32_),
                           TAIL(rl_acquire_opts, reserved_)}},
    [ABI_STATS] = {"rl_stats", {TAIL(rl_stats, reserved_)}},
    [ABI_NODE_STATS] = {"rl_node_stats", {TAIL(rl_node_stats, reserved_)}},
};

rl_status abi_check(enum abi_struct kind, const void *s)
{
    const unsigned char *p = s;
    size_t t, i;

    for (t = 0; t < ARRAY_SIZE(structs[kind].tail); t++) {
        for (i = 0; i < structs[kind].tail[t].len; i++) {
            if (p[structs[kind].tail[t].off + i] != 0)
                return rl_fail(RL_EINVAL,
                               "%s: reserved fields are not zero (built "
                               "against a newer redlock.h, or not "
                               "initialised)",
                               structs[kind].name);
        }
    }
    return RL_OK;
}
