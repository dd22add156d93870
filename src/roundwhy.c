/* SPDX-License-Identifier: BSD-3-Clause */
/* roundwhy.c -- why a lock round failed, in words (roundwhy.h). */
#include <stdint.h>
#include <stdio.h>

#include "roundwhy.h"

/* Sort n values ascending (insertion sort: n <= RL_MAX_NODES). */
static void sort_ms(int64_t *v, size_t n)
{
    size_t i, j;
    int64_t x;

    for (i = 1; i < n; i++) {
        x = v[i];
        for (j = i; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

/* Why nodes do not vote, counted by reason into bars; the quarantined
 * ones' time left into left[0..*waiting). */
static void count_bars(const struct quorum_round *q, size_t *bars,
                       int64_t *left, size_t *waiting)
{
    size_t i;

    *waiting = 0;
    for (i = 0; i < q->n; i++) {
        enum node_bar b = node_vote_bar(q->nodes[i]);

        bars[b]++;
        if (b == NODE_BAR_QUARANTINE)
            left[(*waiting)++] = node_quarantine_left_ms(q->nodes[i]);
    }
}

/* "; 2 may evict keys (maxmemory-policy)" for every reason with nodes,
 * appended at buf + len (size in all); returns the new length. */
static int append_bars(char *buf, size_t size, int len, const size_t *bars)
{
    static const char *const why[] = {
        [NODE_BAR_TWIN] = "the same server as another node",
        [NODE_BAR_ROLE] = "not a master",
        [NODE_BAR_EVICTS] = "may evict keys or lost keys lately "
                            "(maxmemory, a resync)",
        [NODE_BAR_CLOCK] = "clock-suspect",
        [NODE_BAR_QUARANTINE] = "quarantined after a restart",
    };
    size_t i;

    for (i = NODE_BAR_TWIN; i <= NODE_BAR_QUARANTINE; i++) {
        if (bars[i] > 0 && len > 0 && (size_t)len < size)
            len += snprintf(buf + len, size - (size_t)len, "; %zu %s",
                            bars[i], why[i]);
    }
    return len;
}

void round_why_no_quorum(const struct quorum_round *q, const char *resource,
                         char *buf, size_t size)
{
    int64_t left[RL_MAX_NODES];
    size_t bars[NODE_BAR_QUARANTINE + 1] = {0};
    size_t waiting, need = quorum_size(q->n);
    int len;

    count_bars(q, bars, left, &waiting);
    len = snprintf(buf, size,
                   "'%s': %zu of %zu nodes failed (need %zu voting)",
                   resource, q->failed, q->n, need);
    len = append_bars(buf, size, len, bars);
    if (waiting > 0 && bars[NODE_BAR_NONE] < need &&
        bars[NODE_BAR_NONE] + waiting >= need && len > 0 &&
        (size_t)len < size) {
        sort_ms(left, waiting);
        len += snprintf(buf + len, size - len,
                        "; enough vote in %lld ms (nodes with appendonly "
                        "yes and appendfsync always vote at once; opt out "
                        "for all: restart_trust / --quarantine off)",
                        (long long)left[need - bars[NODE_BAR_NONE] - 1]);
    }
    if (q->detail[0] && len > 0 && (size_t)len < size)
        snprintf(buf + len, size - len, ": %s",
                 q->detail);
}

void round_why_refused(const struct quorum_round *q, const char *resource,
                       char *buf, size_t size)
{
    int64_t left[RL_MAX_NODES];
    size_t bars[NODE_BAR_QUARANTINE + 1] = {0};
    size_t waiting;
    int len;

    count_bars(q, bars, left, &waiting);
    len = snprintf(buf, size,
                   "'%s' is held by another client (%zu of %zu nodes "
                   "refused", resource, q->refused, q->n);
    len = append_bars(buf, size, len, bars);
    if (len > 0 && (size_t)len < size)
        snprintf(buf + len, size - len, "%s%s)",
                 q->detail[0] ? "; " : "", q->detail);
}
