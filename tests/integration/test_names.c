/* SPDX-License-Identifier: BSD-3-Clause */
/* test_names.c -- a node whose host name does not resolve is a node that
 * is down (issue 45 item 3): the client is made all the same, takes locks
 * on the other nodes at once, says why on that node's row, and uses the
 * node as soon as its name resolves.
 *
 * A node is named "*.invalid" (RFC 2606: never in DNS). The machine's
 * /etc/hosts is never edited: the case that makes the name appear runs
 * in a mount namespace of its own (unshare(CLONE_NEWNS), the test process
 * only) with a copy of /etc/hosts bind-mounted over it, and writes the
 * name into that copy. glibc reads the hosts file at every lookup.
 * Without the rights to make the namespace that case is skipped. */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"

#define VANISHED "redlock-vanished.invalid"

static char hosts_copy[64];

static void remove_hosts_copy(void)
{
    unlink(hosts_copy);
}

/* /etc/hosts becomes a copy of itself that only this process (and the
 * servers it starts) sees; exit 77 (skipped) where that is not allowed. */
static void private_hosts(void)
{
    char cmd[160];
    int fd;

    snprintf(hosts_copy, sizeof(hosts_copy), "/tmp/rl-hosts-XXXXXX");
    fd = mkstemp(hosts_copy);
    assert_true(fd >= 0);
    close(fd);
    atexit(remove_hosts_copy);
    snprintf(cmd, sizeof(cmd), "cat /etc/hosts > %s", hosts_copy);
    assert_int_equal(system(cmd), 0);
    /* The source and type are ignored for these two mounts; "none"
     * rather than NULL, which valgrind reports as an unaddressable
     * argument. */
    if (unshare(CLONE_NEWNS) != 0 ||
        mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount(hosts_copy, "/etc/hosts", "none", MS_BIND, NULL) != 0) {
        printf("SKIP: no private mount namespace for /etc/hosts: %s\n",
               strerror(errno));
        exit(77);
    }
}

/* name now resolves to 127.0.0.1 (appended in place: the bind mount
 * holds the file, not its name). */
static void hosts_add(const char *name)
{
    FILE *fp = fopen(hosts_copy, "a");

    assert_non_null(fp);
    fprintf(fp, "127.0.0.1 %s\n", name);
    assert_int_equal(fclose(fp), 0);
}

/* Three servers; node 2 is given as VANISHED:<its port>. */
static rl_client *client_with_vanished_node(struct fixture *f)
{
    char uri[64];
    rl_config cfg;

    f->n = 3;
    assert_int_equal(harness_cluster_start_nodes(f->r, 3, NULL, &f->hn), 0);
    snprintf(uri, sizeof(uri), "%s:%d", VANISHED, f->r[2].port);
    harness_nodes_set(&f->hn, 2, uri);
    fixture_config(&cfg, &f->hn);
    f->c = fixture_client(&cfg);
    return f->c;
}

static void test_client_with_a_name_not_in_dns_locks_on_the_others(
    void **state)
{
    struct fixture *f = *state;
    rl_node_info info[3];
    size_t count = 0;
    int64_t t0;

    assert_non_null(client_with_vanished_node(f));
    /* At once: the vanished node fails fast, it is not waited for. */
    t0 = harness_now_ms();
    f->l = fixture_acquire(f->c, "names:first", 5000);
    assert_non_null(f->l);
    assert_true(harness_now_ms() - t0 < harness_scale_ms(1000));
    assert_int_equal(rl_lock_nodes_ok(f->l), 2);
    assert_true(harness_live_hold(f->r, 2, "names:first",
                                  rl_lock_token(f->l)));
    assert_null(harness_get(&f->r[2], "names:first"));
    /* Its row says what the resolver said. */
    assert_int_equal(rl_client_ping(f->c, info, 3, &count), RL_OK);
    assert_int_equal(count, 3);
    assert_true(info[0].reachable && info[1].reachable);
    assert_false(info[2].reachable);
    assert_false(info[2].voting);
    assert_non_null(strstr(info[2].error, "cannot resolve host '" VANISHED
                                          "'"));
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
}

static void test_a_name_that_appears_later_is_used(void **state)
{
    struct fixture *f = *state;
    rl_acquire_opts o = {0};
    rl_node_stats ns;
    int64_t t0;

    private_hosts();
    assert_non_null(client_with_vanished_node(f));
    assert_int_equal(rl_client_node_stats(f->c, 2, &ns), RL_OK);
    assert_false(ns.connected);
    hosts_add(VANISHED);
    /* With node 0 gone a quorum needs node 2: the client must have found
     * its name and connected. */
    harness_kill(&f->r[0]);
    o.ttl_ms = 5000;
    t0 = harness_now_ms();
    assert_int_equal(fixture_acquire_until_ok(f->c, "names:later", &o, &f->l,
                                              t0, harness_scale_ms(5000), 50,
                                              NULL),
                     RL_OK);
    fprintf(stderr, "  used after %lld ms\n",
            (long long)(harness_now_ms() - t0));
    assert_int_equal(rl_lock_nodes_ok(f->l), 2);
    assert_true(harness_live_hold(f->r, 3, "names:later",
                                  rl_lock_token(f->l)));
    assert_int_equal(rl_client_node_stats(f->c, 2, &ns), RL_OK);
    assert_true(ns.voting);
    assert_int_equal(rl_release(f->l), RL_OK);
    f->l = NULL;
}

static void test_a_malformed_uri_still_fails_the_configuration(void **state)
{
    struct fixture *f = *state;
    rl_config cfg;
    rl_status st = RL_OK;

    f->n = 2;
    assert_int_equal(harness_cluster_start_nodes(f->r, 2, NULL, &f->hn), 0);
    harness_nodes_set(&f->hn, 2, "redis://bad host:6379");
    fixture_config(&cfg, &f->hn);
    f->c = rl_client_new(&cfg, &st);
    assert_null(f->c);
    assert_int_equal(st, RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "nodes[2]"));
}

int main(void)
{
    static const struct fixture_opts none = {.nodes = 0};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_client_with_a_name_not_in_dns_locks_on_the_others),
        cmocka_unit_test(test_a_name_that_appears_later_is_used),
        cmocka_unit_test(test_a_malformed_uri_still_fails_the_configuration),
    };

    return FIXTURE_RUN("names", &none, tests);
}
