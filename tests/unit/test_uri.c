/* SPDX-License-Identifier: BSD-3-Clause */
/* test_uri.c -- node URI parsing, display strings, resolution, comparison
 * and clean-up (src/uri.c). No Redis; resolution uses only "localhost",
 * numeric addresses and the reserved ".invalid" domain (RFC 6761).
 *
 * Every rejection is checked for RL_EINVAL, an emptied struct, a one-line
 * message that quotes the URI and names the problem, and the absence of the
 * password: test passwords are always "s3cr3t" (or "s3%63r3t" encoded). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "resolver.h"
#include "uri.h"

/* ---- Helpers ---- */

/* An emptied address is all zero, as node_addr_clear leaves it. */
static void assert_addr_empty(const struct node_addr *a)
{
    static const struct node_addr empty;

    assert_memory_equal(a, &empty, sizeof(*a));
}

static void assert_no_secret(const char *msg)
{
    assert_null(strstr(msg, "s3cr3t"));
    assert_null(strstr(msg, "s3%63r3t"));
    assert_null(strchr(msg, '\n'));
}

static void parse_ok(const char *uri, struct node_addr *a)
{
    char err[RL_ERRLEN];
    rl_status st = uri_parse(uri, a, err, sizeof(err));

    if (st != RL_OK)
        fail_msg("'%s' was rejected: %s", uri, err);
    assert_string_equal(err, "");
    assert_non_null(a->display);
    assert_no_secret(a->display);
}

/* printf at the end of the string in buf. */
__attribute__((format(printf, 3, 4))) static void
catf(char *buf, size_t len, const char *fmt, ...)
{
    size_t used = strlen(buf);
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

/* The fields of a that are set, on one line: "unix" and "tls" when they
 * hold, then name=value for host, ip, port, path, db, user and password
 * where not NULL or 0. The display string is left out. */
static const char *describe_addr(const struct node_addr *a, char *buf,
                                 size_t len)
{
    buf[0] = '\0';
    if (a->kind == ADDR_UNIX)
        catf(buf, len, " unix");
    if (a->tls)
        catf(buf, len, " tls");
    if (a->host != NULL)
        catf(buf, len, " host=%s", a->host);
    if (a->ip != NULL)
        catf(buf, len, " ip=%s", a->ip);
    if (a->port != 0)
        catf(buf, len, " port=%d", a->port);
    if (a->path != NULL)
        catf(buf, len, " path=%s", a->path);
    if (a->db != 0)
        catf(buf, len, " db=%d", a->db);
    if (a->user != NULL)
        catf(buf, len, " user=%s", a->user);
    if (a->password != NULL)
        catf(buf, len, " password=%s", a->password);
    return buf[0] == ' ' ? buf + 1 : buf;
}

/* parse_ok, and then, if resolve, resolve_addr must succeed too. */
static void address_of(const char *uri, bool resolve, struct node_addr *a)
{
    char err[RL_ERRLEN];

    parse_ok(uri, a);
    if (resolve && resolve_addr(a, err, sizeof(err)) != RL_OK)
        fail_msg("'%s' did not resolve: %s", uri, err);
}

/* uri parses (and, if resolve, resolves) to an address whose set fields
 * are fields (as describe_addr writes them) and whose display string is
 * display. */
static void expect_parsed(const char *uri, bool resolve, const char *fields,
                          const char *display)
{
    struct node_addr a;
    char buf[512];
    const char *got;

    address_of(uri, resolve, &a);
    got = describe_addr(&a, buf, sizeof(buf));
    if (strcmp(got, fields) != 0)
        fail_msg("'%s' gave '%s', expected '%s'", uri, got, fields);
    if (strcmp(a.display, display) != 0)
        fail_msg("'%s' is displayed as '%s', expected '%s'", uri, a.display,
                 display);
    node_addr_clear(&a);
}

/* Parse uri, expect RL_EINVAL with a message that quotes `quoted` (the URI
 * as it should appear, masked) and contains `problem`. */
static void expect_rejected(const char *uri, const char *quoted,
                            const char *problem)
{
    char err[RL_ERRLEN];
    char head[RL_ERRLEN];
    struct node_addr a;
    rl_status st;

    memset(&a, 0x5a, sizeof(a));
    st = uri_parse(uri, &a, err, sizeof(err));
    if (st != RL_EINVAL)
        fail_msg("'%s': expected RL_EINVAL, got %d", uri, (int)st);
    assert_addr_empty(&a);
    snprintf(head, sizeof(head), "node URI '%s': ", quoted);
    if (strncmp(err, head, strlen(head)) != 0)
        fail_msg("'%s': message '%s' does not start with \"%s\"", uri, err,
                 head);
    if (strstr(err, problem) == NULL)
        fail_msg("'%s': message '%s' does not mention '%s'", uri, err,
                 problem);
    assert_no_secret(err);
}

/* node_addr_same of u1 and u2 (resolved first if resolve), checked to be
 * the same both ways round. */
static bool same(const char *u1, const char *u2, bool resolve)
{
    struct node_addr a;
    struct node_addr b;
    bool r;

    address_of(u1, resolve, &a);
    address_of(u2, resolve, &b);
    r = node_addr_same(&a, &b);
    assert_true(node_addr_same(&b, &a) == r);
    node_addr_clear(&a);
    node_addr_clear(&b);
    return r;
}

/* ---- Cases made of table rows ----
 * Three tables: URIs that parse (and, where resolve is set, resolve) to an
 * expected address, URIs that are rejected, and pairs of URIs compared.
 * Each row belongs to one test case, named by its tag; check_rows(tag)
 * checks all of that case's rows, naming the row that fails. */

enum row_case {
    /* Accepted forms */
    HOST_ONLY, PORT_AND_DB, PASSWORD_ONLY, ACL_USER, PERCENT_DECODED,
    RAW_AT_SLASH, IPV6_URI, HOST_PORT, BRACKETED_IPV6, UNIX_URI, SCHEME_CASE,
    TRAILING_SLASH, LEADING_ZEROS, REDISS,
    /* Resolution */
    LOCALHOST, NUMERIC, UNIX_RESOLVE,
    /* Rejections */
    UNKNOWN_SCHEME, NO_HOST, PORT_RANGE, PORT_TEXT, BAD_DB, GARBAGE,
    UNIX_PATH, BAD_PERCENT, BARE_HOST, UNTERMINATED, UNBRACKETED_IPV6,
    HOST_CHAR, USER_INFO, CREDENTIALS,
    /* Comparison */
    SAME_NODE, DIFFERENT_NODES, RESOLVED_IPS, UNIX_COMPARE,
};

static const struct parse_row {
    enum row_case of;
    const char *uri;
    bool resolve;       /* resolve_addr before the fields are compared */
    const char *fields; /* as describe_addr writes them */
    const char *display;
} parse_rows[] = {
    {HOST_ONLY, "redis://cache.example.com", false,
     "host=cache.example.com port=6379",
     "cache.example.com:6379"},
    {PORT_AND_DB, "redis://10.0.0.7:7001/5", false,
     "host=10.0.0.7 port=7001 db=5",
     "10.0.0.7:7001/5"},
    {PASSWORD_ONLY, "redis://:s3cr3t@redis-1:6380", false,
     "host=redis-1 port=6380 password=s3cr3t",
     "redis-1:6380"},
    {ACL_USER, "redis://locker:s3cr3t@redis-2:6381/3", false,
     "host=redis-2 port=6381 db=3 user=locker password=s3cr3t",
     "redis-2:6381/3"},
    {PERCENT_DECODED, "redis://app%40eu:s3%63r3t%2F%3a%25%40x@h:1", false,
     "host=h port=1 user=app@eu password=s3cr3t/:%@x",
     "h:1"},
    /* base64-style generated passwords often hold '/' and '+'. */
    {RAW_AT_SLASH, "redis://:s3cr3t@a/b+c@db-host:6379/2", false,
     "host=db-host port=6379 db=2 password=s3cr3t@a/b+c",
     "db-host:6379/2"},
    {IPV6_URI, "redis://[::1]:7000/2", false,
     "host=::1 port=7000 db=2",
     "[::1]:7000/2"},
    {IPV6_URI, "redis://:s3cr3t@[fe80::1:2]", false,
     "host=fe80::1:2 port=6379 password=s3cr3t",
     "[fe80::1:2]:6379"},
    {HOST_PORT, "127.0.0.1:7001", false,
     "host=127.0.0.1 port=7001",
     "127.0.0.1:7001"},
    /* A host called "redis" (docker compose) is not a scheme. */
    {HOST_PORT, "redis:6379", false,
     "host=redis port=6379",
     "redis:6379"},
    {BRACKETED_IPV6, "[::1]:7002", false,
     "host=::1 port=7002",
     "[::1]:7002"},
    {UNIX_URI, "unix:///var/run/redis/redis.sock", false,
     "unix path=/var/run/redis/redis.sock",
     "unix:/var/run/redis/redis.sock"},
    {UNIX_URI, "unix:///tmp/r.sock?db=4", false,
     "unix path=/tmp/r.sock db=4",
     "unix:/tmp/r.sock/4"},
    {SCHEME_CASE, "REDIS://Cache.Example:1", false,
     "host=Cache.Example port=1",
     "Cache.Example:1"},
    {SCHEME_CASE, "Unix:///tmp/x.sock", false,
     "unix path=/tmp/x.sock",
     "unix:/tmp/x.sock"},
    {TRAILING_SLASH, "redis://h:7000/", false,
     "host=h port=7000",
     "h:7000"},
    {LEADING_ZEROS, "redis://h:00001/007", false,
     "host=h port=1 db=7",
     "h:1/7"},
    {REDISS, "rediss://app:s3cr3t@cache.example.com:6380/2", false,
     "tls host=cache.example.com port=6380 db=2 user=app password=s3cr3t",
     "cache.example.com:6380/2"},
    {REDISS, "RediSS://h", false,
     "tls host=h port=6379",
     "h:6379"},
    {REDISS, "redis://h", false,
     "host=h port=6379",
     "h:6379"},
    {REDISS, "h:1", false,
     "host=h port=1",
     "h:1"},
    /* IPv4 is preferred even where /etc/hosts lists ::1 first. */
    {LOCALHOST, "redis://localhost:7000", true,
     "host=localhost ip=127.0.0.1 port=7000",
     "localhost:7000"},
    {NUMERIC, "127.0.0.1:7001", true,
     "host=127.0.0.1 ip=127.0.0.1 port=7001",
     "127.0.0.1:7001"},
    {NUMERIC, "[::1]:7001", true,
     "host=::1 ip=::1 port=7001",
     "[::1]:7001"},
    {UNIX_RESOLVE, "unix:///tmp/r.sock", true,
     "unix path=/tmp/r.sock",
     "unix:/tmp/r.sock"},
};

/* As expect_rejected: the URI, how the message quotes it (masked), and a
 * phrase of the problem. */
static const struct rejection_row {
    enum row_case of;
    const char *uri;
    const char *quoted;
    const char *problem;
} rejection_rows[] = {
    {REDISS, "rediss://:s3cr3t@h:0",
     "rediss://:***@h:0", "port"},
    {REDISS, "rediss://user@h",
     "rediss://***@h", "needs a ':'"},
    {UNKNOWN_SCHEME, "http://u:s3cr3t@h:80",
     "http://u:***@h:80", "unknown scheme 'http'"},
    {UNKNOWN_SCHEME, "tcp://h:1",
     "tcp://h:1", "unknown scheme 'tcp'"},
    {NO_HOST, "redis://",
     "redis://", "missing host"},
    {NO_HOST, "redis://:6379",
     "redis://:6379", "missing host"},
    {NO_HOST, "redis://:s3cr3t@",
     "redis://:***@", "missing host"},
    {NO_HOST, "redis:///2",
     "redis:///2", "missing host"},
    {NO_HOST, ":6379",
     ":6379", "missing host"},
    {NO_HOST, "redis://[]:1",
     "redis://[]:1", "missing host"},
    {PORT_RANGE, "redis://h:0",
     "redis://h:0", "port 0 is out of range"},
    {PORT_RANGE, "h:65536",
     "h:65536", "port 65536 is out of range"},
    {PORT_RANGE, "redis://:s3cr3t@h:99999999999999999999999",
     "redis://:***@h:99999999999999999999999", "out of range (1..65535)"},
    /* What follows ':' may be a password that lost its "@host" (or half
     * of one split at a comma): masked, never echoed. */
    {PORT_TEXT, "redis://h:abc",
     "redis://h:***", "the text after ':' is not a port number"},
    {PORT_TEXT, "h:63x9",
     "h:***", "not a port number"},
    {PORT_TEXT, "h:-1",
     "h:***", "not a port number"},
    {PORT_TEXT, "h:+1",
     "h:***", "not a port number"},
    {PORT_TEXT, "redis://h:",
     "redis://h:", "missing port after ':'"},
    {PORT_TEXT, "h:",
     "h:", "missing port after ':'"},
    {PORT_TEXT, "redis://:s3cr3t@h:/1",
     "redis://:***@h:/1", "missing port after ':'"},
    {BAD_DB, "redis://h/-1",
     "redis://h/-1", "db -1 is negative"},
    {BAD_DB, "redis://h:1/x",
     "redis://h:1/x", "db 'x' is not a number"},
    {BAD_DB, "redis://h/2147483648",
     "redis://h/2147483648", "db 2147483648 is out of range"},
    {BAD_DB, "unix:///tmp/s?db=-3",
     "unix:///tmp/s?db=-3", "db -3 is negative"},
    {BAD_DB, "unix:///tmp/s?db=one",
     "unix:///tmp/s?db=one", "db 'one' is not a number"},
    {BAD_DB, "unix:///tmp/s?db=",
     "unix:///tmp/s?db=", "missing db after 'db='"},
    {GARBAGE, "redis://h:1/2/3",
     "redis://h:1/2/3", "unexpected '/3' after db"},
    {GARBAGE, "redis://h:1?db=2",
     "redis://h:1?db=2", "unexpected '?db=2' after port"},
    {GARBAGE, "redis://h#x",
     "redis://h#x", "unexpected '#x' after host"},
    {GARBAGE, "h:6379/2",
     "h:6379/2", "unexpected '/2' after port"},
    {GARBAGE, "[::1]x:1",
     "[::1]x:1", "unexpected 'x:1' after host"},
    /* A query other than db=N may be "password=...": masked. */
    {GARBAGE, "unix:///tmp/s?db=1&x=2",
     "unix:///tmp/s?db=1&***", "unexpected '***' after db"},
    {GARBAGE, "unix:///tmp/s?timeout=2",
     "unix:///tmp/s?***", "unsupported query '***'"},
    {GARBAGE, "unix:///tmp/s?",
     "unix:///tmp/s?", "empty query"},
    {UNIX_PATH, "unix://",
     "unix://", "empty socket path"},
    {UNIX_PATH, "unix://?db=1",
     "unix://?db=1", "empty socket path"},
    {UNIX_PATH, "unix://tmp/redis.sock",
     "unix://tmp/redis.sock", "must be absolute"},
    {UNIX_PATH, "unix://localhost/tmp/r.sock",
     "unix://localhost/tmp/r.sock", "must be absolute"},
    {UNIX_PATH, "unix:///tmp/",
     "unix:///tmp/", "ends with '/'"},
    {UNIX_PATH, "unix:/tmp/redis.sock",
     "unix:/tmp/redis.sock", "unix:///absolute/path"},
    {BAD_PERCENT, "redis://:s3cr3t%zz@h",
     "redis://:***@h", "bad percent escape in password"},
    {BAD_PERCENT, "redis://:s3cr3t%4@h",
     "redis://:***@h", "bad percent escape in password"},
    {BAD_PERCENT, "redis://:s3cr3t%@h",
     "redis://:***@h", "bad percent escape in password"},
    {BAD_PERCENT, "redis://:s3cr3t%00@h",
     "redis://:***@h", "bad percent escape in password"},
    {BAD_PERCENT, "redis://us%g1er:s3cr3t@h",
     "redis://us%g1er:***@h", "bad percent escape in user name"},
    {BARE_HOST, "localhost",
     "localhost", "expected host:port or a redis:// URI"},
    {BARE_HOST, "[::1]",
     "[::1]", "expected host:port or a redis:// URI"},
    {UNTERMINATED, "[::1",
     "[::1", "unterminated '['"},
    {UNTERMINATED, "redis://:s3cr3t@[::1:7000/2",
     "redis://:***@[::1:7000/2", "unterminated '['"},
    {UNBRACKETED_IPV6, "::1:6379",
     "::1:6379", "must be in brackets"},
    {UNBRACKETED_IPV6, "redis://fe80::1",
     "redis://fe80::1", "must be in brackets"},
    {UNBRACKETED_IPV6, "[not-v6]:1",
     "[not-v6]:1", "'not-v6' is not an IPv6 address"},
    {HOST_CHAR, "redis://ho st:1",
     "redis://ho st:1", "invalid byte 0x20 in host"},
    {HOST_CHAR, "h!x:1",
     "h!x:1", "invalid character '!' in host"},
    /* Without ':' we cannot tell a user from a password: mask it all. */
    {USER_INFO, "redis://s3cr3t@h",
     "redis://***@h", "user info needs a ':'"},
    {USER_INFO, "redis://user:@h",
     "redis://user:@h", "empty password after ':'"},
    {USER_INFO, "redis://@h",
     "redis://@h", "empty user info"},
    {CREDENTIALS, ":s3cr3t@h:6379",
     "***@h:6379", "credentials need a redis:// URI"},
    {CREDENTIALS, "user:s3cr3t@h:6379",
     "***@h:6379", "credentials need a redis:// URI"},
};

/* node_addr_same of the two addresses (both ways round) is same. */
static const struct comparison_row {
    enum row_case of;
    const char *a;
    const char *b;
    bool resolve; /* resolve_addr both first */
    bool same;
} comparison_rows[] = {
    {SAME_NODE, "h:6379", "redis://h", false, true},
    {SAME_NODE, "redis://h:6379/0", "h:6379", false, true},
    {SAME_NODE, "redis://:s3cr3t@h:7/1", "redis://u:other@h:7/1", false, true},
    {SAME_NODE, "redis://Cache.Example:7", "cache.example:7", false, true},
    {SAME_NODE, "redis://[::1]:7000/2", "redis://[::1]:7000/2", false, true},
    {DIFFERENT_NODES, "h:6379", "h:6380", false, false},
    {DIFFERENT_NODES, "redis://h/1", "redis://h/2", false, false},
    {DIFFERENT_NODES, "h1:6379", "h2:6379", false, false},
    {RESOLVED_IPS, "localhost:7000", "127.0.0.1:7000", false, false},
    {RESOLVED_IPS, "localhost:7000", "127.0.0.1:7000", true, true},
    {RESOLVED_IPS, "localhost:7000", "127.0.0.1:7001", true, false},
    {UNIX_COMPARE, "unix:///tmp/a.sock",
     "unix:///tmp/a.sock?db=0", false, true},
    {UNIX_COMPARE, "unix:///tmp/a.sock", "unix:///tmp/b.sock", false, false},
    {UNIX_COMPARE, "unix:///tmp/a.sock?db=1",
     "unix:///tmp/a.sock", false, false},
};

static void check_rows(enum row_case of)
{
    size_t i, n = 0;

    for (i = 0; i < ARRAY_SIZE(parse_rows); i++) {
        const struct parse_row *r = &parse_rows[i];

        if (r->of != of)
            continue;
        expect_parsed(r->uri, r->resolve, r->fields, r->display);
        n++;
    }
    for (i = 0; i < ARRAY_SIZE(rejection_rows); i++) {
        const struct rejection_row *r = &rejection_rows[i];

        if (r->of != of)
            continue;
        expect_rejected(r->uri, r->quoted, r->problem);
        n++;
    }
    for (i = 0; i < ARRAY_SIZE(comparison_rows); i++) {
        const struct comparison_row *r = &comparison_rows[i];

        if (r->of != of)
            continue;
        if (same(r->a, r->b, r->resolve) != r->same)
            fail_msg("'%s' and '%s'%s: node_addr_same should be %s", r->a,
                     r->b, r->resolve ? " (resolved)" : "",
                     r->same ? "true" : "false");
        n++;
    }
    assert_true(n > 0);
}

/* A case made only of its rows. */
#define ROWS_CASE(name, of)                                                  \
    static void name(void **state)                                           \
    {                                                                        \
        (void)state;                                                         \
        check_rows(of);                                                      \
    }

ROWS_CASE(test_redis_uri_with_host_only_gets_default_port_and_db, HOST_ONLY)
ROWS_CASE(test_redis_uri_with_port_and_db_is_parsed, PORT_AND_DB)
ROWS_CASE(test_redis_uri_with_password_only_has_no_user, PASSWORD_ONLY)
ROWS_CASE(test_redis_uri_with_acl_user_and_db_is_parsed, ACL_USER)
ROWS_CASE(test_user_and_password_are_percent_decoded, PERCENT_DECODED)
ROWS_CASE(test_raw_at_and_slash_in_a_password_belong_to_the_password,
          RAW_AT_SLASH)
ROWS_CASE(test_redis_uri_with_ipv6_host_port_and_db_is_parsed, IPV6_URI)
ROWS_CASE(test_host_port_form_is_parsed, HOST_PORT)
ROWS_CASE(test_bracketed_ipv6_host_port_form_is_parsed, BRACKETED_IPV6)
ROWS_CASE(test_unix_uri_with_and_without_db_is_parsed, UNIX_URI)
ROWS_CASE(test_scheme_is_case_insensitive_and_host_is_kept_as_written,
          SCHEME_CASE)
ROWS_CASE(test_trailing_slash_means_db_zero, TRAILING_SLASH)
ROWS_CASE(test_rediss_uri_means_tls_with_the_redis_forms, REDISS)
ROWS_CASE(test_unknown_scheme_is_rejected, UNKNOWN_SCHEME)
ROWS_CASE(test_missing_host_is_rejected, NO_HOST)
ROWS_CASE(test_port_zero_or_above_65535_is_rejected, PORT_RANGE)
ROWS_CASE(test_non_numeric_or_missing_port_is_rejected, PORT_TEXT)
ROWS_CASE(test_negative_non_numeric_or_too_large_db_is_rejected, BAD_DB)
ROWS_CASE(test_trailing_garbage_is_rejected, GARBAGE)
ROWS_CASE(test_bad_percent_escape_is_rejected_without_showing_it, BAD_PERCENT)
ROWS_CASE(test_bare_host_without_port_is_rejected, BARE_HOST)
ROWS_CASE(test_unterminated_bracket_is_rejected, UNTERMINATED)
ROWS_CASE(test_unbracketed_or_invalid_ipv6_is_rejected, UNBRACKETED_IPV6)
ROWS_CASE(test_user_info_without_colon_or_password_is_rejected, USER_INFO)
ROWS_CASE(test_credentials_in_host_port_form_are_rejected_and_masked,
          CREDENTIALS)
ROWS_CASE(test_localhost_resolves_to_the_ipv4_loopback, LOCALHOST)
ROWS_CASE(test_numeric_hosts_resolve_to_themselves, NUMERIC)
ROWS_CASE(test_resolving_a_unix_address_does_nothing, UNIX_RESOLVE)
ROWS_CASE(test_same_host_port_and_db_are_the_same_node, SAME_NODE)
ROWS_CASE(test_different_host_port_or_db_are_different_nodes, DIFFERENT_NODES)
ROWS_CASE(test_resolved_ips_are_compared_instead_of_host_names, RESOLVED_IPS)
ROWS_CASE(test_unix_addresses_compare_path_and_db, UNIX_COMPARE)

/* ---- Accepted forms ---- */

static void test_largest_port_and_db_are_accepted(void **state)
{
    char uri[64];
    char fields[64];
    char display[64];

    (void)state;
    snprintf(uri, sizeof(uri), "redis://h:65535/%d", INT_MAX);
    snprintf(fields, sizeof(fields), "host=h port=65535 db=%d", INT_MAX);
    snprintf(display, sizeof(display), "h:65535/%d", INT_MAX);
    expect_parsed(uri, false, fields, display);
    check_rows(LEADING_ZEROS);
}

/* ---- Rejections ---- */

static void test_null_and_empty_uri_are_rejected(void **state)
{
    struct node_addr a;
    char err[RL_ERRLEN];

    (void)state;
    memset(&a, 0x5a, sizeof(a));
    assert_int_equal(uri_parse(NULL, &a, err, sizeof(err)), RL_EINVAL);
    assert_addr_empty(&a);
    assert_non_null(strstr(err, "NULL"));

    memset(&a, 0x5a, sizeof(a));
    assert_int_equal(uri_parse("", &a, err, sizeof(err)), RL_EINVAL);
    assert_addr_empty(&a);
    assert_non_null(strstr(err, "empty"));
}

static void test_unix_path_that_is_empty_relative_or_too_long_is_rejected(
    void **state)
{
    char uri[256];
    size_t max = sizeof(((struct sockaddr_un *)0)->sun_path) - 1;

    (void)state;
    check_rows(UNIX_PATH);

    /* The longest path connect() takes passes; one more byte does not. */
    snprintf(uri, sizeof(uri), "unix://");
    memset(uri + 7, 'p', max);
    uri[7] = '/';
    uri[7 + max] = '\0';
    {
        struct node_addr a;

        parse_ok(uri, &a);
        assert_int_equal(strlen(a.path), max);
        node_addr_clear(&a);
    }
    uri[7 + max] = 'p';
    uri[8 + max] = '\0';
    {
        struct node_addr a;
        char err[RL_ERRLEN];

        assert_int_equal(uri_parse(uri, &a, err, sizeof(err)), RL_EINVAL);
        assert_non_null(strstr(err, "socket path is longer than"));
    }
}

static void test_invalid_host_character_is_rejected_on_one_line(
    void **state)
{
    char err[RL_ERRLEN];
    struct node_addr a;

    (void)state;
    check_rows(HOST_CHAR);

    /* A newline from an environment variable must not split the line. */
    assert_int_equal(uri_parse("redis://h:6379\n", &a, err, sizeof(err)),
                     RL_EINVAL);
    assert_null(strchr(err, '\n'));
    assert_non_null(strstr(err, "port"));
    assert_int_equal(uri_parse("h\t:1", &a, err, sizeof(err)), RL_EINVAL);
    assert_null(strchr(err, '\t'));
    assert_non_null(strstr(err, "invalid byte 0x09 in host"));
}

static void test_error_messages_never_echo_the_password(void **state)
{
    static const char *const uris[] = {
        "redis://:s3cr3t@h:0",         "redis://u:s3cr3t@h:x",
        "redis://:s3cr3t@h/-1",        "redis://:s3cr3t@h/1/2",
        "redis://:s3cr3t@",            "redis://u:s3cr3t@h!",
        "redis://:s3%63r3t@[zz]:1",    "rediss://:s3cr3t@h:0",
        "ftp://:s3cr3t@h",             "unix://:s3cr3t@/tmp/s",
        "redis://:pw@s3cr3t@h:0",      "s3cr3t@h:1",
        "u:s3cr3t@h:1",                "redis://u:s3cr3t@h?x",
    };
    char err[RL_ERRLEN];
    struct node_addr a;
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_SIZE(uris); i++) {
        rl_status st = uri_parse(uris[i], &a, err, sizeof(err));

        if (st != RL_EINVAL)
            fail_msg("'%s' was not rejected", uris[i]);
        if (strstr(err, "***") == NULL)
            fail_msg("'%s': message '%s' shows no mask", uris[i], err);
        assert_no_secret(err);
    }
}

static void test_long_uri_is_cut_in_the_message(void **state)
{
    char uri[400];
    char err[RL_ERRLEN];
    struct node_addr a;

    (void)state;
    memcpy(uri, "redis://:s3cr3t@", 16);
    memset(uri + 16, 'h', 300);
    memcpy(uri + 316, ":0", 3);
    assert_int_equal(uri_parse(uri, &a, err, sizeof(err)), RL_EINVAL);
    assert_non_null(strstr(err, "redis://:***@hhh"));
    assert_non_null(strstr(err, "...'"));
    assert_non_null(strstr(err, "longer than 255"));
    assert_no_secret(err);
}

static void test_null_out_or_missing_error_buffer_is_handled(void **state)
{
    struct node_addr a;
    char err[RL_ERRLEN];
    char tiny[8];

    (void)state;
    assert_int_equal(uri_parse("h:1", NULL, err, sizeof(err)), RL_EINVAL);
    assert_true(strlen(err) > 0);
    assert_int_equal(uri_parse("h:0", &a, NULL, 0), RL_EINVAL);
    assert_addr_empty(&a);
    assert_int_equal(uri_parse("h:0", &a, err, 0), RL_EINVAL);
    assert_int_equal(uri_parse("h:0", &a, tiny, sizeof(tiny)), RL_EINVAL);
    assert_int_equal(strlen(tiny), sizeof(tiny) - 1);
    assert_int_equal(uri_parse("h:1", &a, NULL, 0), RL_OK);
    node_addr_clear(&a);
}

/* ---- Display ---- */

static void test_display_strings_follow_the_documented_forms(void **state)
{
    static const struct {
        const char *uri;
        const char *display;
    } cases[] = {
        {"redis://h", "h:6379"},
        {"redis://h/0", "h:6379"},
        {"redis://h:7000/9", "h:7000/9"},
        {"h:7000", "h:7000"},
        {"[2001:db8::5]:7000", "[2001:db8::5]:7000"},
        {"redis://[::1]:7000/2", "[::1]:7000/2"},
        {"unix:///tmp/r.sock", "unix:/tmp/r.sock"},
        {"unix:///tmp/r.sock?db=0", "unix:/tmp/r.sock"},
        {"unix:///tmp/r.sock?db=12", "unix:/tmp/r.sock/12"},
    };
    struct node_addr a;
    size_t i;

    (void)state;
    for (i = 0; i < ARRAY_SIZE(cases); i++) {
        parse_ok(cases[i].uri, &a);
        assert_string_equal(a.display, cases[i].display);
        node_addr_clear(&a);
    }
}

static void test_display_never_contains_the_user_or_password(void **state)
{
    struct node_addr a;

    (void)state;
    parse_ok("redis://locker:s3cr3t@h:7000/1", &a);
    assert_string_equal(a.display, "h:7000/1");
    assert_null(strstr(a.display, "locker"));
    node_addr_clear(&a);
}

/* ---- Resolution ---- */

static void test_resolving_again_replaces_the_ip(void **state)
{
    struct node_addr a;
    char err[RL_ERRLEN];

    (void)state;
    address_of("127.0.0.1:7001", true, &a);
    assert_int_equal(resolve_addr(&a, err, sizeof(err)), RL_OK);
    assert_string_equal(a.ip, "127.0.0.1");
    node_addr_clear(&a);
}

static void test_unresolvable_host_is_rejected_naming_host_and_node(
    void **state)
{
    struct node_addr a;
    char err[RL_ERRLEN];

    (void)state;
    parse_ok("redis://:s3cr3t@no-such-host.invalid:7000/1", &a);
    assert_int_equal(resolve_addr(&a, err, sizeof(err)), RL_EINVAL);
    assert_null(a.ip);
    assert_true(strncmp(err,
                        "cannot resolve host 'no-such-host.invalid' in node "
                        "'no-such-host.invalid:7000/1': ",
                        strlen("cannot resolve host 'no-such-host.invalid' "
                               "in node 'no-such-host.invalid:7000/1': ")) ==
                0);
    /* Followed by gai_strerror's text. */
    assert_true(strlen(err) > strlen("cannot resolve host 'no-such-host."
                                     "invalid' in node 'no-such-host."
                                     "invalid:7000/1': "));
    assert_no_secret(err);
    node_addr_clear(&a);
}

static void test_resolving_null_or_an_empty_address_is_rejected(
    void **state)
{
    struct node_addr a;
    char err[RL_ERRLEN];

    (void)state;
    assert_int_equal(resolve_addr(NULL, err, sizeof(err)), RL_EINVAL);
    assert_true(strlen(err) > 0);
    memset(&a, 0, sizeof(a));
    assert_int_equal(resolve_addr(&a, err, sizeof(err)), RL_EINVAL);
    assert_non_null(strstr(err, "no host"));
}

/* ---- Comparison ---- */

static void test_tcp_and_unix_addresses_are_never_the_same(void **state)
{
    struct node_addr a;
    struct node_addr b;

    (void)state;
    parse_ok("unix:///tmp/a.sock", &a);
    parse_ok("localhost:6379", &b);
    assert_false(node_addr_same(&a, &b));
    assert_false(node_addr_same(&b, &a));
    node_addr_clear(&a);
    node_addr_clear(&b);
}

static void test_comparing_with_null_is_false(void **state)
{
    struct node_addr a;

    (void)state;
    parse_ok("h:1", &a);
    assert_false(node_addr_same(&a, NULL));
    assert_false(node_addr_same(NULL, &a));
    assert_false(node_addr_same(NULL, NULL));
    node_addr_clear(&a);
}

/* ---- Clean-up ---- */

static void test_node_addr_clear_null_is_a_no_op(void **state)
{
    (void)state;
    node_addr_clear(NULL);
}

static void test_node_addr_clear_frees_and_zeroes_everything(void **state)
{
    struct node_addr a;

    (void)state;
    address_of("redis://u:s3cr3t@127.0.0.1:7000/3", true, &a);
    node_addr_clear(&a);
    assert_addr_empty(&a);
    assert_int_equal(a.kind, 0);
    /* Clearing twice is harmless. */
    node_addr_clear(&a);
    assert_addr_empty(&a);
}

/* ---- Public API: rl_uri_describe, rl_uri_parse and getters ---- */

/* describe(uri) must equal want, and the return value its length. */
static void expect_described(const char *uri, const char *want)
{
    char buf[256];
    size_t n = rl_uri_describe(uri, buf, sizeof(buf));

    if (strcmp(buf, want) != 0)
        fail_msg("describe('%s') = '%s', expected '%s'", uri, buf, want);
    assert_int_equal(n, strlen(want));
}

static void test_describe_masks_the_password_whatever_it_holds(void **state)
{
    (void)state;
    /* issue 10 §4: the old CLI redaction stopped at the '/' */
    expect_described("redis://:se/cret@host", "redis://:***@host");
    expect_described("redis://:s3cr3t/?#:@s3cr3t@h:7001/2",
                     "redis://:***@h:7001/2");
    expect_described("redis://alice:s3cr3t@h", "redis://alice:***@h");
    expect_described("redis://alice:s3%2Fcr3t@h", "redis://alice:***@h");
    expect_described("redis://s3cr3t@h", "redis://***@h");
    expect_described("REDIS://:s3cr3t@[::1]:7000", "REDIS://:***@[::1]:7000");
    expect_described("rediss://:s3cr3t@h", "rediss://:***@h");
    expect_described("ftp://u:s3cr3t@h", "ftp://u:***@h");
    expect_described("unix://:s3cr3t@/tmp/r.sock", "unix://:***@/tmp/r.sock");
    /* No scheme: everything before the last '@' is masked, even a "://"
     * inside the password. */
    expect_described("u:s3cr3t@h:1", "***@h:1");
    expect_described(":a://s3cr3t@h:1", "***@h:1");
    /* Control characters never reach a line. */
    expect_described("redis://:s3\ncr3t@h\t:1", "redis://:***@h?:1");
}

static void test_describe_masks_what_may_be_a_password_in_a_bad_uri(
    void **state)
{
    (void)state;
    /* Missing "@host", or half of a password split at a comma. */
    expect_described("redis://:s3cr3t", "redis://:***");
    expect_described("redis://:se/cret", "redis://:***");
    expect_described("redis://default:s3cr3t", "redis://default:***");
    expect_described("redis://u:s3cr3t?x#y", "redis://u:***");
    expect_described("h:s3cr3t", "h:***");
    /* Query parameters other than db=N ("?password=" is a common form). */
    expect_described("redis://h:1/0?password=s3cr3t",
                     "redis://h:1/0?***");
    expect_described("unix:///tmp/r.sock?db=1&password=s3cr3t",
                     "unix:///tmp/r.sock?db=1&***");
    expect_described("unix:///tmp/r.sock?password=s3cr3t&db=1",
                     "unix:///tmp/r.sock?***");
}

static void test_describe_leaves_a_valid_uri_without_password_whole(
    void **state)
{
    (void)state;
    expect_described("redis://h:6379/2", "redis://h:6379/2");
    expect_described("127.0.0.1:7001", "127.0.0.1:7001");
    expect_described("[::1]:7001", "[::1]:7001");
    expect_described("::1:6379", "::1:6379");
    expect_described("unix:///tmp/r.sock?db=3", "unix:///tmp/r.sock?db=3");
    /* A socket path may hold '@' and ':'. */
    expect_described("unix:///tmp/a@b:c.sock", "unix:///tmp/a@b:c.sock");
    expect_described("redis:6379", "redis:6379");
}

static void test_describe_cuts_to_the_buffer_and_handles_null(void **state)
{
    char buf[12];
    char one[1] = {'x'};

    (void)state;
    assert_int_equal(rl_uri_describe("redis://:s3cr3t@host:1", buf,
                                     sizeof(buf)),
                     strlen("redis://:***@host:1"));
    assert_string_equal(buf, "redis://:**");
    assert_int_equal(rl_uri_describe("redis://:s3cr3t@h", one, 1), 14);
    assert_int_equal(one[0], '\0');
    assert_int_equal(rl_uri_describe("redis://:s3cr3t@h", NULL, 0), 14);
    assert_int_equal(rl_uri_describe(NULL, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "");
}

/* Every password made of two "s3cr3t" joined by a character users put in
 * passwords, in every place a password is written (or mistyped), and with
 * the node list split at commas as redlock-cli does: no description and no
 * parse error ever shows "s3cr3t". Where no "@host" follows the password,
 * one holding '@' cannot be told from user info + host, nor one holding
 * ',' from a second node named like a host; nor, at the very start, a
 * password holding ',' from a first node, or one holding "://" from a
 * scheme. Those pairs are left out. */
static void test_no_description_or_error_shows_a_password(void **state)
{
    static const char *const joins[] = {
        "/", "?", "#", ":", "@", ",", "%", " ", "\n", "://", "[", "]",
        "&db=1&", "%2F", "%40", "/0?", "@h:1/", "",
    };
    static const char *const forms[] = {
        "redis://:%s@h:1",  "redis://u:%s@h:1/2", "redis://:%s@[::1]:1",
        "%s@h:1",           "u:%s@h:1",           "redis://:%s",
        "redis://u:%s",     "rediss://:%s@h",     "unix://:%s@/tmp/s",
        "unix:///tmp/s?password=%s", "redis://h:1/0?password=%s",
        "redis://h:1?db=2&password=%s",
    };
    char pw[64];
    char uri[256];
    char piece[256];
    char out[256];
    char err[RL_ERRLEN];
    struct node_addr a;
    size_t i, j;

    (void)state;
    for (i = 0; i < ARRAY_SIZE(joins); i++) {
        snprintf(pw, sizeof(pw), "s3cr3t%ss3cr3t", joins[i]);
        for (j = 0; j < ARRAY_SIZE(forms); j++) {
            size_t flen = strlen(forms[j]);
            const char *p;

            if (strcmp(forms[j] + flen - 2, "%s") == 0 &&
                strpbrk(joins[i], "@,") != NULL)
                continue;
            if (forms[j][0] == '%' && (strchr(joins[i], ',') != NULL ||
                                       strstr(joins[i], "://") != NULL))
                continue;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
            snprintf(uri, sizeof(uri), forms[j], pw);
#pragma GCC diagnostic pop
            for (p = uri; *p != '\0';) {
                size_t n = strcspn(p, ",");

                snprintf(piece, sizeof(piece), "%.*s", (int)n, p);
                rl_uri_describe(piece, out, sizeof(out));
                if (strstr(out, "s3cr3t") != NULL)
                    fail_msg("'%s' (of '%s') described as '%s'", piece, uri, out);
                if (uri_parse(piece, &a, err, sizeof(err)) == RL_OK)
                    node_addr_clear(&a);
                else if (strstr(err, "s3cr3t") != NULL)
                    fail_msg("'%s' rejected as '%s'", piece, err);
                p += n + (p[n] == ',');
            }
        }
    }
}

static void test_rl_uri_parse_gives_the_address_and_credentials(void **state)
{
    rl_uri *u;

    (void)state;
    assert_int_equal(rl_uri_parse("redis://al%69ce:se/cr?e#t:@x@h.example:"
                                  "7001/3", &u), RL_OK);
    assert_string_equal(rl_uri_host(u), "h.example");
    assert_int_equal(rl_uri_port(u), 7001);
    assert_int_equal(rl_uri_db(u), 3);
    assert_null(rl_uri_path(u));
    assert_string_equal(rl_uri_user(u), "alice");
    assert_string_equal(rl_uri_password(u), "se/cr?e#t:@x");
    assert_string_equal(rl_uri_name(u), "h.example:7001/3");
    assert_false(rl_uri_tls(u));
    rl_uri_free(u);

    assert_int_equal(rl_uri_parse("rediss://h.example:6380", &u), RL_OK);
    assert_true(rl_uri_tls(u));
    assert_int_equal(rl_uri_port(u), 6380);
    rl_uri_free(u);

    assert_int_equal(rl_uri_parse("redis://:p%40ss%2Fw%25rd@[::1]", &u),
                     RL_OK);
    assert_string_equal(rl_uri_host(u), "::1");
    assert_int_equal(rl_uri_port(u), 6379);
    assert_null(rl_uri_user(u));
    assert_string_equal(rl_uri_password(u), "p@ss/w%rd");
    rl_uri_free(u);

    assert_int_equal(rl_uri_parse("unix:///tmp/r@1.sock?db=2", &u), RL_OK);
    assert_null(rl_uri_host(u));
    assert_int_equal(rl_uri_port(u), 0);
    assert_string_equal(rl_uri_path(u), "/tmp/r@1.sock");
    assert_int_equal(rl_uri_db(u), 2);
    assert_null(rl_uri_password(u));
    assert_string_equal(rl_uri_name(u), "unix:/tmp/r@1.sock/2");
    rl_uri_free(u);
}

static void test_rl_uri_parse_rejects_with_a_redacted_message(void **state)
{
    rl_uri *u = (rl_uri *)&u;

    (void)state;
    assert_int_equal(rl_uri_parse("redis://:s3cr3t@h:0", &u), RL_EINVAL);
    assert_null(u);
    assert_non_null(strstr(rl_last_error(), "'redis://:***@h:0'"));
    assert_non_null(strstr(rl_last_error(), "out of range"));
    assert_int_equal(rl_uri_parse("redis://:s3%zzcr3t@h", &u), RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "%25"));
    assert_no_secret(rl_last_error());
    assert_int_equal(rl_uri_parse(NULL, &u), RL_EINVAL);
    assert_int_equal(rl_uri_parse("h:1", NULL), RL_EINVAL);
    /* Getters and free take NULL. */
    assert_null(rl_uri_name(NULL));
    assert_null(rl_uri_host(NULL));
    assert_int_equal(rl_uri_port(NULL), 0);
    assert_null(rl_uri_path(NULL));
    assert_int_equal(rl_uri_db(NULL), 0);
    assert_false(rl_uri_tls(NULL));
    assert_null(rl_uri_user(NULL));
    assert_null(rl_uri_password(NULL));
    rl_uri_free(NULL);
}

/* ---- Allocation failure ----
 * A second copy of uri.c is compiled into this file with malloc, free and
 * rl_strdup pointed at a counting allocator that fails the Nth call, and
 * with its functions renamed (oom_*) so they do not clash with the library
 * copy. The system headers uri.c uses are all included above, before the
 * macros, so only uri.c's own calls are redirected. */

static int oom_fail_at; /* 1-based allocation that fails; 0 = none */
static int oom_calls;   /* allocations attempted */
static int oom_live;    /* allocations not yet freed */

/* Counts an allocation about to be made: false for the one to fail. */
static bool oom_may_allocate(void)
{
    oom_calls++;
    return oom_fail_at == 0 || oom_calls != oom_fail_at;
}

/* Counts p, when it was allocated, as live. */
static void *oom_live_one(void *p)
{
    if (p != NULL)
        oom_live++;
    return p;
}

static void *oom_malloc(size_t n)
{
    return oom_may_allocate() ? oom_live_one(malloc(n)) : NULL;
}

static void oom_free(void *p)
{
    if (p != NULL)
        oom_live--;
    free(p);
}

/* The library's rl_strdup (which allocates with malloc), counted. */
static char *oom_strdup(const char *s)
{
    if (s == NULL)
        return NULL;
    return oom_may_allocate() ? oom_live_one(rl_strdup(s)) : NULL;
}

#define malloc oom_malloc
#define free oom_free
#define rl_strdup oom_strdup
#define uri_parse oom_uri_parse
#define resolve_addr oom_resolve_addr
#define node_addr_same oom_node_addr_same
#define node_addr_clear oom_node_addr_clear
#define resolve_host oom_resolve_host
#define uri_host_is_name oom_uri_host_is_name
#define uri_error oom_uri_error
#define resolve_start oom_resolve_start
#define resolve_poll oom_resolve_poll
#define resolve_drop oom_resolve_drop
rl_status resolve_host(const char *host, const char *display, char **ip,
                     char *err, size_t errlen);
bool uri_host_is_name(const struct node_addr *a);
rl_status uri_parse(const char *uri, struct node_addr *out, char *err,
                    size_t errlen);
rl_status resolve_addr(struct node_addr *a, char *err, size_t errlen);
rl_status uri_error(char *err, size_t errlen, rl_status st,
                    const char *fmt, ...) RL_PRINTF(4, 5);
struct resolve_job *resolve_start(const char *host, const char *display);
bool resolve_poll(struct resolve_job *j, char **ip, rl_status *st,
                  char *err, size_t errlen);
void resolve_drop(struct resolve_job *j);
bool node_addr_same(const struct node_addr *a, const struct node_addr *b);
void node_addr_clear(struct node_addr *a);
#define rl_uri_describe oom_rl_uri_describe
#define rl_uri_parse oom_rl_uri_parse
#define rl_uri_free oom_rl_uri_free
#define rl_uri_name oom_rl_uri_name
#define rl_uri_host oom_rl_uri_host
#define rl_uri_port oom_rl_uri_port
#define rl_uri_path oom_rl_uri_path
#define rl_uri_db oom_rl_uri_db
#define rl_uri_tls oom_rl_uri_tls
#define rl_uri_user oom_rl_uri_user
#define rl_uri_password oom_rl_uri_password
size_t rl_uri_describe(const char *uri, char *buf, size_t len);
rl_status rl_uri_parse(const char *uri, rl_uri **out);
void rl_uri_free(rl_uri *u);
const char *rl_uri_name(const rl_uri *u);
const char *rl_uri_host(const rl_uri *u);
int rl_uri_port(const rl_uri *u);
const char *rl_uri_path(const rl_uri *u);
int rl_uri_db(const rl_uri *u);
bool rl_uri_tls(const rl_uri *u);
const char *rl_uri_user(const rl_uri *u);
const char *rl_uri_password(const rl_uri *u);
#include "uri.c"
#include "resolver.c"
#undef malloc
#undef free
#undef rl_strdup
#undef uri_parse
#undef resolve_addr
#undef node_addr_same
#undef node_addr_clear
#undef resolve_host
#undef uri_host_is_name
#undef uri_error
#undef resolve_start
#undef resolve_poll
#undef resolve_drop

static void oom_reset(int fail_at)
{
    oom_fail_at = fail_at;
    oom_calls = 0;
}

/* Fail each allocation of a parse in turn: every failure must return
 * RL_ENOMEM, leave the struct empty and free whatever was built. */
static void check_parse_oom(const char *uri, int min_allocs)
{
    struct node_addr a;
    char err[RL_ERRLEN];
    rl_status st;
    int fail;

    for (fail = 1;; fail++) {
        oom_reset(fail);
        st = oom_uri_parse(uri, &a, err, sizeof(err));
        if (st == RL_OK)
            break;
        assert_int_equal(st, RL_ENOMEM);
        assert_addr_empty(&a);
        assert_int_equal(oom_live, 0);
        assert_non_null(strstr(err, "out of memory"));
        assert_no_secret(err);
    }
    /* The loop ended because allocation fail > number made succeeded. */
    assert_true(fail - 1 >= min_allocs);
    assert_int_equal(oom_calls, fail - 1);
    oom_node_addr_clear(&a);
    assert_int_equal(oom_live, 0);
    oom_reset(0);
}

static void test_out_of_memory_while_parsing_leaks_nothing(void **state)
{
    (void)state;
    /* host/path, user, password, display */
    check_parse_oom("redis://u%40x:s3%63r3t@[::1]:7000/2", 4);
    check_parse_oom("redis://:s3cr3t@h", 3);
    check_parse_oom("unix:///tmp/r.sock?db=1", 2);
    check_parse_oom("h:1", 2);
}

static void test_out_of_memory_while_resolving_keeps_the_address(
    void **state)
{
    struct node_addr a;
    char err[RL_ERRLEN];

    (void)state;
    oom_reset(0);
    assert_int_equal(oom_uri_parse("127.0.0.1:7000", &a, err, sizeof(err)),
                     RL_OK);
    oom_reset(1);
    assert_int_equal(oom_resolve_addr(&a, err, sizeof(err)), RL_ENOMEM);
    assert_null(a.ip);
    assert_string_equal(a.host, "127.0.0.1");
    assert_non_null(strstr(err, "out of memory"));
    oom_reset(0);
    assert_int_equal(oom_resolve_addr(&a, err, sizeof(err)), RL_OK);
    assert_string_equal(a.ip, "127.0.0.1");
    oom_node_addr_clear(&a);
    assert_int_equal(oom_live, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_redis_uri_with_host_only_gets_default_port_and_db),
        cmocka_unit_test(test_redis_uri_with_port_and_db_is_parsed),
        cmocka_unit_test(test_redis_uri_with_password_only_has_no_user),
        cmocka_unit_test(test_redis_uri_with_acl_user_and_db_is_parsed),
        cmocka_unit_test(test_user_and_password_are_percent_decoded),
        cmocka_unit_test(
            test_raw_at_and_slash_in_a_password_belong_to_the_password),
        cmocka_unit_test(test_redis_uri_with_ipv6_host_port_and_db_is_parsed),
        cmocka_unit_test(test_host_port_form_is_parsed),
        cmocka_unit_test(test_bracketed_ipv6_host_port_form_is_parsed),
        cmocka_unit_test(test_unix_uri_with_and_without_db_is_parsed),
        cmocka_unit_test(
            test_scheme_is_case_insensitive_and_host_is_kept_as_written),
        cmocka_unit_test(test_trailing_slash_means_db_zero),
        cmocka_unit_test(test_largest_port_and_db_are_accepted),
        cmocka_unit_test(test_null_and_empty_uri_are_rejected),
        cmocka_unit_test(
            test_rediss_uri_means_tls_with_the_redis_forms),
        cmocka_unit_test(test_unknown_scheme_is_rejected),
        cmocka_unit_test(test_missing_host_is_rejected),
        cmocka_unit_test(test_port_zero_or_above_65535_is_rejected),
        cmocka_unit_test(test_non_numeric_or_missing_port_is_rejected),
        cmocka_unit_test(
            test_negative_non_numeric_or_too_large_db_is_rejected),
        cmocka_unit_test(test_trailing_garbage_is_rejected),
        cmocka_unit_test(
            test_unix_path_that_is_empty_relative_or_too_long_is_rejected),
        cmocka_unit_test(
            test_bad_percent_escape_is_rejected_without_showing_it),
        cmocka_unit_test(test_bare_host_without_port_is_rejected),
        cmocka_unit_test(test_unterminated_bracket_is_rejected),
        cmocka_unit_test(test_unbracketed_or_invalid_ipv6_is_rejected),
        cmocka_unit_test(test_invalid_host_character_is_rejected_on_one_line),
        cmocka_unit_test(
            test_user_info_without_colon_or_password_is_rejected),
        cmocka_unit_test(
            test_credentials_in_host_port_form_are_rejected_and_masked),
        cmocka_unit_test(test_error_messages_never_echo_the_password),
        cmocka_unit_test(test_long_uri_is_cut_in_the_message),
        cmocka_unit_test(test_null_out_or_missing_error_buffer_is_handled),
        cmocka_unit_test(test_display_strings_follow_the_documented_forms),
        cmocka_unit_test(test_display_never_contains_the_user_or_password),
        cmocka_unit_test(test_localhost_resolves_to_the_ipv4_loopback),
        cmocka_unit_test(test_numeric_hosts_resolve_to_themselves),
        cmocka_unit_test(test_resolving_again_replaces_the_ip),
        cmocka_unit_test(
            test_unresolvable_host_is_rejected_naming_host_and_node),
        cmocka_unit_test(test_resolving_a_unix_address_does_nothing),
        cmocka_unit_test(test_resolving_null_or_an_empty_address_is_rejected),
        cmocka_unit_test(test_same_host_port_and_db_are_the_same_node),
        cmocka_unit_test(test_different_host_port_or_db_are_different_nodes),
        cmocka_unit_test(
            test_resolved_ips_are_compared_instead_of_host_names),
        cmocka_unit_test(test_unix_addresses_compare_path_and_db),
        cmocka_unit_test(test_tcp_and_unix_addresses_are_never_the_same),
        cmocka_unit_test(test_comparing_with_null_is_false),
        cmocka_unit_test(test_node_addr_clear_null_is_a_no_op),
        cmocka_unit_test(test_node_addr_clear_frees_and_zeroes_everything),
        cmocka_unit_test(test_out_of_memory_while_parsing_leaks_nothing),
        cmocka_unit_test(
            test_out_of_memory_while_resolving_keeps_the_address),
        cmocka_unit_test(test_describe_masks_the_password_whatever_it_holds),
        cmocka_unit_test(
            test_describe_masks_what_may_be_a_password_in_a_bad_uri),
        cmocka_unit_test(
            test_describe_leaves_a_valid_uri_without_password_whole),
        cmocka_unit_test(test_describe_cuts_to_the_buffer_and_handles_null),
        cmocka_unit_test(test_no_description_or_error_shows_a_password),
        cmocka_unit_test(test_rl_uri_parse_gives_the_address_and_credentials),
        cmocka_unit_test(test_rl_uri_parse_rejects_with_a_redacted_message),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
