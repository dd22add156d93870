/* SPDX-License-Identifier: BSD-3-Clause */
/* holder.h -- the life of a held lock: what the facade (blocking.c,
 * asyncapi.c, election.c) and rl_client_new/free (client.c) use. The
 * handles themselves and the lock getters are handle.c's. */
#ifndef REDLOCK_HOLDER_H
#define REDLOCK_HOLDER_H

#include "core.h"

/* The registry of a client's live handles (RL_ENOMEM). */
rl_status holders_new(rl_client *c);
/* Loop thread, at client free, after every queued and started request
 * was canceled: stop every renewal and orphan every handle (its client
 * becomes NULL: only rl_lock_free, rl_release and the getters work). */
void holders_shutdown(rl_client *c);
void holders_free(rl_client *c);

/* The async operations behind the public API (rl_*_async are thin
 * wrappers; the facade calls these). Same contracts as in redlock.h. */
rl_status holder_acquire(rl_client *c, const char *const *resources,
                         size_t count, const rl_acquire_opts *o,
                         rl_acquire_cb cb, void *privdata);
/* blocking: NULL, or the blocking function's name: then the call is
 * refused (RL_EMISUSE) where a blocking call may not wait. RL_ECANCELED:
 * the lock's client was freed (l untouched). */
rl_status holder_extend(rl_lock *l, uint32_t ttl_ms, rl_extend_cb cb,
                        void *privdata, const char *blocking);
rl_status holder_release(rl_lock *l, rl_release_cb cb, void *privdata,
                         const char *blocking);

/* For operations on a held lock outside this module (election.c): hand
 * op to l's client's loop. blocking as for holder_extend. RL_ECANCELED
 * once the client was freed or is closing. */
rl_status holder_submit(rl_lock *l, struct op *op, const char *blocking);
/* l's record: its keys, token and published value (loop thread). */
struct lock_rec *holder_rec(rl_lock *l);
/* l's client (on its loop thread, while an op of l runs: not NULL). */
rl_client *holder_client(rl_lock *l);

#endif
