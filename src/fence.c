/* fence.c -- fencing tokens (DESIGN §5.6); the protocol is driven by
 * acquire.c, the argument for why it is safe is here and in
 * docs/fencing.md.
 *
 * Each node keeps, per resource, a counter redlock:fence:<key> that never
 * expires. Round 1 (the acquire itself) returns each granting node's
 * counter; the candidate token is max(max_read + 1, wall clock µs).
 * Round 2 raises the counter to the candidate on every node where the
 * lock key still holds our token, and must reach a quorum of voting nodes
 * inside the validity. Why tokens strictly increase: the previous holder
 * wrote its token T to a majority M1 before it was handed its lock; our
 * round 1 read a majority M2; M1 and M2 intersect, so max_read >= T and
 * our token > T. A node that restarts loses its counters, but a restarted
 * node does not vote until it is older than max_ttl_ms (§5.7), and the
 * wall-clock term keeps tokens increasing across total loss as long as
 * client clocks agree within that bound (an assumption stated in the
 * README). Counters are compared as decimal strings by length, then
 * lexically, because Lua numbers are doubles (exact only to 2^53). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fence.h"

char *fence_key(const char *key, size_t key_len)
{
    size_t plen = strlen(FENCE_KEY_PREFIX);
    char *k = malloc(plen + key_len + 1);

    if (k == NULL)
        return NULL;
    memcpy(k, FENCE_KEY_PREFIX, plen);
    memcpy(k + plen, key, key_len);
    k[plen + key_len] = '\0';
    return k;
}

uint64_t fence_candidate(uint64_t max_read, uint64_t wall_us)
{
    uint64_t next = max_read == UINT64_MAX ? UINT64_MAX : max_read + 1;

    return next > wall_us ? next : wall_us;
}

bool fence_parse(const struct node_reply *r, uint64_t *out)
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
