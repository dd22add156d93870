/* SPDX-License-Identifier: BSD-3-Clause */
/* asyncapi.h -- the public async API (redlock.h) is implemented in
 * asyncapi.c; what the blocking facade shares with it. */
#ifndef REDLOCK_ASYNCAPI_H
#define REDLOCK_ASYNCAPI_H

#include "core.h"

/* A campaign's acquire options from o (may be NULL): wait forever
 * unless o->wait_ms says otherwise, fenced (the term), watched. RL_EINVAL
 * for a lock kind other than an exclusive one. */
rl_status asyncapi_campaign_opts(const rl_acquire_opts *o,
                                 rl_acquire_opts *out);

#endif
