/* SPDX-License-Identifier: BSD-3-Clause */
/* fixture.c -- see fixture.h. */
#include "fixture.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <ev.h>

void fixture_log(int level, const char *msg, void *privdata)
{
    if (getenv("RL_TEST_LOG") == NULL)
        return;
    if (privdata != NULL)
        fprintf(stderr, "  [redlock %s %d] %s\n", (const char *)privdata,
                level, msg);
    else
        fprintf(stderr, "  [redlock %d] %s\n", level, msg);
}

void fixture_config(rl_config *cfg, const struct harness_nodes *hn)
{
    rl_config_init(cfg);
    if (hn != NULL) {
        cfg->nodes = hn->ptr;
        cfg->node_count = hn->count;
    }
    /* Short enough to keep failure tests fast, long enough that a loaded
     * CI machine running tests in parallel does not drop healthy nodes
     * (the "stored on every node" checks rely on that). */
    cfg->connect_timeout_ms = (uint32_t)harness_scale_ms(300);
    cfg->op_timeout_ms = (uint32_t)harness_scale_ms(150);
    cfg->retry_count = 0;
    cfg->retry_delay_ms = 20;
    cfg->retry_jitter_ms = 10;
    cfg->trust_restarted_nodes = true;
    cfg->log = fixture_log;
    cfg->log_level = RL_LOG_DEBUG;
}

rl_client *fixture_client(const rl_config *cfg)
{
    rl_status st = RL_EINVAL;
    rl_client *c = rl_client_new(cfg, &st);

    if (c == NULL)
        fprintf(stderr, "rl_client_new: %s: %s\n", rl_status_name(st),
                rl_last_error());
    return c;
}

bool fixture_all_voting(rl_client *c)
{
    int64_t deadline = harness_now_ms() + harness_scale_ms(5000);
    rl_node_info info[HARNESS_MAX_SERVERS];
    size_t count = 0;
    size_t voting;

    do {
        voting = 0;
        rl_client_ping(c, info, HARNESS_MAX_SERVERS, &count);
        for (size_t i = 0; i < count && i < HARNESS_MAX_SERVERS; i++)
            voting += info[i].voting;
        if (count > 0 && voting == count)
            return true;
        harness_sleep_ms(20);
    } while (harness_now_ms() < deadline);
    fprintf(stderr, "fixture: %zu of %zu nodes vote after %lld ms\n", voting,
            count, (long long)harness_scale_ms(5000));
    return false;
}

rl_client *fixture_fast_client(const struct harness_nodes *hn)
{
    rl_config cfg;

    fixture_config(&cfg, hn);
    return fixture_client(&cfg);
}

rl_client *fixture_patient_client(const struct harness_nodes *hn,
                                  uint32_t retry_delay_ms)
{
    rl_config cfg;
    rl_client *c;
    rl_lock *warm;

    fixture_config(&cfg, hn);
    cfg.retry_delay_ms = retry_delay_ms;
    cfg.retry_jitter_ms = 0;
    c = fixture_client(&cfg);
    assert_non_null(c);
    assert_int_equal(rl_acquire(c, "fixture:warm", NULL, &warm), RL_OK);
    assert_int_equal(rl_release(warm), RL_OK);
    return c;
}

rl_status fixture_acquire_until_ok(rl_client *c, const char *resource,
                                   const rl_acquire_opts *o, rl_lock **lock,
                                   int64_t since_ms, int64_t limit_ms,
                                   int64_t sleep_ms, int *attempts)
{
    rl_status st = RL_ENOQUORUM;

    while (st != RL_OK && harness_now_ms() - since_ms < limit_ms) {
        *lock = NULL;
        st = rl_acquire(c, resource, o, lock);
        if (attempts != NULL)
            (*attempts)++;
        if (st != RL_OK)
            harness_sleep_ms(sleep_ms);
    }
    return st;
}

static const struct fixture_opts default_opts = { .nodes = 3 };

rl_client *fixture_client_on(const struct fixture *f, struct ev_loop *loop)
{
    rl_config cfg;

    fixture_config(&cfg, &f->hn);
    cfg.loop = loop;
    if (f->opts->tune != NULL)
        f->opts->tune(&cfg);
    return fixture_client(&cfg);
}

static int setup_clients(struct fixture *f)
{
    const struct fixture_opts *o = f->opts;

    if (o->nodes == 0 || o->no_client)
        return 0;
    if (o->external_loop) {
        f->loop = ev_loop_new(0);
        if (f->loop == NULL)
            return -1;
    }
    f->c = fixture_client_on(f, f->loop);
    if (f->c == NULL || (o->all_voting && !fixture_all_voting(f->c)))
        return -1;
    if (o->second_client) {
        f->c2 = fixture_client_on(f, NULL);
        if (f->c2 == NULL)
            return -1;
    }
    return 0;
}

int fixture_setup(void **state)
{
    const struct fixture_opts *o = *state != NULL ? *state : &default_opts;
    struct fixture *f = calloc(1, sizeof(*f));

    *state = f;
    if (f == NULL)
        return -1;
    f->opts = o;
    if (o->priv_size > 0) {
        f->priv = calloc(1, o->priv_size);
        if (f->priv == NULL)
            return -1;
    }
    if (o->nodes > FIXTURE_MAX_NODES) {
        fprintf(stderr, "fixture: %d nodes, at most %d\n", o->nodes,
                FIXTURE_MAX_NODES);
        return -1;
    }
    if (o->nodes > 0) {
        if (harness_cluster_start_nodes(f->r, o->nodes, NULL, &f->hn) != 0)
            return -1;
        f->n = o->nodes;
    }
    if (setup_clients(f) != 0)
        return -1;
    return o->setup != NULL ? o->setup(f) : 0;
}

int fixture_teardown(void **state)
{
    struct fixture *f = *state;

    if (f == NULL)
        return 0;
    for (int i = 0; i < FIXTURE_MAX_NODES; i++) {
        if (f->r[i].paused)
            harness_resume(&f->r[i]);
    }
    rl_client_free(f->c);
    rl_client_free(f->c2);
    rl_lock_free(f->l);
    rl_lock_free(f->l2);
    for (int i = 0; i < FIXTURE_MAX_LOCKS; i++)
        rl_lock_free(f->locks[i]);
    if (f->opts->cleanup != NULL)
        f->opts->cleanup(f);
    if (f->loop != NULL)
        ev_loop_destroy(f->loop);
    harness_cluster_stop(f->r, FIXTURE_MAX_NODES);
    free(f->priv);
    free(f);
    return 0;
}

int fixture_run(const char *name, const struct fixture_opts *opts,
                const struct CMUnitTest *tests, size_t count)
{
    struct CMUnitTest *all = calloc(count, sizeof(*all));
    int rc;

    if (all == NULL)
        return 1;
    for (size_t i = 0; i < count; i++) {
        all[i] = tests[i];
        if (all[i].setup_func == NULL) {
            all[i].setup_func = fixture_setup;
            all[i].teardown_func = fixture_teardown;
            all[i].initial_state = (void *)opts;
        }
    }
    harness_require_redis();
    rc = _cmocka_run_group_tests(name, all, count, NULL, NULL);
    free(all);
    return rc;
}

int fixture_proxy_start(pid_t *pid, int upstream, int delay_ms,
                        int *control)
{
#ifdef RL_FAULTPROXY
    char up[32], delay[16], line[128];
    size_t len = 0;
    int fds[2], port = -1, ctl = -1;

    snprintf(up, sizeof(up), "127.0.0.1:%d", upstream);
    snprintf(delay, sizeof(delay), "%d", delay_ms);
    *pid = 0;
    if (pipe2(fds, O_CLOEXEC) != 0) {
        perror("fixture_proxy_start: pipe2");
        return -1;
    }
    *pid = fork();
    if (*pid < 0) {
        perror("fixture_proxy_start: fork");
        close(fds[0]);
        close(fds[1]);
        *pid = 0;
        return -1;
    }
    if (*pid == 0) {
        /* Gone with the test: a crashed case must not leave it holding
         * ctest's output pipe open (ctest would wait out its timeout). */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        dup2(fds[1], STDOUT_FILENO);
        execl(RL_FAULTPROXY, "faultproxy", "--listen", "127.0.0.1:0",
              "--upstream", up, "--delay", delay, "-q", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    /* "listening 127.0.0.1:PORT control ..." */
    while (len + 1 < sizeof(line) && read(fds[0], line + len, 1) == 1 &&
           line[len] != '\n')
        len++;
    line[len] = '\0';
    close(fds[0]);
    if (sscanf(line, "listening 127.0.0.1:%d control 127.0.0.1:%d", &port,
               &ctl) != 2) {
        fprintf(stderr, "fixture_proxy_start: faultproxy said '%s'\n", line);
        fixture_proxy_stop(pid);
        return -1;
    }
    if (control != NULL)
        *control = ctl;
    return port;
#else
    (void)upstream;
    (void)delay_ms;
    (void)control;
    *pid = 0;
    fprintf(stderr, "SKIP: built without tools/faultproxy\n");
    return -1;
#endif
}

bool fixture_proxy_say(int control, const char *command)
{
    struct sockaddr_in sa = { .sin_family = AF_INET,
                              .sin_port = htons((uint16_t)control),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    char reply[64];
    size_t len = 0;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool ok = false;

    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
        dprintf(fd, "%s\n", command) > 0) {
        while (len + 1 < sizeof(reply) && read(fd, reply + len, 1) == 1 &&
               reply[len] != '\n')
            len++;
        reply[len] = '\0';
        ok = strncmp(reply, "ok", 2) == 0;
        if (!ok)
            fprintf(stderr, "faultproxy: '%s' got '%s'\n", command, reply);
    }
    if (fd >= 0)
        close(fd);
    return ok;
}

void fixture_proxy_stop(pid_t *pid)
{
    if (*pid <= 0)
        return;
    kill(*pid, SIGTERM);
    waitpid(*pid, NULL, 0);
    *pid = 0;
}

rl_lock *fixture_acquire(rl_client *c, const char *resource, uint32_t ttl_ms)
{
    rl_acquire_opts o = { 0 };
    rl_lock *l = NULL;
    rl_status st;

    o.ttl_ms = ttl_ms;
    st = rl_acquire(c, resource, &o, &l);
    if (st != RL_OK)
        fail_msg("rl_acquire %s: %s: %s", resource, rl_status_name(st),
                 rl_last_error());
    return l;
}

long long fixture_command_stat(const struct rl_redis *r, const char *cmd,
                               const char *field)
{
    char name[64], buf[512];
    size_t len = strlen(field);
    const char *p;

    snprintf(name, sizeof(name), "cmdstat_%s", cmd);
    if (harness_info_field(r, "commandstats", name, buf, sizeof(buf)) != 0)
        return 0;
    for (p = buf; p != NULL; p = strchr(p, ',')) {
        p += *p == ',';
        if (strncmp(p, field, len) == 0 && p[len] == '=')
            return atoll(p + len + 1);
    }
    return 0;
}

bool fixture_all_hold(const struct fixture *f, const char *key,
                      const char *value, int64_t since_ms, long long ttl_ms)
{
    return harness_all_hold_ttl(f->r, f->n, key, value, since_ms, ttl_ms);
}

bool fixture_validity_from(const rl_lock *l, int64_t since_ms,
                           int64_t max_ms)
{
    int64_t v = rl_lock_validity_ms(l);
    int64_t read_ms = harness_now_ms();
    /* Both clocks are read in whole ms, rounded down apart. */
    bool ok = v <= max_ms && read_ms + v + 2 >= since_ms + max_ms;

    if (!ok)
        fprintf(stderr, "validity %lld ms (want <= %lld), ends %+lld ms "
                        "from since + %lld (want >= 0)\n",
                (long long)v, (long long)max_ms,
                (long long)(read_ms + v - since_ms - max_ms),
                (long long)max_ms);
    return ok;
}

bool fixture_wait_total(rl_client *c, size_t offset, uint64_t want,
                        int64_t ms)
{
    int64_t deadline = harness_now_ms() + harness_scale_ms(ms);
    rl_totals t;
    uint64_t v = 0;

    do {
        if (rl_client_totals(c, &t) == RL_OK)
            memcpy(&v, (const char *)&t + offset, sizeof(v));
        if (v >= want)
            return true;
        harness_sleep_ms(5);
    } while (harness_now_ms() < deadline);
    fprintf(stderr, "rl_totals counter at offset %zu: %llu, want %llu\n",
            offset, (unsigned long long)v, (unsigned long long)want);
    return false;
}

void fixture_pause_all(struct fixture *f)
{
    for (int i = 0; i < f->n; i++)
        assert_int_equal(harness_pause(&f->r[i]), 0);
}

void fixture_resume_all(struct fixture *f)
{
    for (int i = 0; i < f->n; i++)
        assert_int_equal(harness_resume(&f->r[i]), 0);
}

void fixture_rec_acquired(rl_client *c, rl_status st, rl_lock *lock,
                          void *privdata)
{
    struct fixture_rec *r = privdata;

    (void)c;
    r->st = st;
    r->lock = lock;
    atomic_fetch_add(&r->calls, 1);
}

void fixture_rec_extended(rl_lock *l, rl_status st, void *privdata)
{
    struct fixture_rec *r = privdata;

    (void)l;
    r->st = st;
    atomic_fetch_add(&r->calls, 1);
}

void fixture_rec_released(rl_client *c, rl_status st, void *privdata)
{
    struct fixture_rec *r = privdata;

    (void)c;
    r->st = st;
    atomic_fetch_add(&r->calls, 1);
}

void fixture_run_workers(int n, void *(*fn)(void *), void *shared)
{
    struct fixture_worker *w = calloc((size_t)n, sizeof(*w));
    pthread_t *t = calloc((size_t)n, sizeof(*t));
    int started = 0;

    assert_non_null(w);
    assert_non_null(t);
    for (; started < n; started++) {
        w[started].id = started;
        w[started].shared = shared;
        if (pthread_create(&t[started], NULL, fn, &w[started]) != 0)
            break;
    }
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    free(t);
    free(w);
    if (started < n)
        fail_msg("fixture_run_workers: started %d of %d threads", started,
                 n);
}

static void *acquirer_main(void *arg)
{
    struct fixture_acquirer *a = arg;

    atomic_store(&a->started, 1);
    a->st = rl_acquire_multi(a->c, a->resources, a->count, &a->o, &a->lock);
    snprintf(a->err, sizeof(a->err), "%s", rl_last_error());
    atomic_store(&a->done, 1);
    return NULL;
}

void fixture_acquirer_start(struct fixture_acquirer *a)
{
    assert_int_equal(pthread_create(&a->thread, NULL, acquirer_main, a), 0);
}

void fixture_acquirer_join(struct fixture_acquirer *a)
{
    pthread_join(a->thread, NULL);
}

bool fixture_lost_for_being_slow(void)
{
    static const char *const slow[] = {
        "no renewal succeeded before the safety margin",
        "validity ran out before the extension",
        "extension round took longer than the TTL",
    };
    const char *why = rl_last_error();

    for (size_t i = 0; i < sizeof(slow) / sizeof(slow[0]); i++)
        if (strstr(why, slow[i]) != NULL)
            return true;
    return false;
}
