/* SPDX-License-Identifier: BSD-3-Clause */
/* test_api_misuse.c -- every public function with NULL, empty, huge and
 * out-of-range arguments: RL_EINVAL with a message naming the argument,
 * never a crash, never a callback, nothing written to Redis (STYLE 3.2,
 * 3.3.1, 3.11.1); a non-zero reserved byte of a public struct is RL_EINVAL
 * from every call that takes the struct. */
#include <math.h>
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

/* One node; max_ttl_ms pinned (the extend test goes above it). */
static void pin_max_ttl(rl_config *cfg)
{
    cfg->max_ttl_ms = 60000;
}

static const struct fixture_opts fx = { .nodes = 1, .tune = pin_max_ttl };
/* No server: cases that never reach one. */
static const struct fixture_opts bare = { .nodes = 0 };

/* The fixture client's configuration, for a case to change. */
static void base_config(rl_config *cfg, const struct fixture *f)
{
    fixture_config(cfg, &f->hn);
    pin_max_ttl(cfg);
}

/* rl_client_new(cfg) fails with RL_EINVAL and a message containing want
 * (and not containing secret, if given); also with st == NULL. */
static bool rejects(const rl_config *cfg, const char *want,
                    const char *secret)
{
    rl_status st = RL_OK;
    rl_client *c = rl_client_new(cfg, &st);
    bool ok = true;

    if (c != NULL) {
        fprintf(stderr, "  accepted a bad config (want '%s')\n", want);
        rl_client_free(c);
        return false;
    }
    if (st != RL_EINVAL) {
        fprintf(stderr, "  status %s, want RL_EINVAL\n", rl_status_name(st));
        ok = false;
    }
    if (strstr(rl_last_error(), want) == NULL) {
        fprintf(stderr, "  message '%s' does not name '%s'\n",
                rl_last_error(), want);
        ok = false;
    }
    if (secret != NULL && strstr(rl_last_error(), secret) != NULL) {
        fprintf(stderr, "  message '%s' shows the password\n",
                rl_last_error());
        ok = false;
    }
    c = rl_client_new(cfg, NULL);
    if (c != NULL) {
        rl_client_free(c);
        ok = false;
    }
    return ok;
}

static bool rejects_uri(struct fixture *f, const char *uri, const char *secret)
{
    rl_config cfg;
    const char *nodes[1] = { uri };
    bool ok;

    base_config(&cfg, f);
    cfg.nodes = nodes;
    ok = rejects(&cfg, "nodes[0]", secret);
    if (!ok)
        fprintf(stderr, "  (uri '%.60s')\n", uri);
    return ok;
}

/* ---- Client configuration ---- */

static void test_client_new_rejects_a_null_config(void **state)
{
    rl_status st = RL_OK;

    (void)state;
    assert_null(rl_client_new(NULL, &st));
    assert_int_equal(st, RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "cfg"));
    assert_null(rl_client_new(NULL, NULL));
}

static void test_client_new_rejects_bad_node_lists(void **state)
{
    struct fixture *f = *state;
    rl_config cfg;
    const char *two_null[2] = { f->hn.ptr[0], NULL };
    const char *dup[2] = { f->hn.ptr[0], f->hn.ptr[0] };
    char same[192];
    const char *dup2[2] = { f->hn.ptr[0], same };
    const char *many[65];

    base_config(&cfg, f);
    cfg.node_count = 0;
    assert_true(rejects(&cfg, "nodes", NULL));
    base_config(&cfg, f);
    cfg.nodes = NULL;
    assert_true(rejects(&cfg, "nodes", NULL));
    base_config(&cfg, f);
    cfg.nodes = two_null;
    cfg.node_count = 2;
    assert_true(rejects(&cfg, "nodes[1]", NULL));
    cfg.nodes = dup;
    assert_true(rejects(&cfg, "duplicate", NULL));
    /* The same endpoint written two ways is still a duplicate. */
    snprintf(same, sizeof(same), "redis://127.0.0.1:%d/0", f->r[0].port);
    cfg.nodes = dup2;
    assert_true(rejects(&cfg, "duplicate", NULL));
    for (int i = 0; i < 65; i++)
        many[i] = f->hn.ptr[0];
    cfg.nodes = many;
    cfg.node_count = 65;
    assert_true(rejects(&cfg, "nodes", NULL));
}

static void test_client_new_rejects_malformed_uris(void **state)
{
    struct fixture *f = *state;
    char huge[10001];

    assert_true(rejects_uri(f, "", NULL));
    assert_true(rejects_uri(f, "redis://", NULL));
    assert_true(rejects_uri(f, "127.0.0.1:", NULL));
    assert_true(rejects_uri(f, "127.0.0.1:abc", NULL));
    assert_true(rejects_uri(f, "127.0.0.1:0", NULL));
    assert_true(rejects_uri(f, "127.0.0.1:70000", NULL));
    assert_true(rejects_uri(f, "127.0.0.1:-1", NULL));
    assert_true(rejects_uri(f, "redis://127.0.0.1:0", NULL));
    assert_true(rejects_uri(f, "redis://127.0.0.1:70000", NULL));
    assert_true(rejects_uri(f, "redis://127.0.0.1:6379/notadb", NULL));
    assert_true(rejects_uri(f, "redis://127.0.0.1:6379/-1", NULL));
    assert_true(rejects_uri(f, "http://127.0.0.1:6379", NULL));
    assert_true(rejects_uri(f, "unix://relative/path.sock", NULL));
    assert_true(rejects_uri(f, "[::1:6379", NULL));
    /* A bad URI with a password: the message must not show it. */
    assert_true(rejects_uri(f, "redis://:hunter2secret@127.0.0.1:99999",
                            "hunter2secret"));
    assert_true(rejects_uri(f, "redis://bob:hunter2secret@127.0.0.1:abc",
                            "hunter2secret"));
    memset(huge, 'a', sizeof(huge) - 1);
    huge[sizeof(huge) - 1] = '\0';
    assert_true(rejects_uri(f, huge, NULL));
}

/* The fixture client's configuration with field set to value is refused
 * with a message naming the field. */
#define ASSERT_REJECTS_FIELD(f, field, value)                                 \
    do {                                                                      \
        rl_config cfg_;                                                       \
                                                                              \
        base_config(&cfg_, (f));                                              \
        cfg_.field = (value);                                                 \
        assert_true(rejects(&cfg_, #field, NULL));                            \
    } while (0)

static void test_client_new_rejects_out_of_range_numbers(void **state)
{
    struct fixture *f = *state;
    rl_config cfg;

    ASSERT_REJECTS_FIELD(f, connect_timeout_ms, 0);
    ASSERT_REJECTS_FIELD(f, op_timeout_ms, 0);
    ASSERT_REJECTS_FIELD(f, op_timeout_ms, 60001);
    ASSERT_REJECTS_FIELD(f, drift_factor, -0.1);
    ASSERT_REJECTS_FIELD(f, drift_factor, 0.5);
    ASSERT_REJECTS_FIELD(f, drift_factor, NAN);
    ASSERT_REJECTS_FIELD(f, max_ttl_ms, 0);
    ASSERT_REJECTS_FIELD(f, max_ttl_ms, UINT32_MAX);
    ASSERT_REJECTS_FIELD(f, log_level, 9);
    /* The retry delay with its jitter, which may not exceed it. */
    base_config(&cfg, f);
    cfg.retry_delay_ms = 0;
    cfg.retry_jitter_ms = 0;
    assert_true(rejects(&cfg, "retry_delay_ms", NULL));
    cfg.retry_delay_ms = 10;
    cfg.retry_jitter_ms = 11;
    assert_true(rejects(&cfg, "retry_jitter_ms", NULL));
}

static void test_client_new_rejects_a_reserved_or_huge_prefix(void **state)
{
    struct fixture *f = *state;
    rl_config cfg;
    char *huge = malloc(10001);

    assert_non_null(huge);
    memset(huge, 'p', 10000);
    huge[10000] = '\0';
    base_config(&cfg, f);
    cfg.prefix = "redlock:app:";
    assert_true(rejects(&cfg, "prefix", NULL));
    cfg.prefix = huge;
    assert_true(rejects(&cfg, "prefix", NULL));
    free(huge);
}

static void test_config_init_and_free_accept_null(void **state)
{
    rl_config cfg;

    (void)state;
    rl_config_init(NULL);
    rl_client_free(NULL);
    rl_lock_free(NULL);
    rl_config_init(&cfg);
    assert_null(cfg.nodes);
    assert_int_equal(cfg.node_count, 0);
    assert_int_equal(cfg.connect_timeout_ms, 200);
    assert_int_equal(cfg.op_timeout_ms, 50);
    assert_int_equal(cfg.retry_count, 3);
    assert_int_equal(cfg.retry_delay_ms, 200);
    assert_int_equal(cfg.retry_jitter_ms, 100);
    assert_int_equal(cfg.max_ttl_ms, 60000);
    assert_false(cfg.trust_restarted_nodes);
    assert_null(cfg.loop);
}

/* ---- Acquire arguments ---- */

static void expect_einval(rl_status st, const char *want)
{
    if (st != RL_EINVAL || strstr(rl_last_error(), want) == NULL)
        fprintf(stderr, "  got %s '%s', want RL_EINVAL naming '%s'\n",
                rl_status_name(st), rl_last_error(), want);
    assert_int_equal(st, RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), want));
}

static void test_acquire_rejects_bad_arguments(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = { 0 };
    rl_lock *l = NULL;
    char *huge = malloc(10001);
    char max_name[513];
    char over_name[514];

    assert_non_null(huge);
    memset(huge, 'r', 10000);
    huge[10000] = '\0';
    o.ttl_ms = 1000;
    expect_einval(rl_acquire(NULL, "r", &o, &l), "c");
    expect_einval(rl_acquire(f->c, NULL, &o, &l), "resource");
    expect_einval(rl_acquire(f->c, "", &o, &l), "resource");
    expect_einval(rl_acquire(f->c, huge, &o, &l), "resource");
    expect_einval(rl_acquire(f->c, "redlock:jobs", &o, &l), "resource");
    expect_einval(rl_acquire(f->c, "r", &o, NULL), "out");
    o.ttl_ms = 60001;
    expect_einval(rl_acquire(f->c, "r", &o, &l), "ttl_ms");
    o.ttl_ms = UINT32_MAX;
    expect_einval(rl_acquire(f->c, "r", &o, &l), "ttl_ms");
    o.ttl_ms = 1000;
    o.wait_ms = -5;
    expect_einval(rl_acquire(f->c, "r", &o, &l), "wait_ms");
    assert_null(l);
    /* 512 bytes is the limit. */
    o.wait_ms = 0;
    memset(max_name, 'm', 512);
    max_name[512] = '\0';
    memset(over_name, 'm', 513);
    over_name[513] = '\0';
    expect_einval(rl_acquire(f->c, over_name, &o, &l), "resource");
    assert_int_equal(harness_dbsize(&f->r[0]), 0);
    assert_int_equal(rl_release(fixture_acquire(f->c, max_name, 1000)),
                     RL_OK);
    assert_int_equal(harness_dbsize(&f->r[0]), 0);
    free(huge);
}

static void test_acquire_with_ttl_zero_uses_the_default(void **state)
{
    struct fixture *f = *state;
    int64_t t0 = harness_now_ms();
    rl_lock *l = fixture_acquire(f->c, "misuse:default-ttl", 0);

    /* Expiry and validity as instants, not windows read late. */
    assert_true(fixture_all_hold(f, "misuse:default-ttl", rl_lock_token(l),
                                 t0, RL_DEFAULT_TTL_MS));
    assert_true(fixture_validity_from(l, t0, RL_DEFAULT_TTL_MS -
                                                 RL_DEFAULT_TTL_MS / 100 - 2));
    assert_int_equal(rl_release(l), RL_OK);
    assert_int_equal(harness_dbsize(&f->r[0]), 0);
}

static void test_acquire_multi_rejects_bad_arguments(void **state)
{
    struct fixture *f = *state;
    const char *with_null[] = { "a", NULL, "c" };
    const char *with_reserved[] = { "a", "redlock:b" };
    const char *with_empty[] = { "a", "" };
    const char *ok[] = { "a", "b" };
    const char *many[65];
    rl_acquire_opts o = { 0 };
    rl_lock *l = NULL;

    o.ttl_ms = 1000;
    for (int i = 0; i < 65; i++)
        many[i] = "x";
    expect_einval(rl_acquire_multi(NULL, ok, 2, &o, &l), "c");
    expect_einval(rl_acquire_multi(f->c, NULL, 2, &o, &l), "resources");
    expect_einval(rl_acquire_multi(f->c, ok, 0, &o, &l), "resources");
    expect_einval(rl_acquire_multi(f->c, many, 65, &o, &l), "resources");
    expect_einval(rl_acquire_multi(f->c, with_null, 3, &o, &l), "resource");
    expect_einval(rl_acquire_multi(f->c, with_reserved, 2, &o, &l),
                  "redlock:b");
    expect_einval(rl_acquire_multi(f->c, with_empty, 2, &o, &l),
                  "resource");
    expect_einval(rl_acquire_multi(f->c, ok, 2, &o, NULL), "out");
    assert_null(l);
    assert_int_equal(harness_dbsize(&f->r[0]), 0);
}

/* ---- Lock handles ---- */

static void test_lock_functions_reject_null(void **state)
{
    struct fixture *f = *state;
    rl_lock *l = NULL;

    expect_einval(rl_extend(NULL, 1000), "l");
    expect_einval(rl_release(NULL), "l");
    /* Getters on NULL: defined, harmless values. */
    assert_true(rl_lock_validity_ms(NULL) <= 0);
    assert_int_equal(rl_lock_nodes_ok(NULL), 0);
    (void)rl_lock_token(NULL);
    (void)rl_lock_resource(NULL);
    (void)rl_lock_lost(NULL);
    expect_einval(rl_lock_adopt(NULL, "r", "abcd", &l), "c");
    expect_einval(rl_lock_adopt(f->c, NULL, "abcd", &l), "resource");
    expect_einval(rl_lock_adopt(f->c, "", "abcd", &l), "resource");
    expect_einval(rl_lock_adopt(f->c, "redlock:x", "abcd", &l), "resource");
    expect_einval(rl_lock_adopt(f->c, "r", NULL, &l), "token");
    expect_einval(rl_lock_adopt(f->c, "r", "", &l), "token");
    expect_einval(rl_lock_adopt(f->c, "r", "abcd", NULL), "out");
    assert_null(l);
}

static void test_extend_rejects_a_ttl_above_max_and_keeps_the_lock(
    void **state)
{
    struct fixture *f = *state;
    int64_t t0 = harness_now_ms();
    rl_lock *l = fixture_acquire(f->c, "misuse:ext", 5000);

    expect_einval(rl_extend(l, 60001), "ttl_ms");
    expect_einval(rl_extend(l, UINT32_MAX), "ttl_ms");
    assert_false(rl_lock_lost(l));
    /* Still the acquire's expiry. */
    assert_true(fixture_all_hold(f, "misuse:ext", rl_lock_token(l), t0, 5000));
    assert_int_equal(rl_release(l), RL_OK);
    assert_int_equal(harness_dbsize(&f->r[0]), 0);
}

/* ---- Async: a rejected call never calls back ---- */

/* The record of every callback below (static: the late callback of a
 * call accepted by mistake still finds it). */
static struct fixture_rec rec;

static void test_rejected_async_calls_never_call_back(void **state)
{
    struct fixture *f = *state;
    const char *ok[] = { "a", "b" };
    rl_acquire_opts o = { 0 };
    rl_lock *l;

    atomic_store(&rec.calls, 0);
    o.ttl_ms = 1000;
    expect_einval(rl_acquire_async(NULL, "r", &o, fixture_rec_acquired,
                                   &rec),
                  "c");
    expect_einval(rl_acquire_async(f->c, NULL, &o, fixture_rec_acquired,
                                   &rec),
                  "resource");
    expect_einval(rl_acquire_async(f->c, "redlock:r", &o,
                                   fixture_rec_acquired, &rec),
                  "resource");
    expect_einval(rl_acquire_async(f->c, "r", &o, NULL, NULL), "callback");
    o.ttl_ms = 60001;
    expect_einval(rl_acquire_async(f->c, "r", &o, fixture_rec_acquired,
                                   &rec),
                  "ttl_ms");
    o.ttl_ms = 1000;
    expect_einval(rl_acquire_multi_async(NULL, ok, 2, &o,
                                         fixture_rec_acquired, &rec),
                  "c");
    expect_einval(rl_acquire_multi_async(f->c, ok, 0, &o,
                                         fixture_rec_acquired, &rec),
                  "resources");
    expect_einval(rl_acquire_multi_async(f->c, NULL, 2, &o,
                                         fixture_rec_acquired, &rec),
                  "resources");
    expect_einval(rl_extend_async(NULL, 1000, fixture_rec_extended, &rec),
                  "l");
    expect_einval(rl_release_async(NULL, fixture_rec_released, &rec), "l");

    /* A valid lock with bad extend arguments: rejected, still usable. */
    l = fixture_acquire(f->c, "misuse:async", 1000);
    expect_einval(rl_extend_async(l, 60001, fixture_rec_extended, &rec),
                  "ttl_ms");
    harness_sleep_ms(100);
    assert_int_equal(atomic_load(&rec.calls), 0);
    assert_int_equal(rl_release(l), RL_OK);
    assert_int_equal(harness_dbsize(&f->r[0]), 0);
}

/* ---- Status texts ---- */

static void test_every_status_has_a_distinct_text_and_name(void **state)
{
    static const rl_status all[] = {
#define RL_STATUS_LIST_(name, value, text) name,
        RL_STATUS_MAP(RL_STATUS_LIST_)
#undef RL_STATUS_LIST_
    };
    static const char *const names[] = {
#define RL_STATUS_NAMES_(name, value, text) #name,
        RL_STATUS_MAP(RL_STATUS_NAMES_)
#undef RL_STATUS_NAMES_
    };
    const size_t n = sizeof(all) / sizeof(all[0]);

    (void)state;
    assert_int_equal(RL_OK, 0);
    for (size_t i = 0; i < n; i++) {
        const char *t = rl_strerror(all[i]);

        assert_non_null(t);
        assert_true(t[0] != '\0');
        assert_string_not_equal(t, "unknown error");
        assert_string_equal(rl_status_name(all[i]), names[i]);
        if (i > 0)
            assert_true((int)all[i] < 0);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(t, rl_strerror(all[j]));
    }
    assert_string_equal(rl_strerror((rl_status)-999), "unknown error");
    assert_string_equal(rl_strerror((rl_status)1), "unknown error");
    assert_string_equal(rl_status_name((rl_status)-999), "RL_UNKNOWN");
    assert_string_equal(rl_version(), RL_VERSION_STRING);
    assert_non_null(rl_last_error());
}

/* ---- The ABI: reserved bytes ---------------------------------------------
 * A public struct a caller passes in is refused when any byte of its
 * reserved tail is not zero (a program built against a newer header), by
 * every call that takes it. */

/* One call that takes a caller's rl_acquire_opts. */
typedef rl_status opts_call(struct fixture *f, const rl_acquire_opts *o);

/* For every reserved byte of rl_acquire_opts, alone set to 1: call
 * returns RL_EINVAL naming the reserved fields. name labels a failure. */
static void each_reserved_opts_byte(struct fixture *f, opts_call *call,
                                    const char *name)
{
    static const struct {
        size_t off, len;
    } tails[] = {
        { offsetof(rl_acquire_opts, reserved32_),
          sizeof(((rl_acquire_opts *)0)->reserved32_) },
        { offsetof(rl_acquire_opts, reserved_),
          sizeof(((rl_acquire_opts *)0)->reserved_) },
    };

    for (size_t t = 0; t < sizeof(tails) / sizeof(tails[0]); t++) {
        for (size_t i = 0; i < tails[t].len; i++) {
            rl_acquire_opts o = { 0 };
            rl_status st;

            ((unsigned char *)&o)[tails[t].off + i] = 1;
            st = call(f, &o);
            if (st != RL_EINVAL || strstr(rl_last_error(), "reserved") == NULL)
                fail_msg("%s: reserved byte at offset %zu: %s (%s)", name,
                         tails[t].off + i, rl_status_name(st),
                         rl_last_error());
        }
    }
}

static void never_called(rl_client *c, rl_status st, rl_lock *l, void *p)
{
    (void)c;
    (void)st;
    (void)l;
    (void)p;
    fail_msg("an acquire refused with an error called back");
}

static int never_run(rl_lock *l, void *arg)
{
    (void)l;
    (void)arg;
    fail_msg("rl_with_lock ran fn with bad options");
    return 0;
}

static rl_status call_watchdog_start(struct fixture *f,
                                     const rl_acquire_opts *o)
{
    return rl_watchdog_start(f->l, o);
}

/* rl_acquire or rl_campaign: the blocking calls that take one name. */
static rl_status (*blocking_acquire)(rl_client *, const char *,
                                     const rl_acquire_opts *, rl_lock **);

static rl_status call_blocking(struct fixture *f, const rl_acquire_opts *o)
{
    rl_lock *l = NULL;
    rl_status st = blocking_acquire(f->c, "abi", o, &l);

    rl_lock_free(l);
    return st;
}

static rl_status call_acquire_multi(struct fixture *f,
                                    const rl_acquire_opts *o)
{
    const char *res[] = { "abi:a", "abi:b" };
    rl_lock *l = NULL;
    rl_status st = rl_acquire_multi(f->c, res, 2, o, &l);

    rl_lock_free(l);
    return st;
}

static rl_status call_acquire_async(struct fixture *f,
                                    const rl_acquire_opts *o)
{
    return rl_acquire_async(f->c, "abi", o, never_called, NULL);
}

static rl_status call_acquire_multi_async(struct fixture *f,
                                          const rl_acquire_opts *o)
{
    const char *res[] = { "abi:a", "abi:b" };

    return rl_acquire_multi_async(f->c, res, 2, o, never_called, NULL);
}

static rl_status call_adopt(struct fixture *f, const rl_acquire_opts *o)
{
    rl_lock *l = NULL;
    rl_status st = rl_lock_adopt_opts(
        f->c, "abi", "0123456789abcdef0123456789abcdef01234567", o, &l);

    rl_lock_free(l);
    return st;
}

static rl_status call_with_lock(struct fixture *f, const rl_acquire_opts *o)
{
    return rl_with_lock(f->c, "abi", o, never_run, NULL, NULL);
}

static rl_status call_campaign_async(struct fixture *f,
                                     const rl_acquire_opts *o)
{
    return rl_campaign_async(f->c, "abi", o, never_called, NULL);
}

/* rl_watchdog_start reads the same options as rl_acquire, so a field a
 * newer header carves out of any reserved byte must be refused there too,
 * not silently ignored. */
static void test_watchdog_start_refuses_every_reserved_byte(void **state)
{
    struct fixture *f = *state;

    f->l = fixture_acquire(f->c, "abi:held", 10000);
    each_reserved_opts_byte(f, call_watchdog_start, "rl_watchdog_start");
    /* The lock is not watched: a clean start still works. */
    assert_int_equal(rl_watchdog_start(f->l, NULL), RL_OK);
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
}

static void test_acquire_opts_reserved_bytes_are_einval_everywhere(
    void **state)
{
    struct fixture *f = *state;

    blocking_acquire = rl_acquire;
    each_reserved_opts_byte(f, call_blocking, "rl_acquire");
    each_reserved_opts_byte(f, call_acquire_multi, "rl_acquire_multi");
    each_reserved_opts_byte(f, call_acquire_async, "rl_acquire_async");
    each_reserved_opts_byte(f, call_acquire_multi_async,
                            "rl_acquire_multi_async");
    each_reserved_opts_byte(f, call_adopt, "rl_lock_adopt_opts");
    each_reserved_opts_byte(f, call_with_lock, "rl_with_lock");
    blocking_acquire = rl_campaign;
    each_reserved_opts_byte(f, call_blocking, "rl_campaign");
    each_reserved_opts_byte(f, call_campaign_async, "rl_campaign_async");
    assert_true(harness_key_gone(f->r, 1, "abi"));
}

static void test_config_reserved_bytes_are_einval(void **state)
{
    struct fixture *f = *state;

    for (size_t i = 0; i < sizeof(((rl_config *)0)->reserved_); i++) {
        rl_config cfg;
        rl_status st = RL_OK;
        rl_client *c;

        base_config(&cfg, f);
        ((unsigned char *)cfg.reserved_)[i] = 1;
        c = rl_client_new(&cfg, &st);
        assert_null(c);
        assert_int_equal(st, RL_EINVAL);
        assert_non_null(strstr(rl_last_error(), "reserved"));
    }
}

/* rl_stats_format_prometheus reads a caller's rl_stats: its tail and the
 * tail of every node it lists. */
static void test_stats_reserved_bytes_are_einval(void **state)
{
    struct fixture *f = *state;
    rl_stats *good = malloc(sizeof(*good));
    rl_stats *s = malloc(sizeof(*s));
    size_t needed;

    assert_non_null(good);
    assert_non_null(s);
    assert_int_equal(rl_client_stats(f->c, good), RL_OK);
    assert_int_equal(
        rl_stats_format_prometheus(good, NULL, 0, NULL, 0, &needed), RL_OK);
    for (size_t i = 0; i < sizeof(good->reserved_); i++) {
        memcpy(s, good, sizeof(*s));
        ((unsigned char *)s->reserved_)[i] = 1;
        assert_int_equal(
            rl_stats_format_prometheus(s, NULL, 0, NULL, 0, &needed),
            RL_EINVAL);
        assert_non_null(strstr(rl_last_error(), "reserved"));
    }
    for (size_t n = 0; n < good->node_count; n++) {
        for (size_t i = 0; i < sizeof(good->nodes[n].reserved_); i++) {
            memcpy(s, good, sizeof(*s));
            ((unsigned char *)s->nodes[n].reserved_)[i] = 1;
            assert_int_equal(
                rl_stats_format_prometheus(s, NULL, 0, NULL, 0, &needed),
                RL_EINVAL);
            assert_non_null(strstr(rl_last_error(), "reserved"));
        }
    }
    free(s);
    free(good);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        FIXTURE_TEST(test_client_new_rejects_a_null_config, &bare),
        cmocka_unit_test(test_client_new_rejects_bad_node_lists),
        cmocka_unit_test(test_client_new_rejects_malformed_uris),
        cmocka_unit_test(test_client_new_rejects_out_of_range_numbers),
        cmocka_unit_test(test_client_new_rejects_a_reserved_or_huge_prefix),
        FIXTURE_TEST(test_config_init_and_free_accept_null, &bare),
        cmocka_unit_test(test_acquire_rejects_bad_arguments),
        cmocka_unit_test(test_acquire_with_ttl_zero_uses_the_default),
        cmocka_unit_test(test_acquire_multi_rejects_bad_arguments),
        cmocka_unit_test(test_lock_functions_reject_null),
        cmocka_unit_test(
            test_extend_rejects_a_ttl_above_max_and_keeps_the_lock),
        cmocka_unit_test(test_rejected_async_calls_never_call_back),
        FIXTURE_TEST(test_every_status_has_a_distinct_text_and_name, &bare),
        cmocka_unit_test(test_watchdog_start_refuses_every_reserved_byte),
        cmocka_unit_test(
            test_acquire_opts_reserved_bytes_are_einval_everywhere),
        cmocka_unit_test(test_config_reserved_bytes_are_einval),
        cmocka_unit_test(test_stats_reserved_bytes_are_einval),
    };

    return FIXTURE_RUN("api_misuse", &fx, tests);
}
