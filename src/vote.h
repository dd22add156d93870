/* SPDX-License-Identifier: BSD-3-Clause */
/* vote.h -- may a node vote now, and why not. The policy over what the
 * node said of itself (facts.h), its clock (clockguard.h) and the
 * client's rules (config: max_ttl_ms, allow_evicting_nodes,
 * restart_trust): twins, role, eviction, persistence and restart trust,
 * the clock. The verdict is a pure function of a vote_record and the
 * time; the record is kept by the node at each reading of its facts.
 * No I/O; unit-tested from a table of rows. */
#ifndef REDLOCK_VOTE_H
#define REDLOCK_VOTE_H

#include <stdbool.h>
#include <stdint.h>

#include "clock.h"
#include "clockguard.h"
#include "config.h"
#include "facts.h"

/* A ready node's vote facts are read again this often (node.c), on a
 * grid of the wall clock (vote_next_check_us); two readings are up to
 * VOTE_CHECK_GAP_MS apart (an instant comes half to one and a half
 * intervals after the one before; a client that follows the node's
 * shared check hears a reading at least every VOTE_SHARE_EVERY instants
 * of its publisher, and at the instant after VOTE_SHARE_EVERY silent
 * ones at most twice VOTE_TAKEOVER_SPREAD_MS later (before its own check,
 * and, if the node was slow to answer it, before it publishes it); more
 * only when a check is still unanswered at the next instant, which is
 * then skipped), so a node that stopped evicting may have evicted up to
 * that long before the reading that no longer showed it. */
#define VOTE_CHECK_INTERVAL_MS 1000
#define VOTE_SHARE_EVERY 3
/* A follower's takeover after VOTE_SHARE_EVERY silent instants waits up
 * to this long (by its id: nodeshare.c) before its check, and again before it
 * publishes a check the node was slow to answer, so one check and one
 * publication serve them all. */
#define VOTE_TAKEOVER_SPREAD_MS 250
#define VOTE_CHECK_GAP_MS                                                   \
    ((VOTE_SHARE_EVERY + 1) * VOTE_CHECK_INTERVAL_MS * 3 / 2 +              \
     2 * VOTE_TAKEOVER_SPREAD_MS)

/* The wall-clock instant (µs since the epoch) of the next node check of
 * the node at a, the clock reading now_us: the first instant of the
 * node's grid at least half an interval after now_us. The grid is
 * VOTE_CHECK_INTERVAL_MS apart at a phase that is a function of the
 * node's host (or socket path) and port only: every client of a node
 * checks it at the same instants and the node serves them in one
 * wake-up, while the nodes of one client, or of a fleet, fall apart
 * (docs/idle-cost.md). The check is due after half to one and a half
 * intervals whatever the wall clock does. */
uint64_t vote_next_check_us(const struct node_addr *a, uint64_t now_us);

/* Why a node's vote does not count, the first reason that applies. */
enum node_bar {
    NODE_BAR_NONE,       /* it votes */
    NODE_BAR_DOWN,       /* not connected */
    NODE_BAR_TWIN,       /* the same server as a node listed before it */
    NODE_BAR_ROLE,       /* not a master (or its role is unknown) */
    NODE_BAR_EVICTS,     /* may evict keys (or does not say), or lost keys
                            less than max_ttl_ms ago (evicted some, or
                            was a replica); not allowed */
    NODE_BAR_CLOCK,      /* clock-suspect */
    NODE_BAR_QUARANTINE, /* restarted less than max_ttl_ms ago, and not
                            trusted to have kept its keys */
};

/* What the node's readings tell its vote, kept between them. Derived
 * from its facts at each reading, so the verdict (asked for every vote)
 * compares no strings. Times are boottime µs, 0 = never / unknown. */
struct vote_record {
    bool is_master;
    enum fact evicts;           /* facts_may_evict */
    bool fsyncs_always;         /* facts_fsyncs_every_write == FACT_YES */
    rl_mono_us evict_seen_us;   /* last reading that showed it may evict
                                   or had evicted */
    rl_mono_us replica_seen_us; /* last reading as a replica (a resync
                                   replaced its data) */
    rl_mono_us up_since_us;     /* latest possible server start */
    rl_mono_us start_min_us;    /* earliest possible server start */
    rl_mono_us ready_us;        /* the current connection's handshake */
    struct clockguard clock;    /* the clock guard's samples */
};

/* The verdict at now for a node with record v; connected: its handshake
 * is done and the connection up; twin: the same server as a node listed
 * before it. */
enum node_bar vote_bar(const struct config *cfg, const struct vote_record *v,
                       bool connected, bool twin, rl_mono_us now);
/* False when a key the node holds for us may already be gone, or its
 * vote never counted: a duplicate, a replica, an evicting or a
 * clock-suspect node. A held lock withdraws such votes. */
bool vote_keeps_keys(enum node_bar bar);
/* A restarted node kept every key it acknowledged: restart_trust TRUST,
 * or AUTO and it reports AOF with appendfsync always. */
bool vote_restart_trusted(const struct config *cfg,
                          const struct vote_record *v);
/* Milliseconds until a connected node's restart quarantine ends (0: it
 * is over or trusted), or -1 when its start is unknown. */
int64_t vote_quarantine_left_ms(const struct config *cfg,
                                const struct vote_record *v, rl_mono_us now);
/* Milliseconds since the latest possible start; 0 while unknown. */
int64_t vote_uptime_ms(const struct vote_record *v, rl_mono_us now);
/* True when the server provably started after t: even its earliest
 * possible start (uptime has whole seconds) is later. */
bool vote_started_after(const struct vote_record *v, rl_mono_us t);

/* Facts f read at now (a handshake or a check); before: the previous
 * reading, NULL at the first. Logs what changed for voting as node
 * name. */
void vote_read(struct vote_record *v, const struct config *cfg,
               const char *name, const struct node_facts *f,
               const struct node_facts *before, rl_mono_us now);
/* A clock sample s of the node (clockguard_add); logs a change. */
void vote_clock_sample(struct vote_record *v, const struct config *cfg,
                       const char *name, const struct clock_sample *s);
/* A handshake done at now on a new connection, its INFO read into f;
 * before: the facts of the previous connection, NULL if none. Records
 * which server instance answered and when it started, then as
 * vote_read. */
void vote_handshake(struct vote_record *v, const struct config *cfg,
                    const char *name, const struct node_facts *f,
                    const struct node_facts *before, rl_mono_us now);

#endif
