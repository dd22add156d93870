/* SPDX-License-Identifier: BSD-3-Clause */
/* quorum.h -- fan one command out to every node and decide by majority.
 * The decision rule is a pure function (quorum_verdict) so it can be tested
 * exhaustively without Redis. */
#ifndef REDLOCK_QUORUM_H
#define REDLOCK_QUORUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "node.h"

enum verdict {
    VERDICT_PENDING,
    VERDICT_SUCCESS,
    VERDICT_FAILURE,
};

/* Votes needed among n nodes: n/2 + 1. */
size_t quorum_size(size_t n);

/* yes: voting nodes that granted; no: nodes that cannot grant any more
 * (refused, failed, timed out, down, or not voting). SUCCESS once yes
 * reaches the quorum, FAILURE once no exceeds n - quorum, else PENDING.
 * Counts beyond n are treated as a FAILURE (caller bug, never a success). */
enum verdict quorum_verdict(size_t n, size_t yes, size_t no);

/* How one node's reply counts. */
enum vote {
    VOTE_NONE,  /* not answered yet */
    VOTE_YES,   /* granted */
    VOTE_NO,    /* answered, refused (held by someone else, not ours) */
    VOTE_ERROR, /* error reply, timeout, down */
};

enum round_mode {
    ROUND_EARLY,   /* decide as soon as the verdict is certain */
    ROUND_ALL,     /* wait for every node (or its timeout) */
    ROUND_REPLIES, /* a success as ROUND_EARLY; a failure once a quorum of
                      nodes replied (or every node is done): the fair
                      queue reads its ticket from a quorum of replies */
};

/* One command, the same for every node. script NULL: plain argv. */
struct round_cmd {
    const struct script *script;
    int nkeys;
    int argc;
    const char **argv;
    const size_t *lens;
};

/* Classify a reply; may record details in the owner. Errors, timeouts and
 * down nodes arrive here too (kind REPLY_ERROR or REPLY_DOWN). */
typedef enum vote round_classify_fn(void *owner, size_t slot,
                                    const struct node_reply *r);
/* The round is decided; called at most once, never from round_start. The
 * owner may free the round (and itself) inside. */
typedef void round_done_fn(void *owner, enum verdict v);

/* Classifier for scripts that answer 1 (granted) or another integer
 * (refused); anything else is an error. */
enum vote round_classify_one(void *owner, size_t slot,
                             const struct node_reply *r);
/* Classifier for calls whose any integer answer means "it landed" (a
 * leave or an intent clear: either answer leaves nothing of ours). */
enum vote round_classify_landed(void *owner, size_t slot,
                                const struct node_reply *r);

struct round_slot {
    struct request *req; /* in flight, or NULL */
    enum vote vote;
};

struct quorum_round {
    struct node **nodes;
    size_t n;
    enum round_mode mode;
    round_classify_fn *classify;
    round_done_fn *done;
    void *owner;
    struct round_slot *slots;  /* n of them */
    size_t yes;                /* voting YES */
    size_t no;                 /* NO, ERROR, or YES from a non-voting node */
    size_t refused;            /* VOTE_NO */
    size_t failed;             /* VOTE_ERROR */
    size_t answered;
    bool active;
    bool abort;                /* set by classify: decide FAILURE now */
    rl_mono_us t0;             /* just before the first send, boottime µs */
    char detail[RL_ERRLEN];    /* first failure seen: node + reason */
};

/* Allocate slots for n nodes. RL_ENOMEM. */
rl_status round_init(struct quorum_round *q, struct node **nodes, size_t n);
/* A zeroed object of size bytes whose round at round_offset is
 * initialised for n nodes (one allocation to free with round_clear and
 * free); NULL with RL_ENOMEM set, naming what, when memory runs out. */
void *round_owner_new(size_t size, size_t round_offset, struct node **nodes,
                      size_t n, const char *what);
/* round_owner_new for a struct type whose round is named round, over a
 * client's nodes. */
#define ROUND_OWNER_NEW(type, client, what)                                   \
    round_owner_new(sizeof(type), offsetof(type, round), (client)->nodes,     \
                    (client)->node_count, what)
/* Send cmd to all nodes; returns the verdict if it is already certain (then
 * done is not called), else VERDICT_PENDING and done will be called. */
enum verdict round_start(struct quorum_round *q, enum round_mode mode,
                         const struct round_cmd *cmd,
                         round_classify_fn *classify, round_done_fn *done,
                         void *owner);
/* Stop listening: replies still in flight are dropped. Idempotent. */
void round_cancel(struct quorum_round *q);
/* Cancel and free the slots. */
void round_clear(struct quorum_round *q);
/* The nodes whose YES counts (voting: not quarantined, not clock-suspect
 * after the sample that came with the reply), one bit per slot. */
uint64_t quorum_voting_yes(const struct quorum_round *q);
/* Does every node of q that told us its version run Redis major or
 * later? One that did not is down now: its vote fails anyway. */
bool quorum_nodes_from_major(const struct quorum_round *q, long major);

/* Send the script call cmd to every node and forget it (rollback
 * releases); nodes that are down get it after their next handshake. */
void round_broadcast(struct node **nodes, size_t n,
                     const struct round_cmd *cmd);

#endif
