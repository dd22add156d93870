/* fence.c -- fencing tokens (DESIGN §5.6, issue 12); the protocol is
 * driven by acquire.c, the argument for why it is safe is here and in
 * docs/fencing.md, and it is model-checked in spec/redlock.pml (FENCEFIX).
 *
 * Each node keeps, per resource, a counter redlock:fence:<key> and beside
 * it a marker redlock:fencerun:<key>: the run_id of the server that last
 * wrote the counter. Neither expires. A counter is *trusted* when its
 * marker is the run_id of the server answering now: the node has not
 * restarted (or lost or reloaded its data) since the counter was written.
 *
 * Round 1 (the acquire itself, ROUND_ALL: it waits for every node or its
 * timeout) returns, from every node that answers, granting or refusing,
 * its counter and whether it is trusted. A token may be derived only if
 * a quorum of the counters is trusted, or every node answered; else the
 * attempt fails like one without a quorum. The token is max_read + 1
 * (max_read over every reply); only when fewer than a quorum are trusted
 * is it max(max_read + 1, wall clock µs), the wall-clock fallback.
 * Round 2 raises the counter to the token and sets the marker to the
 * current run_id on every node where the lock key still holds our token,
 * and must reach a quorum of voting nodes inside the validity before the
 * token is handed out.
 *
 * Invariant: for every granted token T with write quorum W(T), every node
 * of W(T) whose counter is trusted holds a counter >= T. Why tokens
 * strictly increase (T granted before T'): the holder of T' read every
 * node after the keys of T were gone from a majority, hence (its keys
 * live through its own validity, and a restarted node's vote only counts
 * after a quarantine of max_ttl_ms) after T was written on W(T), except
 * on nodes that refused it. (a) A trusted quorum intersects W(T) in a
 * node whose counter is >= T. (b) An answer from all N includes every node
 * of W(T); the ones that did not restart still hold >= T, so with fewer
 * than |W(T)| restarts between two writes, max_read >= T without any
 * clock. A repair writes a token that is itself > every earlier one, so
 * it keeps the invariant. Only when every node of some W(T) lost its
 * counter (a majority restarted without persistence before a fenced
 * acquire repaired them) does monotonicity rest on the wall-clock term:
 * client wall clocks agree within the time between two grants and no
 * token ever ran ahead of wall time. Persistence does not need trust:
 * a restarted node with AOF gets a new run_id, so its counter counts for
 * max_read but not as trusted until a write round repairs the marker
 * (an fsync-lagged counter may be stale). Why round 2 must reach a
 * quorum before the token is used: (a) needs |W(T)| >= quorum; the model
 * finds the violation when it may succeed on one node (control FWONE).
 * Counters are compared as decimal strings by length, then lexically,
 * because Lua numbers are doubles (exact only to 2^53). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fence.h"
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
                      bool *granted)
{
    uint64_t counter;

    if (r->kind != REPLY_ARRAY || r->elements != 3 ||
        r->element[0].kind != REPLY_INTEGER ||
        r->element[2].kind != REPLY_INTEGER ||
        !parse_counter(&r->element[1], &counter))
        return false;
    *granted = r->element[0].integer == 1;
    fr->answered++;
    if (r->element[2].integer == 1)
        fr->trusted++;
    if (counter > fr->max_read)
        fr->max_read = counter;
    return true;
}

bool fence_read_ok(const struct fence_read *fr, size_t n)
{
    return fr->trusted >= quorum_size(n) || fr->answered == n;
}

uint64_t fence_candidate(const struct fence_read *fr, size_t n,
                         uint64_t wall_us)
{
    uint64_t next = fr->max_read == UINT64_MAX ? UINT64_MAX
                                               : fr->max_read + 1;

    if (fr->trusted >= quorum_size(n))
        return next;
    return next > wall_us ? next : wall_us;
}
