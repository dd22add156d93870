/* SPDX-License-Identifier: BSD-3-Clause */
/* wire.h -- what goes on a node's connection and what comes back: a
 * command formatted once (RESP) and shared, refcounted, by every node it
 * is sent to; a script call's EVALSHA and its EVAL form; when a NOSCRIPT
 * is answered by resending; replies as the engine sees them. No I/O. */
#ifndef REDLOCK_WIRE_H
#define REDLOCK_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scripts.h"

struct redisReply;
struct wire;

enum reply_kind {
    REPLY_STATUS,  /* +OK etc.: str */
    REPLY_INTEGER, /* integer */
    REPLY_STRING,  /* bulk string: str, len */
    REPLY_NIL,
    REPLY_ARRAY,   /* elements, element[] */
    REPLY_ERROR,   /* the node answered an error: str */
    REPLY_DOWN,    /* not connected, the connection died, or no answer
                      within op_timeout_ms: str says which */
};

/* A reply, borrowed for the duration of the reply callback only. */
struct node_reply {
    enum reply_kind kind;
    long long integer;
    const char *str;
    size_t len;
    size_t elements;
    const struct node_reply *element;
};

/* Is r the status reply word (TYPE's "string", SET's "OK")? */
bool node_reply_status_is(const struct node_reply *r, const char *word);

/* A command formatted once and shared by every node it is sent to
 * (refcounted, loop thread). s NULL: argv is the whole command; else an
 * EVALSHA of s over nkeys keys followed by the arguments, which the node
 * resends as EVAL on NOSCRIPT (wire_resend_as_eval). NULL on OOM. The
 * caller owns one reference. */
struct wire *wire_new(const struct script *s, int nkeys, int argc,
                      const char **argv, const size_t *lens);
/* Take one more reference; returns w. */
struct wire *wire_ref(struct wire *w);
/* Drop one reference (NULL is a no-op). */
void wire_unref(struct wire *w);
/* The RESP bytes (*len of them). */
const char *wire_bytes(const struct wire *w, size_t *len);

/* Clock guard. A command w marked here gets a TIME sent right before it
 * (same write) on each node that needs a clock sample, when the guard is
 * on. */
void wire_sample_time(struct wire *w);
bool wire_wants_sample(const struct wire *w);

/* Batching (request.c): the release of a plain single-key lock (the
 * release script over one key) may leave with others to the same node
 * as one release-batch call. */
bool wire_batchable(const struct wire *w);
/* The one key that w's command touches, for a release of one key and a
 * single-key acquire (SET key token NX PX px); false for any other
 * command, which may touch any key. */
bool wire_key(const struct wire *w, const char **key, size_t *len);
/* One release-batch call over items[0..n-1] (n >= 2, each batchable), in
 * that order; marked for a clock sample when one of them is. NULL on
 * OOM. */
struct wire *wire_batch_new(struct wire *const *items, size_t n);
/* The answer to a batched release that a release-batch reply gives as
 * character c: the reply its own call would have had (release's
 * integer); false when c is none of them. */
bool wire_batch_answer(char c, struct node_reply *out);

/* The NOSCRIPT resend rule: reply to w says the server lost its script
 * cache (SCRIPT FLUSH, restart), and the call is sent again as EVAL --
 * unless it would create keys nobody waits for (awaited false: an owner
 * that gave up, a decided round, may already have sent a rollback that a
 * late EVAL would overtake, leaving keys behind). */
bool wire_resend_as_eval(const struct wire *w, const struct redisReply *reply,
                         bool awaited);
/* True for a script call (an EVALSHA). */
bool wire_is_script(const struct wire *w);
/* The EVAL form of a script wire (a new wire, no script: never resent
 * again). NULL on OOM. */
struct wire *wire_eval_form(const struct wire *sha);

/* View in as out; an array's first cap scalar elements go to elems. */
void wire_reply_view(const struct redisReply *in, struct node_reply *out,
                     struct node_reply *elems, size_t cap);
/* A TIME reply's {seconds, microseconds} as µs since the server's epoch;
 * false when it is not one. */
bool wire_reply_time(const struct redisReply *reply, int64_t *us);

#endif
