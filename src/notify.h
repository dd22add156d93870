/* SPDX-License-Identifier: BSD-3-Clause */
/* notify.h -- wake waiting acquires when a lock is released. */
#ifndef REDLOCK_NOTIFY_H
#define REDLOCK_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>

#include "clock.h"
#include "config.h"
#include "list.h"

struct ev_loop;
struct tls_target;
struct notify;
struct channel;

/* Embedded in a waiting operation; zero-initialised means "not waiting". */
struct notify_waiter {
    struct list_link link;       /* on its channel's waiters */
    struct channel *channel;     /* NULL when not waiting */
    const char *token;           /* the waiter's own token (borrowed) */
    bool own_only;               /* woken only by messages naming token
                                    (notify_wait_turn), not by others' */
    rl_mono_us seen_us;          /* last release by someone else seen
                                    while waiting, boottime; 0 none */
    unsigned listeners;          /* clients subscribed to the channel on
                                    the node whose message woke it, as
                                    the release counted them (this one
                                    among them); 0 unknown */
    bool claims;                 /* set by wake: this waiter acts on the
                                    message (an exclusive attempt sent,
                                    in flight or behind a probe), so one
                                    that counts one listener (this
                                    client) wakes nobody behind it */
    void (*wake)(void *arg);
    void *arg;
};

/* tls: per node, its TLS target (NULL: plaintext); the array may be NULL
 * (no TLS node). The targets outlive nt. */
struct notify *notify_new(struct ev_loop *loop, const struct config *cfg,
                          struct tls_target *const *tls);
/* Close the subscriber connections (loop thread; no waiters left). */
void notify_free(struct notify *nt);
/* Call wake(arg) whenever the lock on key is released by somebody whose
 * token is not token (until unwait). Returns true when such a release was
 * already seen at or after since_us (boottime) -- also one that came
 * while the caller was busy with an attempt and ignored the wake: the
 * caller should retry now. May be called again while waiting (same key);
 * on OOM it just does not wake. */
bool notify_wait(struct notify *nt, struct notify_waiter *w, const char *key,
                 size_t key_len, const char *token, rl_mono_us since_us,
                 void (*wake)(void *arg), void *arg);
/* The fair queue's announcements (queue.c): call wake(arg) whenever a
 * node publishes token on redlock:queue:<key> (that node's lock is free
 * and token heads its queue), until unwait; messages naming others and
 * subscription confirmations do not wake w. Returns true when such a
 * message was seen at or after since_us. */
bool notify_wait_turn(struct notify *nt, struct notify_waiter *w,
                      const char *key, size_t key_len, const char *token,
                      rl_mono_us since_us, void (*wake)(void *arg),
                      void *arg);
/* Whether a waiter of this client waits for its turn in key's queue
 * (notify_wait_turn): the key is contended, and reserved for that queue
 * wherever it is free (queue.c). */
bool notify_turn_awaited(const struct notify *nt, const char *key,
                         size_t key_len);
/* w's acquire gives up (fails or is cancelled): if it was the one
 * waiter of its client that a release woke (notify_waiter.claims), the
 * next one is woken for it now, as the release's message would have.
 * Then notify_unwait. */
void notify_pass_on(struct notify_waiter *w);
/* The shared node check (nodeshare.c): call fn(arg, msg, len) for every
 * message on redlock:facts from node index, from now until notify_free
 * (idempotent: a node follows once). Subscribes there, opening the
 * node's subscriber connection if it is not open, and again after every
 * reconnect; a message lost while it is down is simply not heard. */
typedef void notify_facts_fn(void *arg, const char *msg, size_t len);
void notify_follow_facts(struct notify *nt, size_t index,
                         notify_facts_fn *fn, void *arg);
/* Stop waiting (idempotent). */
void notify_unwait(struct notify *nt, struct notify_waiter *w);

#endif
