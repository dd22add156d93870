/* SPDX-License-Identifier: BSD-3-Clause */
/* semaphore.h -- acquire one of K permits, each an ordinary mutex on its
 * slot key "<resource>:slot:<i>". Loop thread. */
#ifndef REDLOCK_SEMAPHORE_H
#define REDLOCK_SEMAPHORE_H

#include "acquire.h"

struct sem_op;

/* Prepare a semaphore acquisition over limit slots. rec (the holder's,
 * made for slot limit - 1, the longest name) is rewritten to each slot
 * tried and, on success, names the slot won; it must live until done or
 * sem_abort. ttl and o as for acquire_new (o copied). done is called
 * exactly once unless aborted, like an acquire's. NULL on OOM. */
struct sem_op *sem_new(rl_client *c, struct lock_rec *rec, uint32_t limit,
                       uint32_t ttl, const rl_acquire_opts *o,
                       acquire_done_fn *done, void *owner);
/* First round now; done may run before this returns. */
void sem_run(struct sem_op *op);
/* Stop (client freed): no callback. NULL is a no-op. */
void sem_abort(struct sem_op *op);
/* Stop at the caller's request: the slot attempt in flight is canceled
 * (acquire_cancel); no callback. NULL is a no-op. */
void sem_cancel(struct sem_op *op);

#endif
