/* cmd_bench.c -- "redlock-cli bench": the built-in load generator
 * (DESIGN §7, §9).
 *
 * Phases:
 *   a  sequential acquire+release on fresh resources (one in flight):
 *      cycles/s and acquire/release/cycle latency percentiles;
 *   b  N cycles in flight (--concurrency, default 1,16,64,256), each slot
 *      cycling on its own resource: cycles/s, cycle percentiles and client
 *      CPU per cycle (getrusage);
 *   c  --contenders threads fighting for one resource, each holding it for
 *      --hold ms: acquisitions/s, hand-offs/s (the next holder is another
 *      contender), wait percentiles, and an overlap count that must be 0.
 * Phases a and b use the async API: the slots' callbacks run on the
 * library's loop thread and chain the next operation themselves; the main
 * thread only starts the slots, sleeps for --duration, raises the stop
 * flag and waits (mutex + condition) for every slot to drain. Phase c
 * uses the blocking API from one thread per contender, because holding
 * the lock means sleeping, which a loop-thread callback must not do.
 * Latency samples are µs on CLOCK_MONOTONIC, kept under a mutex. */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define MAX_CONCURRENCY 4096
#define MAX_CONTENDERS 1024

static const char usage[] =
"Usage: redlock-cli [GLOBAL OPTIONS] bench [OPTIONS]\n"
"\n"
"Load generator on resources named bench:<pid>:... (released afterwards).\n"
"\n"
"  --phases LIST        any of a,b,c (a,b,c)\n"
"                       a: sequential acquire+release on fresh resources\n"
"                       b: N cycles in flight, one resource per slot\n"
"                       c: contenders on one resource, holding --hold ms\n"
"  --concurrency LIST   in-flight levels for phase b (1,16,64,256)\n"
"  --duration S         seconds per measurement, may be fractional (3)\n"
"  --ttl MS             lock TTL (30000)\n"
"  --hold MS            phase c: time each holder keeps the lock (1)\n"
"  --contenders N       phase c: number of contenders (8)\n"
"\n"
"Output: a table, or with --json one object per measurement per line:\n"
"phase, nodes, concurrency, duration_s, cycles, cycles_per_s, acquire_us,\n"
"release_us, cycle_us ({p50,p90,p99,max}), cpu_us_per_cycle, failures;\n"
"phase c adds contenders, hold_ms, acquisitions_per_s, handoffs_per_s,\n"
"wait_us and overlaps. Phase c's hand-off speed depends on --retry-delay\n"
"and --retry-jitter. Exit: 0, 2 usage, 3 no quorum.\n"
"\n"
"Examples:\n"
"  redlock-cli bench --phases a --duration 5\n"
"  redlock-cli --json bench --phases b --concurrency 1,64 | jq .cycles_per_s\n"
"  redlock-cli --retry-delay 5 --retry-jitter 2 bench --phases c\n";

struct samples {
    uint64_t *v;                /* µs */
    size_t n;
    size_t cap;
};

struct bench {
    rl_client *c;
    struct cli_opts *o;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_bool stop;
    int active;                 /* slots still running (mu) */
    char phase;
    uint32_t ttl_ms;
    uint32_t hold_ms;
    unsigned long seq;          /* fresh-resource counter (mu) */
    struct samples acq;         /* all samples: mu */
    struct samples rel;
    struct samples cyc;
    struct samples wait;
    uint64_t cycles;            /* mu */
    uint64_t failures;          /* mu */
    uint64_t handoffs;          /* phase c (mu) */
    uint64_t overlaps;          /* phase c (mu) */
    int last_holder;            /* phase c (mu) */
    int holding;                /* phase c (mu) */
};

struct slot {
    struct bench *b;
    int idx;
    uint64_t t_acq;             /* mono µs: acquire sent */
    uint64_t t_rel;             /* mono µs: release sent */
    char res[96];
};

/* ---- Samples ------------------------------------------------------------ */

static void samples_add(struct samples *s, uint64_t us)
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

/* p50, p90, p99, max (nearest rank); zeros when empty. */
static void percentiles(struct samples *s, uint64_t out[4])
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

static void json_pct(const char *name, struct samples *s)
{
    uint64_t p[4];

    percentiles(s, p);
    printf(",\"%s\":{\"p50\":%" PRIu64 ",\"p90\":%" PRIu64 ",\"p99\":%" PRIu64
           ",\"max\":%" PRIu64 "}", name, p[0], p[1], p[2], p[3]);
}

/* ---- Phases a and b: async slots ---------------------------------------- */

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
    samples_add(&b->rel, now - s->t_rel);
    samples_add(&b->cyc, now - s->t_acq);
    b->cycles++;
    if (st != RL_OK)
        b->failures++;
    pthread_mutex_unlock(&b->mu);
    if (atomic_load(&b->stop))
        slot_done(s);
    else
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
    pthread_mutex_lock(&b->mu);
    samples_add(&b->acq, now - s->t_acq);
    pthread_mutex_unlock(&b->mu);
    s->t_rel = cli_mono_us();
    if (rl_release_async(lock, on_released, s) != RL_OK) {
        rl_lock_free(lock);
        count_failure(b);
        slot_done(s);
    }
}

static void start_acquire(struct slot *s)
{
    struct bench *b = s->b;
    rl_acquire_opts ao;

    memset(&ao, 0, sizeof(ao));
    ao.ttl_ms = b->ttl_ms;
    if (b->phase == 'a') {
        pthread_mutex_lock(&b->mu);
        snprintf(s->res, sizeof(s->res), "bench:%ld:a:%lu", (long)getpid(),
                 b->seq++);
        pthread_mutex_unlock(&b->mu);
    }
    s->t_acq = cli_mono_us();
    if (rl_acquire_async(b->c, s->res, &ao, on_acquired, s) != RL_OK) {
        count_failure(b);
        slot_done(s);
    }
}

/* ---- Phase c: contenders ------------------------------------------------ */

static void *contender(void *arg)
{
    struct slot *s = arg;
    struct bench *b = s->b;
    rl_acquire_opts ao;
    struct timespec hold;
    rl_lock *l;
    rl_status st;
    uint64_t t0, t1, t2;

    memset(&ao, 0, sizeof(ao));
    ao.ttl_ms = b->ttl_ms;
    ao.wait_ms = 1000;
    hold.tv_sec = b->hold_ms / 1000;
    hold.tv_nsec = (long)(b->hold_ms % 1000) * 1000000L;
    while (!atomic_load(&b->stop)) {
        t0 = cli_mono_us();
        st = rl_acquire(b->c, s->res, &ao, &l);
        t1 = cli_mono_us();
        if (st != RL_OK) {
            if (st != RL_ENOTACQUIRED || !atomic_load(&b->stop))
                count_failure(b);
            if (st == RL_ENOQUORUM || st == RL_ECANCELED)
                usleep(10000);
            continue;
        }
        pthread_mutex_lock(&b->mu);
        if (b->holding >= 0)
            b->overlaps++;
        b->holding = s->idx;
        if (b->last_holder >= 0 && b->last_holder != s->idx)
            b->handoffs++;
        b->last_holder = s->idx;
        samples_add(&b->wait, t1 - t0);
        samples_add(&b->acq, t1 - t0);
        pthread_mutex_unlock(&b->mu);
        nanosleep(&hold, NULL);
        pthread_mutex_lock(&b->mu);
        b->holding = -1;
        pthread_mutex_unlock(&b->mu);
        t2 = cli_mono_us();
        st = rl_release(l);
        pthread_mutex_lock(&b->mu);
        samples_add(&b->rel, cli_mono_us() - t2);
        samples_add(&b->cyc, cli_mono_us() - t0);
        b->cycles++;
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

static void reset(struct bench *b)
{
    free(b->acq.v);
    free(b->rel.v);
    free(b->cyc.v);
    free(b->wait.v);
    memset(&b->acq, 0, sizeof(b->acq));
    memset(&b->rel, 0, sizeof(b->rel));
    memset(&b->cyc, 0, sizeof(b->cyc));
    memset(&b->wait, 0, sizeof(b->wait));
    b->cycles = 0;
    b->failures = 0;
    b->handoffs = 0;
    b->overlaps = 0;
    b->last_holder = -1;
    b->holding = -1;
    atomic_store(&b->stop, false);
}

static void sleep_s(double s)
{
    struct timespec ts;

    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* Run one measurement of phase a/b (n slots) or c (n contenders). */
static int measure(struct bench *b, char phase, int n, double duration)
{
    struct slot *slots;
    pthread_t *threads = NULL;
    struct timespec until;
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
        if (phase == 'c')
            snprintf(slots[i].res, sizeof(slots[i].res), "bench:%ld:c",
                     (long)getpid());
        else
            snprintf(slots[i].res, sizeof(slots[i].res), "bench:%ld:%c%d:%d",
                     (long)getpid(), phase, n, i);
    }
    if (phase == 'c') {
        threads = calloc((size_t)n, sizeof(*threads));
        if (threads == NULL) {
            free(slots);
            return -1;
        }
        for (i = 0; i < n; i++) {
            if (pthread_create(&threads[i], NULL, contender, &slots[i]) != 0)
                break;
            started++;
        }
        sleep_s(duration);
        atomic_store(&b->stop, true);
        for (i = 0; i < started; i++)
            pthread_join(threads[i], NULL);
        free(threads);
        free(slots);
        return 0;
    }
    for (i = 0; i < n; i++)
        start_acquire(&slots[i]);
    sleep_s(duration);
    atomic_store(&b->stop, true);
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    pthread_mutex_lock(&b->mu);
    while (b->active > 0) {
        if (pthread_cond_timedwait(&b->cv, &b->mu, &until) != 0)
            break;
    }
    i = b->active;
    pthread_mutex_unlock(&b->mu);
    if (i > 0)
        return -2;              /* slots stuck: do not free their memory */
    free(slots);
    return 0;
}

static void report(struct bench *b, char phase, int n, double elapsed_s,
                   uint64_t cpu, bool header)
{
    struct cli_opts *o = b->o;
    double per_s = elapsed_s > 0 ? (double)b->cycles / elapsed_s : 0;
    double cpu_per = b->cycles > 0 ? (double)cpu / (double)b->cycles : 0;
    uint64_t a[4], r[4], c[4], w[4];

    if (o->json) {
        printf("{\"phase\":\"%c\",\"nodes\":%zu,\"concurrency\":%d,"
               "\"duration_s\":%.3f,\"cycles\":%" PRIu64 ",\"cycles_per_s\":"
               "%.1f", phase, o->node_count, n, elapsed_s, b->cycles, per_s);
        json_pct("acquire_us", &b->acq);
        json_pct("release_us", &b->rel);
        json_pct("cycle_us", &b->cyc);
        printf(",\"cpu_us_per_cycle\":%.1f,\"failures\":%" PRIu64, cpu_per,
               b->failures);
        if (phase == 'c') {
            printf(",\"contenders\":%d,\"hold_ms\":%u,\"acquisitions_per_s\":"
                   "%.1f,\"handoffs_per_s\":%.1f,\"overlaps\":%" PRIu64, n,
                   b->hold_ms, per_s,
                   elapsed_s > 0 ? (double)b->handoffs / elapsed_s : 0,
                   b->overlaps);
            json_pct("wait_us", &b->wait);
        }
        fputs("}\n", stdout);
        fflush(stdout);
        return;
    }
    percentiles(&b->acq, a);
    percentiles(&b->rel, r);
    percentiles(&b->cyc, c);
    percentiles(&b->wait, w);
    if (header)
        printf("%-5s %5s %10s %8s %8s %8s %8s %8s %8s %9s %8s %5s\n",
               "PHASE", "CONC", "CYCLES/S", "ACQ_P50", "ACQ_P99", "REL_P50",
               "CYC_P50", "CYC_P90", "CYC_P99", "CYC_MAX", "CPU_US", "FAIL");
    printf("%-5c %5d %10.1f %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64
           " %8" PRIu64 " %8" PRIu64 " %9" PRIu64 " %8.1f %5" PRIu64 "\n",
           phase, n, per_s, a[0], a[2], r[0], c[0], c[1], c[2], c[3], cpu_per,
           b->failures);
    if (phase == 'c')
        printf("      c: %d contenders, hold %u ms: %.1f acquisitions/s, "
               "%.1f hand-offs/s, wait p50 %" PRIu64 " p99 %" PRIu64
               " max %" PRIu64 " us, overlaps %" PRIu64 "\n", n, b->hold_ms,
               per_s, elapsed_s > 0 ? (double)b->handoffs / elapsed_s : 0,
               w[0], w[2], w[3], b->overlaps);
    fflush(stdout);
}

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

int cmd_bench(struct cli_opts *o, int argc, char **argv)
{
    const char *phases_s = "a,b,c";
    const char *conc_s = "1,16,64,256";
    const char *dur_s = NULL;
    const char *ttl_s = NULL;
    const char *hold_s = NULL;
    const char *cont_s = NULL;
    const struct cli_cmdopt opts[] = {
        {"phases", &phases_s, NULL},
        {"concurrency", &conc_s, NULL},
        {"duration", &dur_s, NULL},
        {"ttl", &ttl_s, NULL},
        {"hold", &hold_s, NULL},
        {"contenders", &cont_s, NULL},
    };
    bool want[3] = {false, false, false};
    uint32_t conc[32];
    int nconc;
    uint32_t contenders = 8;
    double duration = 3.0;
    struct bench b;
    const char *pos[1];
    const char *p;
    rl_node_info *ping = NULL;
    size_t count;
    int measurements;
    int done = 0;
    bool header = true;
    int npos;
    int code;
    int k;

    memset(&b, 0, sizeof(b));
    b.o = o;
    b.ttl_ms = RL_DEFAULT_TTL_MS < o->max_ttl_ms ? RL_DEFAULT_TTL_MS
                                                 : o->max_ttl_ms;
    b.hold_ms = 1;
    code = cli_parse_args(o, argc, argv, opts, sizeof(opts) / sizeof(opts[0]),
                          usage, pos, 0, &npos, NULL);
    if (code != 0)
        return code > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    for (p = phases_s;; p += 2) {
        if (p[0] < 'a' || p[0] > 'c' || (p[1] != ',' && p[1] != '\0'))
            return cli_fail(o, CLI_EXIT_USAGE, "--phases: '%s' is not a "
                            "list of a, b, c", phases_s);
        want[p[0] - 'a'] = true;
        if (p[1] == '\0')
            break;
    }
    nconc = parse_list(conc_s, 1, MAX_CONCURRENCY, conc, 32);
    if (nconc < 0)
        return cli_fail(o, CLI_EXIT_USAGE, "--concurrency: '%s' is not a "
                        "list of numbers in 1..%d", conc_s, MAX_CONCURRENCY);
    if (dur_s != NULL && cli_parse_double(dur_s, 0.01, 3600, &duration) != 0)
        return cli_fail(o, CLI_EXIT_USAGE, "--duration: '%s' is not a number "
                        "of seconds in 0.01..3600", dur_s);
    if (ttl_s != NULL && cli_parse_ttl(o, "--ttl", ttl_s, &b.ttl_ms) != 0)
        return CLI_EXIT_USAGE;
    if (hold_s != NULL && cli_parse_u32(hold_s, 0, 60000, &b.hold_ms) != 0)
        return cli_fail(o, CLI_EXIT_USAGE, "--hold: '%s' is not a number in "
                        "0..60000", hold_s);
    if (cont_s != NULL &&
        cli_parse_u32(cont_s, 1, MAX_CONTENDERS, &contenders) != 0)
        return cli_fail(o, CLI_EXIT_USAGE, "--contenders: '%s' is not a "
                        "number in 1..%d", cont_s, MAX_CONTENDERS);
    if (b.hold_ms >= b.ttl_ms)
        return cli_fail(o, CLI_EXIT_USAGE, "--hold (%u ms) must be below "
                        "--ttl (%u ms)", b.hold_ms, b.ttl_ms);

    code = cli_client_new(o, &b.c);
    if (code != CLI_EXIT_OK)
        return code;
    pthread_mutex_init(&b.mu, NULL);
    pthread_cond_init(&b.cv, NULL);
    ping = calloc(o->node_count, sizeof(*ping));
    if (ping == NULL ||
        rl_client_ping(b.c, ping, o->node_count, &count) != RL_OK) {
        code = cli_fail(o, CLI_EXIT_NO_QUORUM, "quorum unavailable: %s",
                        rl_last_error());
        goto out;
    }
    measurements = (want[0] ? 1 : 0) + (want[1] ? nconc : 0) +
                   (want[2] ? 1 : 0);
    for (k = 0; k < 3 + nconc; k++) {
        char phase;
        int n;
        uint64_t t0, cpu0;
        int r;

        if (k == 0) {
            phase = 'a';
            n = 1;
        } else if (k <= nconc) {
            phase = 'b';
            n = (int)conc[k - 1];
        } else if (k == nconc + 1) {
            phase = 'c';
            n = (int)contenders;
        } else {
            break;
        }
        if (!want[phase - 'a'])
            continue;
        done++;
        if (!o->quiet && duration * measurements > 3.0)
            fprintf(stderr, "redlock-cli: bench: [%d/%d] phase %c, %s %d, "
                    "%.1f s\n", done, measurements, phase,
                    phase == 'c' ? "contenders" : "concurrency", n, duration);
        t0 = cli_mono_us();
        cpu0 = cpu_us();
        r = measure(&b, phase, n, duration);
        if (r != 0) {
            code = cli_fail(o, CLI_EXIT_NO_QUORUM, "phase %c: %s", phase,
                            r == -1 ? "out of memory"
                                    : "operations did not finish");
            if (r == -2)
                _exit(code);    /* callbacks may still use the slots */
            goto out;
        }
        report(&b, phase, n, (double)(cli_mono_us() - t0) / 1e6,
               cpu_us() - cpu0, header);
        header = false;
    }
    code = CLI_EXIT_OK;

out:
    free(ping);
    rl_client_free(b.c);
    reset(&b);
    pthread_mutex_destroy(&b.mu);
    pthread_cond_destroy(&b.cv);
    return code;
}
