/* fence.c -- fencing tokens. The protocol is driven by acquire.c; why it
 * is safe is argued above fence_candidate and in docs/fencing.md, and it
 * is model-checked in spec/redlock.pml (FENCEFIX).
 *
 * Each node keeps, per resource, a counter redlock:fence:<key> and beside
 * it a marker redlock:fencerun:<key>: the run_id of the server that last
 * wrote the counter. Neither expires. A counter is *trusted* when its
 * marker is the run_id of the server answering now: the node has not
 * restarted (or lost or reloaded its data) since the counter was written.
 *
 * Round 1 (the acquire itself, ROUND_ALL: it waits for every node or its
 * timeout) returns, from every node that answers, granting or refusing,
 * its counter and whether it is trusted. max_read is the largest counter
 * of any reply. Token: max_read + 1 when the counters of a quorum of the
 * GRANTING, voting nodes are trusted (a node whose clock is suspect may
 * lose keys early: it proves nothing about the order of reads); else
 * max(max_read + 1, wall clock µs), the wall-clock fallback. Round 2
 * raises the counter to the token and sets the marker to the current
 * run_id on every node where the lock key still holds our token, and must
 * reach a quorum of voting nodes inside the validity before the token is
 * handed out.
 * Counters are compared as decimal strings by length, then lexically,
 * because Lua numbers are doubles (exact only to 2^53). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fence.h"
#include "lockrec.h"
#include "quorum.h"

char *fence_key(const char *prefix, const char *key, size_t key_len)
{
    size_t plen = strlen(prefix);
    char *k = malloc(plen + key_len + 1);

    if (k == NULL)
        return NULL;
    memcpy(k, prefix, plen);
    memcpy(k + plen, key, key_len);
    k[plen + key_len] = '\0';
    return k;
}

/* A counter as stored in Redis: decimal string, or nil = absent = 0. */
static bool parse_counter(const struct node_reply *r, uint64_t *out)
{
    char buf[24];
    char *end;
    unsigned long long v;

    if (r->kind == REPLY_NIL) {
        *out = 0;
        return true;
    }
    if (r->kind != REPLY_STRING || r->len == 0 || r->len >= sizeof(buf))
        return false;
    memcpy(buf, r->str, r->len);
    buf[r->len] = '\0';
    errno = 0;
    v = strtoull(buf, &end, 10);
    if (errno != 0 || *end != '\0' || buf[0] == '-')
        return false;
    *out = v;
    return true;
}

bool fence_read_reply(struct fence_read *fr, const struct node_reply *r,
                      bool voting, bool *granted)
{
    uint64_t counter;

    if (r->kind != REPLY_ARRAY || r->elements != 3 ||
        r->element[0].kind != REPLY_INTEGER ||
        r->element[2].kind != REPLY_INTEGER ||
        !parse_counter(&r->element[1], &counter))
        return false;
    *granted = r->element[0].integer == 1;
    if (*granted && voting && r->element[2].integer == 1)
        fr->trusted++;
    if (counter > fr->max_read)
        fr->max_read = counter;
    return true;
}

/* Why tokens strictly increase (docs/fencing.md has the long form): let T
 * be granted, i.e. written to a quorum W(T), before T'. The granting
 * quorum G' of T' meets W(T). A node of G' answered T' after T was
 * written there (keys of two holders never coexist on a node, and ours
 * outlive our grant). If the counters of a quorum of G' are trusted, one
 * of them is in W(T) (quorums intersect) and has not restarted since its
 * marker was written; that counter is >= T (counters only rise, and a
 * repair after a restart writes a token derived by this same rule after
 * T's writes: induction over write rounds; a repair made through the
 * fallback inherits its assumption), so max_read >= T and T' > T with no
 * clock at all, whatever restarted. Otherwise some granting node
 * may have lost T with a restart, and the token rests on the wall-clock
 * term: client wall clocks agree within the time between two grants, and
 * no token ran ahead of wall time. Refusals only raise max_read (best
 * effort): a refusing node may answer before a concurrent holder's write
 * lands there, so it may not count toward the trusted quorum (the model
 * finds a violation when it does: control ctl-trustrefused). Persistence
 * does not make a counter trusted: a restarted server has a new run_id
 * (an fsync-lagged counter may be stale); its counter counts for max_read
 * only. Round 2 must reach a quorum before the token is used, or W(T)
 * need not meet a later trusted quorum (control ctl-fwone). */

uint64_t fence_candidate(const struct fence_read *fr, size_t n,
                         uint64_t wall_us)
{
    uint64_t next = fr->max_read == UINT64_MAX ? UINT64_MAX
                                               : fr->max_read + 1;

    if (fr->trusted >= quorum_size(n))
        return next;
    return next > wall_us ? next : wall_us;
}

enum fence_record fence_record_parse(const char *rec, size_t len,
                                     const char *value, uint64_t *term)
{
    char buf[160]; /* a token (at most 128 bytes), a space, a term */
    char *space, *end;
    unsigned long long v;

    *term = 0;
    if (rec == NULL || value == NULL || value[0] == '\0' ||
        len >= sizeof(buf))
        return FENCE_RECORD_NONE;
    memcpy(buf, rec, len);
    buf[len] = '\0';
    space = strchr(buf, ' ');
    if (space != NULL)
        *space = '\0';
    /* The record keeps the value the lock was taken with; a leader's
     * proclaim may have changed the owner since (the same lock). */
    if (!lockrec_same_lock(buf, value))
        return FENCE_RECORD_NONE;
    if (space == NULL)
        return FENCE_RECORD_PENDING;
    errno = 0;
    v = strtoull(space + 1, &end, 10);
    if (errno != 0 || *end != '\0' || end == space + 1 || space[1] == '-' ||
        v == 0)
        return FENCE_RECORD_NONE;
    *term = v;
    return FENCE_RECORD_TERM;
}
