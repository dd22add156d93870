/* SPDX-License-Identifier: BSD-3-Clause */
/* metrics.c -- rl_stats as Prometheus text exposition format, version
 * 0.0.4.
 *
 * A pure function of an rl_stats snapshot: no client, no lock, no
 * allocation. Each metric family is written once, HELP then TYPE then its
 * samples (one per node for the node families), as the format requires.
 * Output goes through struct text, which writes while there is room and
 * keeps counting after, so one pass both fills the buffer and measures
 * the size a larger one needs. Label values are escaped (\\, \", \n);
 * the caller's extra labels are checked (name syntax, names we use
 * ourselves, UTF-8 values) before anything is written. Latencies are
 * printed as exact decimal seconds from integer microseconds. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "abi.h"

struct text {
    char *buf;
    size_t cap;
    size_t len;                 /* bytes the whole text needs so far */
};

static void put(struct text *t, const char *fmt, ...) RL_PRINTF(2, 3);

static void put(struct text *t, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    if (t->len < t->cap)
        n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    else
        n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->len += (size_t)n;
}

/* s up to its NUL or max bytes (node names: their array). */
static void put_escaped(struct text *t, const char *s, size_t max)
{
    const char *end = s + strnlen(s, max);

    for (; s < end; s++) {
        if (*s == '\\')
            put(t, "\\\\");
        else if (*s == '"')
            put(t, "\\\"");
        else if (*s == '\n')
            put(t, "\\n");
        else
            put(t, "%c", *s);
    }
}

/* The start of one sample line: the family name, then the caller's
 * labels and, for node families, node="..." (node NULL: none), then extra
 * (e.g. quantile="0.5"; NULL: none), in braces when there is any label
 * at all. The value follows. */
static void put_series(struct text *t, const char *name,
                       const char *const *labels, size_t count,
                       const char *node, const char *extra)
{
    const char *sep = "";
    size_t i;

    put(t, "%s", name);
    if (count == 0 && node == NULL && extra == NULL)
        return;
    put(t, "{");
    for (i = 0; i < count; i++) {
        put(t, "%s%s=\"", sep, labels[2 * i]);
        put_escaped(t, labels[2 * i + 1], SIZE_MAX);
        put(t, "\"");
        sep = ",";
    }
    if (node != NULL) {
        put(t, "%snode=\"", sep);
        put_escaped(t, node, RL_NAME_LEN);
        put(t, "\"");
        sep = ",";
    }
    if (extra != NULL)
        put(t, "%s%s", sep, extra);
    put(t, "}");
}

static void put_family(struct text *t, const char *name, const char *type,
                       const char *help)
{
    put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A client-wide family's HELP and TYPE and the start of its one sample. */
static void put_client(struct text *t, const char *name, const char *type,
                       const char *help, const char *const *labels,
                       size_t count)
{
    put_family(t, name, type, help);
    put_series(t, name, labels, count, NULL, NULL);
}

static void put_seconds(struct text *t, uint32_t us)
{
    put(t, " %u.%06u\n", us / 1000000u, us % 1000000u);
}

/* ---- Label checks ------------------------------------------------------- */

static bool label_name_ok(const char *s)
{
    static const char *const ours[] = {"node", "vote", "quantile"};
    size_t i;

    if (s == NULL || s[0] == '\0' || (s[0] >= '0' && s[0] <= '9') ||
        strncmp(s, "__", 2) == 0)
        return false;
    for (i = 0; s[i] != '\0'; i++) {
        char ch = s[i];

        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
              (ch >= '0' && ch <= '9') || ch == '_'))
            return false;
    }
    for (i = 0; i < ARRAY_SIZE(ours); i++) {
        if (strcmp(s, ours[i]) == 0)
            return false;
    }
    return true;
}

/* Well-formed UTF-8: no stray continuation bytes, no overlong forms, no
 * surrogates, nothing above U+10FFFF. */
static bool utf8_ok(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;

    while (*s != '\0') {
        unsigned c = *s;
        size_t n, i;
        uint32_t cp;

        if (c < 0x80) {
            s++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) {
            n = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        for (i = 1; i <= n; i++) {
            if ((s[i] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i] & 0x3f);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
            cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        s += n + 1;
    }
    return true;
}

static rl_status check_labels(const char *const *labels, size_t count)
{
    size_t i, j;

    if (count > 0 && labels == NULL)
        return rl_fail(RL_EINVAL, "labels is NULL with label_count %zu",
                       count);
    for (i = 0; i < count; i++) {
        const char *name = labels[2 * i];
        const char *value = labels[2 * i + 1];

        if (!label_name_ok(name))
            return rl_fail(RL_EINVAL,
                           "label %zu: name '%s' is not [a-zA-Z_][a-zA-Z0-9_]*"
                           ", starts with __ or is one of node, vote, "
                           "quantile", i, name != NULL ? name : "(null)");
        if (value == NULL)
            return rl_fail(RL_EINVAL, "label '%s': value is NULL", name);
        if (!utf8_ok(value))
            return rl_fail(RL_EINVAL, "label '%s': value is not UTF-8",
                           name);
        for (j = 0; j < i; j++) {
            if (strcmp(labels[2 * j], name) == 0)
                return rl_fail(RL_EINVAL, "label '%s' is given twice", name);
        }
    }
    return RL_OK;
}

/* ---- Families ----------------------------------------------------------- */

struct client_family {
    const char *name;
    const char *type;           /* "counter" or "gauge" */
    const char *help;
    size_t offset;              /* of the uint64_t in rl_stats */
};

static const struct client_family client_families[] = {
    {"redlock_acquired_total", "counter", "Locks acquired.",
     offsetof(rl_stats, acquired)},
    {"redlock_contended_total", "counter",
     "Acquire attempts refused: the resource was held by another client.",
     offsetof(rl_stats, contended)},
    {"redlock_lost_total", "counter",
     "Locks reported lost (renewal refused or validity ran out).",
     offsetof(rl_stats, lost)},
    {"redlock_renewals_total", "counter",
     "Successful lock extensions, watchdog renewals included.",
     offsetof(rl_stats, renewals)},
    {"redlock_fences_total", "counter", "Fencing tokens issued.",
     offsetof(rl_stats, fences)},
    {"redlock_overload_refused_total", "counter",
     "Watched acquires refused because the watchdog was behind "
     "(RL_EOVERLOAD).", offsetof(rl_stats, overload_refused)},
    {"redlock_renewals_waiting", "gauge",
     "Watched locks due for renewal that wait for the nodes (the "
     "watchdog's backlog; above 0 only under load).",
     offsetof(rl_stats, renewals_waiting)},
    {"redlock_renewals_early_total", "counter",
     "Watchdog renewals sent before they were due, with others due within "
     "renew_window_pct.", offsetof(rl_stats, renewals_early)},
    {"redlock_queue_waiters", "gauge",
     "Fair acquires registered in a queue now, not yet granted or given "
     "up.", offsetof(rl_stats, queue_waiters)},
    {"redlock_queue_waits_total", "counter",
     "Fair acquires granted after registering in a queue.",
     offsetof(rl_stats, queue_wait_count)},
    {"redlock_queue_leaves_total", "counter",
     "Fair acquires that registered and gave up (timed out, cancelled, "
     "client freed).", offsetof(rl_stats, queue_leaves)},
};

struct node_family {
    const char *name;
    const char *help;
    size_t offset;              /* of the uint64_t in rl_node_stats */
};

static const struct node_family node_counters[] = {
    {"redlock_node_requests_total", "Commands sent to the node.",
     offsetof(rl_node_stats, requests)},
    {"redlock_node_errors_total",
     "Error replies from the node (WRONGTYPE, OOM, ...).",
     offsetof(rl_node_stats, errors)},
    {"redlock_node_timeouts_total", "Requests the node did not answer in "
     "time.", offsetof(rl_node_stats, timeouts)},
    {"redlock_node_down_total", "Requests failed because the node was "
     "down.", offsetof(rl_node_stats, down)},
    {"redlock_node_handshakes_total", "Connections to the node that "
     "completed the handshake (the first and every reconnect).",
     offsetof(rl_node_stats, handshakes)},
    {"redlock_node_tls_resumed_total", "Handshakes over TLS that resumed "
     "a session.", offsetof(rl_node_stats, tls_resumed)},
    {"redlock_node_checks_own_total", "Node checks this client sent.",
     offsetof(rl_node_stats, checks_own)},
    {"redlock_node_checks_heard_total", "Node checks of other clients "
     "taken instead of one of ours (the node's shared check).",
     offsetof(rl_node_stats, checks_heard)},
    {"redlock_node_checks_shared_total", "Node checks of ours published "
     "for the node's other clients.",
     offsetof(rl_node_stats, checks_shared)},
    {"redlock_node_clock_incidents_total", "Times the node became "
     "clock-suspect (its clock ran fast or slow or stepped).",
     offsetof(rl_node_stats, clock_incidents)},
};

static uint64_t field_u64(const void *base, size_t offset)
{
    uint64_t v;

    memcpy(&v, (const char *)base + offset, sizeof(v));
    return v;
}

/* One value per node, each its own gauge family (%.12g prints flags as
 * 0 or 1 and a rate with its digits). */
struct node_gauge {
    const char *name;
    const char *help;
    double (*value)(const rl_node_stats *n);
};

/* A gauge that is a field of rl_node_stats as it is. */
#define FIELD_GAUGE(field)                                                  \
    static double field(const rl_node_stats *n)                             \
    {                                                                       \
        return n->field;                                                    \
    }

FIELD_GAUGE(connected)
FIELD_GAUGE(voting)
FIELD_GAUGE(clock_rate)
FIELD_GAUGE(may_evict)
FIELD_GAUGE(fsync_always)
FIELD_GAUGE(vote_bar)

static double clock_suspect(const rl_node_stats *n)
{
    return n->clock_state == RL_CLOCK_SUSPECT;
}

static double independent(const rl_node_stats *n)
{
    return n->twin_of < 0;
}

_Static_assert(RL_VOTES == 0 && RL_BAR_QUARANTINE == 6,
               "redlock_node_vote_bar's help lists rl_vote_bar's values");

static const struct node_gauge node_gauges[] = {
    {"redlock_node_connected", "1 when the connection to the node is up.",
     connected},
    {"redlock_node_voting", "1 when the node's vote counts (connected, not "
     "in restart quarantine, not clock-suspect).", voting},
    {"redlock_node_clock_rate", "The node's clock rate measured against "
     "ours (1 = the same; 0 while unknown or the clock guard is off).",
     clock_rate},
    {"redlock_node_clock_suspect", "1 while the node is clock-suspect: it "
     "does not vote until its clock has behaved for max_ttl.",
     clock_suspect},
    {"redlock_node_may_evict", "1 when the node may evict keys before "
     "their TTL (maxmemory with a policy other than noeviction), 0 when "
     "not, -1 when it does not say.", may_evict},
    {"redlock_node_fsync_always", "1 when the node runs appendonly yes "
     "with appendfsync always (a restart loses nothing), 0 when not, -1 "
     "when it does not say.", fsync_always},
    {"redlock_node_independent", "0 when the node is the same server (or "
     "replication stream) as a node listed before it, else 1.",
     independent},
    {"redlock_node_vote_bar", "Why the node's vote does not count: 0 it "
     "votes, 1 down, 2 duplicate, 3 not a master, 4 may evict, 5 "
     "clock-suspect, 6 restart quarantine.", vote_bar},
};

static void put_node_gauges(struct text *t, const rl_stats *s,
                            const char *const *labels, size_t count)
{
    static const char *const q[] = {"quantile=\"0.5\"", "quantile=\"0.9\"",
                                    "quantile=\"0.99\""};
    size_t i, k;

    put_family(t, "redlock_node_latency_seconds", "gauge",
               "Reply latency percentiles since the client started "
               "(about +-10%).");
    for (i = 0; i < s->node_count; i++) {
        const rl_node_stats *n = &s->nodes[i];
        const uint32_t us[] = {n->latency_p50_us, n->latency_p90_us,
                               n->latency_p99_us};

        for (k = 0; k < ARRAY_SIZE(q); k++) {
            put_series(t, "redlock_node_latency_seconds", labels, count,
                       n->name, q[k]);
            put_seconds(t, us[k]);
        }
    }
    put_family(t, "redlock_node_latency_max_seconds", "gauge",
               "Largest reply latency since the client started.");
    for (i = 0; i < s->node_count; i++) {
        put_series(t, "redlock_node_latency_max_seconds", labels, count,
                   s->nodes[i].name, NULL);
        put_seconds(t, s->nodes[i].latency_max_us);
    }
    for (k = 0; k < ARRAY_SIZE(node_gauges); k++) {
        const struct node_gauge *g = &node_gauges[k];

        put_family(t, g->name, "gauge", g->help);
        for (i = 0; i < s->node_count; i++) {
            put_series(t, g->name, labels, count, s->nodes[i].name, NULL);
            put(t, " %.12g\n", g->value(&s->nodes[i]));
        }
    }
}

static void render(struct text *t, const rl_stats *s,
                   const char *const *labels, size_t count)
{
    size_t f, i;

    for (f = 0; f < ARRAY_SIZE(client_families); f++) {
        const struct client_family *cf = &client_families[f];

        put_client(t, cf->name, cf->type, cf->help, labels, count);
        put(t, " %llu\n", (unsigned long long)field_u64(s, cf->offset));
    }
    put_client(t, "redlock_queue_wait_seconds_total", "counter",
               "Time from registration to grant of the fair acquires "
               "granted after registering (whole ms, summed).",
               labels, count);
    put(t, " %llu.%03u\n",
        (unsigned long long)(s->queue_wait_ms_total / 1000u),
        (unsigned)(s->queue_wait_ms_total % 1000u));
    /* rl_stats has no room for the registrations (its reserved tail keeps
     * one word); each one is a waiter until it ends, granted or left. */
    put_client(t, "redlock_queue_registrations_total", "counter",
               "Fair acquires that registered in a queue (refused at their "
               "first attempt).", labels, count);
    put(t, " %llu\n", (unsigned long long)(s->queue_waiters +
                                           s->queue_wait_count +
                                           s->queue_leaves));
    for (f = 0; f < ARRAY_SIZE(node_counters); f++) {
        const struct node_family *nf = &node_counters[f];

        put_family(t, nf->name, "counter", nf->help);
        for (i = 0; i < s->node_count; i++) {
            put_series(t, nf->name, labels, count, s->nodes[i].name, NULL);
            put(t, " %llu\n",
                (unsigned long long)field_u64(&s->nodes[i], nf->offset));
        }
    }
    put_family(t, "redlock_node_votes_total", "counter",
               "Quorum rounds the node granted (for) or refused, failed or "
               "could not vote in (against).");
    for (i = 0; i < s->node_count; i++) {
        put_series(t, "redlock_node_votes_total", labels, count,
                   s->nodes[i].name, "vote=\"for\"");
        put(t, " %llu\n", (unsigned long long)s->nodes[i].votes_for);
        put_series(t, "redlock_node_votes_total", labels, count,
                   s->nodes[i].name, "vote=\"against\"");
        put(t, " %llu\n", (unsigned long long)s->nodes[i].votes_against);
    }
    put_node_gauges(t, s, labels, count);
}

/* The reserved bytes of s and of every node it lists are zero. */
static rl_status check_reserved(const rl_stats *s)
{
    rl_status st = abi_check(ABI_STATS, s);
    size_t i;

    for (i = 0; st == RL_OK && i < s->node_count; i++)
        st = abi_check(ABI_NODE_STATS, &s->nodes[i]);
    return st;
}

rl_status rl_stats_format_prometheus(const rl_stats *s,
                                     const char *const *labels,
                                     size_t label_count, char *buf,
                                     size_t cap, size_t *needed)
{
    struct text t = {buf, cap, 0};
    rl_status st;

    if (s == NULL || needed == NULL)
        return rl_fail(RL_EINVAL, "rl_stats_format_prometheus: s and needed "
                                  "must not be NULL");
    *needed = 0;
    if (buf == NULL && cap > 0)
        return rl_fail(RL_EINVAL, "rl_stats_format_prometheus: buf is NULL "
                                  "with cap %zu", cap);
    if (s->node_count > RL_STATS_MAX_NODES)
        return rl_fail(RL_EINVAL, "rl_stats_format_prometheus: node_count "
                                  "%zu is above %d", s->node_count,
                       RL_STATS_MAX_NODES);
    st = check_reserved(s);
    if (st == RL_OK)
        st = check_labels(labels, label_count);
    if (st != RL_OK)
        return st;
    render(&t, s, labels, label_count);
    *needed = t.len + 1;
    if (buf == NULL)
        return RL_OK;
    if (t.len >= cap) {
        buf[0] = '\0';
        return rl_fail(RL_EINVAL, "rl_stats_format_prometheus: buffer too "
                                  "small: %zu bytes, need %zu", cap,
                       *needed);
    }
    rl_error_clear();
    return RL_OK;
}
