/* SPDX-License-Identifier: BSD-3-Clause */
/* cancel.h -- rl_cancel tokens (the public type) and the hooks that tie
 * an operation on a client's loop to one: firing the token runs the
 * hook's function on that loop's thread. */
#ifndef REDLOCK_CANCEL_H
#define REDLOCK_CANCEL_H

#include "loop.h"

struct cancel_hook;

/* Tie owner to t: when t fires, fn(owner) runs on lp's thread (on a
 * later iteration), unless cancel_detach came first. A hook made after t
 * fired is never run: check cancel_fired where the operation starts.
 * Holds a reference on t until cancel_detach. NULL on OOM. Any thread. */
struct cancel_hook *cancel_attach(rl_cancel *t, struct loop *lp,
                                  void (*fn)(void *owner), void *owner);
/* The operation ended: fn will not run any more. NULL is a no-op. Loop
 * thread (or before the operation was submitted). */
void cancel_detach(struct cancel_hook *h);
/* True once t was fired. */
bool cancel_fired(const struct cancel_hook *h);

#endif
