/* SPDX-License-Identifier: BSD-3-Clause */
/* queueview.c -- rl_resource_queue: the fair queue a quorum agrees on
 * (docs/fair-queue.md 2.9), for `redlock-cli status`.
 *
 * One ROUND_ALL round of queue-inspect (read only: it neither purges nor
 * refreshes) reads up to RL_QUEUE_READ_MAX live entries per node, each
 * with its score and its expiry by that node's clock. An entry is shown
 * when a quorum of the nodes holds it with the same score: that is the
 * place the head rule sees on a majority; with it its kind and how long
 * it has waited (redlock:qm:K: the registration time by that node's
 * clock, set once; the median over those nodes of their now minus it).
 * Entries are in score order,
 * then token order (a sorted set's order, so every node's). The others
 * are counted apart. Loop thread from start to finish; the caller sleeps
 * on a waiter. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "lockrec.h"

/* The score's layout (src/queue.c): (RL_MAX_PRIORITY - priority) << 44
 * + ticket. */
#define TICKET_BITS 44

struct seen {
    char token[132];
    uint64_t score;
    int64_t left_ms;            /* this node: until it lapses */
    int64_t waited_ms;          /* this node: since it registered, -1
                                   unknown (no redlock:qm:K field) */
    bool shared;                /* a reader, by this node's record */
};

struct view_op {
    struct op base;
    rl_client *client;
    struct waiter *waiter;
    char *key;
    struct seen *seen;          /* RL_QUEUE_READ_MAX per node */
    size_t *nseen;              /* per node */
    struct quorum_round round;
};

static void view_free(struct view_op *op)
{
    round_clear(&op->round);
    free(op->seen);
    free(op->nseen);
    free(op->key);
    free(op);
}

static void finish(struct view_op *op, rl_status st)
{
    loop_op_finished(&op->base);
    round_cancel(&op->round);
    waiter_done(op->waiter, st);
}

static void cancel(struct op *base)
{
    rl_fail(RL_ECANCELED, "the client is being freed");
    finish((struct view_op *)base, RL_ECANCELED);
}

static enum vote classify(void *owner, size_t slot,
                          const struct node_reply *r)
{
    struct view_op *op = owner;
    struct seen *s = op->seen + slot * RL_QUEUE_READ_MAX;
    const struct node_reply *e = r->element;
    long long now;
    size_t i;

    if (r->kind != REPLY_ARRAY || r->elements % 4 != 1 ||
        e[0].kind != REPLY_STRING)
        return VOTE_ERROR;
    now = atoll(e[0].str);
    for (i = 1; i + 3 < r->elements && op->nseen[slot] < RL_QUEUE_READ_MAX;
         i += 4) {
        struct seen *n = &s[op->nseen[slot]];
        const char *m = e[i + 3].str; /* "<kind> <registered ms>" or '' */

        if (e[i].kind != REPLY_STRING || e[i + 1].kind != REPLY_STRING ||
            e[i + 2].kind != REPLY_STRING || e[i + 3].kind != REPLY_STRING ||
            e[i].len >= sizeof(s->token))
            continue;
        memcpy(n->token, e[i].str, e[i].len);
        n->token[e[i].len] = '\0';
        n->score = strtoull(e[i + 1].str, NULL, 10);
        n->left_ms = atoll(e[i + 2].str) - now;
        n->shared = e[i + 3].len > 2 && m[0] == 's';
        n->waited_ms = e[i + 3].len > 2 && m[1] == ' '
                           ? now - atoll(m + 2)
                           : -1;
        op->nseen[slot]++;
    }
    return VOTE_YES;
}

static void decided(void *owner, enum verdict v)
{
    struct view_op *op = owner;
    struct quorum_round *q = &op->round;

    if (q->answered - q->failed < quorum_size(q->n)) {
        rl_fail(RL_ENOQUORUM, "%zu of %zu nodes answered (need %zu)%s%s",
                q->answered - q->failed, q->n, quorum_size(q->n),
                q->detail[0] ? ": " : "", q->detail);
        finish(op, RL_ENOQUORUM);
        return;
    }
    RL_UNUSED(v); /* answers count here, not votes */
    rl_error_clear();
    finish(op, RL_OK);
}

static void start(struct op *base)
{
    struct view_op *op = (struct view_op *)base;
    char max[16];
    const char *argv[2] = {op->key, max};
    size_t lens[2];
    struct round_cmd cmd = {script_get(SCRIPT_QUEUE_INSPECT), 1, 2, argv,
                            lens};
    enum verdict v;

    snprintf(max, sizeof(max), "%d", RL_QUEUE_READ_MAX);
    lens[0] = strlen(op->key);
    lens[1] = strlen(max);
    v = round_start(&op->round, ROUND_ALL, &cmd, classify, decided, op);
    if (v != VERDICT_PENDING)
        decided(op, v);
}

static int by_place(const void *a, const void *b)
{
    const rl_queue_entry *x = a, *y = b;
    uint64_t sx = ((uint64_t)(RL_MAX_PRIORITY - x->priority)
                   << TICKET_BITS) + x->ticket;
    uint64_t sy = ((uint64_t)(RL_MAX_PRIORITY - y->priority)
                   << TICKET_BITS) + y->ticket;

    if (sx != sy)
        return sx < sy ? -1 : 1;
    return strcmp(x->token, y->token);
}

static int desc_ms(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? 1 : x > y ? -1 : 0;
}

/* Every distinct (token, score) once, with the nodes that hold it; those
 * a quorum holds go to out, in queue order. */
static void agree(const struct view_op *op, size_t n, rl_queue_entry *out,
                  size_t cap, size_t *count, size_t *minority)
{
    size_t quorum = quorum_size(n), total = n * RL_QUEUE_READ_MAX;
    rl_queue_entry *all = calloc(total, sizeof(*all));
    int64_t left[RL_MAX_NODES], waited[RL_MAX_NODES];
    size_t i, j, k, m, found = 0;
    bool shared;

    *count = 0;
    if (all == NULL)
        return;
    for (i = 0; i < n; i++) {
        for (j = 0; j < op->nseen[i]; j++) {
            const struct seen *s = &op->seen[i * RL_QUEUE_READ_MAX + j];
            bool dup = false;

            /* Already counted from an earlier node? */
            for (k = 0; k < i && !dup; k++) {
                for (m = 0; m < op->nseen[k] && !dup; m++) {
                    const struct seen *o =
                        &op->seen[k * RL_QUEUE_READ_MAX + m];

                    dup = o->score == s->score &&
                          strcmp(o->token, s->token) == 0;
                }
            }
            if (dup)
                continue;
            m = 0;
            shared = false;
            for (k = i; k < n; k++) {
                size_t p;

                for (p = 0; p < op->nseen[k]; p++) {
                    const struct seen *o =
                        &op->seen[k * RL_QUEUE_READ_MAX + p];

                    if (o->score == s->score &&
                        strcmp(o->token, s->token) == 0) {
                        shared = shared || o->shared;
                        waited[m] = o->waited_ms;
                        left[m++] = o->left_ms;
                    }
                }
            }
            if (m < quorum) {
                if (minority != NULL)
                    (*minority)++;
                continue;
            }
            qsort(left, m, sizeof(left[0]), desc_ms);
            qsort(waited, m, sizeof(waited[0]), desc_ms);
            snprintf(all[found].token, sizeof(all[found].token), "%s",
                     s->token);
            lockrec_owner_of(s->token, all[found].owner,
                             sizeof(all[found].owner));
            all[found].priority =
                RL_MAX_PRIORITY - (uint32_t)(s->score >> TICKET_BITS);
            all[found].ticket =
                s->score & ((UINT64_C(1) << TICKET_BITS) - 1);
            all[found].nodes = (uint32_t)m;
            all[found].expires_in_ms = left[quorum - 1];
            all[found].mode = shared ? RL_MODE_SHARED : RL_MODE_EXCLUSIVE;
            /* The median; a node without the record (-1) sorts last. */
            all[found].waited_ms = waited[m / 2];
            found++;
        }
    }
    qsort(all, found, sizeof(*all), by_place);
    *count = found < cap ? found : cap;
    if (*count > 0)
        memcpy(out, all, *count * sizeof(*out));
    free(all);
}

rl_status rl_resource_queue(rl_client *c, const char *resource,
                            rl_queue_entry *out, size_t cap, size_t *count,
                            size_t *minority)
{
    struct view_op *op;
    struct waiter w;
    rl_status st;

    if (c == NULL || count == NULL || (out == NULL && cap > 0))
        return rl_fail(RL_EINVAL, "rl_resource_queue: %s",
                       c == NULL       ? "client is NULL"
                       : count == NULL ? "count is NULL"
                                       : "out is NULL but cap is not 0");
    *count = 0;
    if (minority != NULL)
        *minority = 0;
    st = config_check_resource(&c->cfg, resource, "resource");
    if (st == RL_OK)
        st = waiter_check(c->loop, "rl_resource_queue");
    if (st != RL_OK)
        return st;
    op = calloc(1, sizeof(*op));
    if (op == NULL)
        return rl_fail(RL_ENOMEM, "out of memory");
    op->key = malloc(c->cfg.prefix_len + strlen(resource) + 1);
    op->seen = calloc(c->node_count * RL_QUEUE_READ_MAX, sizeof(*op->seen));
    op->nseen = calloc(c->node_count, sizeof(*op->nseen));
    if (op->key == NULL || op->seen == NULL || op->nseen == NULL ||
        round_init(&op->round, c->nodes, c->node_count) != RL_OK) {
        view_free(op);
        return rl_fail(RL_ENOMEM, "out of memory");
    }
    sprintf(op->key, "%s%s", c->cfg.prefix, resource);
    op->client = c;
    op->base.start = start;
    op->base.cancel = cancel;
    waiter_init(&w);
    op->waiter = &w;
    st = loop_submit(c->loop, &op->base);
    if (st != RL_OK) {
        waiter_discard(&w);
        view_free(op);
        return st;
    }
    st = waiter_wait(&w);
    if (st == RL_OK)
        agree(op, c->node_count, out, cap, count, minority);
    view_free(op);
    return st;
}
