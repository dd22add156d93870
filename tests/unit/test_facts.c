/* SPDX-License-Identifier: BSD-3-Clause */
/* test_facts.c -- reading a node's safety facts from INFO (facts.c), and
 * the line a node check's reading is shared in with the node's other
 * clients (facts_share_format, facts_share_parse). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
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

/* ---- Shared readings ---------------------------------------------------- */

#define RUN_ID "0123456789abcdef0123456789abcdef01234567"
#define OTHER_RUN_ID "fedcba9876543210fedcba9876543210fedcba98"

/* A listener's facts of the node: what its handshake read, with the
 * fields a shared line does not carry set apart from zero. */
static void listener_facts(struct node_facts *f)
{
    memset(f, 0, sizeof(*f));
    strcpy(f->version, "7.2.4");
    strcpy(f->run_id, RUN_ID);
    strcpy(f->role, "master");
    strcpy(f->policy, "noeviction");
    f->maxmemory_known = true;
    f->aof_enabled = FACT_NO;
    f->cluster_enabled = FACT_NO;
    strcpy(f->appendfsync, "everysec");
    f->uptime_s = 1234;
    f->uptime_known = true;
    f->evicted_known = true;
}

/* A reading with every shared field known, and none equal to what
 * listener_facts holds, so each one has to travel. */
static void full_reading(struct node_facts *f)
{
    memset(f, 0, sizeof(*f));
    strcpy(f->version, "6.0.0");
    strcpy(f->run_id, RUN_ID);
    strcpy(f->role, "slave");
    strcpy(f->replid, "1111111111222222222233333333334444444444");
    strcpy(f->policy, "allkeys-lru");
    f->maxmemory = 104857600;
    f->maxmemory_known = true;
    f->aof_enabled = FACT_YES;
    f->cluster_enabled = FACT_YES;
    strcpy(f->appendfsync, "always");
    f->uptime_s = 99;
    f->uptime_known = true;
    f->evicted_keys = 18446744073709551615ull;
    f->evicted_known = true;
}

/* Parse must refuse msg (len bytes) and leave the facts as they were. */
static void assert_refused_len(const char *msg, size_t len)
{
    struct node_facts f, before;
    uint64_t from = 7;

    listener_facts(&f);
    before = f;
    if (facts_share_parse(&f, &from, msg, len))
        fail_msg("taken: \"%.*s\"", (int)len, msg);
    assert_memory_equal(&f, &before, sizeof(f));
}

static void assert_refused(const char *msg)
{
    assert_refused_len(msg, strlen(msg));
}

static void test_share_round_trip_carries_every_shared_field(void **state)
{
    struct node_facts sent, got;
    char line[FACTS_SHARE_MAX];
    uint64_t from = 0;
    size_t len;

    (void)state;
    full_reading(&sent);
    len = facts_share_format(&sent, 0x0123456789abcdefull, line);
    assert_true(len > 0 && len < FACTS_SHARE_MAX);
    assert_int_equal(strlen(line), len);
    assert_string_equal(line,
                        "rlf1 0123456789abcdef " RUN_ID " slave "
                        "1111111111222222222233333333334444444444 "
                        "allkeys-lru 104857600 1 always "
                        "18446744073709551615");
    listener_facts(&got);
    assert_true(facts_share_parse(&got, &from, line, len));
    assert_int_equal(from, 0x0123456789abcdefull);
    assert_string_equal(got.run_id, RUN_ID);
    assert_string_equal(got.role, "slave");
    assert_string_equal(got.replid, sent.replid);
    assert_string_equal(got.policy, "allkeys-lru");
    assert_true(got.maxmemory_known);
    assert_int_equal(got.maxmemory, 104857600);
    assert_int_equal(got.aof_enabled, FACT_YES);
    assert_string_equal(got.appendfsync, "always");
    assert_true(got.evicted_known);
    assert_true(got.evicted_keys == 18446744073709551615ull);
    assert_int_equal(facts_may_evict(&got), FACT_YES);
    assert_int_equal(facts_fsyncs_every_write(&got), FACT_YES);
    /* What the line does not carry is the listener's own. */
    assert_string_equal(got.version, "7.2.4");
    assert_int_equal(got.cluster_enabled, FACT_NO);
    assert_true(got.uptime_known);
    assert_int_equal(got.uptime_s, 1234);

    /* The extreme ids, and aof 0, travel too. */
    sent.aof_enabled = FACT_NO;
    sent.maxmemory = 0;
    sent.evicted_keys = 0;
    len = facts_share_format(&sent, UINT64_MAX, line);
    assert_true(len > 0);
    listener_facts(&got);
    assert_true(facts_share_parse(&got, &from, line, len));
    assert_true(from == UINT64_MAX);
    assert_int_equal(got.aof_enabled, FACT_NO);
    assert_true(got.maxmemory_known);
    assert_int_equal(got.maxmemory, 0);
    assert_true(got.evicted_known);
    assert_int_equal(got.evicted_keys, 0);
    len = facts_share_format(&sent, 0, line);
    assert_true(len > 0);
    assert_non_null(strstr(line, " 0000000000000000 "));
    assert_true(facts_share_parse(&got, &from, line, len));
    assert_int_equal(from, 0);
}

/* An unknown fact is sent as "-" and read back as unknown, never as a
 * value (an empty policy, maxmemory 0...). */
static void test_share_unknown_fields_stay_unknown(void **state)
{
    struct node_facts sent, got;
    char line[FACTS_SHARE_MAX];
    uint64_t from = 0;
    size_t len;

    (void)state;
    memset(&sent, 0, sizeof(sent));
    strcpy(sent.run_id, RUN_ID);
    sent.maxmemory = 5; /* not known: not sent */
    sent.evicted_keys = 6;
    sent.aof_enabled = FACT_UNKNOWN;
    len = facts_share_format(&sent, 42, line);
    assert_true(len > 0);
    assert_string_equal(line, "rlf1 000000000000002a " RUN_ID
                              " - - - - - - -");
    listener_facts(&got);
    assert_true(facts_share_parse(&got, &from, line, len));
    assert_int_equal(from, 42);
    assert_string_equal(got.role, "");
    assert_string_equal(got.replid, "");
    assert_string_equal(got.policy, "");
    assert_false(got.maxmemory_known);
    assert_int_equal(got.aof_enabled, FACT_UNKNOWN);
    assert_string_equal(got.appendfsync, "");
    assert_false(got.evicted_known);
    assert_int_equal(facts_may_evict(&got), FACT_UNKNOWN);
    assert_int_equal(facts_fsyncs_every_write(&got), FACT_UNKNOWN);
    assert_string_equal(got.run_id, RUN_ID);
    assert_string_equal(got.version, "7.2.4");
}

/* A reading of no known server is not shared. */
static void test_share_format_needs_a_run_id(void **state)
{
    struct node_facts f;
    char line[FACTS_SHARE_MAX];

    (void)state;
    full_reading(&f);
    f.run_id[0] = '\0';
    assert_int_equal(facts_share_format(&f, 1, line), 0);
}

/* Another server's reading (a restarted one, or a forgery) is not taken,
 * nor is one when the listener knows no run_id. */
static void test_share_parse_refuses_another_server(void **state)
{
    struct node_facts f, before;
    uint64_t from = 0;
    static const char line[] = "rlf1 0000000000000001 " OTHER_RUN_ID
                               " master - allkeys-lru 1000 0 everysec 0";
    static const char ours[] = "rlf1 0000000000000001 " RUN_ID
                               " master - allkeys-lru 1000 0 everysec 0";

    (void)state;
    assert_refused(line);
    /* A run_id that only starts like ours. */
    assert_refused("rlf1 0000000000000001 0123456789abcdef"
                   " master - allkeys-lru 1000 0 everysec 0");
    /* The listener knows no run_id: nothing matches it. */
    listener_facts(&f);
    f.run_id[0] = '\0';
    before = f;
    assert_false(facts_share_parse(&f, &from, ours, strlen(ours)));
    assert_memory_equal(&f, &before, sizeof(f));
    /* The control: the same line with our run_id is taken. */
    listener_facts(&f);
    assert_true(facts_share_parse(&f, &from, ours, strlen(ours)));
    assert_string_equal(f.policy, "allkeys-lru");
}

/* A well-formed line (our run_id) with every string field as long as the
 * facts hold and an evicted_keys of digits digits, into dst; its length. */
static size_t long_line(char *dst, int digits)
{
    char evicted[24];

    memset(evicted, '1', sizeof(evicted));
    evicted[digits] = '\0';
    return (size_t)snprintf(dst, FACTS_SHARE_MAX + 16,
                            "rlf1 0000000000000001 " RUN_ID " masterrrrrr "
                            "1111111111222222222233333333334444444444 "
                            "allkeys-lru-0123456789a 18446744073709551615 1 "
                            "everysecond %s", evicted);
}

static void test_share_parse_refuses_malformed_lines(void **state)
{
    char big[FACTS_SHARE_MAX + 16];
    static const char good[] = "rlf1 0000000000000001 " RUN_ID
                               " master - allkeys-lru 1000 0 everysec 0";
    static const char nul[] = "rlf1 0000000000000001 " RUN_ID
                              " master - allkeys-lru 1000 0 everysec 0\0x";
    struct node_facts f;
    uint64_t from = 0;
    size_t len;

    (void)state;
    /* The good line is taken: each refusal below is its field's. */
    listener_facts(&f);
    assert_true(facts_share_parse(&f, &from, good, strlen(good)));
    /* 9 and 11 fields. */
    assert_refused("rlf1 0000000000000001 " RUN_ID
                   " master - allkeys-lru 1000 0 everysec");
    assert_refused("rlf1 0000000000000001 " RUN_ID
                   " master - allkeys-lru 1000 0 everysec 0 0");
    /* Another version. */
    assert_refused("rlf2 0000000000000001 " RUN_ID
                   " master - allkeys-lru 1000 0 everysec 0");
    assert_refused("RLF1 0000000000000001 " RUN_ID
                   " master - allkeys-lru 1000 0 everysec 0");
    /* An id of 15 or 17 digits, or not hex. */
    assert_refused("rlf1 000000000000001 " RUN_ID
                   " master - allkeys-lru 1000 0 everysec 0");
    assert_refused("rlf1 00000000000000001 " RUN_ID
                   " master - allkeys-lru 1000 0 everysec 0");
    assert_refused("rlf1 000000000000000g " RUN_ID
                   " master - allkeys-lru 1000 0 everysec 0");
    assert_refused("rlf1 - " RUN_ID " master - allkeys-lru 1000 0 everysec 0");
    /* maxmemory and evicted_keys not numbers. */
    assert_refused("rlf1 0000000000000001 " RUN_ID
                   " master - allkeys-lru lots 0 everysec 0");
    assert_refused("rlf1 0000000000000001 " RUN_ID
                   " master - allkeys-lru 1000x 0 everysec 0");
    assert_refused("rlf1 0000000000000001 " RUN_ID
                   " master - allkeys-lru -1000 0 everysec 0");
    assert_refused("rlf1 0000000000000001 " RUN_ID
                   " master - allkeys-lru 1000 0 everysec many");
    /* aof other than 1, 0 or -. */
    assert_refused("rlf1 0000000000000001 " RUN_ID
                   " master - allkeys-lru 1000 yes everysec 0");
    assert_refused("rlf1 0000000000000001 " RUN_ID
                   " master - allkeys-lru 1000 2 everysec 0");
    assert_refused("rlf1 0000000000000001 " RUN_ID
                   " master - allkeys-lru 1000 10 everysec 0");
    /* Fields longer than the facts hold: role (11 chars at most),
     * replid (40), policy (23), appendfsync (11). */
    assert_refused("rlf1 0000000000000001 " RUN_ID
                   " masterrrrrrr - allkeys-lru 1000 0 everysec 0");
    assert_refused("rlf1 0000000000000001 " RUN_ID " master "
                   "11111111112222222222333333333344444444445"
                   " allkeys-lru 1000 0 everysec 0");
    assert_refused("rlf1 0000000000000001 " RUN_ID
                   " master - allkeys-lru-but-longer-still 1000 0"
                   " everysec 0");
    assert_refused("rlf1 0000000000000001 " RUN_ID
                   " master - allkeys-lru 1000 0 everysecondd 0");
    /* ... while 11 characters of role fit. */
    listener_facts(&f);
    assert_true(facts_share_parse(&f, &from,
                                  "rlf1 0000000000000001 " RUN_ID
                                  " masterrrrrr - allkeys-lru 1000 0"
                                  " everysec 0",
                                  strlen("rlf1 0000000000000001 " RUN_ID
                                         " masterrrrrr - allkeys-lru 1000 0"
                                         " everysec 0")));
    assert_string_equal(f.role, "masterrrrrr");
    /* Nothing, garbage, a NUL inside. */
    assert_refused_len(good, 0);
    assert_refused("");
    assert_refused("rlf1 garbage");
    assert_refused_len(nul, sizeof(nul) - 1);
    /* FACTS_SHARE_MAX bytes or more: the longest line the facts can
     * make (every field as long as it can be, evicted_keys of 20 digits)
     * is FACTS_SHARE_MAX - 1 bytes long, taken; with 21 digits it is
     * FACTS_SHARE_MAX, refused for its length alone. */
    len = long_line(big, 20);
    assert_int_equal(len, FACTS_SHARE_MAX - 1);
    listener_facts(&f);
    assert_true(facts_share_parse(&f, &from, big, len));
    assert_string_equal(f.policy, "allkeys-lru-0123456789a");
    len = long_line(big, 21);
    assert_int_equal(len, FACTS_SHARE_MAX);
    assert_refused_len(big, len);
    len = long_line(big, 23);
    assert_refused_len(big, len);
}

/* The id is read as 16 hex digits, not as whatever strtoull takes: a
 * sign or a 0x prefix is not a publisher's id. */
static void test_share_parse_refuses_an_id_with_a_sign_or_prefix(
    void **state)
{
    (void)state;
    assert_refused("rlf1 -000000000000001 " RUN_ID
                   " master - allkeys-lru 1000 0 everysec 0");
    assert_refused("rlf1 +000000000000001 " RUN_ID
                   " master - allkeys-lru 1000 0 everysec 0");
    assert_refused("rlf1 0x00000000000001 " RUN_ID
                   " master - allkeys-lru 1000 0 everysec 0");
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
        cmocka_unit_test(test_share_round_trip_carries_every_shared_field),
        cmocka_unit_test(test_share_unknown_fields_stay_unknown),
        cmocka_unit_test(test_share_format_needs_a_run_id),
        cmocka_unit_test(test_share_parse_refuses_another_server),
        cmocka_unit_test(test_share_parse_refuses_malformed_lines),
        cmocka_unit_test(test_share_parse_refuses_an_id_with_a_sign_or_prefix),
    };

    return cmocka_run_group_tests_name("facts", tests, NULL, NULL);
}
