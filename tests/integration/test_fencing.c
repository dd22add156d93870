/* SPDX-License-Identifier: BSD-3-Clause */
/* test_fencing.c -- fencing tokens (DESIGN §2.3, §5.6; issue 3 item 3)
 * against real redis-server processes.
 *
 * What is proved here:
 *   - every fenced acquisition gets a token > 0, strictly greater than the
 *     one before, and the node's counter redlock:fence is left on a
 *     majority, without a TTL, holding the last token;
 *   - the same holds across client processes and across kill -9 + empty
 *     restart of a minority of nodes: two forked children, each with its
 *     own rl_client, take turns on one resource (at least HOLDERS_EACH
 *     holders each) while nodes are killed and restarted one at a time,
 *     each node staying down until KILL_HOLDERS holders have come and gone
 *     (work, not time, decides: the test passes on a slow machine or under
 *     valgrind as it does on a fast one); each holder
 *     appends "entry-time exit-time fence" to a shared O_APPEND file from
 *     inside its critical section, and the fences sorted by entry time
 *     (CLOCK_MONOTONIC, one clock for every process on the machine) must
 *     be strictly increasing, with no two sections overlapping. The run
 *     uses trust_restarted_nodes = false and max_ttl_ms 1500, so restarted
 *     nodes are quarantined as §5.7 requires;
 *   - a multi-resource acquire with fencing returns a token too;
 *   - one empty restart between two holders (issue 12), 3 nodes A, B, C:
 *     holder 1 is fenced on {A, B} (C held by another key), A restarts
 *     empty, holder 2 wins on {A, C} while B still holds holder 1's key:
 *     its token must exceed holder 1's. Every counter starts far ahead of
 *     this machine's wall clock (as if written by a client whose clock ran
 *     ahead), so the wall-clock term cannot help: only the counters can
 *     (B's refusal carries holder 1's counter; the previous code read the
 *     granting nodes only and issued holder 1's token again);
 *   - with a quorum of trusted counters among the granting nodes the token
 *     is max_read + 1, never a wall-clock value, also after one node
 *     restarted empty (its counter is untrusted, then repaired). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"

#define NODES 5
#define CHILDREN 2
#define KILLS 4            /* nodes killed and restarted, one at a time */
#define HOLDERS_EACH 250    /* holders per child, at least */
#define KILL_HOLDERS 25     /* holders while each killed node is down */
#define RUN_LIMIT_MS 60000  /* deadline for all of it, scaled */

/* Shared with the children (MAP_SHARED). */
struct shared {
    atomic_int stop;                /* set by the parent: children end */
    atomic_long done[CHILDREN];     /* holders per child so far */
};

struct entry {
    long long entry_ns;
    long long exit_ns;
    unsigned long long fence;
    int id;
    long long validity;
};

/* What a test leaves behind besides the fixture's own. */
struct leftovers {
    pid_t kids[CHILDREN];
    struct shared *sh;
    char log_path[256];
    struct entry *e;   /* the holders' log, read back */
};

/* Several processes log: fixture_log, each line tagged with the pid. */
static void test_log(int level, const char *msg, void *privdata)
{
    char tag[32];

    (void)privdata;
    snprintf(tag, sizeof(tag), "pid %d", (int)getpid());
    fixture_log(level, msg, tag);
}

static void fast_config(rl_config *cfg, const struct harness_nodes *hn)
{
    fixture_config(cfg, hn);
    cfg->log = test_log;
}

static void cleanup(struct fixture *f)
{
    struct leftovers *lo = f->priv;

    for (int i = 0; i < CHILDREN; i++) {
        if (lo->kids[i] > 0) {
            kill(lo->kids[i], SIGKILL);
            waitpid(lo->kids[i], NULL, 0);
        }
    }
    if (lo->sh != NULL)
        munmap(lo->sh, sizeof(*lo->sh));
    free(lo->e);
    if (lo->log_path[0] != '\0')
        unlink(lo->log_path);
}

static const struct fixture_opts fx = { .nodes = NODES, .no_client = true,
                                        .priv_size = sizeof(struct leftovers),
                                        .cleanup = cleanup };

static void start_client(struct fixture *f)
{
    rl_config cfg;

    fast_config(&cfg, &f->hn);
    f->c = fixture_client(&cfg);
    assert_non_null(f->c);
}

/* Counter value on node r (0 when absent or not a number). */
static unsigned long long counter_on(const struct rl_redis *r,
                                     const char *key)
{
    char *v = harness_get(r, key);
    unsigned long long n = 0;

    if (v != NULL)
        n = strtoull(v, NULL, 10);
    free(v);
    return n;
}

/* Nodes whose counter key equals want and never expires. */
static int counters_equal(struct fixture *f, const char *key,
                          unsigned long long want)
{
    int n = 0;

    for (int i = 0; i < NODES; i++) {
        unsigned long long v;
        long long pttl;

        if (!f->r[i].running)
            continue;
        v = counter_on(&f->r[i], key);
        pttl = harness_pttl(&f->r[i], key);
        if (v == want && pttl == -1)
            n++;
        else
            fprintf(stderr, "  port %d: %s = %llu (want %llu), PTTL %lld\n",
                    f->r[i].port, key, v, want, pttl);
    }
    return n;
}

/* ---- One process, sequential holders -------------------------------------*/

static void test_fence_strictly_increases_over_200_cycles(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = { 0 };
    rl_stats s;
    uint64_t prev = 0;
    uint64_t first = 0;

    start_client(f);
    o.ttl_ms = 5000;
    o.fencing = true;
    for (int i = 0; i < 200; i++) {
        uint64_t fence;

        assert_int_equal(rl_acquire(f->c, "fence:seq", &o, &f->l), RL_OK);
        fence = rl_lock_fence(f->l);
        if (fence <= prev)
            fail_msg("cycle %d: fence %llu after %llu", i,
                     (unsigned long long)fence, (unsigned long long)prev);
        if (i == 0)
            first = fence;
        prev = fence;
        assert_int_equal(rl_release(f->l), RL_OK);
        f->l = NULL;
    }
    fprintf(stderr, "  200 fences: %llu .. %llu\n",
            (unsigned long long)first, (unsigned long long)prev);
    assert_true(first > 0);
    /* The counter stays (no TTL) on a majority, holding the last token
     * (written there before the last acquire returned). */
    assert_true(counters_equal(f, "redlock:fence", prev) >= 3);
    /* The lock key itself is gone (the release returned at a majority:
     * the last nodes are awaited). */
    assert_true(harness_key_gone(f->r, NODES, "fence:seq"));
    assert_int_equal(rl_client_stats(f->c, &s), RL_OK);
    assert_int_equal(s.fences, 200);
    /* A new client (as after a process restart) continues above it. */
    rl_client_free(f->c);
    f->c = NULL;
    start_client(f);
    assert_int_equal(rl_acquire(f->c, "fence:seq", &o, &f->l), RL_OK);
    assert_true(rl_lock_fence(f->l) > prev);
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
    /* Without opts.fencing: 0, and no fence record for it. */
    o.fencing = false;
    assert_int_equal(rl_acquire(f->c, "fence:none", &o, &f->l), RL_OK);
    assert_int_equal(rl_lock_fence(f->l), 0);
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
    for (int i = 0; i < NODES; i++)
        assert_int_equal(
            harness_pttl(&f->r[i], "redlock:fencefor:fence:none"), -2);
}

/* ---- Two processes, nodes killed and restarted ----------------------------*/

static void quarantine_config(rl_config *cfg, const struct harness_nodes *hn)
{
    fast_config(cfg, hn);
    cfg->trust_restarted_nodes = false;
    cfg->max_ttl_ms = 1500;
    cfg->retry_delay_ms = 4;
    cfg->retry_jitter_ms = 3;
}

/* A child: its own client, fenced acquisitions of one resource until the
 * parent sets stop, counting them in done[id]. Never returns; exit status 0 unless something went
 * wrong. Must not run the test's atexit handlers (they would kill the
 * servers). */
static void child_main(struct fixture *f, int id)
{
    struct leftovers *lo = f->priv;
    rl_config cfg;
    rl_acquire_opts o = { 0 };
    rl_client *c;
    int fd;
    int done = 0;
    int failures = 0;
    char line[160];

    quarantine_config(&cfg, &f->hn);
    c = fixture_client(&cfg);
    fd = open(lo->log_path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (c == NULL || fd < 0)
        _exit(2);
    o.ttl_ms = 1000;
    o.wait_ms = 10000;
    o.fencing = true;
    while (!atomic_load(&lo->sh->stop)) {
        rl_lock *l = NULL;
        rl_status st = rl_acquire(c, "fence:shared", &o, &l);
        int64_t entry;
        int64_t exit_ns;
        int len;

        if (st != RL_OK) {
            fprintf(stderr, "  child %d: acquire %s: %s\n", id,
                    rl_status_name(st), rl_last_error());
            if (++failures > 50)
                _exit(3);
            harness_sleep_ms(10);
            continue;
        }
        entry = harness_now_ns();
        exit_ns = harness_now_ns();
        len = snprintf(line, sizeof(line), "%lld %lld %llu %d %lld\n",
                       (long long)entry, (long long)exit_ns,
                       (unsigned long long)rl_lock_fence(l), id,
                       (long long)rl_lock_validity_ms(l));
        if (write(fd, line, (size_t)len) != len)
            _exit(4);
        st = rl_release(l);
        if (st != RL_OK)
            fprintf(stderr, "  child %d: release %s: %s\n", id,
                    rl_status_name(st), rl_last_error());
        done++;
        atomic_store(&lo->sh->done[id], done);
        /* Give the other process a chance now and then. */
        if (done % 3 == 0)
            harness_sleep_ms(1);
    }
    rl_client_free(c);
    close(fd);
    _exit(0);
}

static int by_entry(const void *a, const void *b)
{
    const struct entry *x = a;
    const struct entry *y = b;

    return (x->entry_ns > y->entry_ns) - (x->entry_ns < y->entry_ns);
}

static bool children_running(struct fixture *f, int *status_bad)
{
    struct leftovers *lo = f->priv;
    bool any = false;

    for (int i = 0; i < CHILDREN; i++) {
        int status;
        pid_t w;

        if (lo->kids[i] <= 0)
            continue;
        w = waitpid(lo->kids[i], &status, WNOHANG);
        if (w == lo->kids[i]) {
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "  child %d ended with status %#x\n", i,
                        status);
                (*status_bad)++;
            }
            lo->kids[i] = 0;
        } else {
            any = true;
        }
    }
    return any;
}

static long holders_total(const struct fixture *f)
{
    const struct leftovers *lo = f->priv;
    long n = 0;

    for (int i = 0; i < CHILDREN; i++)
        n += atomic_load(&lo->sh->done[i]);
    return n;
}

static long holders_min(const struct fixture *f)
{
    const struct leftovers *lo = f->priv;
    long n = LONG_MAX;

    for (int i = 0; i < CHILDREN; i++) {
        long d = atomic_load(&lo->sh->done[i]);

        if (d < n)
            n = d;
    }
    return n;
}

/* Waits until the children have logged at least total holders in all and
 * each at least each; fails the test past the deadline or when a child
 * ends early. */
static void wait_for_holders(struct fixture *f, long total, long each,
                             int64_t deadline_ms, const char *what)
{
    int bad = 0;

    while (holders_total(f) < total || holders_min(f) < each) {
        if (!children_running(f, &bad) || bad > 0)
            fail_msg("a child ended while waiting for %s", what);
        if (harness_now_ms() > deadline_ms)
            fail_msg("%s: %ld holders of %ld after %lld ms (each at "
                     "least %ld of %ld)", what, holders_total(f), total,
                     (long long)harness_scale_ms(RUN_LIMIT_MS),
                     holders_min(f), each);
        harness_sleep_ms(5);
    }
}

/* Reads the holders' log into lo->e (sorted by entry time); returns the
 * number of entries. */
static size_t read_holders_log(struct fixture *f)
{
    struct leftovers *lo = f->priv;
    size_t n = 0;
    size_t cap = 0;
    FILE *in = fopen(lo->log_path, "r");
    char line[160];

    assert_non_null(in);
    while (fgets(line, sizeof(line), in) != NULL) {
        struct entry x;

        if (sscanf(line, "%lld %lld %llu %d %lld", &x.entry_ns, &x.exit_ns,
                   &x.fence, &x.id, &x.validity) != 5) {
            fclose(in);
            fail_msg("bad line in the holders' log: %s", line);
        }
        if (n == cap) {
            struct entry *grown;

            cap = cap ? cap * 2 : 1024;
            grown = realloc(lo->e, cap * sizeof(*lo->e));
            if (grown == NULL) {
                fclose(in);
                fail_msg("out of memory reading the holders' log");
            }
            lo->e = grown;
        }
        lo->e[n++] = x;
    }
    fclose(in);
    if (n > 0)
        qsort(lo->e, n, sizeof(*lo->e), by_entry);
    return n;
}

static void test_fence_increases_across_processes_and_node_restarts(
    void **state)
{
    struct fixture *f = *state;
    struct leftovers *lo = f->priv;
    const char *tmp = getenv("TMPDIR");
    struct entry *e;
    size_t n;
    size_t per_child[CHILDREN] = { 0 };
    size_t per_kill[KILLS] = { 0 };
    int bad = 0;
    int64_t down[KILLS][2] = { { 0 } }; /* kill .. restart, mono ns */
    int64_t t0;
    int64_t deadline;
    long long min_validity = INT64_MAX;
    int fd;

    if (tmp == NULL || tmp[0] == '\0')
        tmp = "/tmp";
    snprintf(lo->log_path, sizeof(lo->log_path), "%s/rl-fence-XXXXXX", tmp);
    fd = mkstemp(lo->log_path);
    assert_true(fd >= 0);
    close(fd);
    /* Nodes younger than max_ttl_ms do not vote: let them age first. */
    assert_true(harness_wait_uptime(f->r, NODES, 2));
    lo->sh = mmap(NULL, sizeof(*lo->sh), PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(lo->sh != MAP_FAILED);
    atomic_store(&lo->sh->stop, 0);
    for (int i = 0; i < CHILDREN; i++)
        atomic_store(&lo->sh->done[i], 0);

    fflush(NULL);
    for (int i = 0; i < CHILDREN; i++) {
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0)
            child_main(f, i);
        lo->kids[i] = pid;
    }
    /* Meanwhile: kill -9 one node, keep it down until KILL_HOLDERS more
     * holders have come and gone, restart it empty, move on to the next.
     * At most one node is down at a time, and a node is killed only once
     * the one before the last restarted is out of quarantine (max_ttl_ms
     * after its restart): one down plus one quarantined leaves exactly a
     * voting majority. */
    t0 = harness_now_ms();
    deadline = t0 + harness_scale_ms(RUN_LIMIT_MS);
    wait_for_holders(f, 0, 1, deadline, "the first holder of each child");
    for (int k = 0; k < KILLS; k++) {
        down[k][0] = harness_now_ns();
        harness_kill(&f->r[k]);
        /* + 1: the first one counted may have entered before the kill. */
        wait_for_holders(f, holders_total(f) + KILL_HOLDERS + 1, 0, deadline,
                         "holders while a node is down");
        assert_int_equal(harness_restart(&f->r[k]), 0);
        down[k][1] = harness_now_ns();
        /* The next kill waits for this node's quarantine (1500 ms) to be
         * at least two thirds through, so that node k - 1 votes again. */
        harness_sleep_ms(1000);
    }
    wait_for_holders(f, 0, HOLDERS_EACH, deadline, "holders per child");
    atomic_store(&lo->sh->stop, 1);
    while (children_running(f, &bad) && harness_now_ms() < deadline)
        harness_sleep_ms(20);
    if (children_running(f, &bad))
        fail_msg("children still running after %lld ms",
                 (long long)(harness_now_ms() - t0));
    assert_int_equal(bad, 0);

    n = read_holders_log(f);
    e = lo->e;
    for (size_t i = 0; i < n; i++) {
        if (e[i].id >= 0 && e[i].id < CHILDREN)
            per_child[e[i].id]++;
        if (e[i].validity < min_validity)
            min_validity = e[i].validity;
        for (int k = 0; k < KILLS; k++) {
            if (e[i].entry_ns >= down[k][0] && e[i].exit_ns <= down[k][1])
                per_kill[k]++;
        }
    }
    fprintf(stderr, "  %zu holders (%zu + %zu) in %lld ms with %d node "
                    "kills/restarts (%zu, %zu, %zu, %zu holders while each "
                    "was down); fences %llu .. %llu; min validity %lld ms\n",
            n, per_child[0], per_child[1],
            (long long)(harness_now_ms() - t0), KILLS, per_kill[0],
            per_kill[1], per_kill[2], per_kill[3], n ? e[0].fence : 0ULL,
            n ? e[n - 1].fence : 0ULL, min_validity);
    for (size_t i = 1; i < n; i++) {
        if (e[i].fence <= e[i - 1].fence || e[i].entry_ns < e[i - 1].exit_ns)
            fail_msg("fences out of order or sections overlap: holder %zu "
                     "(child %d): fence %llu, entry %lld; previous (child "
                     "%d): fence %llu, exit %lld",
                     i, e[i].id, e[i].fence, e[i].entry_ns, e[i - 1].id,
                     e[i - 1].fence, e[i - 1].exit_ns);
    }
    for (int i = 0; i < CHILDREN; i++)
        assert_true(per_child[i] >= HOLDERS_EACH);
    /* The log, not only the counters, shows holders while each node was
     * down. */
    for (int k = 0; k < KILLS; k++)
        assert_true(per_kill[k] >= KILL_HOLDERS);
    assert_true(e[0].fence > 0);
    /* The counter of the last holder is on a majority. */
    assert_true(counters_equal(f, "redlock:fence", e[n - 1].fence) >= 3);
}

/* ---- One restart between two holders (issue 12) ---------------------------*/

#define RESTART_NODES 3

static const struct fixture_opts fx3 = {
    .nodes = RESTART_NODES, .no_client = true,
    .priv_size = sizeof(struct leftovers), .cleanup = cleanup
};

static rl_client *restart_client(struct fixture *f)
{
    rl_config cfg;

    fast_config(&cfg, &f->hn);
    /* A votes right after its restart: the quarantine protects lock keys,
     * this test is about counters (it stands for "after A's quarantine"). */
    cfg.trust_restarted_nodes = true;
    return fixture_client(&cfg);
}

static void test_fence_across_one_restart_with_counters_ahead_of_wall_time(
    void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = { 0 };
    rl_client *c2;
    rl_lock *l2 = NULL;
    redisReply *reply;
    char *mark;
    char ahead[32];
    uint64_t t0;
    uint64_t t1;
    uint64_t t2;

    /* Counters far ahead of wall time, without a run_id marker. */
    snprintf(ahead, sizeof(ahead), "%llu",
             (unsigned long long)(harness_clock_ns(CLOCK_REALTIME) / 1000 +
                                  1000000000000ll));
    for (int i = 0; i < RESTART_NODES; i++)
        assert_true(harness_ok(harness_cmd(
            &f->r[i], "SET redlock:fence %s", ahead)));
    f->c = restart_client(f);
    c2 = restart_client(f);
    assert_non_null(f->c);
    assert_non_null(c2);
    o.ttl_ms = 30000;
    o.wait_ms = 5000;
    o.fencing = true;
    /* Holder 0 on every node: its token continues the counters. */
    assert_int_equal(rl_acquire(f->c, "fence:restart", &o, &f->l), RL_OK);
    t0 = rl_lock_fence(f->l);
    assert_true(t0 > strtoull(ahead, NULL, 10));
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
    /* Holder 1 on {A, B}: C is held by someone else. */
    assert_true(harness_ok(
        harness_cmd(&f->r[2], "SET fence:restart other PX 60000")));
    assert_int_equal(rl_acquire(f->c, "fence:restart", &o, &f->l), RL_OK);
    t1 = rl_lock_fence(f->l);
    assert_true(t1 > t0);
    assert_true(counter_on(&f->r[0], "redlock:fence") == t1);
    assert_true(counter_on(&f->r[1], "redlock:fence") == t1);
    assert_true(counter_on(&f->r[2], "redlock:fence") == t0);
    /* A restarts empty; C's other holder goes away. */
    harness_kill(&f->r[0]);
    assert_int_equal(harness_restart(&f->r[0]), 0);
    assert_true(harness_key_absent(&f->r[0], "redlock:fence"));
    reply = harness_cmd(&f->r[2], "DEL fence:restart");
    assert_non_null(reply);
    assert_int_equal(reply->integer, 1);
    freeReplyObject(reply);
    /* Holder 2 wins on {A, C}; B refuses (holder 1's key). */
    assert_int_equal(rl_acquire(c2, "fence:restart", &o, &l2), RL_OK);
    t2 = rl_lock_fence(l2);
    fprintf(stderr, "  tokens: holder 0 %llu, holder 1 %llu, holder 2 %llu\n",
            (unsigned long long)t0, (unsigned long long)t1,
            (unsigned long long)t2);
    assert_true(harness_key_holds(&f->r[1], "fence:restart",
                                  rl_lock_token(f->l)));
    assert_true(t2 > t1);
    /* The write round repaired A: its counter is back, with a marker. */
    assert_true(counter_on(&f->r[0], "redlock:fence") == t2);
    mark = harness_get(&f->r[0], "redlock:fencerun");
    assert_non_null(mark);
    free(mark);
    assert_int_equal(rl_release(l2), RL_OK);
    rl_client_free(c2);
}

static void test_fence_trusted_quorum_needs_no_wall_clock(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = { 0 };
    uint64_t t0;
    uint64_t t1;
    uint64_t t2;

    f->c = restart_client(f);
    assert_non_null(f->c);
    o.ttl_ms = 5000;
    o.wait_ms = 5000;
    o.fencing = true;
    /* No counters yet: the wall-clock fallback. */
    assert_int_equal(rl_acquire(f->c, "fence:trusted", &o, &f->l), RL_OK);
    t0 = rl_lock_fence(f->l);
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
    harness_sleep_ms(20); /* wall time moves on by 20000 µs */
    /* Every counter trusted now: max_read + 1, not the wall clock. */
    assert_int_equal(rl_acquire(f->c, "fence:trusted", &o, &f->l), RL_OK);
    t1 = rl_lock_fence(f->l);
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
    assert_true(t1 == t0 + 1);
    /* A restarts empty: B and C still make a trusted quorum. */
    harness_kill(&f->r[0]);
    assert_int_equal(harness_restart(&f->r[0]), 0);
    harness_sleep_ms(20);
    assert_int_equal(rl_acquire(f->c, "fence:trusted", &o, &f->l), RL_OK);
    t2 = rl_lock_fence(f->l);
    fprintf(stderr, "  tokens %llu, %llu, %llu\n", (unsigned long long)t0,
            (unsigned long long)t1, (unsigned long long)t2);
    assert_true(t2 == t1 + 1);
}

/* ---- The node's counter after a restart, across resources -----------------*/

/* Restarted nodes are quarantined (max_ttl_ms 1500). */
static rl_client *settling_client(struct fixture *f)
{
    rl_config cfg;

    fast_config(&cfg, &f->hn);
    cfg.trust_restarted_nodes = false;
    cfg.max_ttl_ms = 1500;
    return fixture_client(&cfg);
}

static void assert_marked(const struct rl_redis *r, bool marked)
{
    char id[64];
    char *mark = harness_get(r, "redlock:fencerun");

    assert_int_equal(harness_info_field(r, "server", "run_id", id,
                                        sizeof(id)), 0);
    if (marked != (mark != NULL && strcmp(mark, id) == 0))
        fail_msg("port %d: mark %s, run_id %s (want %s)", r->port,
                 mark != NULL ? mark : "(none)", id,
                 marked ? "marked" : "not marked");
    free(mark);
}

/* One counter per node serves every resource: a token continues the
 * counters whatever resource raised them, with no wall clock, once a
 * quorum of them is trusted. A restarted node's counter is vouched for
 * again (marked with its new run_id) only by a round that began once the
 * node was out of its quarantine (a round of another resource may have
 * read the other nodes before a lock the node lost was written there:
 * docs/fencing.md); until then it only raises max_read. */
static void test_fence_mark_waits_out_the_quarantine(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = { 0 };
    const char *names[] = { "fence:q:a", "fence:q:b", "fence:q:c",
                            "fence:q:d" };
    uint64_t t[4];

    /* Every node up past max_ttl (as the client counts it: to the
     * second, from its latest possible start). */
    assert_true(harness_wait_uptime(f->r, RESTART_NODES, 3));
    f->c = settling_client(f);
    assert_non_null(f->c);
    o.ttl_ms = 1000;
    o.wait_ms = 10000;
    o.fencing = true;
    for (int i = 0; i < 4; i++) {
        if (i == 2) {
            /* A restarts empty: quarantined, not marked by this round. */
            harness_kill(&f->r[0]);
            assert_int_equal(harness_restart(&f->r[0]), 0);
        }
        if (i == 3) {
            /* A out of its quarantine: the next round marks it. */
            assert_marked(&f->r[0], false);
            assert_true(harness_wait_uptime(&f->r[0], 1, 3));
        }
        assert_int_equal(rl_acquire(f->c, names[i], &o, &f->l), RL_OK);
        t[i] = rl_lock_fence(f->l);
        assert_int_equal(rl_release(f->l), RL_OK);
        f->l = NULL;
    }
    fprintf(stderr, "  tokens %llu, %llu, %llu, %llu\n",
            (unsigned long long)t[0], (unsigned long long)t[1],
            (unsigned long long)t[2], (unsigned long long)t[3]);
    /* The first one marked every node: then max_read + 1, resource after
     * resource, B and C trusted while A was restarted. */
    for (int i = 1; i < 4; i++)
        assert_true(t[i] == t[i - 1] + 1);
    for (int i = 0; i < RESTART_NODES; i++)
        assert_marked(&f->r[i], true);
}

/* The term on a quorum, as rl_resource_inspect reads it. */
static void assert_term(rl_client *c, const char *name, uint64_t term)
{
    rl_resource_info info;

    assert_int_equal(rl_resource_inspect(c, name, &info, NULL, 0, NULL),
                     RL_OK);
    if (info.term_state != RL_TERM_SET || info.term != term)
        fail_msg("%s: term state %u, term %llu (want %llu)", name,
                 info.term_state, (unsigned long long)info.term,
                 (unsigned long long)term);
}

/* The record that pairs a holder with its term expires with the lock
 * key, and lives as long as it: renewals (the watchdog's batches, a
 * caller's rl_extend) extend both, so a holder kept past its first TTL
 * still reads with its term. */
static void test_fence_record_lives_as_long_as_the_lock(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = { 0 };
    rl_lock *watched = NULL;
    uint64_t t1, t2;

    start_client(f);
    o.ttl_ms = 400;
    o.fencing = true;
    assert_int_equal(rl_acquire(f->c, "fence:rec:x", &o, &f->l), RL_OK);
    t1 = rl_lock_fence(f->l);
    o.auto_extend = true;
    assert_int_equal(rl_acquire(f->c, "fence:rec:w", &o, &watched), RL_OK);
    t2 = rl_lock_fence(watched);
    for (int i = 0; i < 4; i++) {
        harness_sleep_ms(250);
        assert_int_equal(rl_extend(f->l, 400), RL_OK);
    }
    assert_term(f->c, "fence:rec:x", t1);
    assert_term(f->c, "fence:rec:w", t2);
    for (int i = 0; i < NODES; i++) {
        long long pttl = harness_pttl(&f->r[i], "redlock:fencefor:fence:rec:w");

        assert_true(pttl == -2 || (pttl > 0 && pttl <= 400));
    }
    assert_int_equal(rl_release(watched), RL_OK);
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
}

/* ---- Multi-resource -------------------------------------------------------*/

static void test_multi_resource_acquire_returns_a_fence(void **state)
{
    struct fixture *f = *state;
    const char *res[] = { "fence:m1", "fence:m2", "fence:m3" };
    rl_acquire_opts o = { 0 };
    uint64_t f1;
    uint64_t f2;
    uint64_t f3;

    start_client(f);
    o.ttl_ms = 5000;
    o.fencing = true;
    assert_int_equal(rl_acquire_multi(f->c, res, 3, &o, &f->l), RL_OK);
    f1 = rl_lock_fence(f->l);
    fprintf(stderr, "  multi fence %llu\n", (unsigned long long)f1);
    assert_true(f1 > 0);
    assert_true(fixture_all_hold(f, "fence:m2", rl_lock_token(f->l), 0, 0));
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
    assert_int_equal(rl_acquire_multi(f->c, res, 3, &o, &f->l), RL_OK);
    f2 = rl_lock_fence(f->l);
    assert_true(f2 > f1);
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
    /* A single acquisition of the first resource continues above it. */
    assert_int_equal(rl_acquire(f->c, "fence:m1", &o, &f->l), RL_OK);
    f3 = rl_lock_fence(f->l);
    assert_true(f3 > f2);
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
}

/* ---- What fencing leaves on the nodes -------------------------------------*/

/* Keys a node keeps for fencing once every lock is gone, however many
 * names were ever fenced: the node-wide counter and its run_id marker
 * (docs/protocol.md section 1). */
#define FENCE_NODE_KEYS 2
#define NAMES 200           /* distinct names per kind */

/* Wait until every running node's DBSIZE is at most max (expired keys
 * are reclaimed by the server's expiry cycle, within about a second). */
static bool dbsize_at_most_within(struct fixture *f, int nodes, long long max,
                                  int64_t ms)
{
    int64_t deadline = harness_now_ms() + harness_scale_ms(ms);

    for (;;) {
        bool ok = true;

        for (int i = 0; i < nodes; i++) {
            long long n = harness_dbsize(&f->r[i]);

            if (n > max) {
                if (harness_now_ms() >= deadline)
                    fprintf(stderr, "  port %d: DBSIZE %lld (max %lld)\n",
                            f->r[i].port, n, max);
                ok = false;
            }
        }
        if (ok)
            return true;
        if (harness_now_ms() >= deadline)
            return false;
        harness_sleep_ms(50);
    }
}

/* NAMES fenced acquire/release pairs on distinct names, NAMES fenced
 * semaphore permits and NAMES leaders, each name used once: once the
 * locks are gone (released; their records expire with them), each node
 * keeps FENCE_NODE_KEYS keys, not three per name. The tokens still
 * strictly increase, here across names too (one counter per node). */
static void test_fenced_names_leave_bounded_state(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = { 0 };
    uint64_t prev = 0;
    char name[64];

    start_client(f);
    o.ttl_ms = 400;
    o.fencing = true;
    for (int kind = 0; kind < 3; kind++) {
        for (int i = 0; i < NAMES; i++) {
            uint64_t fence;

            snprintf(name, sizeof(name), "fence:name:%d:%d", kind, i);
            o.limit = kind == 1 ? 2 : 0;
            o.owner = kind == 2 ? "node-a" : NULL;
            if (kind == 2)
                assert_int_equal(rl_campaign(f->c, name, &o, &f->l), RL_OK);
            else
                assert_int_equal(rl_acquire(f->c, name, &o, &f->l), RL_OK);
            fence = rl_lock_fence(f->l);
            if (fence <= prev)
                fail_msg("%s: fence %llu after %llu", name,
                         (unsigned long long)fence, (unsigned long long)prev);
            prev = fence;
            assert_int_equal(rl_release(f->l), RL_OK);
            f->l = NULL;
        }
    }
    assert_true(dbsize_at_most_within(f, NODES, FENCE_NODE_KEYS, 5000));
    /* A name fenced before continues above every token issued. */
    o.limit = 0;
    o.owner = NULL;
    assert_int_equal(rl_acquire(f->c, "fence:name:0:0", &o, &f->l), RL_OK);
    assert_true(rl_lock_fence(f->l) > prev);
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fence_strictly_increases_over_200_cycles),
        cmocka_unit_test(
            test_fence_increases_across_processes_and_node_restarts),
        cmocka_unit_test(test_multi_resource_acquire_returns_a_fence),
        cmocka_unit_test(test_fenced_names_leave_bounded_state),
        cmocka_unit_test(test_fence_record_lives_as_long_as_the_lock),
        FIXTURE_TEST(
            test_fence_across_one_restart_with_counters_ahead_of_wall_time,
            &fx3),
        FIXTURE_TEST(test_fence_trusted_quorum_needs_no_wall_clock, &fx3),
        FIXTURE_TEST(test_fence_mark_waits_out_the_quarantine, &fx3),
    };

    return FIXTURE_RUN("fencing", &fx, tests);
}
