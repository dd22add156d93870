/* SPDX-License-Identifier: BSD-3-Clause */
/* test_scripts.c -- the scripts' table (src/scripts.c, built from
 * src/lua): names, digests, which scripts may create lock keys, and the
 * parts of the wire contract a source shows without running it. No Redis (the integration tests run
 * them). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "scripts.h"

static void test_every_script_has_a_distinct_name_and_a_source(
    void **state)
{
    (void)state;
    for (int i = 0; i < SCRIPT_COUNT; i++) {
        const struct script *s = script_get((enum script_id)i);

        assert_non_null(s->name);
        assert_true(strlen(s->name) > 0);
        assert_null(strchr(s->name, ' '));
        assert_non_null(s->source);
        assert_true(strlen(s->source) > 0);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(s->name,
                                    script_get((enum script_id)j)->name);
    }
    assert_string_equal(script_get(SCRIPT_ACQUIRE_MULTI)->name,
                        "acquire-multi");
    assert_string_equal(script_get(SCRIPT_TOUCH_BATCH)->name,
                        "touch-batch");
}

/* The SHA1 Redis names a script by (EVALSHA): lowercase hex of the
 * digest of the source, computed here on its own. */
static void test_digest_is_the_lowercase_sha1_of_the_source(void **state)
{
    (void)state;
    for (int i = 0; i < SCRIPT_COUNT; i++) {
        const struct script *s = script_get((enum script_id)i);
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        char hex[2 * EVP_MAX_MD_SIZE + 1];

        assert_int_equal(EVP_Digest(s->source, strlen(s->source), md, &len,
                                    EVP_sha1(), NULL), 1);
        assert_int_equal(len, 20);
        for (unsigned int j = 0; j < len; j++)
            snprintf(hex + 2 * j, 3, "%02x", md[j]);
        assert_string_equal(s->sha1, hex);
    }
}

/* No two scripts share a digest (a node would run the wrong one). */
static void test_digests_are_distinct(void **state)
{
    (void)state;
    for (int i = 0; i < SCRIPT_COUNT; i++) {
        for (int j = 0; j < i; j++)
            assert_string_not_equal(script_get((enum script_id)i)->sha1,
                                    script_get((enum script_id)j)->sha1);
    }
}

/* The C constants the scripts spell out (src/lua/README.md): the
 * reservation every script that reads a lock key as a lock knows, and
 * the token's layout (its 40 hex digits, the first 32 naming the
 * acquisition: member(), intent-clear; scripts.c asserts the lengths). */
static void test_scripts_spell_the_c_constants(void **state)
{
    static const enum script_id reservation[] = {
        SCRIPT_RELEASE, SCRIPT_EXTEND, SCRIPT_INSPECT, SCRIPT_TOUCH_BATCH,
        SCRIPT_PROCLAIM, SCRIPT_FORCE_RELEASE, SCRIPT_FAIR_ACQUIRE,
        SCRIPT_FAIR_RELEASE, SCRIPT_QUEUE_ENTER};

    (void)state;
    for (size_t i = 0; i < sizeof(reservation) / sizeof(reservation[0]); i++)
        assert_non_null(strstr(script_get(reservation[i])->source,
                               "'" QUEUE_RESERVED "'"));
    assert_non_null(strstr(script_get(SCRIPT_QUEUE_ENTER)->source,
                           "string.sub(tok, 1, 32) ..\n"
                           "         string.rep('0', 40 - 32) ..\n"
                           "         string.sub(tok, 40 + 1)"));
    assert_non_null(strstr(script_get(SCRIPT_INTENT_CLEAR)->source,
                           "v:sub(1, 32) == t:sub(1, 32) and "
                           "v:sub(41) == t:sub(41)"));
}

/* Only the acquiring scripts (and fence-write) set keys for a token:
 * node.c never resends those late, so the flag must be exactly theirs. */
static void test_only_acquiring_scripts_create_keys(void **state)
{
    (void)state;
    for (int i = 0; i < SCRIPT_COUNT; i++) {
        /* fence-write too: its counter and record name a token that a
         * retry reuses (scripts.h). */
        bool acquiring = i == SCRIPT_ACQUIRE_MULTI ||
                         i == SCRIPT_ACQUIRE_FENCED ||
                         i == SCRIPT_READER_ACQUIRE ||
                         i == SCRIPT_WRITER_ACQUIRE ||
                         i == SCRIPT_FENCE_WRITE ||
                         /* the lock key, and a queue entry whose
                          * waiter may have left (docs/fair-queue.md) */
                         i == SCRIPT_FAIR_ACQUIRE ||
                         i == SCRIPT_FAIR_ACQUIRE_FENCED ||
                         i == SCRIPT_FAIR_READER_ACQUIRE ||
                         i == SCRIPT_QUEUE_ENTER;

        assert_int_equal(script_get((enum script_id)i)->creates_keys,
                         acquiring);
    }
}

/* Renewals never recreate an absent key (that would hide a lapse): the
 * extend scripts set no key, they only move expiries. */
static void test_renewals_never_set_a_key(void **state)
{
    static const enum script_id renewals[] = { SCRIPT_EXTEND,
                                               SCRIPT_TOUCH_BATCH };

    (void)state;
    for (size_t i = 0; i < sizeof(renewals) / sizeof(renewals[0]); i++) {
        const char *src = script_get(renewals[i])->source;

        assert_null(strstr(src, "'set'"));
        assert_null(strstr(src, "'hset'"));
    }
}

/* Every script that deletes a lock key tells the waiters on
 * redlock:release:<key>, but rollback: a failed attempt never held the
 * lock, and its message woke every waiter into another split attempt
 * (docs/fair-queue.md 1.3). */
static void test_deleting_scripts_publish_the_release(void **state)
{
    (void)state;
    for (int i = 0; i < SCRIPT_COUNT; i++) {
        const char *src = script_get((enum script_id)i)->source;
        bool deletes = strstr(src, "'del', k") != NULL ||
                       strstr(src, "'del', KEYS[1])") != NULL;

        if (!deletes || i == SCRIPT_INTENT_CLEAR || i == SCRIPT_ROLLBACK)
            continue;
        assert_non_null(strstr(src, "'publish', 'redlock:release:' .."));
    }
    assert_non_null(strstr(script_get(SCRIPT_RELEASE)->source, "publish"));
    assert_null(strstr(script_get(SCRIPT_ROLLBACK)->source, "publish"));
    assert_non_null(strstr(script_get(SCRIPT_ROLLBACK)->source, "'del', k"));
    assert_non_null(
        strstr(script_get(SCRIPT_READER_RELEASE)->source, "publish"));
    assert_non_null(
        strstr(script_get(SCRIPT_FORCE_RELEASE)->source, "publish"));
    assert_non_null(strstr(script_get(SCRIPT_FAIR_RELEASE)->source,
                           "'publish', 'redlock:release:' .."));
}

/* The fair scripts that delete the lock key or an entry tell the next
 * waiter on redlock:queue:<key>; only fair-release (above) also tells the
 * release channel of a holder's release: a rollback there would wake
 * every waiter (docs/fair-queue.md 1.3). The one release message they
 * all may send is settle's, when the queue empties and its reservation
 * of the key goes: no fair waiter is left, the plain ones may try. */
static void test_fair_scripts_announce_not_release(void **state)
{
    static const enum script_id fair[] = {
        SCRIPT_FAIR_ACQUIRE, SCRIPT_FAIR_ACQUIRE_FENCED,
        SCRIPT_QUEUE_ENTER, SCRIPT_FAIR_ROLLBACK, SCRIPT_QUEUE_LEAVE,
        SCRIPT_FAIR_READER_ACQUIRE};

    (void)state;
    for (size_t i = 0; i < sizeof(fair) / sizeof(fair[0]); i++) {
        const char *src = script_get(fair[i])->source;
        const char *rel = strstr(src, "redlock:release:");

        assert_non_null(strstr(src, "'publish', 'redlock:queue:' .."));
        assert_non_null(rel);
        assert_int_equal(strncmp(rel, "redlock:release:' .. K, '')", 27), 0);
        assert_null(strstr(rel + 1, "redlock:release:"));
    }
    assert_non_null(strstr(script_get(SCRIPT_FAIR_RELEASE)->source,
                           "'publish', 'redlock:queue:' .."));
    /* A reader's acquire (above) announces as a writer's does; its
     * release and rollback are reader-release's (which publishes on the
     * release channel for plain readers too), then announce. */
    assert_non_null(strstr(script_get(SCRIPT_FAIR_READER_RELEASE)->source,
                           "'publish', 'redlock:queue:' .."));
    assert_non_null(strstr(script_get(SCRIPT_FAIR_READER_ROLLBACK)->source,
                           "'publish', 'redlock:queue:' .."));
    /* queue-inspect (status) reads: it must not purge or refresh. */
    {
        const char *src = script_get(SCRIPT_QUEUE_INSPECT)->source;
        static const char *const writes[] = {"'zadd'", "'zrem'", "'set'",
                                             "'del'", "'publish'",
                                             "'pexpire'"};

        for (size_t i = 0; i < sizeof(writes) / sizeof(writes[0]); i++)
            assert_null(strstr(src, writes[i]));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scripts_spell_the_c_constants),
        cmocka_unit_test(
            test_every_script_has_a_distinct_name_and_a_source),
        cmocka_unit_test(test_digest_is_the_lowercase_sha1_of_the_source),
        cmocka_unit_test(test_digests_are_distinct),
        cmocka_unit_test(test_only_acquiring_scripts_create_keys),
        cmocka_unit_test(test_renewals_never_set_a_key),
        cmocka_unit_test(test_deleting_scripts_publish_the_release),
        cmocka_unit_test(test_fair_scripts_announce_not_release),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
