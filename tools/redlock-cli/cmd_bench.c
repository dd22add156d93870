/* SPDX-License-Identifier: BSD-3-Clause */
/* cmd_bench.c -- "redlock-cli bench": the built-in load generator. What
 * only tools/bench-compare.sh needs (the fan-out floor, a node's restart)
 * is tools/bench/redlock-bench, which shares bench_common.c with this
 * file.
 *
 * Phases:
 *   a  sequential acquire+release on fresh resources (one in flight):
 *      cycles/s and acquire/release/cycle latency percentiles;
 *   b  N cycles in flight (--concurrency, default 1,16,64,256), each slot
 *      cycling on its own resource: cycles/s, cycle percentiles, client
 *      CPU per cycle (getrusage) and server CPU per cycle (INFO cpu);
 *   c  --contenders threads (default 2, then 8) fighting for one resource,
 *      each holding it for --hold ms: acquisitions/s, hand-offs/s (the
 *      next holder is another contender), wait and hand-off percentiles,
 *      each contender's share with Jain's fairness index, and an overlap
 *      count that must be 0;
 *   f  memory: RSS of a fresh client (its baseline), then RSS with
 *      --locks (10 000) locks held minus RSS with none: bytes per lock;
 *   watched (--watched N): N locks held with the watchdog
 *      (auto_extend, acquired F_INFLIGHT at a time), then renewed for
 *      --duration: renewals/s (rl_client_totals), client CPU per renewal
 *      (getrusage over the renewal window only), server CPU per renewal
 *      (INFO cpu), bytes per held lock (RSS before and after acquiring)
 *      and the number of locks lost;
 *   k  lock kinds: s, a semaphore with K permits (K = 1, 4,
 *      16) cycled by K slots at once on one resource (acquire with limit
 *      K + release: cycles/s); r, 8 slots cycling readers of one
 *      read-write lock; h, one writer and 8 reader threads on one
 *      resource, each holding --hold ms: the writer's acquisitions/s and
 *      wait (its hand-off from the readers) percentiles.
 * Phases d (node counts) and e (degraded nodes) are phases a/b run again
 * by the script on other node lists, told apart with --label.
 *
 * Phases a, b and f use the async API: the slots' callbacks run on the
 * library's loop thread and chain the next operation themselves; the main
 * thread only starts the slots, sleeps for --duration, raises the stop
 * flag and waits (mutex + condition) for every slot to drain. Phase c
 * uses the blocking API from one thread per contender, because holding
 * the lock means sleeping, which a loop-thread callback must not do.
 * Latency samples are µs on CLOCK_MONOTONIC, kept under a mutex.
 *
 * What the library does not expose (server CPU) goes through direct
 * connections (bench_common.c), which reach each node as the library
 * does, from its URI parsed by the library (rl_uri_parse). */
#include <malloc.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "cli.h"

#define MAX_CONCURRENCY 4096
#define MAX_CONTENDERS 1024
#define MAX_LIST 32
#define MAX_LOCKS 1000000
#define F_INFLIGHT 256          /* phase f: acquisitions in flight */

static const char usage[] =
"Usage: redlock-cli [GLOBAL OPTIONS] bench [OPTIONS]\n"
"\n"
"Load generator on resources named bench:<pid>:... (released afterwards).\n"
"\n"
"  --phases LIST        any of a,b,c,f,k (a,b,c)\n"
"                       a: sequential acquire+release on fresh resources\n"
"                       b: N cycles in flight, one resource per slot\n"
"                       c: contenders on one resource, holding --hold ms\n"
"                       f: memory, RSS per held lock and per client\n"
"                       k: lock kinds: semaphore K=1,4,16 (s), readers\n"
"                          (r), a writer among 8 readers (h)\n"
"  --concurrency LIST   in-flight levels for phase b (1,16,64,256)\n"
"  --duration S         seconds per measurement, may be fractional (3)\n"
"  --ttl MS             lock TTL (%{ttl})\n"
"  --hold MS            phase c: time each holder keeps the lock (1)\n"
"  --contenders LIST    phase c: numbers of contenders (2,8)\n"
"  --locks N            phase f: locks held at once (10000)\n"
"  --label TEXT         copied into every JSON object (e.g. which setup)\n"
"  --owner S            phases a and b, --watched: store S with every lock\n"
"                       (rl_acquire_opts.owner), to measure what it costs\n"
"  --fair               phases a, b and c: acquire with rl_acquire_opts.fair\n"
"                       (wait in the resource's queue), to compare\n"
"  --fence              phases a and b: acquire with fencing\n"
"                       (rl_acquire_opts.fencing), to measure what it\n"
"                       costs (tools/fence-footprint.sh: what it leaves)\n"
"  --watched N          instead of the phases: hold N locks with the\n"
"                       watchdog for --duration and report renewals/s,\n"
"                       client and server CPU per renewal, bytes per held\n"
"                       lock, locks lost and acquires refused because the\n"
"                       watchdog was behind (--ttl sets their TTL)\n"
"\n"
"Output: a table, or with --json one object per measurement per line:\n"
"phase, label, nodes, concurrency, duration_s, cycles, cycles_per_s,\n"
"acquire_us, release_us, cycle_us ({p50,p90,p99,max}), cpu_us_per_cycle,\n"
"server_cpu_us_per_cycle (INFO cpu of the nodes that answered, summed),\n"
"failures; phase c adds contenders, hold_ms, acquisitions_per_s,\n"
"handoffs_per_s, wait_us, handoff_us, shares, fairness and overlaps;\n"
"phase f adds locks, bytes_per_lock, resource_bytes, baseline_rss_kb.\n"
"Phase k: phases s (concurrency = K), r and h; h adds readers and\n"
"reader_cycles_per_s (cycles and acquire_us are the writer's).\n"
"--watched: phase \"watched\", locks, ttl_ms, duration_s, acquire_s,\n"
"renewals, renewals_per_s, cpu_us_per_renewal, server_cpu_us_per_renewal,\n"
"bytes_per_lock (RSS), heap_bytes_per_lock (heap in use), resource_bytes,\n"
"lost (all lost callbacks), lost_in_window, due_per_s (renewals the held\n"
"locks need: one per ttl/3), refused (acquires refused with RL_EOVERLOAD:\n"
"the watchdog was behind), waiting_max (largest backlog of due renewals\n"
"seen, sampled once a second), failures. Past the nodes' capacity (the\n"
"knee) renewals/s stays below due_per_s and watched acquires are refused.\n"
"Phase c's hand-off speed depends on --retry-delay and --retry-jitter.\n"
"Exit: 0, 2 usage, 3 no quorum.\n"
"\n"
"Examples:\n"
"  redlock-cli bench --phases a --duration 5\n"
"  redlock-cli --json bench --phases b --concurrency 1,64 | jq .cycles_per_s\n"
"  redlock-cli --retry-delay 5 --retry-jitter 2 bench --phases c\n"
"  redlock-cli bench --watched 10000 --ttl 3000 --duration 10\n";

struct bench {
    rl_client *c;
    struct cli_opts *o;
    const char *label;
    const char *owner;          /* --owner: stored with every lock, or NULL */
    bool fair;                  /* --fair: phases a, b and c wait fair */
    bool fence;                 /* --fence: phases a and b are fenced */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_bool stop;
    int active;                 /* slots still running (mu) */
    char phase;
    uint32_t ttl_ms;
    uint32_t hold_ms;
    unsigned long seq;          /* fresh-resource counter (mu) */
    struct bench_samples acq;         /* all samples: mu */
    struct bench_samples rel;
    struct bench_samples cyc;
    struct bench_samples wait;
    struct bench_samples handoff;
    uint64_t cycles;            /* mu */
    uint64_t failures;          /* mu */
    uint64_t handoffs;          /* phase c (mu) */
    uint64_t overlaps;          /* phase c (mu) */
    int last_holder;            /* phase c (mu) */
    int holding;                /* phase c (mu) */
    uint64_t t_free;            /* phase c: mono µs the last release began */
    uint64_t *shares;           /* phase c: acquisitions per contender */
    uint32_t limit;             /* phase s: the semaphore's permits */
    uint64_t reader_cycles;     /* phase h (mu) */
    rl_uri **uris;              /* o->cfg.node_count parsed node URIs */
    /* phases f and watched ('w') */
    atomic_uint lost;           /* watched: lost callbacks */
    rl_lock **held;             /* locks held, f_target of them */
    size_t f_target;
    size_t f_next;              /* next lock index to acquire (mu) */
};

struct slot {
    struct bench *b;
    int idx;
    uint64_t t_acq;             /* mono µs: acquire sent */
    uint64_t t_rel;             /* mono µs: release sent */
    size_t f_idx;               /* phase f: index of the lock in flight */
    char res[96];
};

/* ---- Phases a, b and f: async slots ------------------------------------- */

static void slot_done(struct slot *s)
{
    struct bench *b = s->b;

    pthread_mutex_lock(&b->mu);
    b->active--;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

static void count_failure(struct bench *b)
{
    pthread_mutex_lock(&b->mu);
    b->failures++;
    pthread_mutex_unlock(&b->mu);
}

static void start_acquire(struct slot *s);

static void on_released(rl_client *c, rl_status st, void *privdata)
{
    struct slot *s = privdata;
    struct bench *b = s->b;
    uint64_t now = cli_mono_us();

    (void)c;
    pthread_mutex_lock(&b->mu);
    bench_samples_add(&b->rel, now - s->t_rel);
    bench_samples_add(&b->cyc, now - s->t_acq);
    b->cycles++;
    if (st != RL_OK)
        b->failures++;
    pthread_mutex_unlock(&b->mu);
    if (atomic_load(&b->stop))
        slot_done(s);
    else
        start_acquire(s);
}

/* Phase f: keep the lock and go on with the next index, if any. */
static void keep_lock(struct slot *s, rl_lock *lock)
{
    struct bench *b = s->b;

    b->held[s->f_idx] = lock;
    pthread_mutex_lock(&b->mu);
    b->cycles++;
    pthread_mutex_unlock(&b->mu);
    start_acquire(s);
}

static void on_acquired(rl_client *c, rl_status st, rl_lock *lock,
                        void *privdata)
{
    struct slot *s = privdata;
    struct bench *b = s->b;
    uint64_t now = cli_mono_us();

    (void)c;
    if (st != RL_OK) {
        count_failure(b);
        if (atomic_load(&b->stop) || st == RL_ECANCELED)
            slot_done(s);
        else
            start_acquire(s);
        return;
    }
    if (b->phase == 'f' || b->phase == 'w') {
        keep_lock(s, lock);
        return;
    }
    pthread_mutex_lock(&b->mu);
    bench_samples_add(&b->acq, now - s->t_acq);
    pthread_mutex_unlock(&b->mu);
    s->t_rel = cli_mono_us();
    if (rl_release_async(lock, on_released, s) != RL_OK) {
        rl_lock_free(lock);
        count_failure(b);
        slot_done(s);
    }
}

static void on_lost(rl_lock *l, void *privdata)
{
    struct bench *b = privdata;

    (void)l;
    atomic_fetch_add(&b->lost, 1);
}

static void start_acquire(struct slot *s)
{
    struct bench *b = s->b;
    rl_acquire_opts ao;

    memset(&ao, 0, sizeof(ao));
    ao.ttl_ms = b->ttl_ms;
    ao.owner = b->owner;
    ao.fair = b->fair && (b->phase == 'a' || b->phase == 'b');
    ao.fencing = b->fence && (b->phase == 'a' || b->phase == 'b');
    if (b->phase == 'w') {
        ao.auto_extend = true;
        ao.lost_cb = on_lost;
        ao.lost_privdata = b;
    }
    if (b->phase == 's') {
        ao.limit = b->limit;
        ao.wait_ms = 1000;
    }
    if (b->phase == 'r')
        ao.mode = RL_MODE_SHARED;
    if (b->phase == 'a') {
        pthread_mutex_lock(&b->mu);
        snprintf(s->res, sizeof(s->res), "bench:%ld:a:%lu", (long)getpid(),
                 b->seq++);
        pthread_mutex_unlock(&b->mu);
    } else if (b->phase == 'f' || b->phase == 'w') {
        bool more;

        pthread_mutex_lock(&b->mu);
        more = b->f_next < b->f_target && !atomic_load(&b->stop);
        s->f_idx = b->f_next;
        if (more)
            b->f_next++;
        pthread_mutex_unlock(&b->mu);
        if (!more) {
            slot_done(s);
            return;
        }
        snprintf(s->res, sizeof(s->res), "bench:%ld:%c:%zu", (long)getpid(),
                 b->phase, s->f_idx);
    }
    s->t_acq = cli_mono_us();
    if (rl_acquire_async(b->c, s->res, &ao, on_acquired, s) != RL_OK) {
        count_failure(b);
        slot_done(s);
    }
}

/* ---- Phase c: contenders ------------------------------------------------ */

/* One blocking acquire of a contender (phases c and h), timed: *t0 before
 * it, *t1 after. */
static rl_status timed_acquire(struct slot *s, const rl_acquire_opts *ao,
                               rl_lock **l, uint64_t *t0, uint64_t *t1)
{
    rl_status st;

    *t0 = cli_mono_us();
    st = rl_acquire(s->b->c, s->res, ao, l);
    *t1 = cli_mono_us();
    return st;
}

/* After a contender's failed acquire: a short pause when the nodes are
 * unreachable or the client is closing, rather than trying again at once. */
static void back_off(rl_status st)
{
    if (st == RL_ENOQUORUM || st == RL_ECANCELED)
        usleep(10000);
}

static void *contender(void *arg)
{
    struct slot *s = arg;
    struct bench *b = s->b;
    rl_acquire_opts ao;
    rl_lock *l;
    rl_status st;
    uint64_t t0, t1, t2;

    memset(&ao, 0, sizeof(ao));
    ao.ttl_ms = b->ttl_ms;
    ao.wait_ms = 1000;
    ao.fair = b->fair;
    while (!atomic_load(&b->stop)) {
        st = timed_acquire(s, &ao, &l, &t0, &t1);
        if (st != RL_OK) {
            if (st != RL_ENOTACQUIRED || !atomic_load(&b->stop))
                count_failure(b);
            back_off(st);
            continue;
        }
        pthread_mutex_lock(&b->mu);
        if (b->holding >= 0)
            b->overlaps++;
        b->holding = s->idx;
        if (b->last_holder >= 0 && b->last_holder != s->idx) {
            b->handoffs++;
            /* From the moment the previous holder began its release to
             * the moment this one has the lock. */
            if (b->t_free != 0 && t1 >= b->t_free)
                bench_samples_add(&b->handoff, t1 - b->t_free);
        }
        b->last_holder = s->idx;
        b->shares[s->idx]++;
        bench_samples_add(&b->wait, t1 - t0);
        bench_samples_add(&b->acq, t1 - t0);
        pthread_mutex_unlock(&b->mu);
        bench_sleep_s(b->hold_ms / 1000.0);
        t2 = cli_mono_us();
        pthread_mutex_lock(&b->mu);
        b->holding = -1;
        b->t_free = t2;
        pthread_mutex_unlock(&b->mu);
        st = rl_release(l);
        pthread_mutex_lock(&b->mu);
        bench_samples_add(&b->rel, cli_mono_us() - t2);
        bench_samples_add(&b->cyc, cli_mono_us() - t0);
        b->cycles++;
        if (st != RL_OK)
            b->failures++;
        pthread_mutex_unlock(&b->mu);
    }
    return NULL;
}

/* ---- Phase h: a writer among readers ------------------------------------ */

/* Slot 0 is the writer, the others readers, all on one resource, each
 * holding --hold ms per cycle. The writer's waits are its hand-offs. */
static void *rw_contender(void *arg)
{
    struct slot *s = arg;
    struct bench *b = s->b;
    bool writer = s->idx == 0;
    rl_acquire_opts ao;
    rl_lock *l;
    rl_status st;
    uint64_t t0, t1;

    memset(&ao, 0, sizeof(ao));
    ao.ttl_ms = b->ttl_ms;
    ao.wait_ms = 5000;
    ao.mode = writer ? RL_MODE_EXCLUSIVE : RL_MODE_SHARED;
    while (!atomic_load(&b->stop)) {
        st = timed_acquire(s, &ao, &l, &t0, &t1);
        if (st != RL_OK) {
            if (!atomic_load(&b->stop))
                count_failure(b);
            back_off(st);
            continue;
        }
        bench_sleep_s(b->hold_ms / 1000.0);
        st = rl_release(l);
        pthread_mutex_lock(&b->mu);
        if (writer) {
            bench_samples_add(&b->acq, t1 - t0);
            bench_samples_add(&b->cyc, cli_mono_us() - t0);
            b->cycles++;
        } else {
            b->reader_cycles++;
        }
        if (st != RL_OK)
            b->failures++;
        pthread_mutex_unlock(&b->mu);
    }
    return NULL;
}

/* ---- Measurements -------------------------------------------------------- */

static uint64_t cpu_us(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)ru.ru_utime.tv_sec * 1000000u +
           (uint64_t)ru.ru_utime.tv_usec +
           (uint64_t)ru.ru_stime.tv_sec * 1000000u +
           (uint64_t)ru.ru_stime.tv_usec;
}

/* VmRSS of this process in kB, 0 when unknown. */
static uint64_t rss_kb(void)
{
    char line[256];
    uint64_t kb = 0;
    FILE *f;

    f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kb = strtoull(line + 6, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb;
}

/* Bytes of heap in use (glibc's mallinfo2), 0 when unknown: what the
 * process keeps, without the allocator's slack that RSS also counts. */
static uint64_t heap_in_use(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
    struct mallinfo2 mi = mallinfo2();

    return (uint64_t)mi.uordblks + (uint64_t)mi.hblkhd;
#else
    return 0;
#endif
}

/* used_cpu_sys + used_cpu_user of each node; ok[i] says which answered.
 * A stopped node costs BENCH_DIRECT_TIMEOUT_MS here. */
static void server_cpu(struct bench *b, double *cpu_s, bool *ok)
{
    static bool told;
    size_t i;

    for (i = 0; i < b->o->cfg.node_count; i++) {
        ok[i] = bench_node_cpu(b->o, b->uris[i], &cpu_s[i]) == 0;
        if (!ok[i] && bench_direct_is_tls(b->o, b->uris[i]) && !told) {
            told = true;
            fprintf(stderr, "redlock-cli: bench: server CPU is not "
                            "measured on TLS nodes (plaintext INFO only)\n");
        }
    }
}

/* Server CPU seconds summed over the nodes that answered both times. */
static double server_cpu_delta(struct bench *b, const double *s0,
                               const bool *ok0)
{
    size_t nn = b->o->cfg.node_count, i;
    double *s1 = calloc(nn, sizeof(*s1));
    bool *ok1 = calloc(nn, sizeof(*ok1));
    double srv = -1;

    if (s1 != NULL && ok1 != NULL) {
        server_cpu(b, s1, ok1);
        for (i = 0; i < nn; i++) {
            if (!ok0[i] || !ok1[i])
                continue;
            srv = (srv < 0 ? 0 : srv) + (s1[i] - s0[i]) * 1e6;
        }
    }
    free(s1);
    free(ok1);
    return srv;
}

static void reset(struct bench *b)
{
    free(b->acq.v);
    free(b->rel.v);
    free(b->cyc.v);
    free(b->wait.v);
    free(b->handoff.v);
    memset(&b->acq, 0, sizeof(b->acq));
    memset(&b->rel, 0, sizeof(b->rel));
    memset(&b->cyc, 0, sizeof(b->cyc));
    memset(&b->wait, 0, sizeof(b->wait));
    memset(&b->handoff, 0, sizeof(b->handoff));
    b->cycles = 0;
    b->failures = 0;
    b->handoffs = 0;
    b->overlaps = 0;
    b->reader_cycles = 0;
    b->last_holder = -1;
    b->holding = -1;
    b->t_free = 0;
    atomic_store(&b->stop, false);
}

/* Wait up to 30 s for every slot to finish. 0, or -2 when some are stuck
 * (their memory must then not be freed). */
static int drain(struct bench *b)
{
    struct timespec until;
    int left;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    pthread_mutex_lock(&b->mu);
    while (b->active > 0) {
        if (pthread_cond_timedwait(&b->cv, &b->mu, &until) != 0)
            break;
    }
    left = b->active;
    pthread_mutex_unlock(&b->mu);
    return left > 0 ? -2 : 0;
}

/* Run one measurement of phase a/b (n slots) or c (n contenders). */
static int measure(struct bench *b, char phase, int n, double duration)
{
    struct slot *slots;
    pthread_t *threads = NULL;
    int started = 0;
    int i;

    slots = calloc((size_t)n, sizeof(*slots));
    if (slots == NULL)
        return -1;
    reset(b);
    b->phase = phase;
    b->active = n;
    for (i = 0; i < n; i++) {
        slots[i].b = b;
        slots[i].idx = i;
        if (phase == 'c' || phase == 's' || phase == 'r' || phase == 'h')
            snprintf(slots[i].res, sizeof(slots[i].res), "bench:%ld:%c%d",
                     (long)getpid(), phase, n);
        else
            snprintf(slots[i].res, sizeof(slots[i].res), "bench:%ld:%c%d:%d",
                     (long)getpid(), phase, n, i);
    }
    if (phase == 'c' || phase == 'h') {
        free(b->shares);
        b->shares = calloc((size_t)n, sizeof(*b->shares));
        threads = calloc((size_t)n, sizeof(*threads));
        if (threads == NULL || b->shares == NULL) {
            free(threads);
            free(slots);
            return -1;
        }
        for (i = 0; i < n; i++) {
            if (pthread_create(&threads[i], NULL,
                               phase == 'h' ? rw_contender : contender,
                               &slots[i]) != 0)
                break;
            started++;
        }
        bench_sleep_s(duration);
        atomic_store(&b->stop, true);
        for (i = 0; i < started; i++)
            pthread_join(threads[i], NULL);
        free(threads);
        free(slots);
        return 0;
    }
    for (i = 0; i < n; i++)
        start_acquire(&slots[i]);
    bench_sleep_s(duration);
    atomic_store(&b->stop, true);
    if (drain(b) != 0)
        return -2;
    free(slots);
    return 0;
}

/* Jain's fairness index of the shares: 1 = perfectly even, 1/n = one
 * contender got everything. */
static double fairness(const uint64_t *x, int n)
{
    double sum = 0;
    double sq = 0;
    int i;

    for (i = 0; i < n; i++) {
        sum += (double)x[i];
        sq += (double)x[i] * (double)x[i];
    }
    return sq > 0 ? sum * sum / ((double)n * sq) : 0;
}

static void report(struct bench *b, char phase, int n, double elapsed_s,
                   uint64_t cpu, double srv_cpu_us, bool header)
{
    struct cli_opts *o = b->o;
    double per_s = elapsed_s > 0 ? (double)b->cycles / elapsed_s : 0;
    double cpu_per = b->cycles > 0 ? (double)cpu / (double)b->cycles : 0;
    double srv_per = b->cycles > 0 && srv_cpu_us >= 0
                         ? srv_cpu_us / (double)b->cycles : -1;
    uint64_t a[4], r[4], c[4], w[4], h[4];
    int i;

    if (o->json) {
        printf("{\"phase\":\"%c\",\"label\":", phase);
        cli_json_str(stdout, b->label);
        printf(",\"nodes\":%zu,\"concurrency\":%d,"
               "\"duration_s\":%.3f,\"cycles\":%" PRIu64 ",\"cycles_per_s\":"
               "%.1f", o->cfg.node_count, n, elapsed_s, b->cycles, per_s);
        bench_json_pct("acquire_us", &b->acq);
        bench_json_pct("release_us", &b->rel);
        bench_json_pct("cycle_us", &b->cyc);
        printf(",\"cpu_us_per_cycle\":%.2f", cpu_per);
        if (srv_per >= 0)
            printf(",\"server_cpu_us_per_cycle\":%.2f", srv_per);
        else
            printf(",\"server_cpu_us_per_cycle\":null");
        printf(",\"failures\":%" PRIu64, b->failures);
        if (phase == 'c') {
            printf(",\"contenders\":%d,\"hold_ms\":%u,\"acquisitions_per_s\":"
                   "%.1f,\"handoffs_per_s\":%.1f,\"overlaps\":%" PRIu64, n,
                   b->hold_ms, per_s,
                   elapsed_s > 0 ? (double)b->handoffs / elapsed_s : 0,
                   b->overlaps);
            bench_json_pct("wait_us", &b->wait);
            bench_json_pct("handoff_us", &b->handoff);
            printf(",\"shares\":[");
            for (i = 0; i < n; i++)
                printf("%s%" PRIu64, i > 0 ? "," : "", b->shares[i]);
            printf("],\"fairness\":%.3f", fairness(b->shares, n));
        }
        if (phase == 'h')
            printf(",\"readers\":%d,\"reader_cycles_per_s\":%.1f", n - 1,
                   elapsed_s > 0 ? (double)b->reader_cycles / elapsed_s : 0);
        if (phase == 's')
            printf(",\"limit\":%u", b->limit);
        fputs("}\n", stdout);
        fflush(stdout);
        return;
    }
    bench_percentiles(&b->acq, a);
    bench_percentiles(&b->rel, r);
    bench_percentiles(&b->cyc, c);
    bench_percentiles(&b->wait, w);
    bench_percentiles(&b->handoff, h);
    if (header)
        printf("%-5s %5s %10s %8s %8s %8s %8s %8s %8s %9s %7s %7s %5s\n",
               "PHASE", "CONC", "CYCLES/S", "ACQ_P50", "ACQ_P99", "REL_P50",
               "CYC_P50", "CYC_P90", "CYC_P99", "CYC_MAX", "CPU_US",
               "SRV_US", "FAIL");
    printf("%-5c %5d %10.1f %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64
           " %8" PRIu64 " %8" PRIu64 " %9" PRIu64 " %7.1f %7.1f %5" PRIu64
           "\n", phase, n, per_s, a[0], a[2], r[0], c[0], c[1], c[2], c[3],
           cpu_per, srv_per, b->failures);
    if (phase == 'c')
        printf("      c: %d contenders, hold %u ms: %.1f acquisitions/s, "
               "%.1f hand-offs/s, wait p50 %" PRIu64 " p99 %" PRIu64
               " max %" PRIu64 " us, hand-off p50 %" PRIu64 " p99 %" PRIu64
               " us, fairness %.3f, overlaps %" PRIu64 "\n", n, b->hold_ms,
               per_s, elapsed_s > 0 ? (double)b->handoffs / elapsed_s : 0,
               w[0], w[2], w[3], h[0], h[2], fairness(b->shares, n),
               b->overlaps);
    if (phase == 'h')
        printf("      h: 1 writer among %d readers, hold %u ms: %.1f writer "
               "acquisitions/s, wait p50 %" PRIu64 " p99 %" PRIu64 " us, "
               "%.1f reader cycles/s\n", n - 1, b->hold_ms, per_s, a[0],
               a[2], elapsed_s > 0 ? (double)b->reader_cycles / elapsed_s
                                   : 0);
    fflush(stdout);
}

/* One measurement of phase a, b or c with its CPU accounting. */
static int run_one(struct bench *b, char phase, int n, double duration,
                   bool header)
{
    size_t nn = b->o->cfg.node_count;
    double *s0 = calloc(nn, sizeof(*s0));
    bool *ok0 = calloc(nn, sizeof(*ok0));
    uint64_t t0, cpu0, t1, cpu1;
    int r;

    if (s0 == NULL || ok0 == NULL) {
        free(s0);
        free(ok0);
        return -1;
    }
    server_cpu(b, s0, ok0);
    t0 = cli_mono_us();
    cpu0 = cpu_us();
    r = measure(b, phase, n, duration);
    t1 = cli_mono_us();
    cpu1 = cpu_us();
    if (r == 0)
        report(b, phase, n, (double)(t1 - t0) / 1e6, cpu1 - cpu0,
               server_cpu_delta(b, s0, ok0), header);
    free(s0);
    free(ok0);
    return r;
}

/* ---- Phase f: memory ----------------------------------------------------- */

/* Start `slots` async slots of phase f (or watched: 'w') and wait until
 * they finish. */
static int f_round(struct bench *b, struct slot *slots, int nslots,
                   char phase)
{
    int i;

    reset(b);
    b->phase = phase;
    b->active = nslots;
    b->f_next = 0;
    for (i = 0; i < nslots; i++) {
        slots[i].b = b;
        slots[i].idx = i;
    }
    for (i = 0; i < nslots; i++)
        start_acquire(&slots[i]);
    return drain(b);
}

static void on_f_released(rl_client *c, rl_status st, void *privdata)
{
    struct bench *b = privdata;

    (void)c;
    pthread_mutex_lock(&b->mu);
    if (st != RL_OK)
        b->failures++;
    b->active--;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

/* Release every lock in b->held, F_INFLIGHT at a time. */
static int f_release_all(struct bench *b)
{
    size_t i;

    for (i = 0; i < b->f_target; i++) {
        rl_lock *l = b->held[i];

        if (l == NULL)
            continue;
        b->held[i] = NULL;
        pthread_mutex_lock(&b->mu);
        while (b->active >= F_INFLIGHT)
            pthread_cond_wait(&b->cv, &b->mu);
        b->active++;
        pthread_mutex_unlock(&b->mu);
        if (rl_release_async(l, on_f_released, b) != RL_OK) {
            rl_lock_free(l);
            pthread_mutex_lock(&b->mu);
            b->active--;
            b->failures++;
            pthread_mutex_unlock(&b->mu);
        }
    }
    return drain(b);
}

/* RSS of a fresh client (its baseline), then of the same client holding
 * b->f_target locks minus holding none. */
static int phase_f(struct bench *b)
{
    struct cli_opts *o = b->o;
    struct slot *slots;
    rl_client *main_c = b->c;
    uint64_t rss_before, rss_client, rss0, rss1, t0, t1;
    size_t namelen;
    size_t target;
    int code = 0;
    char name[96];

    slots = calloc(F_INFLIGHT, sizeof(*slots));
    b->held = calloc(b->f_target, sizeof(*b->held));
    if (slots == NULL || b->held == NULL) {
        free(slots);
        free(b->held);
        b->held = NULL;
        return -1;
    }
    /* Touch the lock array now so it is part of the baseline. */
    memset(b->held, 0, b->f_target * sizeof(*b->held));
    rss_before = rss_kb();
    code = cli_client_new(o, &b->c);
    if (code != CLI_EXIT_OK) {
        b->c = main_c;
        free(slots);
        free(b->held);
        b->held = NULL;
        return code;
    }
    rss_client = rss_kb();
    /* Warm-up: F_INFLIGHT locks taken at once and released, so that the
     * buffers the traffic itself grows count in the baseline. Their freed
     * memory is reused below: the figure is low by about
     * F_INFLIGHT / f_target. */
    target = b->f_target;
    b->f_target = target < F_INFLIGHT ? target : F_INFLIGHT;
    if (f_round(b, slots, F_INFLIGHT, 'f') != 0 || f_release_all(b) != 0) {
        code = -2;
        goto out;
    }
    b->f_target = target;
    rss0 = rss_kb();
    t0 = cli_mono_us();
    if (f_round(b, slots, F_INFLIGHT, 'f') != 0) {
        code = -2;
        goto out;
    }
    t1 = cli_mono_us();
    rss1 = rss_kb();
    snprintf(name, sizeof(name), "bench:%ld:f:%zu", (long)getpid(),
             b->f_target / 2);
    namelen = strlen(name);
    if (o->json) {
        printf("{\"phase\":\"f\",\"label\":");
        cli_json_str(stdout, b->label);
        printf(",\"nodes\":%zu,\"concurrency\":%d,\"duration_s\":%.3f,"
               "\"cycles\":%" PRIu64 ",\"cycles_per_s\":%.1f,"
               "\"failures\":%" PRIu64 ",\"locks\":%zu,\"held\":%" PRIu64
               ",\"rss_kb_no_locks\":%" PRIu64 ",\"rss_kb_held\":%" PRIu64
               ",\"bytes_per_lock\":%.1f,\"resource_bytes\":%zu,"
               "\"baseline_rss_kb\":%" PRIu64 ",\"process_rss_kb\":%" PRIu64
               "}\n", o->cfg.node_count, F_INFLIGHT, (double)(t1 - t0) / 1e6,
               b->cycles, t1 > t0 ? (double)b->cycles * 1e6 /
               (double)(t1 - t0) : 0, b->failures, b->f_target, b->cycles,
               rss0, rss1, b->cycles > 0 ? (double)(rss1 - rss0) * 1024.0 /
               (double)b->cycles : 0, namelen, rss_client - rss_before,
               rss_before);
    } else {
        printf("f: %" PRIu64 " locks held: RSS %" PRIu64 " kB -> %" PRIu64
               " kB, %.1f bytes per lock (resource names ~%zu bytes); "
               "client baseline %" PRIu64 " kB; failures %" PRIu64 "\n",
               b->cycles, rss0, rss1, b->cycles > 0
               ? (double)(rss1 - rss0) * 1024.0 / (double)b->cycles : 0,
               namelen, rss_client - rss_before, b->failures);
    }
    fflush(stdout);
    if (f_release_all(b) != 0)
        code = -2;

out:
    if (code == -2)
        _exit(CLI_EXIT_NO_QUORUM);  /* callbacks may still use the slots */
    rl_client_free(b->c);
    b->c = main_c;
    free(slots);
    free(b->held);
    b->held = NULL;
    return code;
}

/* ---- Watched: N locks renewed by the watchdog ---------------------------- */

/* The client's totals; zeroes when they cannot be read. */
static rl_totals stats_now(const struct bench *b)
{
    rl_totals st;

    if (rl_client_totals(b->c, &st) != RL_OK)
        memset(&st, 0, sizeof(st));
    return st;
}

/* Sleep for the measurement window, sampling the watchdog's backlog
 * once a second; the largest backlog seen. */
static uint64_t watch_window(const struct bench *b, double duration)
{
    uint64_t end = cli_mono_us() + (uint64_t)(duration * 1e6), now, most = 0;

    while ((now = cli_mono_us()) < end) {
        uint64_t waiting = stats_now(b).renewals_waiting;

        if (waiting > most)
            most = waiting;
        bench_sleep_s(end - now < 1000000 ? (double)(end - now) / 1e6 : 1.0);
    }
    return most;
}

/* Acquire `locks` watched locks, measure --duration of renewals, release
 * them all. */
static int phase_watched(struct bench *b, uint32_t locks, double duration)
{
    struct cli_opts *o = b->o;
    size_t nn = o->cfg.node_count;
    struct slot *slots = calloc(F_INFLIGHT, sizeof(*slots));
    double *s0 = calloc(nn, sizeof(*s0));
    bool *ok0 = calloc(nn, sizeof(*ok0));
    rl_totals st;
    uint64_t rss0, rss1, heap0, heap1, t0, t1, t2, cpu1, cpu2, r1, r2, held;
    uint64_t waiting_max, lost1, t_acq;
    double srv, secs, per_s, due_per_s, cpu_per, srv_per, bytes, heap_bytes;
    int code = 0;
    char name[96];

    b->f_target = locks;
    b->held = calloc(locks, sizeof(*b->held));
    if (slots == NULL || s0 == NULL || ok0 == NULL || b->held == NULL) {
        code = -1;
        goto out;
    }
    memset(b->held, 0, locks * sizeof(*b->held));
    atomic_store(&b->lost, 0);
    rss0 = rss_kb();
    heap0 = heap_in_use();
    t0 = cli_mono_us();
    if (f_round(b, slots, F_INFLIGHT, 'w') != 0)
        _exit(CLI_EXIT_NO_QUORUM); /* callbacks may still use the slots */
    held = b->cycles;
    t_acq = cli_mono_us();
    rss1 = rss_kb();
    heap1 = heap_in_use();
    /* Half a renewal interval (ttl/6) first: locks acquired together are
     * renewed in rounds, and a window whose edges fall between rounds
     * counts whole rounds (starting at once, it missed one in five). */
    bench_sleep_s((double)b->ttl_ms / 6000.0);
    server_cpu(b, s0, ok0);
    r1 = stats_now(b).renewals;
    lost1 = atomic_load(&b->lost);
    t1 = cli_mono_us();
    cpu1 = cpu_us();
    waiting_max = watch_window(b, duration);
    t2 = cli_mono_us();
    cpu2 = cpu_us();
    st = stats_now(b);
    r2 = st.renewals;
    srv = server_cpu_delta(b, s0, ok0);
    secs = (double)(t2 - t1) / 1e6;
    per_s = secs > 0 ? (double)(r2 - r1) / secs : 0;
    /* What the held locks need: one renewal per lock per ttl/3. */
    due_per_s = (double)(held - lost1) * 3000.0 / (double)b->ttl_ms;
    cpu_per = r2 > r1 ? (double)(cpu2 - cpu1) / (double)(r2 - r1) : 0;
    srv_per = r2 > r1 && srv >= 0 ? srv / (double)(r2 - r1) : -1;
    bytes = held > 0 && rss1 > rss0
                ? (double)(rss1 - rss0) * 1024.0 / (double)held : 0;
    heap_bytes = held > 0 && heap1 > heap0
                     ? (double)(heap1 - heap0) / (double)held : 0;
    snprintf(name, sizeof(name), "bench:%ld:w:%u", (long)getpid(),
             locks / 2);
    if (o->json) {
        printf("{\"phase\":\"watched\",\"label\":");
        cli_json_str(stdout, b->label);
        printf(",\"nodes\":%zu,\"locks\":%" PRIu64 ",\"ttl_ms\":%u,"
               "\"duration_s\":%.3f,\"acquire_s\":%.3f,\"renewals\":%"
               PRIu64 ",\"renewals_per_s\":%.1f,\"cpu_us_per_renewal\":%.3f",
               nn, held, b->ttl_ms, secs, (double)(t_acq - t0) / 1e6, r2 - r1,
               per_s, cpu_per);
        if (srv_per >= 0)
            printf(",\"server_cpu_us_per_renewal\":%.3f", srv_per);
        else
            printf(",\"server_cpu_us_per_renewal\":null");
        printf(",\"bytes_per_lock\":%.1f,\"heap_bytes_per_lock\":%.1f,"
               "\"resource_bytes\":%zu,\"lost\":%u,\"lost_in_window\":%"
               PRIu64 ",\"due_per_s\":%.1f,\"refused\":%" PRIu64
               ",\"waiting_max\":%" PRIu64 ",\"failures\":%" PRIu64 "}\n",
               bytes, heap_bytes, strlen(name), atomic_load(&b->lost),
               atomic_load(&b->lost) - lost1, due_per_s, st.overload_refused,
               waiting_max, b->failures);
    } else {
        printf("watched: %" PRIu64 " locks, ttl %u ms, %.1f s: %.1f "
               "renewals/s (due %.1f), client CPU %.3f us/renewal, server "
               "CPU %.3f us/renewal, %.1f bytes per held lock (RSS; heap in "
               "use %.1f; resource names ~%zu bytes), %u lost (%" PRIu64
               " in the window), %" PRIu64 " refused (watchdog behind), "
               "at most %" PRIu64 " renewals waiting, %" PRIu64
               " failures\n", held, b->ttl_ms, secs, per_s, due_per_s,
               cpu_per, srv_per, bytes, heap_bytes, strlen(name),
               atomic_load(&b->lost), atomic_load(&b->lost) - lost1,
               st.overload_refused, waiting_max, b->failures);
    }
    fflush(stdout);
    if (f_release_all(b) != 0)
        _exit(CLI_EXIT_NO_QUORUM);

out:
    free(slots);
    free(s0);
    free(ok0);
    free(b->held);
    b->held = NULL;
    return code;
}

/* ---- Command ------------------------------------------------------------- */

/* Parse "1,16,64" into values in [lo, hi]. Returns the count, -1 on error. */
static int parse_list(const char *s, uint32_t lo, uint32_t hi, uint32_t *out,
                      int max)
{
    char buf[32];
    int n = 0;

    for (;;) {
        size_t len = strcspn(s, ",");

        if (len == 0 || len >= sizeof(buf) || n >= max)
            return -1;
        memcpy(buf, s, len);
        buf[len] = '\0';
        if (cli_parse_u32(buf, lo, hi, &out[n]) != 0)
            return -1;
        n++;
        if (s[len] == '\0')
            return n;
        s += len + 1;
    }
}

enum { P_A, P_B, P_C, P_F, P_K, P_COUNT };

/* Phase k: semaphores at K = 1, 4, 16 (phase s, K slots at
 * once), 8 readers (r), a writer among 8 readers (h). */
static int phase_kinds(struct bench *b, double duration, bool header)
{
    static const uint32_t limits[] = {1, 4, 16};
    size_t i;
    int r;

    for (i = 0; i < 3 + 2; i++) {
        char phase = i < 3 ? 's' : i == 3 ? 'r' : 'h';
        int n = i < 3 ? (int)limits[i] : i == 3 ? 8 : 9;

        b->limit = i < 3 ? limits[i] : 0;
        r = run_one(b, phase, n, duration, header);
        header = false;
        if (r != 0) {
            int code = cli_fail(b->o, CLI_EXIT_NO_QUORUM, "phase %c: %s",
                                phase, r == -1 ? "out of memory"
                                               : "operations did not finish");

            if (r == -2)
                _exit(code);    /* callbacks may still use the slots */
            return code;
        }
    }
    return 0;
}

/* "a,b,k" -> want[]. -1 on an unknown name. */
static int parse_phases(const char *s, bool want[P_COUNT])
{
    static const char *names[P_COUNT] = {"a", "b", "c", "f", "k"};
    int k;

    for (;;) {
        size_t len = strcspn(s, ",");

        for (k = 0; k < P_COUNT; k++) {
            if (strlen(names[k]) == len && strncmp(s, names[k], len) == 0)
                break;
        }
        if (k == P_COUNT)
            return -1;
        want[k] = true;
        if (s[len] == '\0')
            return 0;
        s += len + 1;
    }
}

int cmd_bench(struct cli_opts *o, int argc, char **argv)
{
    const char *phases_s = "a,b,c";
    const char *conc_s = "1,16,64,256";
    const char *cont_s = "2,8";
    const char *dur_s = NULL;
    const char *ttl_s = NULL;
    const char *hold_s = NULL;
    const char *locks_s = NULL;
    const char *label_s = "";
    const char *owner_s = NULL;
    const char *watched_s = NULL;
    bool fair = false;
    bool fence = false;
    const struct cli_cmdopt opts[] = {
        {"watched", &watched_s, NULL},
        {"phases", &phases_s, NULL},
        {"concurrency", &conc_s, NULL},
        {"duration", &dur_s, NULL},
        {"ttl", &ttl_s, NULL},
        {"hold", &hold_s, NULL},
        {"contenders", &cont_s, NULL},
        {"locks", &locks_s, NULL},
        {"label", &label_s, NULL},
        {"owner", &owner_s, NULL},
        {"fair", NULL, &fair},
        {"fence", NULL, &fence},
    };
    bool want[P_COUNT] = {false};
    uint32_t conc[MAX_LIST];
    uint32_t cont[MAX_LIST];
    int nconc, ncont;
    uint32_t locks = 10000;
    uint32_t watched = 0;
    double duration = 3.0;
    struct bench b;
    const char *pos[1];
    rl_node_info *ping = NULL;
    size_t count;
    size_t i;
    int measurements;
    int done = 0;
    bool header = true;
    int npos;
    int code;
    int k;

    memset(&b, 0, sizeof(b));
    b.o = o;
    b.ttl_ms = cli_default_ttl(o);
    b.hold_ms = 1;
    code = cli_parse_args(o, argc, argv, opts, sizeof(opts) / sizeof(opts[0]),
                          usage, pos, 0, &npos, NULL);
    if (code != 0)
        return code > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (parse_phases(phases_s, want) != 0)
        return cli_fail(o, CLI_EXIT_USAGE, "--phases: '%s' is not a list of "
                        "a, b, c, f, k", phases_s);
    nconc = parse_list(conc_s, 1, MAX_CONCURRENCY, conc, MAX_LIST);
    if (nconc < 0)
        return cli_fail(o, CLI_EXIT_USAGE, "--concurrency: '%s' is not a "
                        "list of numbers in 1..%d", conc_s, MAX_CONCURRENCY);
    ncont = parse_list(cont_s, 1, MAX_CONTENDERS, cont, MAX_LIST);
    if (ncont < 0)
        return cli_fail(o, CLI_EXIT_USAGE, "--contenders: '%s' is not a "
                        "list of numbers in 1..%d", cont_s, MAX_CONTENDERS);
    if (dur_s != NULL && cli_parse_double(dur_s, 0.01, 3600, &duration) != 0)
        return cli_fail(o, CLI_EXIT_USAGE, "--duration: '%s' is not a number "
                        "of seconds in 0.01..3600", dur_s);
    if (ttl_s != NULL && cli_parse_ttl(o, "--ttl", ttl_s, &b.ttl_ms) != 0)
        return CLI_EXIT_USAGE;
    if (hold_s != NULL && cli_parse_u32(hold_s, 0, 60000, &b.hold_ms) != 0)
        return cli_fail(o, CLI_EXIT_USAGE, "--hold: '%s' is not a number in "
                        "0..60000", hold_s);
    if (locks_s != NULL && cli_parse_u32(locks_s, 1, MAX_LOCKS, &locks) != 0)
        return cli_fail(o, CLI_EXIT_USAGE, "--locks: '%s' is not a number in "
                        "1..%d", locks_s, MAX_LOCKS);
    if (b.hold_ms >= b.ttl_ms)
        return cli_fail(o, CLI_EXIT_USAGE, "--hold (%u ms) must be below "
                        "--ttl (%u ms)", b.hold_ms, b.ttl_ms);
    if (watched_s != NULL &&
        cli_parse_u32(watched_s, 1, MAX_LOCKS, &watched) != 0)
        return cli_fail(o, CLI_EXIT_USAGE, "--watched: '%s' is not a number "
                        "in 1..%d", watched_s, MAX_LOCKS);
    if (watched != 0 && b.ttl_ms < 30)
        return cli_fail(o, CLI_EXIT_USAGE, "--watched needs --ttl of at "
                        "least 30 ms");
    b.label = label_s;
    if (owner_s != NULL && cli_check_owner(o, owner_s) != 0)
        return CLI_EXIT_USAGE;
    b.owner = owner_s != NULL && owner_s[0] != '\0' ? owner_s : NULL;
    b.fair = fair;
    b.fence = fence;
    b.f_target = locks;

    code = cli_client_new(o, &b.c);
    if (code != CLI_EXIT_OK)
        return code;
    pthread_mutex_init(&b.mu, NULL);
    pthread_cond_init(&b.cv, NULL);
    b.uris = calloc(o->cfg.node_count, sizeof(*b.uris));
    ping = calloc(o->cfg.node_count, sizeof(*ping));
    if (b.uris == NULL || ping == NULL) {
        code = cli_fail(o, CLI_EXIT_NO_QUORUM, "out of memory");
        goto out;
    }
    /* rl_client_new accepted these URIs: only memory can fail here. */
    for (i = 0; i < o->cfg.node_count; i++) {
        if (rl_uri_parse(o->nodes[i], &b.uris[i]) != RL_OK)
            cli_info(o, "node %zu: no server CPU figures for it: %s", i,
                     rl_last_error());
    }
    if (rl_client_ping(b.c, ping, o->cfg.node_count, &count) != RL_OK) {
        code = cli_fail(o, CLI_EXIT_NO_QUORUM, "quorum unavailable: %s",
                        rl_last_error());
        goto out;
    }
    if (watched != 0) {
        code = phase_watched(&b, watched, duration);
        if (code < 0)
            code = cli_fail(o, CLI_EXIT_NO_QUORUM, "watched: out of memory");
        goto out;
    }
    measurements = (want[P_A] ? 1 : 0) + (want[P_B] ? nconc : 0) +
                   (want[P_C] ? ncont : 0);
    for (k = 0; k < 1 + nconc + ncont; k++) {
        char phase;
        int n;
        int r;

        if (k == 0) {
            phase = 'a';
            n = 1;
        } else if (k <= nconc) {
            phase = 'b';
            n = (int)conc[k - 1];
        } else {
            phase = 'c';
            n = (int)cont[k - 1 - nconc];
        }
        if (!want[phase == 'a' ? P_A : phase == 'b' ? P_B : P_C])
            continue;
        done++;
        if (!o->quiet && duration * measurements > 3.0)
            fprintf(stderr, "redlock-cli: bench: [%d/%d] phase %c, %s %d, "
                    "%.1f s\n", done, measurements, phase,
                    phase == 'c' ? "contenders" : "concurrency", n, duration);
        r = run_one(&b, phase, n, duration, header);
        if (r != 0) {
            code = cli_fail(o, CLI_EXIT_NO_QUORUM, "phase %c: %s", phase,
                            r == -1 ? "out of memory"
                                    : "operations did not finish");
            if (r == -2)
                _exit(code);    /* callbacks may still use the slots */
            goto out;
        }
        header = false;
    }
    if (want[P_K]) {
        code = phase_kinds(&b, duration, header);
        if (code != 0)
            goto out;
    }
    if (want[P_F]) {
        code = phase_f(&b);
        if (code != 0) {
            if (code < 0)
                code = cli_fail(o, CLI_EXIT_NO_QUORUM, "phase f: out of "
                                "memory");
            goto out;
        }
    }
    code = CLI_EXIT_OK;

out:
    free(ping);
    rl_client_free(b.c);
    reset(&b);
    free(b.shares);
    for (i = 0; b.uris != NULL && i < o->cfg.node_count; i++)
        rl_uri_free(b.uris[i]);
    free(b.uris);
    pthread_mutex_destroy(&b.mu);
    pthread_cond_destroy(&b.cv);
    return code;
}
