/* SPDX-License-Identifier: BSD-3-Clause */
/* test_lockrec.c -- lock records (src/lockrec.c): the keys and token laid
 * out in one tail, owners carried in tokens, PX values, semaphore slot
 * names and the script calls a record makes. No Redis. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockrec.h"

/* ---- Helpers ---- */

static void config_with_prefix(struct config *cfg, const char *prefix)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->prefix = (char *)prefix;
    cfg->prefix_len = strlen(prefix);
}

/* A record over names in a tail of exactly lockrec_tail_size bytes (so
 * ASan or valgrind catch a write past it); the tail is *tail, for the
 * caller to free. */
static struct lock_rec make_delayed(const char *prefix,
                                    const char *const *names, size_t count,
                                    const char *token, uint32_t delay_ms,
                                    const char *owner, void **tail)
{
    struct config cfg;
    struct lock_rec r;
    size_t size;

    config_with_prefix(&cfg, prefix);
    size = lockrec_tail_size(&cfg, names, count, token, delay_ms, owner);
    *tail = malloc(size);
    assert_non_null(*tail);
    memset(&r, 0xa5, sizeof(r));
    assert_int_equal(lockrec_init(&r, *tail, &cfg, names, count, token,
                                  delay_ms, owner), RL_OK);
    /* The token is the last thing in the tail and ends at its end; a new
     * token with an owner is followed by the value a proclaim publishes,
     * inside the tail too. */
    if (token != NULL || owner == NULL || owner[0] == '\0')
        assert_ptr_equal(r.token + r.token_len + 1, (char *)*tail + size);
    assert_true(lockrec_published(&r) + strlen(lockrec_published(&r)) + 1 <=
                (char *)*tail + size);
    return r;
}

static struct lock_rec make(const char *prefix, const char *const *names,
                            size_t count, const char *token,
                            const char *owner, void **tail)
{
    return make_delayed(prefix, names, count, token, 0, owner, tail);
}

static bool lower_hex(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    }
    return true;
}

/* ---- Layout ---- */

static void test_keys_are_prefix_and_resource(void **state)
{
    const char *names[] = { "orders", "users:7", "x" };
    void *tail;
    struct lock_rec r = make("app:", names, 3, NULL, NULL, &tail);

    (void)state;
    assert_int_equal(r.nkeys, 3);
    for (size_t i = 0; i < 3; i++) {
        char want[64];

        snprintf(want, sizeof(want), "app:%s", names[i]);
        assert_string_equal(r.keys[i], want);
        assert_int_equal(r.key_lens[i], strlen(want));
    }
    assert_string_equal(r.resource, "orders");
    assert_int_equal(r.slot, -1);
    assert_int_equal(r.delay_ms, 0);
    assert_false(r.shared);
    free(tail);
}

static void test_no_prefix_keeps_the_name(void **state)
{
    const char *names[] = { "job", "x:y" };
    void *tail;
    struct lock_rec r = make("", names, 2, NULL, NULL, &tail);

    (void)state;
    for (size_t i = 0; i < 2; i++) {
        assert_string_equal(r.keys[i], names[i]);
        assert_ptr_not_equal(r.keys[i], names[i]);
    }
    assert_int_equal(r.key_lens[1], 3);
    assert_ptr_equal(r.resource, r.keys[0]);
    free(tail);
}

static void test_new_token_is_hex_and_not_adopted(void **state)
{
    const char *names[] = { "job" };
    void *tail;
    struct lock_rec r = make("p:", names, 1, NULL, NULL, &tail);

    (void)state;
    assert_int_equal(r.token_len, TOKEN_HEX_LEN);
    assert_int_equal(strlen(r.token), TOKEN_HEX_LEN);
    assert_true(lower_hex(r.token, TOKEN_HEX_LEN));
    assert_false(r.adopted);
    free(tail);
}

static void test_new_token_carries_the_owner(void **state)
{
    const char *names[] = { "job" };
    char owner[RL_OWNER_MAX + 1];
    void *tail;
    struct lock_rec r = make("p:", names, 1, NULL, "web-1:4242", &tail);

    (void)state;
    assert_int_equal(r.token_len, TOKEN_HEX_LEN + 1 + strlen("web-1:4242"));
    assert_true(lower_hex(r.token, TOKEN_HEX_LEN));
    assert_int_equal(r.token[TOKEN_HEX_LEN], LOCKREC_OWNER_SEP);
    assert_string_equal(r.token + TOKEN_HEX_LEN + 1, "web-1:4242");
    lockrec_owner_of(r.token, owner, sizeof(owner));
    assert_string_equal(owner, "web-1:4242");
    /* What a proclaim publishes starts as a copy of the token. */
    assert_true(lockrec_can_proclaim(&r));
    assert_ptr_not_equal(lockrec_published(&r), r.token);
    assert_string_equal(lockrec_published(&r), r.token);
    free(tail);
}

/* A lock-delay is in the token, before the owner: a reader of the key
 * tells validity from delay; a proclaim keeps it (the identity). */
static void test_new_token_carries_the_lock_delay(void **state)
{
    const char *names[] = { "job" };
    char owner[RL_OWNER_MAX + 1];
    void *tail;
    struct lock_rec r = make_delayed("p:", names, 1, NULL, 4294967295u,
                                     "web-1", &tail);

    (void)state;
    assert_int_equal(r.delay_ms, 4294967295u);
    assert_true(lower_hex(r.token, TOKEN_HEX_LEN));
    assert_string_equal(r.token + TOKEN_HEX_LEN, "~4294967295.web-1");
    assert_int_equal(r.token_len, strlen(r.token));
    assert_int_equal(lockrec_delay_of(r.token), 4294967295u);
    assert_int_equal(lockrec_id_len(r.token), LOCKREC_ID_MAX);
    lockrec_owner_of(r.token, owner, sizeof(owner));
    assert_string_equal(owner, "web-1");
    assert_true(lockrec_can_proclaim(&r));
    assert_string_equal(lockrec_published(&r), r.token);
    free(tail);

    r = make_delayed("p:", names, 1, NULL, 800, NULL, &tail);
    assert_string_equal(r.token + TOKEN_HEX_LEN, "~800");
    assert_int_equal(lockrec_delay_of(r.token), 800);
    assert_int_equal(lockrec_id_len(r.token), 0);
    assert_false(lockrec_can_proclaim(&r));
    free(tail);

    /* Only this exact shape: another client's value carries no delay. */
    assert_int_equal(lockrec_delay_of("0123456789abcdef0123456789abcdef"
                                      "01234567~12x"), 0);
    assert_int_equal(lockrec_delay_of("0123456789abcdef0123456789abcdef"
                                      "0123456~12"), 0);
    assert_int_equal(lockrec_delay_of("0123456789abcdef0123456789abcdef"
                                      "01234567~99999999999"), 0);
    assert_int_equal(lockrec_delay_of("0123456789abcdef0123456789abcdef"
                                      "01234567.a~12"), 0);
}

static void test_empty_owner_is_no_owner(void **state)
{
    const char *names[] = { "job" };
    void *tail;
    struct lock_rec r = make("p:", names, 1, NULL, "", &tail);

    (void)state;
    assert_int_equal(r.token_len, TOKEN_HEX_LEN);
    assert_int_equal(strlen(r.token), TOKEN_HEX_LEN);
    free(tail);
}

static void test_given_token_is_copied_and_adopted(void **state)
{
    const char *names[] = { "job", "other" };
    char token[RL_MAX_TOKEN_LEN + 1];
    void *tail;
    struct lock_rec r;

    (void)state;
    memset(token, 'Z', RL_MAX_TOKEN_LEN);
    token[RL_MAX_TOKEN_LEN] = '\0';
    r = make("p:", names, 2, token, "ignored", &tail);
    assert_string_equal(r.token, token);
    assert_ptr_not_equal(r.token, token);
    assert_int_equal(r.token_len, RL_MAX_TOKEN_LEN);
    assert_true(r.adopted);
    free(tail);
}

static void test_longest_names_fit_their_lengths(void **state)
{
    static char prefix[RL_MAX_RESOURCE_LEN + 1];
    static char names_buf[RL_MAX_RESOURCES][RL_MAX_RESOURCE_LEN + 1];
    const char *names[RL_MAX_RESOURCES];
    void *tail;
    struct lock_rec r;

    (void)state;
    memset(prefix, 'p', RL_MAX_RESOURCE_LEN);
    for (size_t i = 0; i < RL_MAX_RESOURCES; i++) {
        memset(names_buf[i], 'a' + (int)(i % 26), RL_MAX_RESOURCE_LEN);
        names[i] = names_buf[i];
    }
    r = make(prefix, names, RL_MAX_RESOURCES, NULL, NULL, &tail);
    assert_int_equal(r.nkeys, RL_MAX_RESOURCES);
    for (size_t i = 0; i < RL_MAX_RESOURCES; i++) {
        assert_int_equal(r.key_lens[i], 2 * RL_MAX_RESOURCE_LEN);
        assert_memory_equal(r.keys[i] + RL_MAX_RESOURCE_LEN, names[i],
                            RL_MAX_RESOURCE_LEN + 1);
    }
    free(tail);
}

/* ---- Owners ---- */

static void test_owner_check_accepts_visible_ascii_up_to_the_limit(
    void **state)
{
    char owner[RL_OWNER_MAX + 1];

    (void)state;
    assert_int_equal(lockrec_check_owner(NULL), RL_OK);
    assert_int_equal(lockrec_check_owner(""), RL_OK);
    assert_int_equal(lockrec_check_owner("!~web-1:4242"), RL_OK);
    memset(owner, 'o', RL_OWNER_MAX);
    owner[RL_OWNER_MAX] = '\0';
    assert_int_equal(lockrec_check_owner(owner), RL_OK);
}

static void test_owner_check_refuses_long_or_invisible_naming_why(
    void **state)
{
    static const char *const bad[] = { "a b", "tab\there", "del\x7f",
                                       "high\x80", "nl\n" };
    char owner[RL_OWNER_MAX + 2];

    (void)state;
    memset(owner, 'o', RL_OWNER_MAX + 1);
    owner[RL_OWNER_MAX + 1] = '\0';
    assert_int_equal(lockrec_check_owner(owner), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "owner is longer than 64"));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(lockrec_check_owner(bad[i]), RL_EINVAL);
        assert_non_null(strstr(rl_last_error(), "owner: byte"));
        assert_non_null(strstr(rl_last_error(), "not a visible ASCII"));
    }
}

static void test_owner_of_reads_only_our_token_form(void **state)
{
    const char *hex = "0123456789abcdef0123456789abcdef01234567";
    char value[256];
    char out[RL_OWNER_MAX + 1];

    (void)state;
    assert_int_equal(strlen(hex), TOKEN_HEX_LEN);
    snprintf(value, sizeof(value), "%s.me", hex);
    lockrec_owner_of(value, out, sizeof(out));
    assert_string_equal(out, "me");
    /* No owner after the separator, another separator, upper case hex,
     * a short token, a foreign value: no owner. */
    snprintf(value, sizeof(value), "%s.", hex);
    lockrec_owner_of(value, out, sizeof(out));
    assert_string_equal(out, "");
    snprintf(value, sizeof(value), "%s:me", hex);
    lockrec_owner_of(value, out, sizeof(out));
    assert_string_equal(out, "");
    snprintf(value, sizeof(value), "%s.me", hex);
    value[3] = 'A';
    lockrec_owner_of(value, out, sizeof(out));
    assert_string_equal(out, "");
    lockrec_owner_of("abc.me", out, sizeof(out));
    assert_string_equal(out, "");
    lockrec_owner_of("a-random-uuid-value-from-another-client.x", out,
                     sizeof(out));
    assert_string_equal(out, "");
}

static void test_owner_of_truncates_and_respects_len(void **state)
{
    const char *hex = "0123456789abcdef0123456789abcdef01234567";
    char value[256];
    char out[4] = "xyz";

    (void)state;
    snprintf(value, sizeof(value), "%s.longowner", hex);
    lockrec_owner_of(value, out, 0);
    assert_string_equal(out, "xyz");
    lockrec_owner_of(value, out, sizeof(out));
    assert_string_equal(out, "lon");
}

/* ---- PX and slots ---- */

static void test_px_adds_the_lock_delay_without_overflow(void **state)
{
    struct lock_rec r = { 0 };
    char buf[LOCKREC_PX_LEN];

    (void)state;
    assert_int_equal(lockrec_px_ms(&r, 30000), 30000);
    lockrec_px(&r, 30000, buf);
    assert_string_equal(buf, "30000");
    r.delay_ms = 1500;
    assert_int_equal(lockrec_px_ms(&r, 30000), 31500);
    r.delay_ms = UINT32_MAX;
    assert_true(lockrec_px_ms(&r, UINT32_MAX) == 2ull * UINT32_MAX);
    lockrec_px(&r, UINT32_MAX, buf);
    assert_string_equal(buf, "8589934590");
}

static void test_slot_key_names_the_slot(void **state)
{
    char buf[64];
    size_t len;

    (void)state;
    len = lockrec_slot_key(buf, "app:pool", 8, 0);
    assert_string_equal(buf, "app:pool:slot:0");
    assert_int_equal(len, strlen(buf));
    len = lockrec_slot_key(buf, "app:pool-and-more", 8, UINT32_MAX);
    assert_string_equal(buf, "app:pool:slot:4294967295");
    assert_int_equal(len, strlen(buf));
}

static void test_set_slot_rewrites_the_last_slots_name(void **state)
{
    char name[64];
    const char *names[1] = { name };
    void *tail;
    struct lock_rec r;

    (void)state;
    /* The record is made for the longest name, the last slot. */
    snprintf(name, sizeof(name), "pool:slot:%u", RL_MAX_LIMIT - 1);
    r = make("app:", names, 1, NULL, NULL, &tail);
    lockrec_set_slot(&r, 7);
    assert_string_equal(r.keys[0], "app:pool:slot:7");
    assert_int_equal(r.key_lens[0], strlen("app:pool:slot:7"));
    assert_int_equal(r.slot, 7);
    lockrec_set_slot(&r, RL_MAX_LIMIT - 1);
    snprintf(name, sizeof(name), "app:pool:slot:%u", RL_MAX_LIMIT - 1);
    assert_string_equal(r.keys[0], name);
    assert_int_equal(r.key_lens[0], strlen(name));
    free(tail);
}

/* ---- Script calls ---- */

static void test_script_cmd_is_keys_token_then_ttl(void **state)
{
    const char *names[] = { "a", "bb" };
    struct lock_cmd cmd;
    void *tail;
    struct lock_rec r = make("p:", names, 2, "tok", NULL, &tail);

    (void)state;
    lockrec_script_cmd(&r, SCRIPT_EXTEND, "1000", &cmd);
    assert_ptr_equal(cmd.cmd.script, script_get(SCRIPT_EXTEND));
    assert_int_equal(cmd.cmd.nkeys, 2);
    assert_int_equal(cmd.cmd.argc, 4);
    assert_ptr_equal(cmd.cmd.argv, cmd.argv);
    assert_ptr_equal(cmd.cmd.lens, cmd.lens);
    assert_string_equal(cmd.argv[0], "p:a");
    assert_int_equal(cmd.lens[0], 3);
    assert_string_equal(cmd.argv[1], "p:bb");
    assert_int_equal(cmd.lens[1], 4);
    assert_string_equal(cmd.argv[2], "tok");
    assert_int_equal(cmd.lens[2], 3);
    assert_string_equal(cmd.argv[3], "1000");
    assert_int_equal(cmd.lens[3], 4);
    /* Without a TTL (a release) the token is the last argument. */
    lockrec_script_cmd(&r, SCRIPT_RELEASE, NULL, &cmd);
    assert_ptr_equal(cmd.cmd.script, script_get(SCRIPT_RELEASE));
    assert_int_equal(cmd.cmd.argc, 3);
    free(tail);
}

static void test_a_readers_record_runs_the_reader_scripts(void **state)
{
    const char *names[] = { "rw" };
    struct lock_cmd cmd;
    void *tail;
    struct lock_rec r = make("", names, 1, NULL, NULL, &tail);

    (void)state;
    r.shared = true;
    lockrec_script_cmd(&r, SCRIPT_RELEASE, NULL, &cmd);
    assert_ptr_equal(cmd.cmd.script, script_get(SCRIPT_READER_RELEASE));
    lockrec_script_cmd(&r, SCRIPT_EXTEND, "10", &cmd);
    assert_ptr_equal(cmd.cmd.script, script_get(SCRIPT_READER_EXTEND));
    /* Other scripts are not swapped. */
    lockrec_script_cmd(&r, SCRIPT_INSPECT, NULL, &cmd);
    assert_ptr_equal(cmd.cmd.script, script_get(SCRIPT_INSPECT));
    r.shared = false;
    lockrec_script_cmd(&r, SCRIPT_EXTEND, "10", &cmd);
    assert_ptr_equal(cmd.cmd.script, script_get(SCRIPT_EXTEND));
    free(tail);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys_are_prefix_and_resource),
        cmocka_unit_test(test_no_prefix_keeps_the_name),
        cmocka_unit_test(test_new_token_is_hex_and_not_adopted),
        cmocka_unit_test(test_new_token_carries_the_owner),
        cmocka_unit_test(test_new_token_carries_the_lock_delay),
        cmocka_unit_test(test_empty_owner_is_no_owner),
        cmocka_unit_test(test_given_token_is_copied_and_adopted),
        cmocka_unit_test(test_longest_names_fit_their_lengths),
        cmocka_unit_test(
            test_owner_check_accepts_visible_ascii_up_to_the_limit),
        cmocka_unit_test(
            test_owner_check_refuses_long_or_invisible_naming_why),
        cmocka_unit_test(test_owner_of_reads_only_our_token_form),
        cmocka_unit_test(test_owner_of_truncates_and_respects_len),
        cmocka_unit_test(test_px_adds_the_lock_delay_without_overflow),
        cmocka_unit_test(test_slot_key_names_the_slot),
        cmocka_unit_test(test_set_slot_rewrites_the_last_slots_name),
        cmocka_unit_test(test_script_cmd_is_keys_token_then_ttl),
        cmocka_unit_test(test_a_readers_record_runs_the_reader_scripts),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
