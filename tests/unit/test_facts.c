/* SPDX-License-Identifier: BSD-3-Clause */
/* test_facts.c -- reading a node's safety facts from INFO (facts.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "facts.h"

static const char info_evicting[] =
    "# Server\r\nredis_version:7.0.15\r\nrun_id:aaaa\r\n"
    "uptime_in_seconds:42\r\n\r\n# Memory\r\nmaxmemory:4194304\r\n"
    "maxmemory_human:4.00M\r\nmaxmemory_policy:volatile-lru\r\n\r\n"
    "# Persistence\r\naof_enabled:0\r\n\r\n# Replication\r\nrole:master\r\n"
    "master_replid:1111\r\n\r\n# Cluster\r\ncluster_enabled:0\r\n";

static void test_info_is_read_field_by_field(void **state)
{
    struct node_facts f = {0};

    (void)state;
    facts_from_info(&f, info_evicting);
    assert_string_equal(f.version, "7.0.15");
    assert_string_equal(f.run_id, "aaaa");
    assert_string_equal(f.role, "master");
    assert_string_equal(f.replid, "1111");
    assert_string_equal(f.policy, "volatile-lru");
    assert_true(f.maxmemory_known);
    assert_int_equal(f.maxmemory, 4194304);
    assert_int_equal(f.aof_enabled, FACT_NO);
    assert_int_equal(f.cluster_enabled, FACT_NO);
    assert_true(f.uptime_known);
    assert_int_equal(f.uptime_s, 42);
    /* "maxmemory" is not mistaken for "maxmemory_human" or the reverse. */
    assert_int_equal(facts_may_evict(&f), FACT_YES);
}

static void test_eviction_needs_a_limit_and_a_policy(void **state)
{
    struct node_facts f = {0};

    (void)state;
    assert_int_equal(facts_may_evict(&f), FACT_UNKNOWN);
    facts_from_info(&f, "maxmemory:0\r\nmaxmemory_policy:allkeys-lru\r\n");
    assert_int_equal(facts_may_evict(&f), FACT_NO);
    facts_from_info(&f, "maxmemory:100\r\nmaxmemory_policy:noeviction\r\n");
    assert_int_equal(facts_may_evict(&f), FACT_NO);
    facts_from_info(&f, "maxmemory:100\r\nmaxmemory_policy:allkeys-lfu\r\n");
    assert_int_equal(facts_may_evict(&f), FACT_YES);
    /* A limit without a policy, or a policy without the limit: unknown. */
    facts_from_info(&f, "maxmemory:100\r\n");
    assert_int_equal(facts_may_evict(&f), FACT_UNKNOWN);
    facts_from_info(&f, "maxmemory_policy:noeviction\r\n");
    assert_int_equal(facts_may_evict(&f), FACT_UNKNOWN);
}

static void test_fsync_every_write_needs_aof_and_always(void **state)
{
    struct node_facts f = {0};

    (void)state;
    facts_from_info(&f, "aof_enabled:1\r\n");
    assert_int_equal(facts_fsyncs_every_write(&f), FACT_UNKNOWN);
    strcpy(f.appendfsync, "always");
    assert_int_equal(facts_fsyncs_every_write(&f), FACT_YES);
    strcpy(f.appendfsync, "everysec");
    assert_int_equal(facts_fsyncs_every_write(&f), FACT_NO);
    facts_from_info(&f, "aof_enabled:0\r\n");
    strcpy(f.appendfsync, "always");
    assert_int_equal(facts_fsyncs_every_write(&f), FACT_NO);
    facts_from_info(&f, "# Server\r\n");
    assert_int_equal(facts_fsyncs_every_write(&f), FACT_UNKNOWN);
}

static void test_same_server_by_run_id_or_replication_stream(void **state)
{
    struct node_facts a = {0}, b = {0};

    (void)state;
    assert_null(facts_same_server(&a, &b)); /* unknown is not the same */
    facts_from_info(&a, "run_id:r1\r\nmaster_replid:x\r\n");
    facts_from_info(&b, "run_id:r2\r\nmaster_replid:y\r\n");
    assert_null(facts_same_server(&a, &b));
    facts_from_info(&b, "run_id:r1\r\nmaster_replid:y\r\n");
    assert_non_null(strstr(facts_same_server(&a, &b), "run_id"));
    facts_from_info(&b, "run_id:r2\r\nmaster_replid:x\r\n");
    assert_non_null(strstr(facts_same_server(&a, &b), "replica"));
}

static void test_info_field_is_bounded(void **state)
{
    char small[4];

    (void)state;
    assert_true(facts_info_field("role:master\r\n", "role", small,
                                 sizeof(small)));
    assert_string_equal(small, "mas");
    assert_false(facts_info_field("xrole:master\r\n", "role", small,
                                  sizeof(small)));
    assert_string_equal(small, "");
    assert_false(facts_info_field("role", "role", small, sizeof(small)));
}

/* A check's INFO stats or INFO replication updates what it carries and
 * keeps the rest; a full INFO's missing field would be unknown. */
static void test_merge_keeps_what_a_section_lacks(void **state)
{
    struct node_facts f = {0};

    (void)state;
    facts_from_info(&f, info_evicting);
    facts_merge_info(&f, "# Stats\r\nevicted_keys:7\r\n");
    assert_true(f.evicted_known);
    assert_int_equal(f.evicted_keys, 7);
    assert_string_equal(f.version, "7.0.15");
    assert_string_equal(f.policy, "volatile-lru");
    assert_int_equal(f.maxmemory, 4194304);
    facts_merge_info(&f, "# Replication\r\nrole:slave\r\n"
                         "master_replid:2222\r\n");
    assert_string_equal(f.role, "slave");
    assert_string_equal(f.replid, "2222");
    assert_string_equal(f.run_id, "aaaa");
    assert_int_equal(f.aof_enabled, FACT_NO);
}

/* CONFIG GET's names and values: the check's cheap source of the
 * eviction and persistence facts. */
static void test_config_values_are_read(void **state)
{
    struct node_facts f = {0};

    (void)state;
    facts_from_config(&f, "maxmemory", "104857600");
    facts_from_config(&f, "maxmemory-policy", "allkeys-lru");
    assert_true(f.maxmemory_known);
    assert_int_equal(f.maxmemory, 104857600);
    assert_int_equal(facts_may_evict(&f), FACT_YES);
    facts_from_config(&f, "maxmemory", "0");
    assert_int_equal(facts_may_evict(&f), FACT_NO);
    facts_from_config(&f, "maxmemory", "lots");
    assert_false(f.maxmemory_known);
    facts_from_config(&f, "appendonly", "yes");
    facts_from_config(&f, "appendfsync", "always");
    assert_int_equal(facts_fsyncs_every_write(&f), FACT_YES);
    facts_from_config(&f, "appendonly", "no");
    assert_int_equal(facts_fsyncs_every_write(&f), FACT_NO);
    facts_from_config(&f, "appendonly", "maybe");
    assert_int_equal(f.aof_enabled, FACT_UNKNOWN);
    facts_from_config(&f, "save", "");
    assert_string_equal(f.appendfsync, "always");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_info_is_read_field_by_field),
        cmocka_unit_test(test_eviction_needs_a_limit_and_a_policy),
        cmocka_unit_test(test_fsync_every_write_needs_aof_and_always),
        cmocka_unit_test(test_same_server_by_run_id_or_replication_stream),
        cmocka_unit_test(test_info_field_is_bounded),
        cmocka_unit_test(test_merge_keeps_what_a_section_lacks),
        cmocka_unit_test(test_config_values_are_read),
    };

    return cmocka_run_group_tests_name("facts", tests, NULL, NULL);
}
