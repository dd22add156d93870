/* SPDX-License-Identifier: BSD-3-Clause */
/* wire.c -- commands formatted once, their EVAL form, replies viewed.
 *
 * Commands are formatted once per round (struct wire, refcounted) and the
 * same bytes are queued on every node's connection without copying: each
 * queued write holds a wire reference, dropped by conn's release callback
 * once the bytes are written or dropped. A script call is formatted as
 * EVALSHA; its EVAL form after a NOSCRIPT is spliced from those bytes
 * (wire_eval_form). */
#include <hiredis/hiredis.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "config.h"
#include "wire.h"

struct wire {
    unsigned refs;
    char *cmd;                  /* RESP bytes */
    size_t len;
    const struct script *script; /* EVALSHA, or NULL */
    bool spliced;               /* cmd is ours (malloc), not hiredis's */
    bool sample;                /* lock path: a TIME may go first */
    int key_arg;                /* wire_key's argument, or 0: none */
};

struct wire *wire_ref(struct wire *w)
{
    w->refs++;
    return w;
}

void wire_unref(struct wire *w)
{
    if (w == NULL || --w->refs > 0)
        return;
    if (w->spliced)
        free(w->cmd);
    else if (w->cmd != NULL)
        redisFreeCommand(w->cmd);
    free(w);
}

const char *wire_bytes(const struct wire *w, size_t *len)
{
    *len = w->len;
    return w->cmd;
}

void wire_sample_time(struct wire *w)
{
    w->sample = true;
}

bool wire_wants_sample(const struct wire *w)
{
    return w->sample;
}

/* Where the n-th CRLF of cmd ends (len when it has fewer). */
static size_t after_crlf(const char *cmd, size_t len, int n)
{
    size_t i;

    for (i = 0; i + 1 < len; i++)
        if (cmd[i] == '\r' && cmd[i + 1] == '\n' && --n == 0)
            return i + 2;
    return len;
}

static bool arg_is(const char *arg, size_t len, const char *word)
{
    return len == strlen(word) && memcmp(arg, word, len) == 0;
}

/* Which argument of the whole command is its one key (wire_key), or 0. */
static int key_arg(const struct script *s, int nkeys, int argc,
                   const char **argv, const size_t *lens)
{
    if (s != NULL) /* EVALSHA sha 1 key token */
        return s == script_get(SCRIPT_RELEASE) && nkeys == 1 && argc == 2
                   ? 3
                   : 0;
    return argc == 6 && arg_is(argv[0], lens[0], "SET") &&
                   arg_is(argv[3], lens[3], "NX") &&
                   arg_is(argv[4], lens[4], "PX")
               ? 1
               : 0;
}

struct wire *wire_new(const struct script *s, int nkeys, int argc,
                      const char **argv, const size_t *lens)
{
    const char *stack[RL_MAX_RESOURCES + 16];
    size_t stack_lens[RL_MAX_RESOURCES + 16];
    const char **full = stack;
    size_t *full_lens = stack_lens;
    char nkeys_buf[16];
    struct wire *w = calloc(1, sizeof(*w));
    int i, len, total = s != NULL ? argc + 3 : argc;

    if (w == NULL)
        return NULL;
    w->refs = 1;
    w->key_arg = key_arg(s, nkeys, argc, argv, lens);
    if (s != NULL) {
        /* EVALSHA digest nkeys args...; a batch of renewals needs more
         * room than the stack arrays have. */
        if (total > (int)ARRAY_SIZE(stack)) {
            full = malloc((size_t)total * (sizeof(char *) + sizeof(size_t)));
            if (full == NULL) {
                free(w);
                return NULL;
            }
            full_lens = (size_t *)(full + total);
        }
        snprintf(nkeys_buf, sizeof(nkeys_buf), "%d", nkeys);
        full[0] = "EVALSHA";
        full[1] = s->sha1;
        full[2] = nkeys_buf;
        for (i = 0; i < 3; i++)
            full_lens[i] = strlen(full[i]);
        for (i = 0; i < argc; i++) {
            full[i + 3] = argv[i];
            full_lens[i + 3] = lens[i];
        }
        argv = full;
        lens = full_lens;
    }
    len = redisFormatCommandArgv(&w->cmd, total, argv, lens);
    if (full != stack)
        free(full);
    if (len < 0) {
        free(w);
        return NULL;
    }
    w->len = (size_t)len;
    w->script = s;
    return w;
}

bool node_reply_status_is(const struct node_reply *r, const char *word)
{
    return r->kind == REPLY_STATUS && arg_is(r->str, r->len, word);
}

bool wire_batchable(const struct wire *w)
{
    return w->script != NULL && w->key_arg != 0; /* release of one key */
}

/* The i-th bulk string of w's command (0: the command's name): RESP
 * states each one's length, so keys and tokens may hold any byte. */
static const char *wire_arg(const struct wire *w, int i, size_t *len)
{
    const char *p = w->cmd + after_crlf(w->cmd, w->len, 1);
    size_t n;

    for (;;) {
        n = 0;
        for (p++; *p != '\r'; p++) /* after '$': the length's digits */
            n = n * 10 + (size_t)(*p - '0');
        p += 2;
        if (i-- == 0)
            break;
        p += n + 2;
    }
    *len = n;
    return p;
}

bool wire_key(const struct wire *w, const char **key, size_t *len)
{
    if (w->key_arg == 0)
        return false;
    *key = wire_arg(w, w->key_arg, len);
    return true;
}

struct wire *wire_batch_new(struct wire *const *items, size_t n)
{
    /* The keys, then their tokens: EVALSHA sha 1 key token. */
    const char **argv = malloc(2 * n * (sizeof(char *) + sizeof(size_t)));
    size_t *lens = (size_t *)(argv + 2 * n);
    bool sample = false;
    struct wire *w = NULL;
    size_t i;

    if (argv == NULL || n > INT_MAX / 2) {
        free(argv);
        return NULL;
    }
    for (i = 0; i < n; i++) { /* a release's token follows its key */
        wire_key(items[i], &argv[i], &lens[i]);
        argv[n + i] = wire_arg(items[i], items[i]->key_arg + 1, &lens[n + i]);
        sample = sample || items[i]->sample;
    }
    w = wire_new(script_get(SCRIPT_RELEASE_BATCH), (int)n, (int)(2 * n),
                 argv, lens);
    if (w != NULL)
        w->sample = sample;
    free(argv);
    return w;
}

bool wire_batch_answer(char c, struct node_reply *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = REPLY_INTEGER;
    out->integer = c == '2' ? -1 : c - '0';
    return c == '1' || c == '0' || c == '2';
}

/* The same "*N" count, "EVAL" and the source instead of "EVALSHA" and
 * the digest (the first five CRLFs), then the rest as it is. */
bool wire_is_script(const struct wire *w)
{
    return w->script != NULL;
}

struct wire *wire_eval_form(const struct wire *sha)
{
    const char *src = sha->script->source;
    size_t count = after_crlf(sha->cmd, sha->len, 1);
    size_t args = after_crlf(sha->cmd, sha->len, 5);
    size_t src_len = strlen(src), tail = sha->len - args;
    struct wire *w = calloc(1, sizeof(*w));
    char head[48];
    int n = snprintf(head, sizeof(head), "$4\r\nEVAL\r\n$%zu\r\n", src_len);
    size_t len = count + (size_t)n + src_len + 2 + tail;
    char *p;

    if (w == NULL || (w->cmd = malloc(len)) == NULL) {
        free(w);
        return NULL;
    }
    w->refs = 1;
    w->spliced = true;
    w->len = len;
    p = w->cmd;
    memcpy(p, sha->cmd, count);
    memcpy(p += count, head, (size_t)n);
    memcpy(p += n, src, src_len);
    memcpy(p += src_len, "\r\n", 2);
    memcpy(p + 2, sha->cmd + args, tail);
    return w;
}

bool wire_resend_as_eval(const struct wire *w, const redisReply *reply,
                         bool awaited)
{
    return w->script != NULL && reply->type == REDIS_REPLY_ERROR &&
           reply->str != NULL && strncmp(reply->str, "NOSCRIPT", 8) == 0 &&
           (awaited || !w->script->creates_keys);
}

static void view_scalar(const redisReply *in, struct node_reply *out)
{
    memset(out, 0, sizeof(*out));
    switch (in->type) {
    case REDIS_REPLY_STATUS:
        out->kind = REPLY_STATUS;
        break;
    case REDIS_REPLY_INTEGER:
        out->kind = REPLY_INTEGER;
        out->integer = in->integer;
        return;
    case REDIS_REPLY_STRING:
        out->kind = REPLY_STRING;
        break;
    case REDIS_REPLY_ERROR:
        out->kind = REPLY_ERROR;
        break;
    case REDIS_REPLY_ARRAY:
        out->kind = REPLY_ARRAY;
        return;
    default:
        out->kind = REPLY_NIL;
        return;
    }
    out->str = in->str != NULL ? in->str : "";
    out->len = in->str != NULL ? (size_t)in->len : 0;
}

void wire_reply_view(const redisReply *in, struct node_reply *out,
                     struct node_reply *elems, size_t cap)
{
    size_t i;

    view_scalar(in, out);
    if (out->kind != REPLY_ARRAY)
        return;
    out->elements = in->elements < cap ? in->elements : cap;
    for (i = 0; i < out->elements; i++)
        view_scalar(in->element[i], &elems[i]);
    out->element = elems;
}

/* One of TIME's two bulk strings: a non-negative decimal. */
static bool time_part(const redisReply *r, long long *out)
{
    char *end;

    if (r->type != REDIS_REPLY_STRING)
        return false;
    *out = strtoll(r->str, &end, 10);
    return end != r->str && *end == '\0' && *out >= 0;
}

bool wire_reply_time(const redisReply *reply, int64_t *us)
{
    long long s, u;

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
        !time_part(reply->element[0], &s) ||
        !time_part(reply->element[1], &u) || u >= 1000000)
        return false;
    *us = (int64_t)s * 1000000 + u;
    return true;
}
