/* SPDX-License-Identifier: BSD-3-Clause */
/* facts.h -- what a Redis node says about itself that Redlock's safety
 * rests on, parsed from its INFO and CONFIG GET replies: who it is
 * (run_id, replication stream), whether it may evict keys before their
 * TTL, whether it persists every write. Pure functions, no I/O. A fact
 * the node did not report is unknown, never assumed fine. */
#ifndef REDLOCK_FACTS_H
#define REDLOCK_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A yes/no fact that may be unknown. */
enum fact {
    FACT_UNKNOWN = -1,
    FACT_NO = 0,
    FACT_YES = 1,
};

struct node_facts {
    char version[32];          /* redis_version; "" unknown */
    char run_id[41];           /* server instance; "" unknown */
    char role[12];             /* "master", "slave"; "" unknown */
    char replid[41];           /* master_replid: the replication stream
                                  a master and its replicas share */
    char policy[24];           /* maxmemory_policy; "" unknown */
    uint64_t maxmemory;        /* bytes, 0 = no limit */
    bool maxmemory_known;
    enum fact aof_enabled;
    enum fact cluster_enabled;
    char appendfsync[12];      /* CONFIG GET appendfsync; "" unknown */
    uint64_t uptime_s;         /* uptime_in_seconds */
    bool uptime_known;
    uint64_t evicted_keys;     /* keys evicted since the server started */
    bool evicted_known;
};

/* Copy "field:value" of an INFO reply into dst (truncated to dstlen).
 * false when the field is absent. */
bool facts_info_field(const char *info, const char *field, char *dst,
                      size_t dstlen);

/* Read every fact INFO carries (server, memory, persistence, replication
 * and cluster sections) into f; appendfsync is left as it is (CONFIG
 * GET's). Fields INFO lacks become unknown. */
void facts_from_info(struct node_facts *f, const char *info);

/* Update f from a reply of some INFO sections (INFO stats, INFO
 * replication...): a field the reply lacks keeps its value. */
void facts_merge_info(struct node_facts *f, const char *info);

/* Read one pair of a CONFIG GET reply into f: maxmemory,
 * maxmemory-policy, appendonly, appendfsync; other names are ignored. */
void facts_from_config(struct node_facts *f, const char *name,
                       const char *value);

/* The node may drop a key before its TTL: maxmemory set with a policy
 * other than noeviction. Unknown when either is not reported. */
enum fact facts_may_evict(const struct node_facts *f);

/* The node evicted keys between two readings of the same server (before
 * NULL: ever, as far as this reading tells), whatever its policy says now
 * (it may have changed back in between). */
bool facts_evicted_since(const struct node_facts *f,
                         const struct node_facts *before);

/* The node fsyncs every write before answering it: AOF on with
 * appendfsync always, so a crash loses nothing it acknowledged. */
enum fact facts_fsyncs_every_write(const struct node_facts *f);

/* A node check's reading shared with the node's other clients (node.c's
 * shared check, on the node's redlock:facts channel): one line of
 * space-separated fields, FACTS_SHARE_MAX bytes at most,
 *   rlf1 <from> <run_id> <role> <replid> <policy> <maxmemory> <aof>
 *        <appendfsync> <evicted_keys>
 * from: the publisher's id (16 hex digits); "-" for a fact unknown,
 * aof 1 or 0. What a check reads, and the run_id that names the server
 * it was read from. FACTS_SHARE_MAX holds the longest: 10 fields of 4,
 * 16, 40, 11, 40, 23, 20, 1, 11 and 20 characters, 9 spaces and a NUL. */
#define FACTS_SHARE_MAX 196

/* f as a shared reading from id into dst (FACTS_SHARE_MAX bytes); its
 * length, or 0 when f has no run_id (a reading of no known server). */
size_t facts_share_format(const struct node_facts *f, uint64_t from,
                          char *dst);
/* A shared reading msg (len bytes) taken into f, which holds the
 * reader's facts of the node: the fields the line carries replace f's,
 * the others stay. False, f unchanged, when msg is malformed or was read
 * from another server than f's run_id (a restarted one, or a forgery);
 * *from: the publisher's id. */
bool facts_share_parse(struct node_facts *f, uint64_t *from,
                       const char *msg, size_t len);

/* Why a and b are one server (or one replication stream), or NULL when
 * they are independent as far as their facts tell. */
const char *facts_same_server(const struct node_facts *a,
                              const struct node_facts *b);

#endif
