/* SPDX-License-Identifier: BSD-3-Clause */
/* election.h -- leader election (election.c): what the blocking facade
 * (blocking.c) uses. The public async API is implemented in election.c. */
#ifndef REDLOCK_ELECTION_H
#define REDLOCK_ELECTION_H

#include "core.h"

/* The operation behind rl_proclaim_async and rl_proclaim; same contract
 * as in redlock.h. blocking as for holder_extend. */
rl_status election_proclaim(rl_lock *l, const char *owner, rl_proclaim_cb cb,
                            void *privdata, const char *blocking);

#endif
