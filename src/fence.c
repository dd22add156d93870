/* SPDX-License-Identifier: BSD-3-Clause */
/* fence.c -- fencing tokens. The protocol is driven by acquire.c; why it
 * is safe is argued above fence_candidate and in docs/fencing.md, and it
 * is model-checked in spec/redlock.pml (FENCEFIX, REV).
 *
 * Each node keeps ONE counter, redlock:fence, for every resource (as
 * etcd keeps one revision), and beside it a marker redlock:fencerun: the
 * run_id of the server that vouches for it. Neither expires: two keys per
 * node however many names were ever fenced. A counter is *trusted* when
 * its marker is the run_id of the server answering now. A token is the
 * counter's value when the lock was taken, so tokens strictly increase
 * per resource (and, on one node, across resources). Per lock, a record
 * redlock:fencefor:<key> names whom the counter was raised for and
 * expires with the lock key.
 *
 * Round 1 (the acquire itself, ROUND_ALL: it waits for every node or its
 * timeout) returns, from every node that answers, granting or refusing,
 * its counter and whether it is trusted. max_read is the largest counter
 * of any reply. Token: max_read + 1 when the counters of a quorum of the
 * GRANTING, voting nodes are trusted (a node whose clock is suspect may
 * lose keys early: it proves nothing about the order of reads); else
 * max(max_read + 1, wall clock µs), the wall-clock fallback. Round 2
 * raises the counter to the token where the lock key still holds our
 * token, sets the marker there only on the nodes whose server was out of
 * its restart quarantine at round 1's start (acquire.c sends their
 * run_ids), and must
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
 * be granted, i.e. written to a quorum W(T), before T' of the same
 * resource. The granting quorum G' of T' meets W(T). A node of G'
 * answered T' after T was written there (keys of two holders of one
 * resource never coexist on a node, and ours outlive our grant). If the
 * counters of a quorum of G' are trusted, one of them, p, is in W(T):
 * its counter is >= T, so max_read >= T and T' > T with no clock at all.
 * Why p's trusted counter is >= T: counters only rise, and a restart
 * (losing the counter, or reloading a stale one) changes the run_id, so
 * the counter is untrusted until a fence-write marks it again. That
 * write may come from ANOTHER resource's round X, whose reads are not
 * ordered after T's writes by any key; it marks only if p's server was
 * out of its restart quarantine at X's start t0 (up max_ttl, or trusted
 * to keep every acknowledged write across a restart, when its counter
 * is whole anyway). Then p restarted at least max_ttl
 * before t0, T was written on p before that restart, and T's counted
 * writes on the other nodes of W(T) all came within T's validity (less
 * than max_ttl after T's round started): before t0. X's own trusted
 * quorum excludes p (untrusted at X's read), meets W(T) in another node
 * read after T's write there, so X's token is > T (induction over marks
 * in time; a mark made through the fallback inherits its assumption).
 * Marking at every write (as a per-resource counter could) lets a stale
 * token of another resource vouch for a restarted node: control
 * ctl-rev-eager. Otherwise some granting node may have lost T with a
 * restart, and the token rests on the wall-clock term: client wall
 * clocks agree within the time between two grants, and no token ran
 * ahead of wall time. Refusals only raise max_read (best effort): a
 * refusing node may answer before a concurrent holder's write lands
 * there, so it may not count toward the trusted quorum (control
 * ctl-trustrefused). Persistence does not make a counter trusted: a
 * restarted server has a new run_id (an fsync-lagged counter may be
 * stale); its counter counts for max_read only. Round 2 must reach a
 * quorum before the token is used, or W(T) need not meet a later trusted
 * quorum (control ctl-fwone). Data lost without a restart (FLUSHALL, an
 * operator's DEL) is outside the model, as it is for the lock keys. */

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

size_t fence_markable(struct node *const *nodes, size_t n, rl_mono_us t0,
                      const char **argv, size_t *lens)
{
    size_t i, count = 0;

    for (i = 0; i < n; i++) {
        const char *id = node_get_facts(nodes[i])->run_id;

        if (id[0] != '\0' && node_voting(nodes[i]) &&
            node_settled_by(nodes[i], t0)) {
            argv[count] = id;
            lens[count++] = strlen(id);
        }
    }
    return count;
}
