/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_common.c -- samples, percentiles and direct hiredis connections
 * for the benchmark programs (see bench_common.h). */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "bench_common.h"

/* ---- Samples ------------------------------------------------------------ */

void bench_samples_add(struct bench_samples *s, uint64_t us)
{
    uint64_t *grown;

    if (s->n == s->cap) {
        size_t cap = s->cap != 0 ? s->cap * 2 : 4096;

        grown = realloc(s->v, cap * sizeof(*grown));
        if (grown == NULL)
            return;             /* drop the sample rather than fail */
        s->v = grown;
        s->cap = cap;
    }
    s->v[s->n++] = us;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

void bench_percentiles(struct bench_samples *s, uint64_t out[4])
{
    static const double q[3] = {0.50, 0.90, 0.99};
    size_t i;

    memset(out, 0, 4 * sizeof(out[0]));
    if (s->n == 0)
        return;
    qsort(s->v, s->n, sizeof(s->v[0]), cmp_u64);
    for (i = 0; i < 3; i++) {
        size_t rank = (size_t)(q[i] * (double)s->n + 0.999999);

        out[i] = s->v[rank > 0 ? rank - 1 : 0];
    }
    out[3] = s->v[s->n - 1];
}

void bench_json_pct(const char *name, struct bench_samples *s)
{
    uint64_t p[4];

    bench_percentiles(s, p);
    printf(",\"%s\":{\"p50\":%" PRIu64 ",\"p90\":%" PRIu64 ",\"p99\":%" PRIu64
           ",\"max\":%" PRIu64 "}", name, p[0], p[1], p[2], p[3]);
}

void bench_sleep_s(double s)
{
    struct timespec ts;

    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* ---- Direct connections ------------------------------------------------- */

/* Server CPU of a node in seconds (used_cpu_sys + used_cpu_user), read by
 * the server itself from its INFO text and returned as a number, so this
 * file reads no INFO text. */
static const char cpu_script[] =
    "local i = redis.call('INFO', 'cpu') "
    "return tostring(tonumber(i:match('used_cpu_sys:([%d.]+)')) + "
    "tonumber(i:match('used_cpu_user:([%d.]+)')))";

bool bench_reply_is(redisReply *r, int type)
{
    bool ok = r != NULL && r->type == type;

    freeReplyObject(r);
    return ok;
}

bool bench_direct_is_tls(const struct cli_opts *o, const rl_uri *u)
{
    return u != NULL &&
           (rl_uri_tls(u) || (o->cfg.tls && rl_uri_path(u) == NULL));
}

redisContext *bench_direct_connect(const struct cli_opts *o,
                                   const rl_uri *u)
{
    const struct timeval tv = {0, BENCH_DIRECT_TIMEOUT_MS * 1000};
    const char *pw;
    redisContext *ctx;
    bool ok;

    if (u == NULL || bench_direct_is_tls(o, u))
        return NULL;
    if (rl_uri_path(u) != NULL)
        ctx = redisConnectUnixWithTimeout(rl_uri_path(u), tv);
    else
        ctx = redisConnectWithTimeout(rl_uri_host(u), rl_uri_port(u), tv);
    if (ctx == NULL || ctx->err != 0)
        goto fail;
    if (fcntl(ctx->fd, F_SETFD, FD_CLOEXEC) != 0 ||
        redisSetTimeout(ctx, tv) != REDIS_OK)
        goto fail;
    pw = rl_uri_password(u) != NULL ? rl_uri_password(u) : o->password;
    if (pw != NULL) {
        if (rl_uri_user(u) != NULL)
            ok = bench_reply_is(redisCommand(ctx, "AUTH %s %s",
                                             rl_uri_user(u), pw),
                                REDIS_REPLY_STATUS);
        else
            ok = bench_reply_is(redisCommand(ctx, "AUTH %s", pw),
                                REDIS_REPLY_STATUS);
        if (!ok)
            goto fail;
    }
    if (rl_uri_db(u) != 0 &&
        !bench_reply_is(redisCommand(ctx, "SELECT %d", rl_uri_db(u)),
                        REDIS_REPLY_STATUS))
        goto fail;
    return ctx;

fail:
    if (ctx != NULL)
        redisFree(ctx);
    return NULL;
}

int bench_node_cpu(const struct cli_opts *o, const rl_uri *u, double *cpu_s)
{
    redisContext *ctx = bench_direct_connect(o, u);
    redisReply *r;
    char *end;
    int rc = -1;

    if (ctx == NULL)
        return -1;
    r = redisCommand(ctx, "EVAL %s 0", cpu_script);
    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        *cpu_s = strtod(r->str, &end);
        if (end != r->str && *end == '\0')
            rc = 0;
    }
    freeReplyObject(r);
    redisFree(ctx);
    return rc;
}
