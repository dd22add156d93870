/* SPDX-License-Identifier: BSD-3-Clause */
/* extend.h -- one re-quorum extension round, loop thread. */
#ifndef REDLOCK_EXTEND_H
#define REDLOCK_EXTEND_H

#include "core.h"
#include "lockrec.h"

struct extend_round;

/* Outcome of a round, called exactly once unless the round was aborted:
 * RL_OK (a quorum reset the expiry; t0 = the round's start, voters = how
 * many voting nodes agreed), RL_ELOST (a majority holds no key with our
 * token) or RL_ENOQUORUM (too few answers). rl_last_error() says why. */
typedef void extend_done_fn(void *owner, rl_status st, rl_mono_us t0,
                            unsigned voters);

/* Prepare a round over rec's keys with ttl_ms. confirmed_us is the start
 * of the lock's last round a quorum granted (0: unknown, adopted): nodes
 * started after it get the keys back first. holders (bit i: node i holds
 * our key and its vote counts; the caller's, updated as replies come):
 * a node that answers that our key is gone (absent or another
 * token) loses its bit at once, a voting node that renewed it gets it;
 * once the bits of nodes that are not clock-suspect are fewer than a
 * quorum the round ends at once with RL_ELOST. NULL on out of memory. rec
 * and holders must live until done or extend_abort. */
struct extend_round *extend_new(rl_client *c, const struct lock_rec *rec,
                                uint32_t ttl_ms, rl_mono_us confirmed_us,
                                uint64_t *holders, extend_done_fn *done,
                                void *owner);
/* Send it. done may run before this returns; the round frees itself
 * after done. */
void extend_run(struct extend_round *e);
/* Drop a round whose done has not run: no callback, memory freed; replies
 * still in flight land on node-owned records. */
void extend_abort(struct extend_round *e);

/* One lock's decision, the same in a round and in a batch, apart from
 * the nodes: their facts come in as bits (bit i: node i). */

/* Node i answered v: a YES from a node whose vote counts (voting) makes
 * it a holder again, a NO (our key absent, or another token) withdraws
 * it, anything else (an error, a timeout) changes nothing. Returns the
 * new holders. */
uint64_t extend_holders_after(uint64_t holders, size_t i, enum vote v,
                              bool voting);
/* True when the lock is lost now: fewer than a quorum of the n nodes are
 * holders or still unanswered (their YES would make them holders again,
 * so a withdrawal waits for them: a node whose grant came after the
 * acquire was decided is not in holders but may hold our key) and keep
 * their keys (keeps). Bits at or above n are ignored. */
bool extend_lost_now(uint64_t holders, uint64_t unanswered, uint64_t keeps,
                     size_t n);
/* The status of a decided lock, rl_last_error set: RL_OK for
 * VERDICT_SUCCESS; RL_ELOST when more nodes refused (key absent or
 * another token) than a quorum of n can spare; else RL_ENOQUORUM, with
 * yes and detail in the message. */
rl_status extend_outcome(enum verdict v, const char *resource, size_t n,
                         size_t yes, size_t refused, const char *detail);

/* A batch of renewals: many locks, one touch-batch script call per node
 * (the watchdog's renewals). Each lock's outcome is its own and is
 * reported through the batch's done with the lock's owner, exactly like a
 * round's (t0 = the batch's start). A batch is reusable: once over it is
 * empty again and goes back to its owner. Loop thread. */
#define EXTEND_BATCH_MAX_LOCKS 256

struct extend_batch;

/* Called once when a run of b is over: every node answered (or failed)
 * and every lock was reported or dropped. b is empty again; the owner
 * runs it again later or frees it (so it may count batches in flight
 * with it: flow control). */
typedef void extend_batch_over_fn(void *arg, struct extend_batch *b);

/* An empty batch; NULL on out of memory (rl_last_error not set). */
struct extend_batch *extend_batch_new(rl_client *c, extend_done_fn *done,
                                      extend_batch_over_fn *over,
                                      void *over_arg);
/* Free a batch that is not running (over, or never run). NULL: no-op. */
void extend_batch_free(struct extend_batch *b);
/* True when a lock with this record can be renewed in a batch: one key,
 * not a reader (the others get their own rounds). */
bool extend_batch_takes(const struct lock_rec *rec);
/* True when no lock may be added any more. */
bool extend_batch_full(const struct extend_batch *b);
/* Add a lock (extend_batch_takes; rec and holders, as for extend_new,
 * live until its outcome or extend_batch_drop; owner is its done's
 * argument and names it in the batch). */
void extend_batch_add(struct extend_batch *b, const struct lock_rec *rec,
                      uint32_t ttl_ms, rl_mono_us confirmed_us,
                      uint64_t *holders, void *owner);
/* Send it (restoring keys on provably restarted nodes first, as a round
 * does). Outcomes (and the end of the run) may be reported before this
 * returns: the caller must not use b after that (see
 * extend_batch_over_fn). */
void extend_batch_run(struct extend_batch *b);
/* The lock added with owner no longer wants its outcome (released,
 * freed, lost): it is never reported. No-op when it was already reported
 * (or b is NULL). */
void extend_batch_drop(struct extend_batch *b, const void *owner);

#endif
