/* watchdog.h -- renewal of a held lock (loop thread only). */
#ifndef REDLOCK_WATCHDOG_H
#define REDLOCK_WATCHDOG_H

#include "lock.h"

/* Check o's watchdog fields against ttl_ms (caller thread, any time). */
rl_status watchdog_check_opts(const rl_acquire_opts *o, uint32_t ttl_ms);
/* Start renewing l (o may be NULL). RL_ENOMEM. */
rl_status watchdog_attach(struct rl_lock *l, const rl_acquire_opts *o);
/* Stop renewing and free the watchdog (idempotent). */
void watchdog_detach(struct rl_lock *l);

#endif
