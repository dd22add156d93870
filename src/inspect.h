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
 * token, pttl, readers, fence; error otherwise): VOTE_YES when it
 * answered. */
enum vote inspect_read_holder(struct node *n, rl_holder_info *h,
                              const struct node_reply *r);
/* Summarize per-node answers (rl_resource_inspect): the lock held by
 * the most reachable nodes (values with the same token digits and
 * different owners are one lock: lockrec_same_lock), the value of it most
 * of them hold and its owner, whether a quorum of n holds the lock, the
 * quorum's remaining PTTL and the largest fence counter. Pure. */
void inspect_summarize(const rl_holder_info *h, size_t n,
                       rl_resource_info *out);

#endif
