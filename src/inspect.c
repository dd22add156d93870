/* SPDX-License-Identifier: BSD-3-Clause */
/* inspect.c -- rl_client_ping, rl_resource_status and
 * rl_resource_force_unlock (the CLI's ping, status and release --force),
 * and the statistics calls.
 *
 * Force unlock runs the force-release script (the key's value and PTTL
 * before a delete, and a release notification so waiters wake) where
 * status runs the read-only inspect; both answer {value or false, pttl,
 * ...}. It
 * goes to every node, voting or quarantined alike (a key on a quarantined
 * node blocks others as much as any), and its outcome counts answers, not
 * votes: a quorum of answers means no holder keeps a majority. The holder
 * finds out at its next renewal (an absent key is never recreated).
 *
 * Both are one ROUND_ALL round (every node answers or times out) whose
 * per-node results are copied into the caller's array on the loop thread,
 * then handed back through a waiter. The caller's array is only written
 * while the caller is blocked waiting for it. Ping also reads each node's
 * handshake facts (version, uptime, voting) at the moment it answers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fence.h"
#include "inspect.h"
#include "lockrec.h"

/* What a statistics call reads on the loop thread: all, one node, or
 * nothing (both NULL). */
struct stats_req {
    rl_stats *all;
    rl_node_stats *node;
    size_t index;               /* of node */
};

struct inspect_op {
    struct op base;
    rl_client *client;
    struct waiter *waiter;
    rl_node_info *nodes;        /* ping: one per node, or NULL */
    rl_holder_info *holders;    /* status: one per node, or NULL */
    struct stats_req stats;     /* a statistics snapshot, or none */
    char *key;                  /* status: prefix + resource */
    char *fence_for;            /* rl_resource_inspect: its fence record
                                   (whom for; the node's counter too) */
    char *intent_key;           /* status: its writer intent */
    enum script_id script;      /* status: inspect or force-release */
    uint32_t limit;             /* inspect-slots: slots 0..limit-1, their
                                   holders[slot * nodes + node] */
    char limit_text[12];
    size_t answered;            /* status: nodes that ran the script */
    struct quorum_round round;
};

static void finish(struct inspect_op *op, rl_status st)
{
    struct waiter *w = op->waiter;

    round_clear(&op->round);
    loop_op_finished(&op->base);
    free(op->intent_key);
    free(op->fence_for);
    free(op->key);
    free(op);
    waiter_done(w, st);
}

static void cancel(struct op *base)
{
    rl_fail(RL_ECANCELED, "the client is being freed");
    finish((struct inspect_op *)base, RL_ECANCELED);
}

static void copy_text(char *dst, size_t len, const struct node_reply *r)
{
    snprintf(dst, len, "%.*s", (int)r->len, r->str != NULL ? r->str : "");
}

static int32_t clock_state(const struct node *n)
{
    switch (node_clock_state(n)) {
    case NODE_CLOCK_UNKNOWN:
        return RL_CLOCK_UNKNOWN;
    case NODE_CLOCK_OK:
        return RL_CLOCK_OK;
    case NODE_CLOCK_SUSPECT:
        return RL_CLOCK_SUSPECT;
    case NODE_CLOCK_OFF:
        break;
    }
    return RL_CLOCK_OFF;
}

static enum vote classify_ping(struct inspect_op *op, size_t slot,
                               const struct node_reply *r)
{
    rl_node_info *info = &op->nodes[slot];
    struct node *n = op->round.nodes[slot];
    const char *tls;

    if (r->kind != REPLY_STATUS && r->kind != REPLY_STRING) {
        if (r->kind == REPLY_ERROR)
            snprintf(info->error, sizeof(info->error), "%s: %.*s",
                     node_name(n), (int)r->len, r->str);
        else
            copy_text(info->error, sizeof(info->error), r);
        return VOTE_ERROR;
    }
    info->reachable = true;
    info->latency_us = (int64_t)(mono_now_us() - op->round.t0);
    info->uptime_ms = node_uptime_ms(n);
    info->clock_rate = node_clock_rate(n);
    info->clock_state = clock_state(n);
    snprintf(info->version, sizeof(info->version), "%s", node_version(n));
    tls = node_tls_version(n);
    snprintf(info->tls, sizeof(info->tls), "%s", tls != NULL ? tls : "");
    return VOTE_YES;
}

enum vote inspect_read_holder(struct node *n, rl_holder_info *h,
                              const struct node_reply *r)
{
    if (r->kind != REPLY_ARRAY || r->elements < 2 || r->elements > 8 ||
        r->element[1].kind != REPLY_INTEGER) {
        if (r->kind == REPLY_ERROR)
            snprintf(h->error, sizeof(h->error), "%s: %.*s",
                     node_name(n), (int)r->len, r->str);
        else if (r->kind == REPLY_ARRAY)
            snprintf(h->error, sizeof(h->error), "unexpected reply");
        else
            copy_text(h->error, sizeof(h->error), r);
        return VOTE_ERROR;
    }
    h->reachable = true;
    h->voting = node_voting(n);
    if (r->element[0].kind == REPLY_STRING) {
        copy_text(h->token, sizeof(h->token), &r->element[0]);
        h->lock_delay_ms = lockrec_delay_of(h->token);
    }
    h->pttl_ms = r->element[1].integer;
    if (r->elements >= 3 && r->element[2].kind == REPLY_INTEGER)
        h->readers = (uint32_t)r->element[2].integer; /* live readers */
    if (r->elements >= 4 && r->element[3].kind == REPLY_STRING &&
        r->element[3].len < 24) {
        char num[24];

        copy_text(num, sizeof(num), &r->element[3]);
        h->fence = strtoull(num, NULL, 10);
    }
    if (r->elements >= 5 && r->element[4].kind == REPLY_STRING)
        h->term_state = fence_record_parse(r->element[4].str,
                                           r->element[4].len, h->token,
                                           &h->term);
    if (r->elements >= 6)
        h->writer_waiting = r->element[5].kind == REPLY_STRING;
    if (r->elements >= 7 && r->element[6].kind == REPLY_INTEGER)
        h->readers_in_delay = (uint32_t)r->element[6].integer;
    /* The period marker counts for this value only (a later holder's
     * key may sit beside an earlier period's marker). */
    if (r->elements == 8 && r->element[7].kind == REPLY_STRING &&
        r->element[7].len == strlen(h->token) &&
        memcmp(r->element[7].str, h->token, r->element[7].len) == 0)
        h->period = 1;
    return VOTE_YES;
}

/* One "<len>:<bytes>" field of an inspect-slots answer at *p (before
 * end) into out (a string, or nil for -1); false when malformed. */
static bool slot_field(const char **p, const char *end,
                       struct node_reply *out)
{
    char *colon;
    long len = strtol(*p, &colon, 10);

    if (colon == *p || colon >= end || *colon != ':' || len < -1 ||
        len > end - colon - 1)
        return false;
    memset(out, 0, sizeof(*out));
    out->kind = len < 0 ? REPLY_NIL : REPLY_STRING;
    out->str = colon + 1;
    out->len = len < 0 ? 0 : (size_t)len;
    *p = colon + 1 + out->len;
    return true;
}

/* Node node's inspect-slots answer (r a string) into op->holders, each
 * slot as the inspect script would answer for it (a free one too: the
 * node's counter serves every slot); false when malformed. */
static bool read_slots(struct inspect_op *op, size_t node,
                       const struct node_reply *r)
{
    const char *p = r->str, *end = r->str + r->len;
    struct node_reply e[5];
    struct node_reply one = {REPLY_ARRAY, 0, NULL, 0, 5, e};
    char *next;
    long long slot;
    size_t i;

    memset(e, 0, sizeof(e));
    e[0].kind = REPLY_NIL;
    e[1] = (struct node_reply){REPLY_INTEGER, -2, NULL, 0, 0, NULL};
    e[2] = (struct node_reply){REPLY_INTEGER, 0, NULL, 0, 0, NULL};
    e[4].kind = REPLY_NIL;
    if (!slot_field(&p, end, &e[3]))
        return false;
    for (i = 0; i < op->limit; i++)
        inspect_read_holder(op->round.nodes[node],
                            &op->holders[i * op->round.n + node], &one);
    while (p < end) {
        slot = strtoll(p, &next, 10);
        if (next == p || next >= end || *next != ' ' || slot < 0 ||
            (uint64_t)slot >= op->limit)
            return false;
        memset(&e[1], 0, sizeof(e[1]));
        e[1].kind = REPLY_INTEGER;
        e[1].integer = strtoll(next + 1, &next, 10);
        if (next >= end || *next != ' ')
            return false;
        p = next + 1;
        e[2] = (struct node_reply){REPLY_INTEGER, 0, NULL, 0, 0, NULL};
        if (!slot_field(&p, end, &e[0]) || !slot_field(&p, end, &e[4]))
            return false;
        inspect_read_holder(op->round.nodes[node],
                            &op->holders[(size_t)slot * op->round.n + node],
                            &one);
    }
    return true;
}

/* A node's answer to inspect-slots: every slot it does not name is free
 * there; an error is every slot's. */
static enum vote classify_slots(struct inspect_op *op, size_t node,
                                const struct node_reply *r)
{
    struct node *n = op->round.nodes[node];
    size_t count = op->round.n, i;
    rl_holder_info *h = op->holders;
    bool ok = r->kind == REPLY_STRING;

    for (i = 0; ok && i < op->limit; i++) {
        h[i * count + node].reachable = true;
        h[i * count + node].voting = node_voting(n);
    }
    if (ok && !read_slots(op, node, r)) {
        ok = false;
        for (i = 0; i < op->limit; i++)
            h[i * count + node].reachable = false;
    }
    if (!ok) {
        if (r->kind == REPLY_STRING)
            snprintf(h[node].error, sizeof(h[node].error),
                     "unexpected reply");
        else
            inspect_read_holder(n, &h[node], r); /* the error's text */
        for (i = 1; i < op->limit; i++)
            memcpy(h[i * count + node].error, h[node].error,
                   sizeof(h[node].error));
        return VOTE_ERROR;
    }
    op->answered++;
    return VOTE_YES;
}

static enum vote classify_status(struct inspect_op *op, size_t slot,
                                 const struct node_reply *r)
{
    enum vote v = inspect_read_holder(op->round.nodes[slot],
                                      &op->holders[slot], r);

    op->answered += v == VOTE_YES;
    return v;
}

static enum vote classify(void *owner, size_t slot,
                          const struct node_reply *r)
{
    struct inspect_op *op = owner;

    if (op->nodes != NULL)
        return classify_ping(op, slot, r);
    if (op->limit > 0)
        return classify_slots(op, slot, r);
    return classify_status(op, slot, r);
}

_Static_assert((int)RL_TERM_NONE == (int)FENCE_RECORD_NONE &&
                   (int)RL_TERM_PENDING == (int)FENCE_RECORD_PENDING &&
                   (int)RL_TERM_SET == (int)FENCE_RECORD_TERM,
               "rl_term_state mirrors fence.h");

_Static_assert((int)RL_BAR_QUARANTINE == (int)NODE_BAR_QUARANTINE &&
                   (int)RL_BAR_TWIN == (int)NODE_BAR_TWIN &&
                   (int)RL_FACT_UNKNOWN == (int)FACT_UNKNOWN,
               "rl_vote_bar and rl_fact mirror node.h and facts.h");

/* What the node says of itself; after the round, so that every node's
 * handshake (which precedes its PING) has been compared with the others. */
static void describe_facts(rl_node_info *info, const struct node *n)
{
    const struct node_facts *f = node_get_facts(n);

    info->vote_bar = (uint8_t)node_vote_bar(n);
    info->voting = info->vote_bar == RL_VOTES;
    info->twin_of = (int16_t)node_twin_of(n);
    info->may_evict = (int8_t)facts_may_evict(f);
    info->fsync_always = (int8_t)facts_fsyncs_every_write(f);
    info->aof_enabled = (int8_t)f->aof_enabled;
    info->cluster_enabled = (int8_t)f->cluster_enabled;
    info->maxmemory = f->maxmemory;
    snprintf(info->role, sizeof(info->role), "%s", f->role);
    snprintf(info->maxmemory_policy, sizeof(info->maxmemory_policy), "%s",
             f->policy);
    snprintf(info->appendfsync, sizeof(info->appendfsync), "%s",
             f->appendfsync);
}

static void decided(void *owner, enum verdict v)
{
    struct inspect_op *op = owner;
    struct quorum_round *q = &op->round;
    size_t i;

    for (i = 0; op->nodes != NULL && i < q->n; i++)
        describe_facts(&op->nodes[i], q->nodes[i]);

    if (op->script == SCRIPT_FORCE_RELEASE) /* answers, not votes */
        v = op->answered >= quorum_size(q->n) ? VERDICT_SUCCESS
                                              : VERDICT_FAILURE;
    if (v == VERDICT_SUCCESS) {
        rl_error_clear();
        finish(op, RL_OK);
        return;
    }
    if (op->script == SCRIPT_FORCE_RELEASE)
        rl_fail(RL_ENOQUORUM,
                "force unlock of '%s': only %zu of %zu nodes answered "
                "(need %zu)%s%s",
                op->key, op->answered, q->n, quorum_size(q->n),
                q->detail[0] ? ": " : "", q->detail);
    else
        rl_fail(RL_ENOQUORUM,
                "%zu of %zu nodes answered and vote (need %zu)%s%s", q->yes,
                q->n, quorum_size(q->n), q->detail[0] ? ": " : "",
                q->detail);
    finish(op, RL_ENOQUORUM);
}

/* The client-wide counters of both rl_totals and rl_stats: each stat
 * and the field of that name that holds it. */
#define CLIENT_TOTALS(X)                                                    \
    X(STAT_ACQUIRED, acquired)                                              \
    X(STAT_CONTENDED, contended)                                            \
    X(STAT_LOST, lost)                                                      \
    X(STAT_RENEWALS, renewals)                                              \
    X(STAT_FENCES, fences)                                                  \
    X(STAT_OVERLOAD_REFUSED, overload_refused)                              \
    X(STAT_RENEWALS_WAITING, renewals_waiting)                              \
    X(STAT_RENEWALS_EARLY, renewals_early)                                  \
    X(STAT_QUEUE_WAITERS, queue_waiters)                                    \
    X(STAT_QUEUE_WAIT_MS, queue_wait_ms_total)                              \
    X(STAT_QUEUE_WAIT_COUNT, queue_wait_count)                              \
    X(STAT_QUEUE_LEAVES, queue_leaves)

/* Atomic, readable from any thread. */
static void snapshot_totals(const rl_client *c, rl_totals *out)
{
    memset(out, 0, sizeof(*out));
#define READ_TOTAL(stat, field) out->field = atomic_load(&c->stats[stat]);
    CLIENT_TOTALS(READ_TOTAL)
#undef READ_TOTAL
    out->queue_registrations =
        atomic_load(&c->stats[STAT_QUEUE_REGISTRATIONS]);
    out->node_count = c->node_count;
}

/* Node n's counters; node state is only read on the loop thread. */
static void snapshot_node(const struct node *n, rl_node_stats *o)
{
    const struct node_stats *ns = node_get_stats(n);
    const struct node_facts *f = node_get_facts(n);

    memset(o, 0, sizeof(*o));
    snprintf(o->name, sizeof(o->name), "%s", node_name(n));
    o->connected = node_get_state(n) == NODE_READY;
    o->voting = node_voting(n);
    o->requests = ns->requests;
    o->errors = ns->errors;
    o->timeouts = ns->timeouts;
    o->down = ns->down;
    o->votes_for = ns->votes_for;
    o->votes_against = ns->votes_against;
    o->latency_p50_us = node_latency_percentile(n, 50);
    o->latency_p90_us = node_latency_percentile(n, 90);
    o->latency_p99_us = node_latency_percentile(n, 99);
    o->latency_max_us = ns->latency_max_us;
    o->handshakes = ns->handshakes;
    o->tls_resumed = ns->tls_resumed;
    o->checks_own = ns->checks_own;
    o->checks_heard = ns->checks_heard;
    o->checks_shared = ns->checks_shared;
    o->clock_rate = node_clock_rate(n);
    o->clock_incidents = node_clock_incidents(n);
    o->clock_state = clock_state(n);
    o->twin_of = (int16_t)node_twin_of(n);
    o->may_evict = (int8_t)facts_may_evict(f);
    o->fsync_always = (int8_t)facts_fsyncs_every_write(f);
    o->vote_bar = (uint8_t)node_vote_bar(n);
}

static void snapshot_stats(const rl_client *c, rl_stats *out)
{
    rl_totals t;
    size_t i;

    snapshot_totals(c, &t);
#define COPY_TOTAL(stat, field) out->field = t.field;
    CLIENT_TOTALS(COPY_TOTAL)
#undef COPY_TOTAL
    out->node_count = c->node_count;
    for (i = 0; i < c->node_count && i < RL_STATS_MAX_NODES; i++)
        snapshot_node(c->nodes[i], &out->nodes[i]);
}

void inspect_keys(const char *key, const char *intent_key,
                  const char *fence_for, const struct script *s,
                  const char **argv, size_t *lens, struct round_cmd *cmd)
{
    int nkeys = fence_for != NULL ? 4 : intent_key != NULL ? 2 : 1;

    argv[0] = key;
    argv[1] = intent_key;
    argv[2] = FENCE_COUNTER_KEY;
    argv[3] = fence_for;
    for (int i = 0; i < nkeys; i++)
        lens[i] = strlen(argv[i]);
    *cmd = (struct round_cmd){s, nkeys, nkeys, argv, lens};
}

static void start(struct op *base)
{
    struct inspect_op *op = (struct inspect_op *)base;
    const struct script *s = script_get(op->script);
    const char *argv[4];
    size_t lens[4];
    struct round_cmd cmd;
    enum verdict v;

    if (op->stats.all != NULL || op->stats.node != NULL) {
        if (op->stats.all != NULL)
            snapshot_stats(op->client, op->stats.all);
        else
            snapshot_node(op->client->nodes[op->stats.index],
                          op->stats.node);
        rl_error_clear();
        finish(op, RL_OK);
        return;
    }
    if (op->nodes != NULL) {
        argv[0] = "PING";
        lens[0] = 4;
        cmd = (struct round_cmd){NULL, 0, 1, argv, lens};
    } else if (op->limit > 0) {
        argv[0] = op->key;
        lens[0] = strlen(op->key);
        argv[1] = FENCE_COUNTER_KEY;
        lens[1] = strlen(FENCE_COUNTER_KEY);
        argv[2] = op->limit_text;
        lens[2] = strlen(op->limit_text);
        cmd = (struct round_cmd){s, 2, 3, argv, lens};
    } else {
        inspect_keys(op->key, op->intent_key, op->fence_for, s, argv, lens,
                     &cmd);
    }
    v = round_start(&op->round, ROUND_ALL, &cmd, classify, decided, op);
    if (v != VERDICT_PENDING)
        decided(op, v);
}

/* Run one inspection round and wait for it (script: for holders; limit:
 * inspect-slots' slots, holders one per slot and node). */
static rl_status inspect_run(rl_client *c, rl_node_info *nodes,
                             rl_holder_info *holders, const char *resource,
                             const struct stats_req *stats,
                             enum script_id script, bool fence,
                             uint32_t limit)
{
    struct inspect_op *op = calloc(1, sizeof(*op));
    struct waiter w;
    rl_status st;

    if (op == NULL)
        return rl_fail(RL_ENOMEM, "out of memory");
    if (resource != NULL) {
        op->key = malloc(c->cfg.prefix_len + strlen(resource) + 1);
        if (op->key == NULL) {
            free(op);
            return rl_fail(RL_ENOMEM, "out of memory");
        }
        sprintf(op->key, "%s%s", c->cfg.prefix, resource);
        if (script == SCRIPT_INSPECT)
            op->intent_key = lockrec_intent_key(op->key, strlen(op->key));
        if (fence)
            op->fence_for = fence_key(FENCE_FOR_PREFIX, op->key,
                                      strlen(op->key));
    }
    st = round_init(&op->round, c->nodes, c->node_count);
    if (st == RL_OK && resource != NULL && script == SCRIPT_INSPECT &&
        (op->intent_key == NULL ||
         (fence && op->fence_for == NULL)))
        st = rl_fail(RL_ENOMEM, "out of memory");
    if (st != RL_OK) {
        round_clear(&op->round);
        free(op->fence_for);
        free(op->key);
        free(op);
        return st;
    }
    op->client = c;
    op->base.start = start;
    op->base.cancel = cancel;
    op->nodes = nodes;
    op->holders = holders;
    if (stats != NULL)
        op->stats = *stats;
    op->script = script;
    op->limit = limit;
    snprintf(op->limit_text, sizeof(op->limit_text), "%u", limit);
    waiter_init(&w);
    op->waiter = &w;
    st = loop_submit(c->loop, &op->base);
    if (st != RL_OK) {
        waiter_discard(&w);
        round_clear(&op->round);
        free(op->fence_for);
        free(op->key);
        free(op);
        return st;
    }
    return waiter_wait(&w);
}

/* The first node that duplicates an earlier one, as RL_EINVAL. */
static rl_status refuse_twins(const rl_client *c, const rl_node_info *info)
{
    size_t i;

    for (i = 0; i < c->node_count; i++) {
        size_t j = (size_t)info[i].twin_of;

        if (info[i].twin_of < 0 || j >= c->node_count)
            continue;
        return rl_fail(RL_EINVAL,
                       "nodes[%zu] '%s' and nodes[%zu] '%s' are %s: a "
                       "majority needs independent servers, so list each "
                       "master once and no replicas",
                       j, c->cfg.addrs[j].display, i,
                       c->cfg.addrs[i].display,
                       strcmp(info[i].role, info[j].role) != 0
                           ? "a master and its replica (one replication "
                             "stream)"
                           : "one server (the same run_id) or replicas "
                             "of one master");
    }
    return RL_OK;
}

rl_status inspect_wait_connected(rl_client *c)
{
    rl_node_info *scratch = calloc(c->node_count, sizeof(*scratch));
    rl_status st;

    if (scratch == NULL)
        return rl_fail(RL_ENOMEM, "out of memory");
    inspect_run(c, scratch, NULL, NULL, NULL, SCRIPT_INSPECT, false, 0);
    /* Clock guard: the first round rode the handshake, so its
     * clock samples are bracketed from the connect on. A second round
     * over the warm connections takes one bracketed by a round trip, at
     * least a round trip before the caller's first request: a clock far
     * off (x5) shows at that request's sample. */
    if (c->cfg.clock_guard)
        inspect_run(c, scratch, NULL, NULL, NULL, SCRIPT_INSPECT, false, 0);
    st = refuse_twins(c, scratch);
    free(scratch);
    return st;
}

/* Check the common arguments and prepare a zeroed array of node_count. */
static rl_status inspect_args(rl_client *c, const void *out, size_t cap,
                              size_t *count, const char *name)
{
    if (c == NULL)
        return rl_fail(RL_EINVAL, "%s: client is NULL", name);
    if (out == NULL || count == NULL)
        return rl_fail(RL_EINVAL, "%s: out and count must not be NULL",
                       name);
    if (cap == 0)
        return rl_fail(RL_EINVAL, "%s: cap must be at least 1", name);
    return waiter_check(c->loop, name);
}

/* Hand the per-node results (one elem_size item per node) to the caller's
 * array of cap items, and free them. */
static void copy_out(rl_client *c, void *out, size_t cap, size_t *count,
                     void *all, size_t elem_size)
{
    *count = c->node_count;
    memcpy(out, all, (cap < c->node_count ? cap : c->node_count) * elem_size);
    free(all);
}

rl_status rl_client_ping(rl_client *c, rl_node_info *out, size_t cap,
                         size_t *count)
{
    rl_node_info *all;
    rl_status st;
    size_t i;

    st = inspect_args(c, out, cap, count, "rl_client_ping");
    if (st != RL_OK)
        return st;
    all = calloc(c->node_count, sizeof(*all));
    if (all == NULL)
        return rl_fail(RL_ENOMEM, "out of memory");
    for (i = 0; i < c->node_count; i++) {
        snprintf(all[i].name, sizeof(all[i].name), "%s",
                 c->cfg.addrs[i].display);
        all[i].latency_us = -1;
        all[i].uptime_ms = -1;
    }
    st = inspect_run(c, all, NULL, NULL, NULL, SCRIPT_INSPECT, false, 0);
    copy_out(c, out, cap, count, all, sizeof(*all));
    return st;
}

/* The per-node array of one {value, pttl} round over resource's key,
 * with its fence counter when info is not NULL (then summarized there):
 * *all is the caller's to free (NULL when the name is invalid or on out
 * of memory). */
static rl_status resource_read(rl_client *c, const char *resource,
                               enum script_id script, rl_resource_info *info,
                               rl_holder_info **all)
{
    rl_status st = config_check_resource(&c->cfg, resource, "resource");
    size_t i;

    *all = NULL;
    if (st != RL_OK)
        return st;
    *all = calloc(c->node_count, sizeof(**all));
    if (*all == NULL)
        return rl_fail(RL_ENOMEM, "out of memory");
    for (i = 0; i < c->node_count; i++) {
        snprintf((*all)[i].name, sizeof((*all)[i].name), "%s",
                 c->cfg.addrs[i].display);
        (*all)[i].pttl_ms = -2;
    }
    st = inspect_run(c, NULL, *all, resource, NULL, script, info != NULL,
                     0);
    if (info != NULL && st != RL_ENOMEM)
        inspect_summarize(*all, c->node_count, info);
    return st;
}

/* One {value, pttl} round over resource's key (status or force unlock);
 * *removed (may be NULL): nodes that answered with a key. */
static rl_status resource_round(rl_client *c, const char *resource,
                                rl_holder_info *out, size_t cap,
                                size_t *count, enum script_id script,
                                const char *name, size_t *removed)
{
    rl_holder_info *all;
    rl_status st;
    size_t i;

    if (removed != NULL)
        *removed = 0;
    st = inspect_args(c, out, cap, count, name);
    if (st != RL_OK)
        return st;
    st = resource_read(c, resource, script, NULL, &all);
    if (all == NULL)
        return st;
    for (i = 0; removed != NULL && i < c->node_count; i++) {
        if (all[i].reachable && all[i].pttl_ms != -2)
            (*removed)++;
    }
    copy_out(c, out, cap, count, all, sizeof(*all));
    return st;
}

/* Sort n values descending (insertion sort: n <= RL_MAX_NODES). */
static void sort_desc(int64_t *v, size_t n)
{
    size_t i, j;
    int64_t x;

    for (i = 1; i < n; i++) {
        x = v[i];
        for (j = i; j > 0 && v[j - 1] < x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

/* Is node j's value hj->token the lock of value v (any owner)? */
static bool holds_lock(const rl_holder_info *hj, const char *v)
{
    return hj->reachable && hj->token[0] != '\0' &&
           lockrec_same_lock(v, hj->token);
}

/* Nodes whose value is the lock of h[i] (any owner: lockrec_same_lock)
 * or, exact, whose value is h[i]'s. */
static size_t count_holding(const rl_holder_info *h, size_t n, size_t i,
                            bool exact)
{
    size_t j, m = 0;

    for (j = 0; j < n; j++)
        m += exact ? h[j].reachable && strcmp(h[i].token, h[j].token) == 0
                   : holds_lock(&h[j], h[i].token);
    return m;
}

/* The holder's term from the voting nodes holding it: set when a quorum
 * of them recorded the same term for it, pending while any of them
 * names it as fenced without that. */
static void summarize_term(const rl_holder_info *h, size_t n,
                           const char *value, size_t quorum,
                           rl_resource_info *out)
{
    uint64_t term = 0;
    size_t i, fenced = 0, agree = 0;

    for (i = 0; i < n; i++) {
        if (!h[i].voting || !holds_lock(&h[i], value) ||
            h[i].term_state == RL_TERM_NONE)
            continue;
        fenced++;
        if (h[i].term_state == RL_TERM_SET && h[i].term > term)
            term = h[i].term;
    }
    for (i = 0; i < n; i++)
        agree += h[i].voting && holds_lock(&h[i], value) &&
                 h[i].term_state == RL_TERM_SET && h[i].term == term;
    if (term != 0 && agree >= quorum) {
        out->term = term;
        out->term_state = RL_TERM_SET;
    } else if (fenced > 0) {
        out->term_state = RL_TERM_PENDING;
    }
}

void inspect_summarize(const rl_holder_info *h, size_t n,
                       rl_resource_info *out)
{
    int64_t pttl[RL_MAX_NODES];
    size_t i, best = 0, most = 0, m, quorum = n / 2 + 1;
    const char *value = NULL;

    memset(out, 0, sizeof(*out));
    out->node_count = (uint32_t)n;
    for (i = 0; i < n; i++) {
        if (h[i].reachable && h[i].fence > out->fence)
            out->fence = h[i].fence;
        out->writers_waiting += h[i].reachable && h[i].writer_waiting;
    }
    /* The lock the most nodes hold; then, of its values (a leader's
     * proclaim may have reached only some nodes), the one most hold.
     * Ties go to the bytewise smallest value, never to the node that
     * comes first: which nodes answer changes from read to read, and an
     * observer must not report an owner flipping back and forth. */
    for (i = 0; i < n; i++) {
        if (!h[i].reachable || h[i].token[0] == '\0')
            continue;
        m = count_holding(h, n, i, false);
        if (value == NULL || m > best ||
            (m == best && strcmp(h[i].token, value) < 0)) {
            best = m;
            value = h[i].token;
        }
    }
    for (i = 0; value != NULL && i < n; i++) {
        if (!holds_lock(&h[i], value))
            continue;
        m = count_holding(h, n, i, true);
        if (m > most || (m == most && strcmp(h[i].token, value) < 0)) {
            most = m;
            value = h[i].token;
        }
    }
    if (value == NULL)
        return;
    snprintf(out->token, sizeof(out->token), "%s", value);
    lockrec_owner_of(value, out->owner, sizeof(out->owner));
    out->nodes_holding = (uint32_t)best;
    /* Only votes count: a quarantined or clock-suspect node's key is no
     * more a grant to a reader than it was to the acquire. */
    for (i = 0, m = 0; i < n && m < RL_MAX_NODES; i++) {
        if (h[i].voting && holds_lock(&h[i], value))
            pttl[m++] = h[i].pttl_ms < 0 ? INT64_MAX : h[i].pttl_ms;
    }
    out->held = m >= quorum;
    if (!out->held)
        return;
    for (i = 0, m = 0; i < n; i++)
        m += h[i].voting && holds_lock(&h[i], value) && h[i].period;
    out->for_period = m >= quorum;
    /* The quorum of nodes that hold it longest: until the shortest of
     * those expires, a quorum refuses others. The holder's own validity
     * ended the lock-delay before (its value carries the delay; every
     * node's value of one lock carries the same). */
    sort_desc(pttl, m);
    out->lock_delay_ms = lockrec_delay_of(value);
    out->blocked_ms = pttl[quorum - 1] == INT64_MAX ? -1 : pttl[quorum - 1];
    out->validity_ms = out->blocked_ms;
    if (out->blocked_ms >= 0)
        out->validity_ms = out->blocked_ms > out->lock_delay_ms
                               ? out->blocked_ms - out->lock_delay_ms
                               : 0;
    summarize_term(h, n, value, quorum, out);
}

rl_status rl_resource_inspect(rl_client *c, const char *resource,
                              rl_resource_info *info, rl_holder_info *nodes,
                              size_t cap, size_t *count)
{
    rl_holder_info *all;
    rl_status st;

    if (c == NULL)
        return rl_fail(RL_EINVAL, "rl_resource_inspect: client is NULL");
    if (info == NULL)
        return rl_fail(RL_EINVAL, "rl_resource_inspect: info is NULL");
    if (nodes == NULL && cap > 0)
        return rl_fail(RL_EINVAL, "rl_resource_inspect: nodes is NULL but "
                       "cap is %zu", cap);
    if (nodes != NULL && count == NULL)
        return rl_fail(RL_EINVAL, "rl_resource_inspect: count is NULL");
    memset(info, 0, sizeof(*info));
    st = waiter_check(c->loop, "rl_resource_inspect");
    if (st != RL_OK)
        return st;
    st = resource_read(c, resource, SCRIPT_INSPECT, info, &all);
    if (all == NULL)
        return st;
    if (nodes != NULL) {
        copy_out(c, nodes, cap, count, all, sizeof(*all));
        return st;
    }
    if (count != NULL)
        *count = c->node_count;
    free(all);
    return st;
}

rl_status rl_semaphore_inspect(rl_client *c, const char *resource,
                               uint32_t limit, rl_resource_info *slots,
                               rl_holder_info *nodes, size_t cap,
                               size_t *count)
{
    rl_holder_info *all;
    rl_status st;
    size_t i, n;

    if (c == NULL || slots == NULL)
        return rl_fail(RL_EINVAL, "rl_semaphore_inspect: client and slots "
                                  "must not be NULL");
    if (limit == 0 || limit > RL_MAX_LIMIT)
        return rl_fail(RL_EINVAL, "rl_semaphore_inspect: limit %u is not "
                       "in 1..%u", limit, RL_MAX_LIMIT);
    if ((nodes == NULL && cap > 0) || (nodes != NULL && count == NULL))
        return rl_fail(RL_EINVAL, "rl_semaphore_inspect: nodes without cap "
                                  "or count");
    memset(slots, 0, limit * sizeof(*slots));
    st = waiter_check(c->loop, "rl_semaphore_inspect");
    if (st == RL_OK)
        st = config_check_resource(&c->cfg, resource, "resource");
    if (st != RL_OK)
        return st;
    n = c->node_count;
    all = calloc((size_t)limit * n, sizeof(*all));
    if (all == NULL)
        return rl_fail(RL_ENOMEM, "out of memory");
    for (i = 0; i < (size_t)limit * n; i++) {
        snprintf(all[i].name, sizeof(all[i].name), "%s",
                 c->cfg.addrs[i % n].display);
        all[i].pttl_ms = -2;
    }
    st = inspect_run(c, NULL, all, resource, NULL, SCRIPT_INSPECT_SLOTS,
                     false, limit);
    for (i = 0; st != RL_ENOMEM && i < limit; i++) {
        inspect_summarize(&all[i * n], n, &slots[i]);
        if (nodes != NULL)
            memcpy(&nodes[i * cap], &all[i * n],
                   (cap < n ? cap : n) * sizeof(*all));
    }
    if (count != NULL)
        *count = n;
    free(all);
    return st;
}

rl_status rl_resource_status(rl_client *c, const char *resource,
                             rl_holder_info *out, size_t cap, size_t *count)
{
    return resource_round(c, resource, out, cap, count, SCRIPT_INSPECT,
                          "rl_resource_status", NULL);
}

rl_status rl_resource_force_unlock(rl_client *c, const char *resource,
                                   rl_holder_info *out, size_t cap,
                                   size_t *count, size_t *removed)
{
    return resource_round(c, resource, out, cap, count,
                          SCRIPT_FORCE_RELEASE, "rl_resource_force_unlock",
                          removed);
}

rl_status rl_client_stats(rl_client *c, rl_stats *out)
{
    struct stats_req req = {out, NULL, 0};
    rl_status st;

    if (c == NULL)
        return rl_fail(RL_EINVAL, "rl_client_stats: client is NULL");
    if (out == NULL)
        return rl_fail(RL_EINVAL, "rl_client_stats: out is NULL");
    memset(out, 0, sizeof(*out));
    st = waiter_check(c->loop, "rl_client_stats");
    if (st != RL_OK)
        return st;
    return inspect_run(c, NULL, NULL, NULL, &req, SCRIPT_INSPECT, false, 0);
}

rl_status rl_client_totals(rl_client *c, rl_totals *out)
{
    if (c == NULL || out == NULL)
        return rl_fail(RL_EINVAL, "rl_client_totals: client and out must "
                                  "not be NULL");
    snapshot_totals(c, out);
    rl_error_clear();
    return RL_OK;
}

rl_status rl_client_node_stats(rl_client *c, size_t i, rl_node_stats *out)
{
    struct stats_req req = {NULL, out, i};
    rl_status st;

    if (c == NULL || out == NULL)
        return rl_fail(RL_EINVAL, "rl_client_node_stats: client and out "
                                  "must not be NULL");
    if (i >= c->node_count)
        return rl_fail(RL_EINVAL, "rl_client_node_stats: node %zu, the "
                                  "client has %zu", i, c->node_count);
    st = waiter_check(c->loop, "rl_client_node_stats");
    if (st != RL_OK)
        return st;
    return inspect_run(c, NULL, NULL, NULL, &req, SCRIPT_INSPECT, false, 0);
}
