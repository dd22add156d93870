/* SPDX-License-Identifier: BSD-3-Clause */
/* resolver.h -- host names to numeric addresses: once, blocking, while
 * the configuration is checked, and again off the loop thread.
 *
 * A node given by name whose connection fails may have moved (a pod
 * rescheduled, a failover that moved a DNS name). getaddrinfo blocks, so
 * each lookup runs on a short-lived detached thread of its own; the loop
 * thread polls for the answer when it next connects, and never waits.
 * The job is shared by the thread and its owner and freed by whichever
 * lets go of it last. */
#ifndef REDLOCK_RESOLVER_H
#define REDLOCK_RESOLVER_H

#include <stdbool.h>
#include <stddef.h>

#include "common.h"
#include "uri.h"

/* getaddrinfo of host (blocking), preferring IPv4: *ip is a malloc'd
 * numeric address. RL_EINVAL / RL_ENOMEM / RL_ESYSTEM with a message in
 * err naming host and display (the node) otherwise, *ip NULL. */
rl_status resolve_host(const char *host, const char *display, char **ip,
                       char *err, size_t errlen);

/* TCP: resolve a->host (resolve_host) into a->ip.
 * UNIX: nothing to do. RL_EINVAL with a message naming the host when it
 * does not resolve. */
rl_status resolve_addr(struct node_addr *a, char *err, size_t errlen);

struct resolve_job;

/* Start looking host up (display names the node in messages). NULL when
 * no thread or memory could be had: then the node keeps its address. */
struct resolve_job *resolve_start(const char *host, const char *display);

/* True once the lookup ended: then *ip is the new numeric address
 * (malloc'd, the caller's) and RL_OK is returned in *st, or *ip is NULL,
 * *st the failure and err says why. False while it still runs. */
bool resolve_poll(struct resolve_job *j, char **ip, rl_status *st,
                  char *err, size_t errlen);

/* The owner lets go (finished or not). NULL is a no-op. */
void resolve_drop(struct resolve_job *j);

#endif
