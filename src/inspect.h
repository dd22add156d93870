/* SPDX-License-Identifier: BSD-3-Clause */
/* inspect.h -- node and resource inspection used inside the library. */
#ifndef REDLOCK_INSPECT_H
#define REDLOCK_INSPECT_H

#include "core.h"
#include "quorum.h"

/* Blocking: PING every node once, so the first handshakes are done (or
 * have failed) before rl_client_new returns; with the clock guard twice
 * (a clock sample over the warm connection). Own-loop clients only.
 * RL_EINVAL naming both entries when two nodes turned out to be one
 * server (or a master and its replica); RL_OK otherwise, also when nodes
 * are unreachable. */
rl_status inspect_wait_connected(rl_client *c);

/* Node n's answer to the inspect script, into h (reachable, voting,
 * token, pttl, readers, fence, term, writer intent; error otherwise): VOTE_YES when it
 * answered. */
enum vote inspect_read_holder(struct node *n, rl_holder_info *h,
                              const struct node_reply *r);
/* The inspect (or force-release) call s over key: with intent_key the
 * writer intent is read too, and with fence_for (only with intent_key)
 * the node's fence counter and key's record. argv and lens have room for
 * 4 entries; *cmd points into them. */
void inspect_keys(const char *key, const char *intent_key,
                  const char *fence_for, const struct script *s,
                  const char **argv, size_t *lens, struct round_cmd *cmd);
/* Summarize per-node answers (rl_resource_inspect): the lock held by
 * the most reachable nodes (values with the same token digits and
 * different owners are one lock: lockrec_same_lock), the value of it most
 * of them hold and its owner (ties: the bytewise smallest value, never
 * node order), whether a quorum of n is held by voting
 * nodes, the remaining PTTL of the voting quorum that holds it longest
 * (blocked_ms) and, less the lock-delay its value carries, the holder's
 * validity, the largest fence counter, and the holder's own term: set only when a
 * quorum of the voting nodes holding it recorded that term for it
 * (pending while any of them names it as fenced without). Pure. */
void inspect_summarize(const rl_holder_info *h, size_t n,
                       rl_resource_info *out);

#endif
