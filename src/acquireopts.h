/* SPDX-License-Identifier: BSD-3-Clause */
/* acquireopts.h -- the checks of an acquire's names and options. */
#ifndef REDLOCK_ACQUIREOPTS_H
#define REDLOCK_ACQUIREOPTS_H

#include "core.h"

/* Validate the names and options (any thread); *ttl gets the TTL. */
rl_status acquireopts_check(rl_client *c, const char *const *resources,
                            size_t count, const rl_acquire_opts *o,
                            uint32_t *ttl);

#endif
