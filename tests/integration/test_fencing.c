/* test_fencing.c -- fencing tokens (DESIGN §2.3, §5.6; issue 3 item 3)
 * against real redis-server processes.
 *
 * What is proved here:
 *   - every fenced acquisition gets a token > 0, strictly greater than the
 *     one before, and the counter key redlock:fence:<key> is left on a
 *     majority, without a TTL, holding the last token;
 *   - the same holds across client processes and across kill -9 + empty
 *     restart of a minority of nodes: two forked children, each with its
 *     own rl_client, take turns on one resource (>= 1000 holders in all)
 *     while nodes are killed and restarted one at a time; each holder
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
#define MIN_HOLDERS 1000
#define RUN_LIMIT_MS 60000

struct fx {
    struct rl_redis r[NODES];
    struct harness_nodes hn;
    rl_client *c;
    rl_lock *l;
    pid_t kids[CHILDREN];
    atomic_int *stop;  /* shared with the children (MAP_SHARED) */
    char log_path[256];
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

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (f == NULL)
        return -1;
    *state = f;
    return fixture_start(f->r, NODES, &f->hn, NULL);
}

static int teardown(void **state)
{
    struct fx *f = *state;

    if (f == NULL)
        return 0;
    for (int i = 0; i < CHILDREN; i++) {
        if (f->kids[i] > 0) {
            kill(f->kids[i], SIGKILL);
            waitpid(f->kids[i], NULL, 0);
        }
    }
    rl_client_free(f->c);
    rl_lock_free(f->l);
    if (f->stop != NULL)
        munmap(f->stop, sizeof(*f->stop));
    if (f->log_path[0] != '\0')
        unlink(f->log_path);
    harness_cluster_stop(f->r, NODES);
    free(f);
    return 0;
}

static void start_client(struct fx *f)
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
static int counters_equal(struct fx *f, const char *key,
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
    struct fx *f = *state;
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
    /* The counter stays (no TTL) on a majority, holding the last token. */
    harness_sleep_ms(50);
    assert_true(counters_equal(f, "redlock:fence:fence:seq", prev) >= 3);
    /* The lock key itself is gone. */
    for (int i = 0; i < NODES; i++)
        assert_int_equal(harness_pttl(&f->r[i], "fence:seq"), -2);
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
    /* Without opts.fencing: 0, and no counter for another resource. */
    o.fencing = false;
    assert_int_equal(rl_acquire(f->c, "fence:none", &o, &f->l), RL_OK);
    assert_int_equal(rl_lock_fence(f->l), 0);
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
    for (int i = 0; i < NODES; i++)
        assert_int_equal(harness_pttl(&f->r[i], "redlock:fence:fence:none"),
                         -2);
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
 * parent sets *stop. Never returns; exit status 0 unless something went
 * wrong. Must not run the test's atexit handlers (they would kill the
 * servers). */
static void child_main(struct fx *f, int id)
{
    rl_config cfg;
    rl_acquire_opts o = { 0 };
    rl_client *c;
    int fd;
    int done = 0;
    int failures = 0;
    char line[160];

    quarantine_config(&cfg, &f->hn);
    c = fixture_client(&cfg);
    fd = open(f->log_path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (c == NULL || fd < 0)
        _exit(2);
    o.ttl_ms = 1000;
    o.wait_ms = 10000;
    o.fencing = true;
    while (!atomic_load(f->stop)) {
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
        /* Give the other process a chance now and then. */
        if (done % 3 == 0)
            harness_sleep_ms(1);
    }
    rl_client_free(c);
    close(fd);
    _exit(0);
}

struct entry {
    long long entry_ns;
    long long exit_ns;
    unsigned long long fence;
    int id;
    long long validity;
};

static int by_entry(const void *a, const void *b)
{
    const struct entry *x = a;
    const struct entry *y = b;

    return (x->entry_ns > y->entry_ns) - (x->entry_ns < y->entry_ns);
}

static bool children_running(struct fx *f, int *status_bad)
{
    bool any = false;

    for (int i = 0; i < CHILDREN; i++) {
        int status;
        pid_t w;

        if (f->kids[i] <= 0)
            continue;
        w = waitpid(f->kids[i], &status, WNOHANG);
        if (w == f->kids[i]) {
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "  child %d ended with status %#x\n", i,
                        status);
                (*status_bad)++;
            }
            f->kids[i] = 0;
        } else {
            any = true;
        }
    }
    return any;
}

static void test_fence_increases_across_processes_and_node_restarts(
    void **state)
{
    struct fx *f = *state;
    const char *tmp = getenv("TMPDIR");
    struct entry *e = NULL;
    size_t n = 0;
    size_t cap = 0;
    size_t per_child[CHILDREN] = { 0 };
    int bad = 0;
    int kills = 0;
    int64_t win[KILLS][2] = { { 0 } }; /* kill .. end of quarantine */
    size_t in_window = 0;
    int fd;
    int64_t t0;
    int64_t elapsed;
    long long min_validity = INT64_MAX;
    FILE *in;
    char line[160];

    if (tmp == NULL || tmp[0] == '\0')
        tmp = "/tmp";
    snprintf(f->log_path, sizeof(f->log_path), "%s/rl-fence-XXXXXX", tmp);
    fd = mkstemp(f->log_path);
    assert_true(fd >= 0);
    close(fd);
    /* Nodes younger than max_ttl_ms do not vote: let them age first. */
    assert_true(harness_wait_uptime(f->r, NODES, 2));
    f->stop = mmap(NULL, sizeof(*f->stop), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(f->stop != MAP_FAILED);
    atomic_store(f->stop, 0);

    fflush(NULL);
    for (int i = 0; i < CHILDREN; i++) {
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0)
            child_main(f, i);
        f->kids[i] = pid;
    }
    /* Meanwhile: kill -9 one node, restart it empty, move on to the next
     * one; at most one node is down at any time (a restarted one is
     * quarantined for max_ttl_ms, so one down plus one quarantined leaves
     * exactly a voting majority). */
    t0 = harness_now_ms();
    harness_sleep_ms(500);
    for (kills = 0; kills < KILLS && children_running(f, &bad); kills++) {
        win[kills][0] = harness_now_ns();
        harness_kill(&f->r[kills]);
        harness_sleep_ms(300);
        assert_int_equal(harness_restart(&f->r[kills]), 0);
        win[kills][1] = harness_now_ns() + 1500 * INT64_C(1000000);
        harness_sleep_ms(1000);
    }
    harness_sleep_ms(500);
    atomic_store(f->stop, 1);
    while (children_running(f, &bad) &&
           harness_now_ms() - t0 < harness_scale_ms(RUN_LIMIT_MS))
        harness_sleep_ms(20);
    elapsed = harness_now_ms() - t0;
    if (children_running(f, &bad)) {
        fprintf(stderr, "  children still running after %lld ms\n",
                (long long)elapsed);
        fail();
    }
    assert_int_equal(bad, 0);

    in = fopen(f->log_path, "r");
    assert_non_null(in);
    while (fgets(line, sizeof(line), in) != NULL) {
        struct entry x;

        if (sscanf(line, "%lld %lld %llu %d %lld", &x.entry_ns, &x.exit_ns,
                   &x.fence, &x.id, &x.validity) != 5) {
            fprintf(stderr, "  bad line: %s", line);
            fail();
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 1024;
            e = realloc(e, cap * sizeof(*e));
            assert_non_null(e);
        }
        e[n++] = x;
    }
    fclose(in);
    qsort(e, n, sizeof(*e), by_entry);
    for (size_t i = 0; i < n; i++) {
        if (e[i].id >= 0 && e[i].id < CHILDREN)
            per_child[e[i].id]++;
        if (e[i].validity < min_validity)
            min_validity = e[i].validity;
        for (int k = 0; k < kills; k++) {
            if (e[i].entry_ns >= win[k][0] && e[i].entry_ns <= win[k][1]) {
                in_window++;
                break;
            }
        }
    }
    fprintf(stderr, "  %zu holders (%zu + %zu) in %lld ms with %d node "
                    "kills/restarts (%zu holders while a node was down "
                    "or quarantined); fences %llu .. %llu; min validity "
                    "%lld ms\n",
            n, per_child[0], per_child[1], (long long)elapsed, kills,
            in_window, n ? e[0].fence : 0ULL, n ? e[n - 1].fence : 0ULL,
            min_validity);
    for (size_t i = 1; i < n; i++) {
        if (e[i].fence <= e[i - 1].fence || e[i].entry_ns < e[i - 1].exit_ns) {
            fprintf(stderr, "  holder %zu (child %d): fence %llu, entry "
                            "%lld; previous (child %d): fence %llu, exit "
                            "%lld\n",
                    i, e[i].id, e[i].fence, e[i].entry_ns, e[i - 1].id,
                    e[i - 1].fence, e[i - 1].exit_ns);
            free(e);
            fail_msg("fences out of order or sections overlap");
        }
    }
    assert_true(n >= MIN_HOLDERS);
    assert_true(per_child[0] >= 100);
    assert_true(per_child[1] >= 100);
    assert_int_equal(kills, KILLS);
    assert_true(in_window >= 100);
    assert_true(e[0].fence > 0);
    /* The counter of the last holder is on a majority. */
    assert_true(counters_equal(f, "redlock:fence:fence:shared",
                               e[n - 1].fence) >= 3);
    free(e);
}

/* ---- One restart between two holders (issue 12) ---------------------------*/

#define RESTART_NODES 3

static int setup3(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (f == NULL)
        return -1;
    *state = f;
    return fixture_start(f->r, RESTART_NODES, &f->hn, NULL);
}

static rl_client *restart_client(struct fx *f)
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
    struct fx *f = *state;
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
            &f->r[i], "SET redlock:fence:fence:restart %s", ahead)));
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
    assert_true(counter_on(&f->r[0], "redlock:fence:fence:restart") == t1);
    assert_true(counter_on(&f->r[1], "redlock:fence:fence:restart") == t1);
    assert_true(counter_on(&f->r[2], "redlock:fence:fence:restart") == t0);
    /* A restarts empty; C's other holder goes away. */
    harness_kill(&f->r[0]);
    assert_int_equal(harness_restart(&f->r[0]), 0);
    assert_true(harness_key_absent(&f->r[0], "redlock:fence:fence:restart"));
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
    assert_true(counter_on(&f->r[0], "redlock:fence:fence:restart") == t2);
    mark = harness_get(&f->r[0], "redlock:fencerun:fence:restart");
    assert_non_null(mark);
    free(mark);
    assert_int_equal(rl_release(l2), RL_OK);
    rl_client_free(c2);
}

static void test_fence_trusted_quorum_needs_no_wall_clock(void **state)
{
    struct fx *f = *state;
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

/* ---- Multi-resource -------------------------------------------------------*/

static void test_multi_resource_acquire_returns_a_fence(void **state)
{
    struct fx *f = *state;
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
    for (int i = 0; i < NODES; i++)
        assert_true(harness_pttl(&f->r[i], "fence:m2") > 0);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_fence_strictly_increases_over_200_cycles, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_fence_increases_across_processes_and_node_restarts, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_multi_resource_acquire_returns_a_fence, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_fence_across_one_restart_with_counters_ahead_of_wall_time,
            setup3, teardown),
        cmocka_unit_test_setup_teardown(
            test_fence_trusted_quorum_needs_no_wall_clock, setup3, teardown),
    };

    harness_require_redis();
    return cmocka_run_group_tests_name("fencing", tests, NULL, NULL);
}
