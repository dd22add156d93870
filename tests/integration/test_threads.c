/* SPDX-License-Identifier: BSD-3-Clause */
/* test_threads.c -- the blocking API from many threads on one client
 * (DESIGN §3 "Threading"). Mutual exclusion is checked the way the chaos
 * suite does it: inside the critical section each thread does a
 * non-atomic read-increment-write of a counter (in Redis, over its own
 * connection, and in memory with an enter/exit occupancy check); the final
 * counters must equal the number of successful acquisitions. */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

#define NODES 3
#define THREADS 8
#define CYCLES 500
#define RESOURCES 3

struct shared {
    struct fixture *f;
    long mem_counter[RESOURCES];     /* plain, guarded by the lock only */
    atomic_int inside[RESOURCES];    /* holders in the section now */
    atomic_long overlaps;            /* times inside was not 0 on entry */
    atomic_long acquired[RESOURCES]; /* successful acquisitions */
    atomic_long failed;              /* acquisitions that gave up */
    atomic_long release_errors;
    atomic_long redis_errors;
    atomic_long expired_in_section; /* validity <= 0 at section end */
    atomic_int first_error;         /* first unexpected status, or 0 */
    char first_error_text[256];
};

/* Contended: a few quick retries. */
static void quick_retries(rl_config *cfg)
{
    cfg->retry_count = 3;
    cfg->retry_delay_ms = 2;
    cfg->retry_jitter_ms = 1;
}

static const struct fixture_opts fx = { .nodes = NODES,
                                        .tune = quick_retries };

static void note_error(struct shared *sh, rl_status st, const char *what)
{
    int expected = 0;

    if (atomic_compare_exchange_strong(&sh->first_error, &expected,
                                       (int)st == 0 ? -100 : (int)st))
        snprintf(sh->first_error_text, sizeof(sh->first_error_text),
                 "%s: %s: %s", what, rl_status_name(st), rl_last_error());
}

/* Non-atomic increment of counter:<k> on node 0: GET, then SET. */
static bool redis_increment(redisContext *rc, int k)
{
    redisReply *rep = redisCommand(rc, "GET counter:%d", k);
    long long v = 0;

    if (rep == NULL)
        return false;
    if (rep->type == REDIS_REPLY_STRING)
        v = atoll(rep->str);
    freeReplyObject(rep);
    rep = redisCommand(rc, "SET counter:%d %lld", k, v + 1);
    if (rep == NULL)
        return false;
    freeReplyObject(rep);
    return true;
}

static void *worker_main(void *arg)
{
    struct fixture_worker *w = arg;
    struct shared *sh = w->shared;
    redisContext *rc = harness_connect(&sh->f->r[0]);
    char name[32];

    if (rc == NULL) {
        atomic_fetch_add(&sh->redis_errors, 1);
        return NULL;
    }
    for (int i = 0; i < CYCLES; i++) {
        int k = (w->id + i) % RESOURCES;
        rl_acquire_opts o = { 0 };
        rl_lock *l = NULL;
        rl_status st;
        long v;

        o.ttl_ms = 5000;
        o.wait_ms = 20000;
        snprintf(name, sizeof(name), "thr:res:%d", k);
        st = rl_acquire(sh->f->c, name, &o, &l);
        if (st != RL_OK) {
            atomic_fetch_add(&sh->failed, 1);
            note_error(sh, st, "acquire");
            continue;
        }
        if (atomic_fetch_add(&sh->inside[k], 1) != 0)
            atomic_fetch_add(&sh->overlaps, 1);
        v = sh->mem_counter[k];
        if (!redis_increment(rc, k))
            atomic_fetch_add(&sh->redis_errors, 1);
        sched_yield();
        sh->mem_counter[k] = v + 1;
        atomic_fetch_add(&sh->acquired[k], 1);
        if (rl_lock_validity_ms(l) <= 0)
            atomic_fetch_add(&sh->expired_in_section, 1);
        atomic_fetch_sub(&sh->inside[k], 1);
        st = rl_release(l);
        if (st != RL_OK) {
            atomic_fetch_add(&sh->release_errors, 1);
            note_error(sh, st, "release");
        }
    }
    redisFree(rc);
    return NULL;
}

static long long redis_counter(const struct rl_redis *r, int k)
{
    char key[32];
    char *v;
    long long n;

    snprintf(key, sizeof(key), "counter:%d", k);
    v = harness_get(r, key);
    n = v != NULL ? atoll(v) : 0;
    free(v);
    return n;
}

static void test_threads_sharing_a_client_never_share_a_lock(void **state)
{
    struct fixture *f = *state;
    struct shared *sh = calloc(1, sizeof(*sh));
    long total = 0;
    int64_t t0 = harness_now_ms();

    assert_non_null(sh);
    sh->f = f;
    fixture_run_workers(THREADS, worker_main, sh);
    fprintf(stderr, "  %d threads x %d cycles in %lld ms, %ld failed\n",
            THREADS, CYCLES, (long long)(harness_now_ms() - t0),
            atomic_load(&sh->failed));
    if (atomic_load(&sh->first_error) != 0)
        fprintf(stderr, "  first error: %s\n", sh->first_error_text);

    assert_int_equal(atomic_load(&sh->redis_errors), 0);
    assert_int_equal(atomic_load(&sh->overlaps), 0);
    assert_int_equal(atomic_load(&sh->expired_in_section), 0);
    for (int k = 0; k < RESOURCES; k++) {
        long n = atomic_load(&sh->acquired[k]);

        fprintf(stderr, "  resource %d: %ld acquisitions, redis counter "
                        "%lld, memory counter %ld\n",
                k, n, redis_counter(&f->r[0], k), sh->mem_counter[k]);
        assert_int_equal(redis_counter(&f->r[0], k), n);
        assert_int_equal(sh->mem_counter[k], n);
        total += n;
    }
    /* Every acquisition gave up or succeeded, and with a 20 s wait none
     * should give up. */
    assert_int_equal(total + atomic_load(&sh->failed), THREADS * CYCLES);
    assert_int_equal(atomic_load(&sh->failed), 0);
    assert_int_equal(atomic_load(&sh->release_errors), 0);
    /* No lock keys left: only the counters on node 0. */
    for (int i = 0; i < NODES; i++)
        assert_int_equal(harness_count_keys(&f->r[i], "thr:*"), 0);
    assert_int_equal(harness_dbsize(&f->r[0]), RESOURCES);
    assert_int_equal(harness_dbsize(&f->r[1]), 0);
    assert_int_equal(harness_dbsize(&f->r[2]), 0);
    free(sh);
}

/* Different threads, different resources: no thread waits for another
 * one's lock, and each sees only its own error text. */
struct err_shared {
    rl_client *c;
    int mismatches[THREADS];      /* per thread */
};

static void *err_worker_main(void *arg)
{
    struct fixture_worker *w = arg;
    struct err_shared *sh = w->shared;
    char bad[32];

    for (int i = 0; i < 2000; i++) {
        rl_lock *l = NULL;
        rl_acquire_opts o = { 0 };

        /* A distinct, always-invalid resource per thread: the detail text
         * must name this thread's own resource. */
        snprintf(bad, sizeof(bad), "redlock:thread%d", w->id);
        if (rl_acquire(sh->c, bad, &o, &l) != RL_EINVAL ||
            strstr(rl_last_error(), bad) == NULL)
            sh->mismatches[w->id]++;
    }
    return NULL;
}

static void test_last_error_is_per_thread(void **state)
{
    struct fixture *f = *state;
    struct err_shared sh = { .c = f->c };

    fixture_run_workers(THREADS, err_worker_main, &sh);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(sh.mismatches[i], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_sharing_a_client_never_share_a_lock),
        cmocka_unit_test(test_last_error_is_per_thread),
    };

    return FIXTURE_RUN("threads", &fx, tests);
}
