/* SPDX-License-Identifier: BSD-3-Clause */
/* queue.h -- a fair acquire's place in its resource's waiting queue
 * (docs/fair-queue.md). acquire.c runs the attempts; this module takes
 * the ticket, registers and refreshes the entry, listens for the
 * announcements and tells acquire.c when it is its turn to try. */
#ifndef REDLOCK_QUEUE_H
#define REDLOCK_QUEUE_H

#include "core.h"
#include "fence.h"
#include "lockrec.h"
#include "quorum.h"

/* Refresh period of a waiting entry; an entry lives three of them.
 * A waiter further back refreshes less often: one period more per
 * QUEUE_RANKS_PER_PERIOD waiters ahead of its turn, up to
 * QUEUE_REFRESH_MAX_MS (queue.c refresh_period_ms). An attempt's entry
 * lives QUEUE_ENTRY_MS. */
#define QUEUE_REFRESH_MS 500u
#define QUEUE_ENTRY_MS (3u * QUEUE_REFRESH_MS)
#define QUEUE_RANKS_PER_PERIOD 4u
#define QUEUE_REFRESH_MAX_MS (4u * QUEUE_REFRESH_MS)

struct fair_wait;

/* Called when the waiter should attempt now (expired false), or when its
 * deadline passed while it slept (expired true). Never from inside a
 * fair_* call. */
typedef void fair_turn_fn(void *arg, bool expired);

/* A fair wait of rec (its token; its keys[0] is the key attempted) in
 * the queue of qkey (qkey_len bytes, copied): a mutex's or read-write
 * lock's own key with limit 0, or a semaphore's base key with its limit
 * (the slot attempts' scripts get the base key and the limit, and the
 * first limit entries are entitled), at priority 0..RL_MAX_PRIORITY. Its
 * entry's kind is rec's (shared: a reader, which may try once no
 * exclusive entry is ahead of it). It subscribes to the queue's channel
 * (and a mutex's release channel) at its first refusal
 * (fair_wait_turn), so an uncontended acquire subscribes to nothing.
 * acquire.c makes a lock's at the first reply of the first attempt that
 * is not the fast path's grant (fair_fast_grant), so an uncontended
 * acquire has none; semaphore.c makes its own before its first round.
 * NULL on out of memory. */
struct fair_wait *fair_new(rl_client *c, const struct lock_rec *rec,
                           const char *qkey, size_t qkey_len,
                           uint32_t limit, uint32_t priority,
                           fair_turn_fn *turn, void *arg);
/* Stop waiting; unless the lock was granted, the entry leaves every node
 * (sent, not awaited). NULL is a no-op. */
void fair_free(struct fair_wait *f);

/* The attempt: fair-acquire of the lock with our score ('' before we
 * have a ticket: granted only where nobody is queued); with fence keys
 * (the counter, its run_id marker and its record, 3 of them, else NULL)
 * fair-acquire-fenced, which also reads the counter as acquire-fenced
 * does; intent_px (a writer once refused, else NULL): the writer
 * intent's PX, marked where readers refuse it at its turn. A reader
 * (rec shared) attempts with fair-reader-acquire (no fence, no intent).
 * out's strings are f's (rec's), px's, fence's and intent_px's; it must
 * outlive the round's sends. fair_first_cmd is a lock's first attempt,
 * before any wait exists (no score), when fair_first_is_set says it is
 * not acquire's plain SET NX PX (a mutex's or writer's, fenced false,
 * once c has made a fair acquire and while none of c's waiters queues
 * for the key); fair_first_is_set loads the fair scripts on c's nodes,
 * once per client, ahead of the first attempt. */
struct fair_cmd {
    struct round_cmd cmd;
    const char *argv[12]; /* 4 keys (fenced), 8 arguments (a slot) */
    size_t lens[12];
};
bool fair_first_is_set(rl_client *c, const struct lock_rec *rec, bool fenced);
void fair_first_cmd(const struct lock_rec *rec, const char *px,
                    const char *const *fence, struct fair_cmd *out);
void fair_attempt_cmd(struct fair_wait *f, const char *px,
                      const char *const *fence, const char *intent_px,
                      struct fair_cmd *out);
/* Whether r is the fast path's grant (no queue on that node): the reply
 * that needs no wait. fair_fast_granted notes one in f for slot, as
 * fair_classify would have (a wait made after it came). */
bool fair_fast_grant(const struct node_reply *r);
void fair_fast_granted(struct fair_wait *f, size_t slot);
/* A reply of node slot to the attempt: the vote, and what it says of the
 * queue there; fr (fenced attempts, else NULL) takes the counter read
 * (fence_read_reply, voting as there). */
enum vote fair_classify(struct fair_wait *f, size_t slot,
                        const struct node_reply *r, struct fence_read *fr,
                        bool voting);

/* The attempt that started at since_us failed: take a ticket and register
 * (first time), then sleep until it is our turn (turn(arg, false)) or
 * deadline_us passes (turn(arg, true); 0: no deadline). */
void fair_wait_turn(struct fair_wait *f, rl_mono_us since_us,
                    rl_mono_us deadline_us);
/* A semaphore's slot attempt was refused: whether the attempt's replies
 * leave another slot worth trying this round (a slot free and we may
 * take it on a majority: entitled there, or, before the ticket, no queue
 * there). When not, every other slot would be refused the same way. */
bool fair_another_slot(const struct fair_wait *f);
/* A reply said readers hold the key (its "free" -1): a writer's attempts
 * carry its intent from then on, as a plain writer's do once refused by
 * readers; until then none marks it, and none needs clearing. */
bool fair_readers_seen(const struct fair_wait *f);
/* The nodes (of nodes, the round's, one per slot) where an attempt of
 * ours may have marked a writer's intent: every node that did not
 * answer an attempt carrying the intent with a reply that rules it out
 * (granted, or refused off its turn). Writes them to out; their count. */
size_t fair_intent_nodes(const struct fair_wait *f, struct node **nodes,
                         struct node **out);
/* The lock was granted: the entry now goes with the lock (fair-release). */
void fair_granted(struct fair_wait *f);
/* Whether an entry may be on some node (we sent one). */
bool fair_queued(const struct fair_wait *f);
/* Leave the queue on every node and call done(owner) once each node
 * answered or timed out (a timeout that reports only then leaves no entry
 * behind on the nodes that answer). */
void fair_leave(struct fair_wait *f, void (*done)(void *owner), void *owner);

#endif
