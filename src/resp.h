/* SPDX-License-Identifier: BSD-3-Clause */
/* resp.h -- the replies in one connection's bytes: hiredis's redisReader
 * with bounds (the longest unfinished reply, the elements its arrays may
 * announce), and what kind of reply each is. Knows nothing of sockets;
 * conn.c feeds it what it reads. Loop thread. */
#ifndef REDLOCK_RESP_H
#define REDLOCK_RESP_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>

struct resp_reader {
    redisReader *reader;
    redisReplyObjectFunctions fns; /* hiredis's, createArray bounded */
    void *(*create_array)(const redisReadTask *, int); /* hiredis's */
    size_t array_budget;         /* elements the current reply may have */
    int array_refused;           /* element count refused, or 0 */
    size_t max_reply;            /* bytes of one unfinished reply */
};

/* Ready to read replies of at most max_reply bytes. false: out of memory
 * (then resp_reader_clear is still safe). r must not move while in use. */
bool resp_reader_init(struct resp_reader *r, size_t max_reply);
void resp_reader_clear(struct resp_reader *r);

/* Take n more bytes. false when they break the stream; why says how
 * ("protocol error: ..."), and the reader is of no further use. */
bool resp_feed(struct resp_reader *r, const char *buf, size_t n, char *why,
               size_t whylen);
/* The next complete reply into *reply (the caller frees it with
 * freeReplyObject), or *reply NULL when none is complete yet. false when
 * the stream is broken (why). */
bool resp_next(struct resp_reader *r, redisReply **reply, char *why,
               size_t whylen);
/* Once the complete replies are taken: false (why) when the unfinished
 * one already holds more than max_reply bytes. */
bool resp_unfinished_ok(const struct resp_reader *r, char *why,
                        size_t whylen);

/* A pub/sub push ("message", "subscribe", ...), not a command's reply. */
bool resp_is_push(const redisReply *r);
/* "a bulk string", "an array"... for messages. */
const char *resp_kind(const redisReply *r);

#endif
