/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * contender.c -- one chaos-test contender process (DESIGN §8, issue 5).
 *
 * Links the public API only (<redlock.h>) plus hiredis' synchronous API for
 * the "truth" Redis: a separate Redis that the orchestrator (chaos.py)
 * never faults and that holds what the checker verifies.
 *
 * Each cycle picks a resource at random, acquires it (blocking API with the
 * watchdog, rl_with_lock, or with --mode campaign rl_campaign: leader of
 * the resource with the owner "c<id>", the term being the fence), and
 * inside the critical section:
 *   - appends "enter" to the log (CLOCK_MONOTONIC ns: one clock for every
 *     process on the machine, so logs of different processes merge);
 *   - with --fence, "claims" its fencing token on the fenced register;
 *   - GET counter:R, sleeps the hold time, then MULTI SET counter:R v+1,
 *     INCR writes:R EXEC: a non-atomic read-sleep-write, so two holders
 *     at once lose an update and counter:R != writes:R;
 *   - with --fence, writes to the fenced register with its token;
 *   - stops early when rl_lock_lost() or the validity reached zero;
 *   - appends "exit" with an estimate of when its validity ended.
 * Lock kinds (issue 13): with --limit K every cycle takes one of K
 * permits (a semaphore): the section logs and counts under its slot's
 * name (R:slot:i, an ordinary mutex), so the counter check holds per
 * slot and the checker bounds the holders of R by K. With --shared-pct P
 * a cycle is a reader with probability P%: it logs "enter ... shared",
 * reads counter:R at the start and at the end of its hold and logs
 * "rcheck" (a writer inside a reader's section changes it); it writes
 * nothing and takes no fencing token.
 * With --fair a cycle waits in the resource's fair queue (issue 34:
 * rl_acquire_opts.fair), with --priority N in its class N (implies
 * fair); the checker reports their order but asserts only safety.
 * --ignore-loss plays a broken candidate (a negative control): it keeps
 * leading for its whole hold time after a loss and logs its exit stamp as
 * its end.
 * Before every step it samples rl_lock_validity_ms(); the last positive
 * sample gives end_est = sample time + validity + 1 ms, the latest time
 * the lock was valid as far as this process could see (samples are at
 * most ~1 ms apart unless the process is stopped).
 *
 * Log lines (space separated; chaos.py parses them):
 *   try T0 T1 R STATUS          one acquire attempt, STATUS = rl_status name
 *   enter T ID R TOKEN FENCE [shared]
 *   rcheck T R V0 V1 VALID      a reader's two reads; VALID=1: still held
 *   claim T R FENCE ACCEPTED VALID
 *   wrote T R VALUE LATE        LATE=1: validity was 0 right after the SET
 *   fwrite T R FENCE ACCEPTED VALID
 *   exit T ID R TOKEN STATUS END_EST LOST_T   STATUS ok|lost|expired|error
 *   nodes T R CV CV ...         on a loss: per node C connected, V voting
 *   release T R STATUS
 * At the end one JSON line with the counts goes to stdout.
 *
 * "contender --now" prints CLOCK_MONOTONIC in ns (used by the shell
 * critical sections run under redlock-cli).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <redlock.h>

#define MAX_RESOURCES 16
#define MAX_NODES 64

enum mode {
    MODE_BLOCKING,
    MODE_WITH_LOCK,
    MODE_CAMPAIGN
};

struct opts {
    char *nodes[MAX_NODES];        /* node URIs (point into nodes_buf) */
    size_t node_count;
    char *nodes_buf;
    char *resources[MAX_RESOURCES];
    size_t resource_count;
    char *resources_buf;
    double duration_s;             /* stop starting cycles after this */
    long cycles;                   /* 0: unlimited */
    uint32_t ttl_ms;
    int64_t wait_ms;               /* acquire wait; default 2 x ttl */
    uint32_t hold_min_ms;
    uint32_t hold_max_ms;
    uint32_t idle_max_ms;          /* pause between cycles, 0..this */
    enum mode mode;
    bool fence;
    bool stale_write;              /* fenced write even after the loss */
    bool ignore_loss;              /* broken on purpose: see the top */
    bool no_quarantine;
    bool no_clock_guard;
    bool allow_evicting;  /* --allow-evicting-nodes (neg-evict-allowed) */
    uint32_t limit;                /* --limit: semaphore permits, 0 mutex */
    uint32_t shared_pct;           /* --shared-pct: share of reader cycles */
    bool fair;                     /* --fair: wait in the fair queue */
    uint32_t priority;             /* --priority: its class, implies fair */
    const char *cacert;         /* --cacert: TLS CA file, or NULL */
    uint32_t max_ttl_ms;
    const char *register_sha;  /* --register-sha: the fenced register */
    char truth_host[256];
    int truth_port;
    int id;
    const char *log_path;
};

struct counts {
    uint64_t attempts;
    uint64_t acquired;
    uint64_t completed;            /* SET done and lock still held */
    uint64_t lost;                 /* rl_lock_lost seen or RL_ELOST */
    uint64_t expired;              /* validity reached 0, no lost flag */
    uint64_t not_acquired;         /* RL_ENOTACQUIRED */
    uint64_t no_quorum;            /* RL_ENOQUORUM */
    uint64_t other_errors;
    uint64_t late_writes;          /* validity 0 right after the SET */
    uint64_t fence_accepted;
    uint64_t fence_rejected;
    uint64_t release_errors;
};

/* State of the critical section in progress. */
struct cs {
    rl_client *c;
    const struct opts *o;
    struct counts *n;
    redisContext *truth;
    int log_fd;
    const char *resource;
    bool shared;                   /* this cycle is a reader */
    uint32_t hold_ms;
    int64_t t_try;                 /* attempt start, mono ns */
    bool entered;
    bool lost_seen;
    int64_t lost_t;                /* mono ns when first seen lost; 0 */
    int64_t last_pos_t;            /* last sample with validity > 0, ns */
    int64_t last_pos_ms;           /* its validity */
};

static const char *const mode_names[] = {"blocking", "with_lock",
                                         "campaign"};

static volatile sig_atomic_t stop_requested;

static int64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(uint32_t ms)
{
    struct timespec ts;

    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !stop_requested)
        ;
}

static uint64_t rng_state;

static uint32_t rnd(void)
{
    /* xorshift64*: enough for picking resources and hold times. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * UINT64_C(2685821657736338717)) >> 32);
}

static uint32_t rnd_between(uint32_t lo, uint32_t hi)
{
    if (hi <= lo)
        return lo;
    return lo + rnd() % (hi - lo + 1);
}

/* Append one line to the log with a single write(2) (O_APPEND), so lines
 * of concurrent writers never interleave and survive a SIGKILL. */
static void log_line(int fd, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    int len;

    va_start(ap, fmt);
    len = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
    va_end(ap);
    if (len < 0)
        return;
    if ((size_t)len > sizeof(buf) - 2)
        len = (int)sizeof(buf) - 2;
    buf[len++] = '\n';
    if (write(fd, buf, (size_t)len) < 0)
        perror("contender: log write");
}

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void usage(FILE *f)
{
    fprintf(f,
        "Usage: contender --nodes LIST --resources R1,R2 --truth HOST:PORT\n"
        "                 --log FILE [--id N] [--duration S] [--cycles N]\n"
        "                 [--ttl MS] [--wait MS] [--hold-ms MIN-MAX]\n"
        "                 [--idle-ms MAX]\n"
        "                 [--mode blocking|with_lock|campaign]\n"
        "                 [--fence --register-sha SHA] [--stale-write]\n"
        "                 [--ignore-loss]\n"
        "                 [--no-quarantine]\n"
        "                 [--no-clock-guard] [--max-ttl MS] [--cacert FILE]\n"
        "                 [--limit K] [--shared-pct P]\n"
        "                 [--fair] [--priority N]\n"
        "                 [--allow-evicting-nodes]\n"
        "       contender --now\n");
}

/* A comma-separated list option: *buf becomes a copy of s (the previous
 * one is freed), out[0..cap) points at its items, *count says how many.
 * -1 when out of memory. */
static int split_list(const char *s, char **buf, char **out, size_t cap,
                      size_t *count)
{
    size_t n = 0;
    char *save = NULL;
    char *tok;

    free(*buf);
    *buf = strdup(s);
    if (*buf == NULL)
        return -1;
    for (tok = strtok_r(*buf, ",", &save); tok != NULL && n < cap;
         tok = strtok_r(NULL, ",", &save))
        out[n++] = tok;
    *count = n;
    return 0;
}

static int parse_u32(const char *s, uint32_t *out)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v > UINT32_MAX)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    static const struct option longopts[] = {
        {"nodes", required_argument, NULL, 'n'},
        {"resources", required_argument, NULL, 'r'},
        {"duration", required_argument, NULL, 'd'},
        {"cycles", required_argument, NULL, 'c'},
        {"ttl", required_argument, NULL, 't'},
        {"wait", required_argument, NULL, 'w'},
        {"hold-ms", required_argument, NULL, 'H'},
        {"idle-ms", required_argument, NULL, 'I'},
        {"mode", required_argument, NULL, 'm'},
        {"fence", no_argument, NULL, 'f'},
        {"register-sha", required_argument, NULL, 'R'},
        {"stale-write", no_argument, NULL, 'S'},
        {"ignore-loss", no_argument, NULL, 'L'},
        {"limit", required_argument, NULL, 'K'},
        {"shared-pct", required_argument, NULL, 'P'},
        {"fair", no_argument, NULL, 'F'},
        {"priority", required_argument, NULL, 'p'},
        {"no-quarantine", no_argument, NULL, 'Q'},
        {"no-clock-guard", no_argument, NULL, 'G'},
        {"allow-evicting-nodes", no_argument, NULL, 'E'},
        {"max-ttl", required_argument, NULL, 'M'},
        {"cacert", required_argument, NULL, 'C'},
        {"truth", required_argument, NULL, 'T'},
        {"id", required_argument, NULL, 'i'},
        {"log", required_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}
    };
    /* Options that only switch something on (on) or set a plain
     * unsigned value (value). */
    const struct {
        int ch;
        bool *on;
        uint32_t *value;
    } simple[] = {
        {'f', &o->fence, NULL}, {'S', &o->stale_write, NULL},
        {'L', &o->ignore_loss, NULL}, {'Q', &o->no_quarantine, NULL},
        {'G', &o->no_clock_guard, NULL}, {'E', &o->allow_evicting, NULL},
        {'F', &o->fair, NULL}, {'t', NULL, &o->ttl_ms},
        {'I', NULL, &o->idle_max_ms}, {'K', NULL, &o->limit},
        {'M', NULL, &o->max_ttl_ms}, {'p', NULL, &o->priority},
    };
    int ch;
    size_t i;
    char *colon;
    char *dash;

    memset(o, 0, sizeof(*o));
    o->duration_s = 10;
    o->ttl_ms = 1000;
    o->wait_ms = -2;
    o->hold_min_ms = 5;
    o->hold_max_ms = 30;
    o->idle_max_ms = 10;
    o->mode = MODE_BLOCKING;
    o->max_ttl_ms = 60000;
    o->id = 0;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        for (i = 0; i < sizeof(simple) / sizeof(simple[0]); i++) {
            if (ch != simple[i].ch)
                continue;
            if (simple[i].on != NULL)
                *simple[i].on = true;
            else if (parse_u32(optarg, simple[i].value) != 0)
                goto out_usage;
        }
        switch (ch) {
        case 'n':
            if (split_list(optarg, &o->nodes_buf, o->nodes, MAX_NODES,
                           &o->node_count) != 0)
                return -1;
            break;
        case 'r':
            if (split_list(optarg, &o->resources_buf, o->resources,
                           MAX_RESOURCES, &o->resource_count) != 0)
                return -1;
            break;
        case 'd':
            o->duration_s = strtod(optarg, NULL);
            break;
        case 'c':
            o->cycles = strtol(optarg, NULL, 10);
            break;
        case 'w':
            o->wait_ms = strtoll(optarg, NULL, 10);
            break;
        case 'H':
            dash = strchr(optarg, '-');
            if (dash == NULL) {
                if (parse_u32(optarg, &o->hold_min_ms) != 0)
                    goto out_usage;
                o->hold_max_ms = o->hold_min_ms;
                break;
            }
            *dash = '\0';
            if (parse_u32(optarg, &o->hold_min_ms) != 0 ||
                parse_u32(dash + 1, &o->hold_max_ms) != 0 ||
                o->hold_max_ms < o->hold_min_ms)
                goto out_usage;
            break;
        case 'm':
            if (strcmp(optarg, "blocking") == 0)
                o->mode = MODE_BLOCKING;
            else if (strcmp(optarg, "with_lock") == 0)
                o->mode = MODE_WITH_LOCK;
            else if (strcmp(optarg, "campaign") == 0)
                o->mode = MODE_CAMPAIGN;
            else
                goto out_usage;
            break;
        case 'P':
            if (parse_u32(optarg, &o->shared_pct) != 0 ||
                o->shared_pct > 100)
                goto out_usage;
            break;
        case 'C':
            o->cacert = optarg;
            break;
        case 'R':
            o->register_sha = optarg;
            break;
        case 'T':
            colon = strrchr(optarg, ':');
            if (colon == NULL || (size_t)(colon - optarg) >=
                                     sizeof(o->truth_host))
                goto out_usage;
            memcpy(o->truth_host, optarg, (size_t)(colon - optarg));
            o->truth_host[colon - optarg] = '\0';
            o->truth_port = atoi(colon + 1);
            break;
        case 'i':
            o->id = atoi(optarg);
            break;
        case 'l':
            o->log_path = optarg;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        case '?':
            goto out_usage;
        default:
            break;  /* a switch or a number: set above */
        }
    }
    if (o->node_count == 0 || o->resource_count == 0 ||
        o->truth_port <= 0 || o->log_path == NULL) {
        fprintf(stderr, "contender: --nodes, --resources, --truth and --log "
                        "are required\n");
        usage(stderr);
        return -1;
    }
    if (o->fence && o->register_sha == NULL) {
        fprintf(stderr, "contender: --fence needs --register-sha\n");
        usage(stderr);
        return -1;
    }
    if (o->wait_ms == -2)
        o->wait_ms = 2 * (int64_t)o->ttl_ms;
    return 0;
out_usage:
    fprintf(stderr, "contender: bad option or value%s%s\n",
            optarg != NULL ? ": " : "", optarg != NULL ? optarg : "");
    usage(stderr);
    return -1;
}

/* ---- Truth Redis ---------------------------------------------------------*/

static redisContext *truth_connect(const struct opts *o)
{
    struct timeval tv = {5, 0};
    redisContext *r;

    r = redisConnectWithTimeout(o->truth_host, o->truth_port, tv);
    if (r == NULL || r->err) {
        fprintf(stderr, "contender %d: truth %s:%d: %s\n", o->id,
                o->truth_host, o->truth_port,
                r != NULL ? r->errstr : "out of memory");
        redisFree(r);
        return NULL;
    }
    redisSetTimeout(r, tv);
    return r;
}

/* GET counter:R as an integer (0 when absent); -1 on error. */
static long long truth_get_counter(redisContext *r, const char *res)
{
    redisReply *rep;
    long long v = -1;

    rep = redisCommand(r, "GET counter:%s", res);
    if (rep == NULL)
        return -1;
    if (rep->type == REDIS_REPLY_NIL)
        v = 0;
    else if (rep->type == REDIS_REPLY_STRING)
        v = strtoll(rep->str, NULL, 10);
    freeReplyObject(rep);
    return v;
}

/* MULTI; SET counter:R value; INCR writes:R; EXEC. The SET's value was
 * computed from an earlier GET: that is the non-atomic part. */
static int truth_set_counter(redisContext *r, const char *res,
                             long long value)
{
    redisReply *rep;
    int i;
    int rc = 0;

    redisAppendCommand(r, "MULTI");
    redisAppendCommand(r, "SET counter:%s %lld", res, value);
    redisAppendCommand(r, "INCR writes:%s", res);
    redisAppendCommand(r, "EXEC");
    for (i = 0; i < 4; i++) {
        if (redisGetReply(r, (void **)&rep) != REDIS_OK)
            return -1;
        if (rep->type == REDIS_REPLY_ERROR)
            rc = -1;
        freeReplyObject(rep);
    }
    return rc;
}

/* One call of the fenced register (a script chaos.py loaded into the truth
 * Redis, called by its SHA: it accepts a token no lower than the highest
 * it has accepted, see REGISTER_LUA there); 1 accepted, 0 rejected, -1
 * error. */
static int truth_register(redisContext *r, const char *sha, const char *res,
                          uint64_t fence, const char *data, const char *kind)
{
    redisReply *rep;
    int rc = -1;

    rep = redisCommand(r,
                       "EVALSHA %s 4 fence:max:%s fence:data:%s "
                       "fence:stats:%s fence:log:%s %" PRIu64 " %s %s",
                       sha, res, res, res, res, fence, data, kind);
    if (rep == NULL)
        return -1;
    if (rep->type == REDIS_REPLY_INTEGER)
        rc = rep->integer == 1 ? 1 : 0;
    else if (rep->type == REDIS_REPLY_ERROR)
        fprintf(stderr, "contender: register: %s\n", rep->str);
    freeReplyObject(rep);
    return rc;
}

/* ---- Critical section ----------------------------------------------------*/

/* On a loss, record which nodes this client saw connected and voting, so
 * a loss while a majority was healthy (a "false loss") can be explained. */
static void log_node_states(struct cs *s)
{
    rl_stats st;
    char buf[512];
    size_t len = 0;
    size_t i;

    if (rl_client_stats(s->c, &st) != RL_OK)
        return;
    buf[0] = '\0';
    for (i = 0; i < st.node_count && len + 4 < sizeof(buf); i++) {
        buf[len++] = ' ';
        buf[len++] = st.nodes[i].connected ? '1' : '0';
        buf[len++] = st.nodes[i].voting ? '1' : '0';
        buf[len] = '\0';
    }
    log_line(s->log_fd, "nodes %" PRId64 " %s%s", mono_ns(), s->resource,
             buf);
}

/* Sample the lock: true while it is still ours to use (validity > 0 and
 * not flagged lost). Remembers the last positive validity for end_est. */
static bool cs_still_held(struct cs *s, const rl_lock *l)
{
    int64_t v = rl_lock_validity_ms(l);
    int64_t now = mono_ns();

    if (v > 0) {
        s->last_pos_t = now;
        s->last_pos_ms = v;
    }
    if (rl_lock_lost(l)) {
        if (!s->lost_seen) {
            s->lost_seen = true;
            s->lost_t = now;
        }
        return s->o->ignore_loss;
    }
    return v > 0 || s->o->ignore_loss;
}

/* Hold the lock hold_ms, in 1 ms steps sampling it (samples stay dense
 * so the validity estimate in the exit line is tight). False once it is
 * no longer held. */
static bool hold(struct cs *s, rl_lock *l)
{
    uint32_t slept = 0;

    while (slept < s->hold_ms) {
        sleep_ms(1);
        slept++;
        if (!cs_still_held(s, l))
            return false;
    }
    return cs_still_held(s, l);
}

/* One call of the fenced register with the section's token: kind "claim"
 * (logged as claim) on entering, "write" after the counter's SET, "stale"
 * after a loss (both logged as fwrite, and counted), each logged with
 * whether the lock was still held right after. */
static void cs_register(struct cs *s, const rl_lock *l, const char *res,
                        uint64_t fence, const char *kind)
{
    const struct opts *o = s->o;
    bool claim = strcmp(kind, "claim") == 0;
    char data[64];
    int acc;
    bool valid;

    snprintf(data, sizeof(data), "c%d", o->id);
    acc = truth_register(s->truth, o->register_sha, res, fence, data, kind);
    valid = cs_still_held(s, l);
    log_line(s->log_fd, "%s %" PRId64 " %s %" PRIu64 " %d %d",
             claim ? "claim" : "fwrite", mono_ns(), res, fence, acc,
             valid ? 1 : 0);
    if (claim)
        return;
    if (acc == 1)
        s->n->fence_accepted++;
    else if (acc == 0)
        s->n->fence_rejected++;
}

static int cs_body(rl_lock *l, struct cs *s)
{
    const struct opts *o = s->o;
    /* A semaphore's section is its slot's (an ordinary mutex). */
    const char *res = o->limit != 0 ? rl_lock_resource(l) : s->resource;
    const char *token = rl_lock_token(l);
    uint64_t fence = rl_lock_fence(l);
    long long v, v1;
    int64_t t_exit;
    int64_t end_est;
    bool valid;
    const char *status = "ok";

    s->entered = true;
    s->lost_seen = false;
    s->lost_t = 0;
    s->last_pos_t = 0;
    s->last_pos_ms = 0;
    s->n->acquired++;
    /* Sample before the enter stamp so end_est is defined from here on. */
    cs_still_held(s, l);
    log_line(s->log_fd, "enter %" PRId64 " %d %s %s %" PRIu64 "%s",
             mono_ns(), o->id, res, token, fence,
             s->shared ? " shared" : "");
    if (o->fence && fence != 0)
        cs_register(s, l, res, fence, "claim");
    if (!cs_still_held(s, l))
        goto out_stop;
    v = truth_get_counter(s->truth, res);
    if (v < 0) {
        fprintf(stderr, "contender %d: GET counter:%s failed\n", o->id, res);
        goto out_error;
    }
    if (!hold(s, l))
        goto out_stop;
    if (s->shared) {
        v1 = truth_get_counter(s->truth, res);
        valid = cs_still_held(s, l);
        if (v1 < 0)
            goto out_error;
        log_line(s->log_fd, "rcheck %" PRId64 " %s %lld %lld %d", mono_ns(),
                 res, v, v1, valid ? 1 : 0);
        if (!s->lost_seen)
            s->n->completed++;
        goto out_exit;
    }
    if (truth_set_counter(s->truth, res, v + 1) != 0) {
        fprintf(stderr, "contender %d: SET counter:%s failed\n", o->id, res);
        goto out_error;
    }
    valid = rl_lock_validity_ms(l) > 0;
    cs_still_held(s, l);
    log_line(s->log_fd, "wrote %" PRId64 " %s %lld %d", mono_ns(), res,
             v + 1, valid ? 0 : 1);
    if (!valid)
        s->n->late_writes++;
    if (o->fence && fence != 0)
        cs_register(s, l, res, fence, "write");
    cs_still_held(s, l);
    if (!s->lost_seen)
        s->n->completed++;
    goto out_exit;

out_error:
    /* The truth store failed: the checker reports it (never expected). */
    s->n->other_errors++;
    status = "error";
    goto out_exit;

out_stop:
    status = s->lost_seen ? "lost" : "expired";
    /* --stale-write plays a holder that was paused between its last check
     * and its write: it writes to the fenced register anyway, and the
     * register must reject it once a newer holder has claimed. */
    if (o->stale_write && o->fence && fence != 0)
        cs_register(s, l, res, fence, "stale");
out_exit:
    if (s->lost_seen && strcmp(status, "error") != 0)
        status = "lost";
    t_exit = mono_ns();
    /* Latest time the lock was valid as seen from here (+1 ms for the
     * millisecond truncation of rl_lock_validity_ms). */
    end_est = s->last_pos_t + (s->last_pos_ms + 1) * 1000000;
    if (end_est > t_exit || o->ignore_loss)
        end_est = t_exit;
    log_line(s->log_fd, "exit %" PRId64 " %d %s %s %s %" PRId64 " %" PRId64,
             t_exit, o->id, res, token, status, end_est, s->lost_t);
    if (s->lost_seen)
        s->n->lost++;
    else if (strcmp(status, "expired") == 0)
        s->n->expired++;
    if (strcmp(status, "ok") != 0)
        log_node_states(s);
    return 0;
}

static void count_failure(struct counts *n, rl_status st)
{
    if (st == RL_ENOTACQUIRED)
        n->not_acquired++;
    else if (st == RL_ENOQUORUM)
        n->no_quorum++;
    else
        n->other_errors++;
}

static int with_lock_fn(rl_lock *l, void *arg)
{
    struct cs *s = arg;

    log_line(s->log_fd, "try %" PRId64 " %" PRId64 " %s RL_OK", s->t_try,
             mono_ns(), s->resource);
    return cs_body(l, s);
}

static void run_cycle(rl_client *c, struct cs *s)
{
    const struct opts *o = s->o;
    rl_acquire_opts ao;
    rl_lock *l = NULL;
    rl_status st;
    rl_status rs;
    char owner[16];
    int fn_result = 0;

    memset(&ao, 0, sizeof(ao));
    ao.ttl_ms = o->ttl_ms;
    ao.wait_ms = o->wait_ms;
    ao.auto_extend = true;
    ao.limit = o->limit;
    s->shared = o->shared_pct > 0 && rnd() % 100 < o->shared_pct;
    ao.mode = s->shared ? RL_MODE_SHARED : RL_MODE_EXCLUSIVE;
    ao.fencing = o->fence && !s->shared;
    ao.fair = o->fair || o->priority > 0;
    ao.priority = o->priority;
    s->resource = o->resources[rnd() % o->resource_count];
    s->hold_ms = rnd_between(o->hold_min_ms, o->hold_max_ms);
    s->entered = false;
    s->n->attempts++;
    s->t_try = mono_ns();
    if (o->mode == MODE_CAMPAIGN) {
        snprintf(owner, sizeof(owner), "c%d", o->id);
        ao.owner = owner;
    }
    if (o->mode == MODE_WITH_LOCK) {
        st = rl_with_lock(c, s->resource, &ao, with_lock_fn, s, &fn_result);
        if (!s->entered) {
            log_line(s->log_fd, "try %" PRId64 " %" PRId64 " %s %s",
                     s->t_try, mono_ns(), s->resource, rl_status_name(st));
            count_failure(s->n, st);
            return;
        }
        log_line(s->log_fd, "release %" PRId64 " %s %s", mono_ns(),
                 s->resource, rl_status_name(st));
        if (st == RL_ELOST && !s->lost_seen)
            s->n->lost++;
        else if (st != RL_OK && st != RL_ELOST)
            s->n->release_errors++;
        return;
    }
    if (o->mode == MODE_CAMPAIGN)
        st = rl_campaign(c, s->resource, &ao, &l);
    else
        st = rl_acquire(c, s->resource, &ao, &l);
    log_line(s->log_fd, "try %" PRId64 " %" PRId64 " %s %s", s->t_try,
             mono_ns(), s->resource, rl_status_name(st));
    if (st != RL_OK) {
        count_failure(s->n, st);
        return;
    }
    cs_body(l, s);
    rs = rl_release(l);
    log_line(s->log_fd, "release %" PRId64 " %s %s", mono_ns(), s->resource,
             rl_status_name(rs));
    if (rs != RL_OK && rs != RL_ELOST)
        s->n->release_errors++;
}

int main(int argc, char **argv)
{
    struct opts o;
    struct counts n;
    struct cs s;
    rl_config cfg;
    rl_client *c = NULL;
    rl_status st;
    redisContext *truth = NULL;
    int log_fd = -1;
    int64_t t_end;
    long done = 0;
    int rc = 1;

    if (argc == 2 && strcmp(argv[1], "--now") == 0) {
        printf("%" PRId64 "\n", mono_ns());
        return 0;
    }
    if (parse_opts(argc, argv, &o) != 0)
        return 2;
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    signal(SIGPIPE, SIG_IGN);
    rng_state = (uint64_t)mono_ns() ^ ((uint64_t)getpid() << 32) ^
                (uint64_t)o.id * UINT64_C(0x9E3779B97F4A7C15);
    if (rng_state == 0)
        rng_state = 1;
    memset(&n, 0, sizeof(n));

    log_fd = open(o.log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
                  0644);
    if (log_fd < 0) {
        perror(o.log_path);
        goto out_free;
    }
    truth = truth_connect(&o);
    if (truth == NULL)
        goto out_free;

    rl_config_init(&cfg);
    cfg.nodes = (const char *const *)o.nodes;
    cfg.node_count = o.node_count;
    cfg.max_ttl_ms = o.max_ttl_ms;
    cfg.trust_restarted_nodes = o.no_quarantine;
    cfg.no_clock_guard = o.no_clock_guard;
    cfg.allow_evicting_nodes = o.allow_evicting;
    cfg.tls_ca_file = o.cacert;
    c = rl_client_new(&cfg, &st);
    if (c == NULL) {
        fprintf(stderr, "contender %d: rl_client_new: %s: %s\n", o.id,
                rl_status_name(st), rl_last_error());
        goto out_free;
    }

    memset(&s, 0, sizeof(s));
    s.c = c;
    s.o = &o;
    s.n = &n;
    s.truth = truth;
    s.log_fd = log_fd;
    t_end = mono_ns() + (int64_t)(o.duration_s * 1e9);
    while (!stop_requested && mono_ns() < t_end &&
           (o.cycles == 0 || done < o.cycles)) {
        run_cycle(c, &s);
        done++;
        if (o.idle_max_ms > 0)
            sleep_ms(rnd_between(0, o.idle_max_ms));
    }
    rc = 0;

out_free:
    printf("{\"id\": %d, \"mode\": \"%s\", \"attempts\": %" PRIu64
           ", \"acquired\": %" PRIu64 ", \"completed\": %" PRIu64
           ", \"lost\": %" PRIu64 ", \"expired\": %" PRIu64
           ", \"not_acquired\": %" PRIu64 ", \"no_quorum\": %" PRIu64
           ", \"other_errors\": %" PRIu64 ", \"late_writes\": %" PRIu64
           ", \"fence_accepted\": %" PRIu64 ", \"fence_rejected\": %" PRIu64
           ", \"release_errors\": %" PRIu64 ", \"ok\": %s}\n",
           o.id, mode_names[o.mode],
           n.attempts, n.acquired, n.completed, n.lost, n.expired,
           n.not_acquired, n.no_quorum, n.other_errors, n.late_writes,
           n.fence_accepted, n.fence_rejected, n.release_errors,
           rc == 0 ? "true" : "false");
    fflush(stdout);
    rl_client_free(c);
    redisFree(truth);
    if (log_fd >= 0)
        close(log_fd);
    free(o.nodes_buf);
    free(o.resources_buf);
    return rc;
}
