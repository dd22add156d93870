/* SPDX-License-Identifier: BSD-3-Clause */
/* roundwhy.h -- why a lock round failed, in words for its caller: how
 * many nodes failed or refused, and why the others' votes do not count
 * (node_vote_bar), with how long until enough quarantined nodes vote. */
#ifndef REDLOCK_ROUNDWHY_H
#define REDLOCK_ROUNDWHY_H

#include <stddef.h>

#include "quorum.h"

/* No quorum could vote for resource: "'R': F of N nodes failed (need Q
 * voting)" and each reason with nodes, into buf (size bytes). */
void round_why_no_quorum(const struct quorum_round *q, const char *resource,
                         char *buf, size_t size);

/* resource is held by another client: how many nodes refused, and why
 * others do not vote, into buf (size bytes). */
void round_why_refused(const struct quorum_round *q, const char *resource,
                       char *buf, size_t size);

#endif
