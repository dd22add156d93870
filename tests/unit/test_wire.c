/* SPDX-License-Identifier: BSD-3-Clause */
/* test_wire.c -- the batching side of src/wire.c: which commands name
 * their one key (a key may hold any byte, CRLF too), the release-batch
 * call built from releases, and its per-key answers. No Redis (the
 * integration tests send them). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "wire.h"

static struct wire *release_of(const char *key, size_t key_len,
                               const char *token)
{
    const char *argv[2] = {key, token};
    size_t lens[2] = {key_len, strlen(token)};

    return wire_new(script_get(SCRIPT_RELEASE), 1, 2, argv, lens);
}

static void test_a_release_and_a_set_nx_px_name_their_key(void **state)
{
    static const char key[] = "a\r\n$3\r\nb";
    const char *set[6] = {"SET", key, "t", "NX", "PX", "100"};
    size_t lens[6] = {3, sizeof(key) - 1, 1, 2, 2, 3};
    struct wire *rel = release_of(key, sizeof(key) - 1, "tok");
    struct wire *acq = wire_new(NULL, 0, 6, set, lens);
    const char *k;
    size_t len;

    (void)state;
    assert_true(wire_batchable(rel));
    assert_true(wire_key(rel, &k, &len));
    assert_int_equal(len, sizeof(key) - 1);
    assert_memory_equal(k, key, len);
    assert_false(wire_batchable(acq));
    assert_true(wire_key(acq, &k, &len));
    assert_memory_equal(k, key, len);
    wire_unref(rel);
    wire_unref(acq);
}

static void test_other_commands_name_no_key(void **state)
{
    const char *argv[3] = {"k1", "k2", "tok"};
    size_t lens[3] = {2, 2, 3};
    const char *set[4] = {"SET", "k", "t", "NX"};
    size_t set_lens[4] = {3, 1, 1, 2};
    struct wire *multi = wire_new(script_get(SCRIPT_RELEASE), 2, 3, argv,
                                  lens);
    struct wire *rollback = wire_new(script_get(SCRIPT_ROLLBACK), 1, 2, argv,
                                     lens);
    struct wire *plain = wire_new(NULL, 0, 4, set, set_lens);
    const char *k;
    size_t len;

    (void)state;
    assert_false(wire_batchable(multi));
    assert_false(wire_key(multi, &k, &len));
    assert_false(wire_batchable(rollback));
    assert_false(wire_key(rollback, &k, &len));
    assert_false(wire_key(plain, &k, &len));
    wire_unref(multi);
    wire_unref(rollback);
    wire_unref(plain);
}

static void test_the_batch_is_keys_then_tokens(void **state)
{
    struct wire *items[2] = {release_of("k1", 2, "t1"),
                             release_of("k\r\n2", 4, "tok2")};
    struct wire *w = wire_batch_new(items, 2);
    const struct script *s = script_get(SCRIPT_RELEASE_BATCH);
    char want[256];
    const char *bytes;
    size_t len;
    int n;

    (void)state;
    assert_non_null(w);
    assert_true(wire_is_script(w));
    assert_false(wire_batchable(w));
    n = snprintf(want, sizeof(want),
                 "*7\r\n$7\r\nEVALSHA\r\n$40\r\n%s\r\n$1\r\n2\r\n"
                 "$2\r\nk1\r\n$4\r\nk\r\n2\r\n$2\r\nt1\r\n$4\r\ntok2\r\n",
                 s->sha1);
    bytes = wire_bytes(w, &len);
    assert_int_equal(len, (size_t)n);
    assert_memory_equal(bytes, want, len);
    /* Sampled when one of its releases is. */
    assert_false(wire_wants_sample(w));
    wire_unref(w);
    wire_sample_time(items[1]);
    w = wire_batch_new(items, 2);
    assert_true(wire_wants_sample(w));
    wire_unref(w);
    wire_unref(items[0]);
    wire_unref(items[1]);
}

static void test_each_character_is_releases_reply(void **state)
{
    struct node_reply r;

    (void)state;
    assert_true(wire_batch_answer('1', &r));
    assert_int_equal(r.kind, REPLY_INTEGER);
    assert_int_equal(r.integer, 1);
    assert_true(wire_batch_answer('0', &r));
    assert_int_equal(r.integer, 0);
    assert_true(wire_batch_answer('2', &r));
    assert_int_equal(r.integer, -1);
    assert_false(wire_batch_answer('e', &r));
    assert_false(wire_batch_answer('3', &r));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_release_and_a_set_nx_px_name_their_key),
        cmocka_unit_test(test_other_commands_name_no_key),
        cmocka_unit_test(test_the_batch_is_keys_then_tokens),
        cmocka_unit_test(test_each_character_is_releases_reply),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
