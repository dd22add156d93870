/* SPDX-License-Identifier: BSD-3-Clause */
/* quorum.c -- parallel fan-out and the majority decision.
 *
 * A round sends one command to all N nodes at once and counts the replies
 * as they come. In ROUND_EARLY mode it decides the moment the outcome is
 * certain: success at the quorum-th voting YES, failure as soon as more
 * than N - quorum nodes can no longer say yes; stragglers are detached and
 * their late replies dropped by node.c. ROUND_REPLIES decides a failure
 * only once a quorum of nodes replied (or every node is done). Nodes that are known down answer
 * at once (node_send returns NULL) so they never make a round wait.
 * A YES from a node that is not voting (restart quarantine) counts
 * as a NO for the decision: its key still blocks others, but it cannot
 * make us the holder.
 * With the clock guard on a round's command takes a clock
 * sample along: node.c pipelines a TIME before it on each node that
 * needs one (same write). node.c takes the sample before
 * it hands over the reply, so a node whose clock just turned suspect
 * counts as not voting for the reply that showed it.
 * The round is embedded in its owner (an operation); the owner's done
 * callback may free it, so nothing touches the round after calling done. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quorum.h"

size_t quorum_size(size_t n)
{
    return n / 2 + 1;
}

enum verdict quorum_verdict(size_t n, size_t yes, size_t no)
{
    size_t q = quorum_size(n);

    if (n == 0 || yes > n || no > n || yes + no > n)
        return VERDICT_FAILURE;
    if (yes >= q)
        return VERDICT_SUCCESS;
    if (no > n - q)
        return VERDICT_FAILURE;
    return VERDICT_PENDING;
}

enum vote round_classify_one(void *owner, size_t slot,
                             const struct node_reply *r)
{
    RL_UNUSED(owner);
    RL_UNUSED(slot);
    if (r->kind != REPLY_INTEGER)
        return VOTE_ERROR;
    return r->integer == 1 ? VOTE_YES : VOTE_NO;
}

enum vote round_classify_landed(void *owner, size_t slot,
                                const struct node_reply *r)
{
    RL_UNUSED(owner);
    RL_UNUSED(slot);
    return r->kind == REPLY_INTEGER ? VOTE_YES : VOTE_ERROR;
}

rl_status round_init(struct quorum_round *q, struct node **nodes, size_t n)
{
    memset(q, 0, sizeof(*q));
    q->slots = calloc(n, sizeof(*q->slots));
    if (q->slots == NULL)
        return rl_fail(RL_ENOMEM, "out of memory for a quorum round");
    q->nodes = nodes;
    q->n = n;
    return RL_OK;
}

void *round_owner_new(size_t size, size_t round_offset, struct node **nodes,
                      size_t n, const char *what)
{
    char *owner = calloc(1, size);

    if (owner == NULL ||
        round_init((struct quorum_round *)(owner + round_offset), nodes, n) !=
            RL_OK) {
        free(owner);
        rl_fail(RL_ENOMEM, "out of memory for %s", what);
        return NULL;
    }
    return owner;
}

void round_cancel(struct quorum_round *q)
{
    size_t i;

    if (!q->active)
        return;
    q->active = false;
    for (i = 0; i < q->n; i++) {
        request_detach(q->slots[i].req);
        q->slots[i].req = NULL;
    }
}

void round_clear(struct quorum_round *q)
{
    round_cancel(q);
    free(q->slots);
    q->slots = NULL;
}

static void note_failure(struct quorum_round *q, size_t slot,
                         const struct node_reply *r)
{
    if (q->detail[0] != '\0')
        return;
    if (r->kind == REPLY_ERROR)
        snprintf(q->detail, sizeof(q->detail), "%s: %.*s",
                 node_name(q->nodes[slot]), (int)r->len, r->str);
    else
        snprintf(q->detail, sizeof(q->detail), "%.*s", (int)r->len, r->str);
}

static enum verdict round_verdict(const struct quorum_round *q)
{
    enum verdict v;

    if (q->mode == ROUND_ALL) {
        if (q->answered < q->n)
            return VERDICT_PENDING;
        return q->yes >= quorum_size(q->n) ? VERDICT_SUCCESS
                                           : VERDICT_FAILURE;
    }
    v = quorum_verdict(q->n, q->yes, q->no);
    /* A known-down node fails at once: with it, fewer refusals than a
     * quorum make the failure certain, and their replies alone would not
     * say what a quorum holds. */
    if (v == VERDICT_FAILURE && q->mode == ROUND_REPLIES &&
        q->answered - q->failed < quorum_size(q->n) && q->answered < q->n)
        return VERDICT_PENDING;
    return v;
}

/* Count one vote; returns the verdict after it. */
static enum verdict count_vote(struct quorum_round *q, size_t slot,
                               enum vote v)
{
    q->slots[slot].vote = v;
    q->answered++;
    if (v == VOTE_YES && node_voting(q->nodes[slot])) {
        q->yes++;
        node_count_vote(q->nodes[slot], true);
    } else {
        q->no++;
        node_count_vote(q->nodes[slot], false);
    }
    if (v == VOTE_NO)
        q->refused++;
    else if (v == VOTE_ERROR)
        q->failed++;
    return round_verdict(q);
}

static void on_node_reply(void *owner, size_t slot,
                          const struct node_reply *r)
{
    struct quorum_round *q = owner;
    enum verdict v;
    enum vote vote;

    q->slots[slot].req = NULL;
    if (!q->active)
        return;
    vote = q->classify(q->owner, slot, r);
    if (vote == VOTE_ERROR)
        note_failure(q, slot, r);
    v = count_vote(q, slot, vote);
    if (q->abort)
        v = VERDICT_FAILURE; /* the owner saw enough */
    if (v == VERDICT_PENDING)
        return;
    round_cancel(q);
    q->done(q->owner, v); /* may free q */
}

enum verdict round_start(struct quorum_round *q, enum round_mode mode,
                         const struct round_cmd *cmd,
                         round_classify_fn *classify, round_done_fn *done,
                         void *owner)
{
    enum verdict v;
    struct node_reply down = {0};
    struct wire *w;
    const char *why;
    size_t i;

    q->mode = mode;
    q->classify = classify;
    q->done = done;
    q->owner = owner;
    q->yes = q->no = q->refused = q->failed = q->answered = 0;
    q->abort = false;
    q->detail[0] = '\0';
    for (i = 0; i < q->n; i++) {
        q->slots[i].req = NULL;
        q->slots[i].vote = VOTE_NONE;
    }
    q->active = true;
    w = wire_new(cmd->script, cmd->nkeys, cmd->argc, cmd->argv, cmd->lens);
    if (w != NULL)
        wire_sample_time(w); /* each node decides (clock guard on?) */
    q->t0 = mono_now_us();
    for (i = 0; i < q->n; i++) {
        why = w == NULL ? "out of memory" : NULL;
        if (w != NULL)
            q->slots[i].req =
                node_send_wire(q->nodes[i], w, on_node_reply, q, i, &why);
        if (q->slots[i].req != NULL)
            continue;
        /* Known down: a failed vote now, no waiting for a timeout. */
        down.kind = REPLY_DOWN;
        down.str = why != NULL ? why : "node is down";
        down.len = strlen(down.str);
        classify(owner, i, &down);
        note_failure(q, i, &down);
        count_vote(q, i, VOTE_ERROR);
    }
    wire_unref(w);
    /* Decided only after every node got the command, even when the verdict
     * became certain part-way: the caller may need to roll back on all. */
    v = q->abort ? VERDICT_FAILURE : round_verdict(q);
    if (v != VERDICT_PENDING)
        round_cancel(q);
    return v;
}

void round_broadcast(struct node **nodes, size_t n,
                     const struct round_cmd *cmd)
{
    struct wire *w =
        wire_new(cmd->script, cmd->nkeys, cmd->argc, cmd->argv, cmd->lens);
    size_t i;

    if (w == NULL)
        return; /* out of memory: the keys expire by themselves */
    for (i = 0; i < n; i++)
        node_send_wire_or_defer(nodes[i], w);
    wire_unref(w);
}

uint64_t quorum_voting_yes(const struct quorum_round *q)
{
    uint64_t set = 0;
    size_t i;

    for (i = 0; i < q->n; i++)
        if (q->slots[i].vote == VOTE_YES && node_voting(q->nodes[i]))
            set |= UINT64_C(1) << i;
    return set;
}

bool quorum_nodes_from_major(const struct quorum_round *q, long major)
{
    size_t i;

    for (i = 0; i < q->n; i++) {
        const char *v = node_version(q->nodes[i]);

        if (v[0] != '\0' && strtol(v, NULL, 10) < major)
            return false;
    }
    return true;
}
