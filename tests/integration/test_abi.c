/* test_abi.c -- the ABI promise of redlock.h: a public struct a caller
 * passes in is refused with RL_EINVAL when any byte of its reserved tail
 * is not zero (a program built against a newer header), by every call that
 * takes it; the sizes of the public structs never change; the small
 * statistics calls agree with rl_client_stats. Real redis-server nodes,
 * since some calls need a held lock or a live client. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

#define NODES 3

struct fx {
    struct rl_redis r[NODES];
    struct harness_nodes hn;
    rl_client *c;
    rl_lock *l;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (f == NULL)
        return -1;
    *state = f;
    return fixture_start(f->r, NODES, &f->hn, &f->c);
}

static int teardown(void **state)
{
    struct fx *f = *state;

    if (f == NULL)
        return 0;
    rl_lock_free(f->l);
    rl_client_free(f->c);
    harness_cluster_stop(f->r, NODES);
    free(f);
    return 0;
}

/* One call that takes a caller's rl_acquire_opts. */
typedef rl_status opts_call(struct fx *f, const rl_acquire_opts *o);

/* For every reserved byte of rl_acquire_opts, alone set to 1: call
 * returns RL_EINVAL naming the reserved fields. name labels a failure. */
static void each_reserved_opts_byte(struct fx *f, opts_call *call,
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

static rl_status call_watchdog_start(struct fx *f, const rl_acquire_opts *o)
{
    return rl_watchdog_start(f->l, o);
}

static rl_status call_acquire(struct fx *f, const rl_acquire_opts *o)
{
    rl_lock *l = NULL;
    rl_status st = rl_acquire(f->c, "abi", o, &l);

    rl_lock_free(l);
    return st;
}

static rl_status call_acquire_multi(struct fx *f, const rl_acquire_opts *o)
{
    const char *res[] = { "abi:a", "abi:b" };
    rl_lock *l = NULL;
    rl_status st = rl_acquire_multi(f->c, res, 2, o, &l);

    rl_lock_free(l);
    return st;
}

static rl_status call_acquire_async(struct fx *f, const rl_acquire_opts *o)
{
    return rl_acquire_async(f->c, "abi", o, never_called, NULL);
}

static rl_status call_acquire_multi_async(struct fx *f,
                                          const rl_acquire_opts *o)
{
    const char *res[] = { "abi:a", "abi:b" };

    return rl_acquire_multi_async(f->c, res, 2, o, never_called, NULL);
}

static rl_status call_adopt(struct fx *f, const rl_acquire_opts *o)
{
    rl_lock *l = NULL;
    rl_status st = rl_lock_adopt_opts(
        f->c, "abi", "0123456789abcdef0123456789abcdef01234567", o, &l);

    rl_lock_free(l);
    return st;
}

static rl_status call_with_lock(struct fx *f, const rl_acquire_opts *o)
{
    return rl_with_lock(f->c, "abi", o, never_run, NULL, NULL);
}

static rl_status call_campaign(struct fx *f, const rl_acquire_opts *o)
{
    rl_lock *l = NULL;
    rl_status st = rl_campaign(f->c, "abi", o, &l);

    rl_lock_free(l);
    return st;
}

static rl_status call_campaign_async(struct fx *f, const rl_acquire_opts *o)
{
    return rl_campaign_async(f->c, "abi", o, never_called, NULL);
}

/* rl_watchdog_start reads the same options as rl_acquire, so a field a
 * newer header carves out of any reserved byte must be refused there too,
 * not silently ignored. */
static void test_watchdog_start_refuses_every_reserved_byte(void **state)
{
    struct fx *f = *state;
    rl_acquire_opts o = { 0 };

    o.ttl_ms = 10000;
    assert_int_equal(rl_acquire(f->c, "abi:held", &o, &f->l), RL_OK);
    each_reserved_opts_byte(f, call_watchdog_start, "rl_watchdog_start");
    /* The lock is not watched: a clean start still works. */
    assert_int_equal(rl_watchdog_start(f->l, NULL), RL_OK);
}

static void test_acquire_opts_reserved_bytes_are_einval_everywhere(
    void **state)
{
    struct fx *f = *state;

    each_reserved_opts_byte(f, call_acquire, "rl_acquire");
    each_reserved_opts_byte(f, call_acquire_multi, "rl_acquire_multi");
    each_reserved_opts_byte(f, call_acquire_async, "rl_acquire_async");
    each_reserved_opts_byte(f, call_acquire_multi_async,
                            "rl_acquire_multi_async");
    each_reserved_opts_byte(f, call_adopt, "rl_lock_adopt_opts");
    each_reserved_opts_byte(f, call_with_lock, "rl_with_lock");
    each_reserved_opts_byte(f, call_campaign, "rl_campaign");
    each_reserved_opts_byte(f, call_campaign_async, "rl_campaign_async");
    assert_true(harness_key_gone(f->r, NODES, "abi"));
}

static void test_config_reserved_bytes_are_einval(void **state)
{
    struct fx *f = *state;

    for (size_t i = 0; i < sizeof(((rl_config *)0)->reserved_); i++) {
        rl_config cfg;
        rl_status st = RL_OK;
        rl_client *c;

        fixture_config(&cfg, &f->hn);
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
    struct fx *f = *state;
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
        cmocka_unit_test_setup_teardown(
            test_watchdog_start_refuses_every_reserved_byte, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_acquire_opts_reserved_bytes_are_einval_everywhere, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_config_reserved_bytes_are_einval, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_stats_reserved_bytes_are_einval, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
