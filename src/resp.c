/* SPDX-License-Identifier: BSD-3-Clause */
/* resp.c -- see resp.h.
 *
 * hiredis allocates an array's element pointers when it reads the count
 * ("*100000000\r\n" would be 800 MB at once): every element takes at
 * least 3 bytes, so one reply may have max_reply / 3 of them in all. The
 * reader's createArray is wrapped to keep that budget. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common.h"
#include "resp.h"

bool resp_is_push(const redisReply *r)
{
    static const char *const kinds[] = {
        "message", "pmessage", "smessage", "subscribe", "unsubscribe",
        "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe",
    };
    const redisReply *k;
    size_t i;

    if (r->type != REDIS_REPLY_ARRAY || r->elements == 0)
        return false;
    k = r->element[0];
    if (k->type != REDIS_REPLY_STRING)
        return false;
    for (i = 0; i < ARRAY_SIZE(kinds); i++) {
        if ((size_t)k->len == strlen(kinds[i]) &&
            strncasecmp(k->str, kinds[i], (size_t)k->len) == 0)
            return true;
    }
    return false;
}

const char *resp_kind(const redisReply *r)
{
    switch (r->type) {
    case REDIS_REPLY_STRING:
        return "a bulk string";
    case REDIS_REPLY_ARRAY:
        return "an array";
    case REDIS_REPLY_INTEGER:
        return "an integer";
    case REDIS_REPLY_NIL:
        return "a nil";
    case REDIS_REPLY_STATUS:
        return "a status";
    default:
        return "an error";
    }
}

static void *create_array(const redisReadTask *task, int elements)
{
    struct resp_reader *r = task->privdata;

    if (elements < 0 || (size_t)elements > r->array_budget) {
        r->array_refused = elements;
        return NULL; /* the reader fails ("out of memory") */
    }
    r->array_budget -= (size_t)elements;
    return r->create_array(task, elements);
}

bool resp_reader_init(struct resp_reader *r, size_t max_reply)
{
    memset(r, 0, sizeof(*r));
    r->reader = redisReaderCreate();
    if (r->reader == NULL)
        return false;
    r->max_reply = max_reply;
    r->array_budget = max_reply / 3;
    r->fns = *r->reader->fn;
    r->create_array = r->fns.createArray;
    r->fns.createArray = create_array;
    r->reader->fn = &r->fns;
    redisReaderSetPrivdata(r->reader, r);
    return true;
}

void resp_reader_clear(struct resp_reader *r)
{
    if (r->reader != NULL)
        redisReaderFree(r->reader);
    r->reader = NULL;
}

static void reader_error(const struct resp_reader *r, char *why,
                         size_t whylen)
{
    const char *e = r->reader->errstr;

    if (r->array_refused != 0)
        snprintf(why, whylen, "protocol error: an array of %d elements "
                 "(more than a reply may have)", r->array_refused);
    else if (strncasecmp(e, "protocol error", 14) == 0)
        snprintf(why, whylen, "%s", e);
    else
        snprintf(why, whylen, "protocol error: %s", e);
}

bool resp_feed(struct resp_reader *r, const char *buf, size_t n, char *why,
               size_t whylen)
{
    if (redisReaderFeed(r->reader, buf, n) == REDIS_OK)
        return true;
    reader_error(r, why, whylen);
    return false;
}

bool resp_next(struct resp_reader *r, redisReply **reply, char *why,
               size_t whylen)
{
    void *got = NULL;

    *reply = NULL;
    if (redisReaderGetReply(r->reader, &got) != REDIS_OK) {
        reader_error(r, why, whylen);
        return false;
    }
    if (got != NULL)
        r->array_budget = r->max_reply / 3;
    *reply = got;
    return true;
}

bool resp_unfinished_ok(const struct resp_reader *r, char *why,
                        size_t whylen)
{
    if (r->reader->len - r->reader->pos <= r->max_reply)
        return true;
    snprintf(why, whylen, "protocol error: a reply longer than %zu bytes",
             r->max_reply);
    return false;
}
