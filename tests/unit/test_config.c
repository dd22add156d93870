/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for configuration validation (config.c), status texts
 * (error.c) and tokens (token.c). No Redis: numeric addresses only. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "config.h"
#include "token.h"

static const char *three[] = {"127.0.0.1:7001", "127.0.0.1:7002",
                              "127.0.0.1:7003"};

static rl_config valid_config(void)
{
    rl_config cfg;

    rl_config_init(&cfg);
    cfg.nodes = three;
    cfg.node_count = 3;
    return cfg;
}

/* Load cfg, expect RL_EINVAL and a message containing needle. */
static void expect_invalid(const rl_config *cfg, const char *needle)
{
    struct config out;
    rl_status st = config_load(cfg, &out);

    if (st != RL_EINVAL)
        fail_msg("expected RL_EINVAL naming '%s', got %s", needle,
                 rl_status_name(st));
    if (strstr(rl_last_error(), needle) == NULL)
        fail_msg("message '%s' does not mention '%s'", rl_last_error(),
                 needle);
    assert_null(out.addrs);
}

/* rl_config_init gives exactly these values, and zero everywhere else. */
static void test_defaults_are_the_documented_ones(void **state)
{
    static const rl_config documented = {
        .connect_timeout_ms = 200,
        .op_timeout_ms = 50,
        .drift_factor = 0.01,
        .retry_count = 3,
        .retry_delay_ms = 200,
        .retry_jitter_ms = 100,
        .max_ttl_ms = 60000,
        .renew_window_pct = 12,
        .trust_restarted_nodes = false,
        .restart_trust = RL_RESTART_AUTO,
        .allow_evicting_nodes = false,
        .log_level = RL_LOG_WARN,
        .nodes = NULL,
    };
    rl_config cfg;

    (void)state;
    rl_config_init(&cfg);
    assert_memory_equal(&cfg, &documented, sizeof(cfg));
    rl_config_init(NULL); /* no crash */
}

static void test_a_valid_config_is_copied(void **state)
{
    rl_config cfg = valid_config();
    struct config out;

    (void)state;
    cfg.prefix = "app:";
    cfg.password = "s3cret";
    assert_int_equal(config_load(&cfg, &out), RL_OK);
    assert_int_equal(out.node_count, 3);
    assert_string_equal(out.prefix, "app:");
    assert_string_equal(out.addrs[2].ip, "127.0.0.1");
    assert_int_equal(out.addrs[2].port, 7003);
    assert_string_equal(out.addrs[0].password, "s3cret");
    config_clear(&out);
    config_clear(NULL);
}

static void test_null_config_and_zero_nodes_are_rejected(void **state)
{
    rl_config cfg = valid_config();
    struct config out;

    (void)state;
    assert_int_equal(config_load(NULL, &out), RL_EINVAL);
    cfg.node_count = 0;
    expect_invalid(&cfg, "at least one node");
    cfg.node_count = 3;
    cfg.nodes = NULL;
    expect_invalid(&cfg, "at least one node");
}

static void test_malformed_and_duplicate_nodes_are_named(void **state)
{
    const char *bad[] = {"127.0.0.1:7001", "redis://:pw@127.0.0.1:0"};
    const char *dup[] = {"127.0.0.1:7001", "redis://127.0.0.1:7001"};
    const char *big[] = {"127.0.0.1:70000"};
    const char *null_entry[] = {"127.0.0.1:7001", NULL};
    rl_config cfg = valid_config();

    (void)state;
    cfg.nodes = bad;
    cfg.node_count = 2;
    expect_invalid(&cfg, "nodes[1]");
    assert_null(strstr(rl_last_error(), "pw"));
    cfg.nodes = dup;
    expect_invalid(&cfg, "duplicates nodes[0]");
    cfg.nodes = big;
    cfg.node_count = 1;
    expect_invalid(&cfg, "nodes[0]");
    cfg.nodes = null_entry;
    cfg.node_count = 2;
    expect_invalid(&cfg, "nodes[1] is NULL");
}

static void test_too_many_nodes_are_rejected(void **state)
{
    const char *many[RL_MAX_NODES + 1];
    rl_config cfg = valid_config();
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_SIZE(many); i++)
        many[i] = "127.0.0.1:7001";
    cfg.nodes = many;
    cfg.node_count = ARRAY_SIZE(many);
    expect_invalid(&cfg, "at most");
}

/* valid_config() with field set to value is refused, the message
 * containing needle; EXPECT_FIELD_REFUSED: naming the field. */
#define EXPECT_REFUSED(field, value, needle)                                 \
    do {                                                                     \
        rl_config bad_ = valid_config();                                     \
                                                                             \
        bad_.field = (value);                                                \
        expect_invalid(&bad_, needle);                                       \
    } while (0)
#define EXPECT_FIELD_REFUSED(field, value) EXPECT_REFUSED(field, value, #field)

static void test_each_bad_number_names_its_field(void **state)
{
    (void)state;
    EXPECT_FIELD_REFUSED(connect_timeout_ms, 0);
    EXPECT_FIELD_REFUSED(op_timeout_ms, 600000);
    EXPECT_FIELD_REFUSED(retry_delay_ms, 0);
    EXPECT_FIELD_REFUSED(retry_jitter_ms, 500);
    EXPECT_FIELD_REFUSED(max_ttl_ms, 0);
    EXPECT_FIELD_REFUSED(retry_count, 2000000);
    EXPECT_FIELD_REFUSED(log_level, 9);
    EXPECT_FIELD_REFUSED(renew_window_pct, 25);
    EXPECT_FIELD_REFUSED(restart_trust, 3);
}

/* restart_trust: the old bool means TRUST; it cannot be combined with
 * an explicit QUARANTINE. */
static void test_restart_trust_and_the_old_bool(void **state)
{
    rl_config cfg = valid_config();
    struct config out;

    (void)state;
    assert_int_equal(config_load(&cfg, &out), RL_OK);
    assert_int_equal(out.restart_trust, RL_RESTART_AUTO);
    config_clear(&out);
    cfg.trust_restarted_nodes = true;
    assert_int_equal(config_load(&cfg, &out), RL_OK);
    assert_int_equal(out.restart_trust, RL_RESTART_TRUST);
    config_clear(&out);
    cfg.restart_trust = RL_RESTART_QUARANTINE;
    expect_invalid(&cfg, "trust_restarted_nodes");
    cfg.trust_restarted_nodes = false;
    assert_int_equal(config_load(&cfg, &out), RL_OK);
    assert_int_equal(out.restart_trust, RL_RESTART_QUARANTINE);
    config_clear(&out);
}

static void test_drift_factor_outside_zero_to_a_tenth_is_rejected(
    void **state)
{
    rl_config cfg = valid_config();
    struct config out;

    (void)state;
    EXPECT_FIELD_REFUSED(drift_factor, -0.1);
    EXPECT_FIELD_REFUSED(drift_factor, 0.5);
    EXPECT_FIELD_REFUSED(drift_factor, 0.0 / 0.0);
    cfg.drift_factor = 0.0;
    assert_int_equal(config_load(&cfg, &out), RL_OK);
    config_clear(&out);
}

static void test_reserved_prefix_is_rejected(void **state)
{
    rl_config cfg = valid_config();

    (void)state;
    cfg.prefix = "redlock:x";
    expect_invalid(&cfg, "prefix");
}

static void test_ttl_zero_means_default_and_above_max_is_rejected(
    void **state)
{
    rl_config cfg = valid_config();
    struct config out;
    uint32_t ttl = 0;

    (void)state;
    assert_int_equal(config_load(&cfg, &out), RL_OK);
    assert_int_equal(config_effective_ttl(&out, 0, &ttl), RL_OK);
    assert_int_equal(ttl, RL_DEFAULT_TTL_MS);
    assert_int_equal(config_effective_ttl(&out, 60001, &ttl), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "max_ttl_ms"));
    assert_int_equal(config_effective_ttl(&out, 1, &ttl), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "too short"));
    out.max_ttl_ms = 1000;
    assert_int_equal(config_effective_ttl(&out, 0, &ttl), RL_OK);
    assert_int_equal(ttl, 1000);
    config_clear(&out);
}

static void test_resource_names_are_checked(void **state)
{
    char huge[RL_MAX_RESOURCE_LEN + 2];
    struct config cfg = {.prefix = "", .prefix_len = 0};
    struct config red = {.prefix = "red", .prefix_len = 3};

    (void)state;
    memset(huge, 'a', sizeof(huge) - 1);
    huge[sizeof(huge) - 1] = '\0';
    assert_int_equal(config_check_resource(&cfg, "jobs:1", "resource"), RL_OK);
    assert_int_equal(config_check_resource(&cfg, NULL, "resource"), RL_EINVAL);
    assert_int_equal(config_check_resource(&cfg, "", "resource"), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "empty"));
    assert_int_equal(config_check_resource(&cfg, huge, "resource"), RL_EINVAL);
    assert_int_equal(
        config_check_resource(&cfg, "redlock:fence:x", "resource"), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "reserved"));
    /* Through the prefix: "red" + "lock:fence:x" is a fence counter. */
    assert_int_equal(config_check_resource(&red, "lock:fence:x", "resource"),
                     RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "prefix"));
    assert_int_equal(config_check_resource(&red, "jobs:1", "resource"), RL_OK);
}

static void test_every_status_has_a_name_and_a_message(void **state)
{
    (void)state;
#define CHECK_STATUS_(name, value, text)                                      \
    assert_string_equal(rl_strerror(name), text);                            \
    assert_string_equal(rl_status_name(name), #name);
    RL_STATUS_MAP(CHECK_STATUS_)
#undef CHECK_STATUS_
    assert_string_equal(rl_strerror((rl_status)-999), "unknown error");
    assert_string_equal(rl_status_name((rl_status)42), "RL_UNKNOWN");
    assert_string_equal(rl_version(), RL_VERSION_STRING);
}

static void test_tokens_are_160_bit_hex_and_distinct(void **state)
{
    char a[TOKEN_HEX_LEN + 1], b[TOKEN_HEX_LEN + 1];
    size_t i;

    (void)state;
    assert_int_equal(token_generate(a), RL_OK);
    assert_int_equal(token_generate(b), RL_OK);
    assert_int_equal(strlen(a), 40);
    for (i = 0; i < TOKEN_HEX_LEN; i++)
        assert_non_null(strchr("0123456789abcdef", a[i]));
    assert_string_not_equal(a, b);
}

/* The ABI contract: these sizes never change within a SOVERSION (new
 * fields come out of reserved_), and a non-zero reserved tail is refused. */
static void test_public_struct_sizes_are_frozen(void **state)
{
    (void)state;
    assert_int_equal(sizeof(rl_config), 296);
    assert_int_equal(sizeof(rl_acquire_opts), 128);
    assert_int_equal(sizeof(rl_node_info), 568);
    assert_int_equal(sizeof(rl_holder_info), 600);
    assert_int_equal(sizeof(rl_node_stats), 328);
    assert_int_equal(sizeof(rl_stats), 21104);
    assert_int_equal(sizeof(rl_totals), 128);
}

static void test_nonzero_reserved_config_is_einval(void **state)
{
    (void)state;
    EXPECT_REFUSED(reserved_[3], 1, "reserved");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_public_struct_sizes_are_frozen),
        cmocka_unit_test(test_nonzero_reserved_config_is_einval),
        cmocka_unit_test(test_defaults_are_the_documented_ones),
        cmocka_unit_test(test_a_valid_config_is_copied),
        cmocka_unit_test(test_null_config_and_zero_nodes_are_rejected),
        cmocka_unit_test(test_malformed_and_duplicate_nodes_are_named),
        cmocka_unit_test(test_too_many_nodes_are_rejected),
        cmocka_unit_test(test_each_bad_number_names_its_field),
        cmocka_unit_test(test_restart_trust_and_the_old_bool),
        cmocka_unit_test(
            test_drift_factor_outside_zero_to_a_tenth_is_rejected),
        cmocka_unit_test(test_reserved_prefix_is_rejected),
        cmocka_unit_test(
            test_ttl_zero_means_default_and_above_max_is_rejected),
        cmocka_unit_test(test_resource_names_are_checked),
        cmocka_unit_test(test_every_status_has_a_name_and_a_message),
        cmocka_unit_test(test_tokens_are_160_bit_hex_and_distinct),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
