/* SPDX-License-Identifier: BSD-3-Clause */
/* abi.h -- the ABI promise of redlock.h in one place. Every public struct
 * a caller passes in ends with reserved bytes that a later version carves
 * new fields from; until then they must be zero, so a program built
 * against a newer header (or one that forgot to initialise the struct) is
 * refused instead of having its new fields silently ignored. Every public
 * call that reads a caller's struct checks it here, first. */
#ifndef REDLOCK_ABI_H
#define REDLOCK_ABI_H

#include "common.h"

/* The public structs a caller passes in. */
enum abi_struct {
    ABI_CONFIG,         /* rl_config */
    ABI_ACQUIRE_OPTS,   /* rl_acquire_opts */
    ABI_STATS,          /* rl_stats, without its nodes */
    ABI_NODE_STATS,     /* rl_node_stats */
};

/* RL_OK when every reserved byte of s (a struct of that kind, not NULL)
 * is zero, else RL_EINVAL naming the struct in rl_last_error(). */
rl_status abi_check(enum abi_struct kind, const void *s);

#endif
