/* SPDX-License-Identifier: BSD-3-Clause */
/* node.h -- one Redis node: connection, requests with timeouts, health.
 * The only interface the engine (quorum.c and the operations) sees of
 * the connection layer and libev. */
#ifndef REDLOCK_NODE_H
#define REDLOCK_NODE_H

#include <stdbool.h>
#include <stdint.h>

#include "clock.h"
#include "config.h"
#include "facts.h"
#include "latency.h"
#include "scripts.h"
#include "vote.h"
#include "wire.h"

struct ev_loop;
struct tls_target;
struct node;
struct notify;
struct request;

/* Reply callback: called exactly once per request unless the request was
 * detached first; never from inside a send. */
typedef void node_reply_fn(void *owner, size_t slot,
                           const struct node_reply *r);

enum node_state {
    NODE_IDLE,       /* created, not started */
    NODE_CONNECTING, /* TCP connect + AUTH/SELECT/INFO handshake */
    NODE_READY,      /* handshake answered: requests flow */
    NODE_BACKOFF,    /* failed; reconnect timer armed; requests fail fast */
    NODE_CLOSED,     /* being freed */
};

/* Counters, read on the loop thread. */
struct node_stats {
    uint64_t requests;
    uint64_t errors;        /* error replies */
    uint64_t timeouts;
    uint64_t down;          /* requests failed because the node was down */
    uint64_t votes_for;
    uint64_t votes_against;
    uint64_t handshakes;    /* connections that became ready */
    uint64_t tls_resumed;   /* of those, TLS sessions resumed */
    uint64_t checks_own;    /* node checks sent */
    uint64_t checks_heard;  /* readings of other clients taken instead */
    uint64_t checks_shared; /* readings of ours published */
    uint64_t latency[LATENCY_BUCKETS]; /* reply latency histogram */
    uint32_t latency_max_us;
};

/* Count a quorum vote of this node. */
void node_count_vote(struct node *n, bool granted);
/* Latency percentile (0 < p <= 100) in µs, from the histogram. */
uint32_t node_latency_percentile(const struct node *n, double p);

/* Node index of cfg->addrs. peers: every node of the client by index
 * (filled as they are made; outlives them all), compared for duplicates.
 * tls: the node's TLS target (outlives the node), or NULL: plaintext.
 * nt: the client's notifications, which carry the node's shared check
 * (freed before the node, after its last loop iteration). */
struct node *node_new(struct ev_loop *loop, const struct config *cfg,
                      struct node *const *peers, size_t index,
                      struct tls_target *tls, struct notify *nt);
/* Start connecting (idempotent). */
void node_start(struct node *n);
/* Write what is queued, then close the connection. Requests still
 * attached are reported REPLY_DOWN (with their owners' callbacks) before
 * it returns. NULL is a no-op. */
void node_free(struct node *n);

/* Send w to the node (the request takes its own reference). Returns the
 * request, or NULL when the node is known to be down or the send failed:
 * then nothing will be called back and *why (if not NULL) points at a
 * reason that lives as long as the node. fn may be NULL (fire and forget:
 * the reply is dropped). */
/* Read the replies n's socket already holds now (when connected): their
 * owners are told before whatever runs next. A timer due in the same loop
 * iteration as the socket's readiness runs first (libev runs the latest
 * pending watcher first), so one about to give up on a reply calls this.
 * Loop thread, not inside a reply of n. False when n has no open
 * connection (nothing was read). */
bool node_read_now(struct node *n);

struct request *node_send_wire(struct node *n, struct wire *w,
                               node_reply_fn *fn, void *owner, size_t slot,
                               const char **why);
/* node_send_wire of a one-off command (argv is copied). */
struct request *node_send(struct node *n, int argc, const char **argv,
                          const size_t *lens, node_reply_fn *fn, void *owner,
                          size_t slot, const char **why);
/* Fire and forget; if the node is down now, w is sent after its next
 * handshake instead (bounded number kept per node). */
void node_send_wire_or_defer(struct node *n, struct wire *w);
/* The owner no longer wants the reply; the request record lives on until
 * the connection calls back, then is freed by the node. */
void request_detach(struct request *r);

const char *node_name(const struct node *n);
enum node_state node_get_state(const struct node *n);
enum node_bar node_vote_bar(const struct node *n);
/* node_vote_bar(n) == NODE_BAR_NONE. */
bool node_voting(const struct node *n);
/* False when a key the node holds for us may already be gone, or its
 * vote never counted: a duplicate, a replica, an evicting or a
 * clock-suspect node. A held lock withdraws such votes. */
bool node_keeps_keys(const struct node *n);
/* A restarted node kept every key it acknowledged: restart_trust TRUST,
 * or AUTO and it reports AOF with appendfsync always. */
bool node_restart_trusted(const struct node *n);
/* What the node said of itself at the handshake and the latest check. */
const struct node_facts *node_get_facts(const struct node *n);
/* Index of the node listed before this one that is the same server, or
 * -1. */
int node_twin_of(const struct node *n);
/* Milliseconds until a connected node votes (0: it votes now), or -1
 * when it is not connected. */
int64_t node_quarantine_left_ms(const struct node *n);
/* Server facts from the handshake; 0 / "" before the first one. */
const char *node_version(const struct node *n);
/* Negotiated TLS protocol ("TLSv1.3") of a ready node, else NULL. */
const char *node_tls_version(const struct node *n);
int64_t node_uptime_ms(const struct node *n);
/* True when the server provably started after t (boottime µs): even its
 * earliest possible start (uptime has whole seconds) is later. */
bool node_started_after(const struct node *n, rl_mono_us t);
/* True when the server answering now was out of its restart quarantine
 * by t (boottime µs): trusted across restarts, or up max_ttl_ms by t
 * even from its latest possible start. */
bool node_settled_by(const struct node *n, rl_mono_us t);
const struct node_stats *node_get_stats(const struct node *n);

/* Clock guard (wire_sample_time marks the commands that carry a
 * sample). */
enum node_clock {
    NODE_CLOCK_OFF,     /* the guard is off */
    NODE_CLOCK_UNKNOWN, /* fewer than two samples */
    NODE_CLOCK_OK,
    NODE_CLOCK_SUSPECT, /* does not vote */
};
enum node_clock node_clock_state(const struct node *n);
/* Server µs per our µs over the latest baseline; 0 while unknown. */
double node_clock_rate(const struct node *n);
/* Times it became clock-suspect. */
uint64_t node_clock_incidents(const struct node *n);

#endif
