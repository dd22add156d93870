/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for rl_stats_format_prometheus (metrics.c, issue 14 §4). No
 * Redis: the stats are made by hand. Every rendering is read back by a
 * small strict parser of the text exposition format (0.0.4) below, which
 * rejects what Prometheus would reject -- or what we never mean to write:
 * a sample before its family's HELP and TYPE, a family split in two, a
 * counter not named *_total, bad names or escapes, duplicate series,
 * stray blank lines or comments, timestamps -- and then the values are
 * looked up by metric name and labels. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "redlock.h"

/* ---- A strict parser ---------------------------------------------------- */

#define MAX_SAMPLES 2048
#define MAX_FAMILIES 64
#define NAME_MAX_LEN 128
#define LABELS_MAX_LEN 1024

struct sample {
    char name[NAME_MAX_LEN];
    char labels[LABELS_MAX_LEN]; /* "k=v;" per label, unescaped, in order */
    double value;
};

struct parsed {
    struct sample samples[MAX_SAMPLES];
    size_t n;
    char families[MAX_FAMILIES][NAME_MAX_LEN];
    char types[MAX_FAMILIES][16];
    size_t nfam;
    char error[256];
};

static bool name_char(char c, bool first, bool colon)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')
        return true;
    if (colon && c == ':')
        return true;
    return !first && c >= '0' && c <= '9';
}

/* Read a metric (colon true) or label name at *p into out. */
static bool read_name(const char **p, char *out, bool colon)
{
    size_t i = 0;

    if (!name_char(**p, true, colon))
        return false;
    while (name_char(**p, i == 0, colon) && i + 1 < NAME_MAX_LEN)
        out[i++] = *(*p)++;
    out[i] = '\0';
    return !name_char(**p, false, colon);
}

static bool reject(struct parsed *ps, size_t line, const char *what)
{
    snprintf(ps->error, sizeof(ps->error), "line %zu: %s", line, what);
    return false;
}

/* {k="v",...}: appends "k=v;" per label to out. */
static bool read_labels(const char **p, char *out, size_t len)
{
    char seen[16][NAME_MAX_LEN];
    size_t nseen = 0;
    size_t o = strlen(out);
    char name[NAME_MAX_LEN];
    size_t i;

    (*p)++; /* '{' */
    for (;;) {
        if (!read_name(p, name, false) || strncmp(name, "__", 2) == 0)
            return false;
        for (i = 0; i < nseen; i++) {
            if (strcmp(seen[i], name) == 0)
                return false; /* label given twice */
        }
        if (nseen == 16)
            return false;
        strcpy(seen[nseen++], name);
        if (*(*p)++ != '=' || *(*p)++ != '"')
            return false;
        o += (size_t)snprintf(out + o, len - o, "%s=", name);
        while (**p != '"') {
            char c = *(*p)++;

            if (c == '\0' || c == '\n')
                return false;
            if (c == '\\') {
                c = *(*p)++;
                if (c == 'n')
                    c = '\n';
                else if (c != '\\' && c != '"')
                    return false;
            }
            if (o + 2 >= len)
                return false;
            out[o++] = c;
        }
        (*p)++;
        if (o + 2 >= len)
            return false;
        out[o++] = ';';
        out[o] = '\0';
        if (**p == '}') {
            (*p)++;
            return true;
        }
        if (*(*p)++ != ',')
            return false;
    }
}

static bool parse_line(struct parsed *ps, size_t ln, const char *line)
{
    const char *cur = ps->nfam > 0 ? ps->families[ps->nfam - 1] : "";
    const char *type = ps->nfam > 0 ? ps->types[ps->nfam - 1] : "";
    const char *p = line;
    struct sample *s;
    char name[NAME_MAX_LEN];
    char *end;
    size_t i;

    if (strncmp(line, "# HELP ", 7) == 0) {
        p += 7;
        if (!read_name(&p, name, true) || *p != ' ' || p[1] == '\0')
            return reject(ps, ln, "bad HELP line");
        for (i = 0; i < ps->nfam; i++) {
            if (strcmp(ps->families[i], name) == 0)
                return reject(ps, ln, "family described twice (split)");
        }
        if (ps->nfam == MAX_FAMILIES)
            return reject(ps, ln, "too many families");
        strcpy(ps->families[ps->nfam], name);
        ps->types[ps->nfam][0] = '\0';
        ps->nfam++;
        return true;
    }
    if (strncmp(line, "# TYPE ", 7) == 0) {
        p += 7;
        if (!read_name(&p, name, true) || *p++ != ' ' ||
            strcmp(name, cur) != 0 || type[0] != '\0')
            return reject(ps, ln, "TYPE not right after its HELP");
        if (strcmp(p, "counter") != 0 && strcmp(p, "gauge") != 0)
            return reject(ps, ln, "type is not counter or gauge");
        strcpy(ps->types[ps->nfam - 1], p);
        if (strcmp(p, "counter") == 0 &&
            (strlen(name) < 6 || strcmp(name + strlen(name) - 6, "_total")))
            return reject(ps, ln, "counter not named *_total");
        return true;
    }
    if (line[0] == '#' || line[0] == '\0')
        return reject(ps, ln, "comment or blank line");
    if (!read_name(&p, name, true))
        return reject(ps, ln, "bad metric name");
    if (strcmp(name, cur) != 0 || type[0] == '\0')
        return reject(ps, ln, "sample outside its family (HELP+TYPE first)");
    if (ps->n == MAX_SAMPLES)
        return reject(ps, ln, "too many samples");
    s = &ps->samples[ps->n];
    strcpy(s->name, name);
    s->labels[0] = '\0';
    if (*p == '{' && !read_labels(&p, s->labels, sizeof(s->labels)))
        return reject(ps, ln, "bad labels");
    if (*p++ != ' ' || *p == '\0' || *p == ' ')
        return reject(ps, ln, "no value");
    s->value = strtod(p, &end);
    if (*end != '\0')
        return reject(ps, ln, "value is not a number (or has a timestamp)");
    if (strcmp(type, "counter") == 0 && s->value < 0)
        return reject(ps, ln, "negative counter");
    for (i = 0; i < ps->n; i++) {
        if (strcmp(ps->samples[i].name, s->name) == 0 &&
            strcmp(ps->samples[i].labels, s->labels) == 0)
            return reject(ps, ln, "duplicate series");
    }
    ps->n++;
    return true;
}

static bool parse(struct parsed *ps, const char *text)
{
    size_t len = strlen(text);
    size_t ln = 0;
    const char *p = text;

    memset(ps, 0, sizeof(*ps));
    if (len == 0 || text[len - 1] != '\n')
        return reject(ps, 0, "text does not end with a newline");
    while (*p != '\0') {
        const char *nl = strchr(p, '\n');
        char line[2048];

        ln++;
        if ((size_t)(nl - p) >= sizeof(line))
            return reject(ps, ln, "line too long");
        memcpy(line, p, (size_t)(nl - p));
        line[nl - p] = '\0';
        if (strchr(line, '\r') != NULL)
            return reject(ps, ln, "carriage return");
        if (!parse_line(ps, ln, line))
            return false;
        p = nl + 1;
    }
    return true;
}

/* The sample name{labels} is there with the value want (exactly: the
 * values are written as exact decimals). */
static void expect_sample(const struct parsed *ps, const char *name,
                          const char *labels, double want)
{
    size_t i;

    for (i = 0; i < ps->n; i++) {
        if (strcmp(ps->samples[i].name, name) == 0 &&
            strcmp(ps->samples[i].labels, labels) == 0) {
            if (ps->samples[i].value != want)
                fail_msg("%s{%s} is %.17g, expected %.17g", name, labels,
                         ps->samples[i].value, want);
            return;
        }
    }
    fail_msg("no sample %s{%s}", name, labels);
}

static size_t samples_named(const struct parsed *ps, const char *name)
{
    size_t i, n = 0;

    for (i = 0; i < ps->n; i++)
        n += strcmp(ps->samples[i].name, name) == 0;
    return n;
}

/* ---- Fixtures ----------------------------------------------------------- */

/* The client-wide counters: the field of rl_stats, its metric family and
 * the value fill_stats gives it. */
#define CLIENT_COUNTERS(X)                                                   \
    X(acquired, "redlock_acquired_total", 42)                                \
    X(contended, "redlock_contended_total", 7)                               \
    X(lost, "redlock_lost_total", 1)                                         \
    X(renewals, "redlock_renewals_total", 99)                                \
    X(fences, "redlock_fences_total", 3)                                     \
    X(overload_refused, "redlock_overload_refused_total", 12)                \
    X(renewals_waiting, "redlock_renewals_waiting", 340)                     \
    X(renewals_early, "redlock_renewals_early_total", 25)                   \
    X(queue_waiters, "redlock_queue_waiters", 2)                             \
    X(queue_wait_count, "redlock_queue_waits_total", 9)                      \
    X(queue_leaves, "redlock_queue_leaves_total", 4)
/* The client-wide families that are not one field as it is: the family
 * and the value it has with fill_stats. */
#define QUEUE_WAIT_MS 12345
#define CLIENT_DERIVED(X)                                                    \
    X("redlock_queue_wait_seconds_total", 12.345) /* QUEUE_WAIT_MS */        \
    X("redlock_queue_registrations_total", 15)    /* waiters+waits+leaves */
#define ONE_(field, family, value) +1
#define ONE_DERIVED_(family, value) +1
#define CLIENT_COUNTER_COUNT                                                 \
    (0 CLIENT_COUNTERS(ONE_) CLIENT_DERIVED(ONE_DERIVED_))

static void fill_stats(rl_stats *s, size_t nodes)
{
    size_t i;

    memset(s, 0, sizeof(*s));
#define SET_COUNTER_(field, family, value) s->field = value;
    CLIENT_COUNTERS(SET_COUNTER_)
#undef SET_COUNTER_
    s->queue_wait_ms_total = QUEUE_WAIT_MS;
    s->node_count = nodes;
    for (i = 0; i < nodes; i++) {
        rl_node_stats *n = &s->nodes[i];

        *n = (rl_node_stats){
            .connected = i != 1,
            .voting = i == 0,
            .requests = 1000 + i,
            .errors = 10 + i,
            .timeouts = 20 + i,
            .down = 30 + i,
            .handshakes = 4 + i,
            .tls_resumed = 3 + i,
            .votes_for = 500 + i,
            .votes_against = 40 + i,
            .latency_p50_us = 150,
            .latency_p90_us = 1500,
            .latency_p99_us = 3000001,
            .latency_max_us = 4294967295u,
            .clock_rate = i == 2 ? 5.0 : 1.0,
            .clock_incidents = i == 2 ? 3 : 0,
            .checks_own = 60 + i,
            .checks_heard = 70 + i,
            .checks_shared = 80 + i,
            .clock_state = i == 2 ? RL_CLOCK_SUSPECT : RL_CLOCK_OK,
            .twin_of = i == 1 ? 0 : -1,
            .may_evict = i == 0   ? RL_FACT_NO
                         : i == 1 ? RL_FACT_YES
                                  : RL_FACT_UNKNOWN,
            .fsync_always = i == 0 ? RL_FACT_YES : RL_FACT_NO,
            .vote_bar = i == 0   ? RL_VOTES
                        : i == 1 ? RL_BAR_TWIN
                                 : RL_BAR_CLOCK,
        };
        snprintf(n->name, sizeof(n->name), "127.0.0.1:%zu", 7001 + i);
    }
}

/* Render into a fresh buffer of exactly the size asked for. */
static char *render(const rl_stats *s, const char *const *labels,
                    size_t count)
{
    size_t needed = 0;
    size_t again = 0;
    char *buf;

    assert_int_equal(rl_stats_format_prometheus(s, labels, count, NULL, 0,
                                                &needed),
                     RL_OK);
    assert_true(needed > 1);
    buf = malloc(needed);
    assert_non_null(buf);
    assert_int_equal(rl_stats_format_prometheus(s, labels, count, buf,
                                                needed, &again),
                     RL_OK);
    assert_int_equal(again, needed);
    assert_int_equal(strlen(buf) + 1, needed);
    return buf;
}

static struct parsed *parse_or_fail(const char *text)
{
    struct parsed *ps = malloc(sizeof(*ps));

    assert_non_null(ps);
    if (!parse(ps, text)) {
        fprintf(stderr, "%s\n--- not valid exposition format: %s\n", text,
                ps->error);
        free(ps);
        fail();
    }
    return ps;
}

/* Stats rendered (with extra labels) and read back by the strict parser. */
struct rendering {
    rl_stats s;
    char *text;
    struct parsed *ps;
};

static void render_and_parse(struct rendering *r, const char *const *labels,
                             size_t count)
{
    r->text = render(&r->s, labels, count);
    r->ps = parse_or_fail(r->text);
}

static void rendering_free(struct rendering *r)
{
    free(r->ps);
    free(r->text);
}

/* ---- Tests -------------------------------------------------------------- */

static void test_every_family_is_rendered_and_parses(void **state)
{
#define FAMILY_(field, family, value) family,
#define DERIVED_FAMILY_(family, value) family,
    static const char *const client_families[] = {
        CLIENT_COUNTERS(FAMILY_) CLIENT_DERIVED(DERIVED_FAMILY_)};
#undef DERIVED_FAMILY_
#undef FAMILY_
    static const char *const per_node[] = {
        "redlock_node_requests_total", "redlock_node_errors_total",
        "redlock_node_timeouts_total", "redlock_node_down_total",
        "redlock_node_handshakes_total", "redlock_node_tls_resumed_total",
        "redlock_node_latency_max_seconds", "redlock_node_connected",
        "redlock_node_voting", "redlock_node_clock_incidents_total",
        "redlock_node_checks_own_total", "redlock_node_checks_heard_total",
        "redlock_node_checks_shared_total",
        "redlock_node_clock_rate", "redlock_node_clock_suspect",
        "redlock_node_may_evict", "redlock_node_fsync_always",
        "redlock_node_independent", "redlock_node_vote_bar"};
    struct rendering r;
    size_t i;

    (void)state;
    fill_stats(&r.s, 5);
    render_and_parse(&r, NULL, 0);
    /* and the node families with labels: votes, latency quantiles */
    assert_int_equal(r.ps->nfam, CLIENT_COUNTER_COUNT +
                                     sizeof(per_node) / sizeof(per_node[0]) +
                                     2);
    for (i = 0; i < sizeof(client_families) / sizeof(client_families[0]); i++)
        assert_int_equal(samples_named(r.ps, client_families[i]), 1);
    for (i = 0; i < sizeof(per_node) / sizeof(per_node[0]); i++)
        assert_int_equal(samples_named(r.ps, per_node[i]), 5);
    assert_int_equal(samples_named(r.ps, "redlock_node_votes_total"), 10);
    assert_int_equal(samples_named(r.ps, "redlock_node_latency_seconds"), 15);
    rendering_free(&r);
}

/* Each sample of fill_stats(3 nodes) with its value; node is the port of
 * the node label (0: a client-wide sample), then the other labels. */
static void test_values_match_the_stats(void **state)
{
    static const struct {
        const char *name;
        int node;
        const char *labels;
        double value;
    } samples[] = {
#define CLIENT_SAMPLE_(field, family, value) {family, 0, "", value},
#define DERIVED_SAMPLE_(family, value) {family, 0, "", value},
        CLIENT_COUNTERS(CLIENT_SAMPLE_)
        CLIENT_DERIVED(DERIVED_SAMPLE_)
#undef DERIVED_SAMPLE_
#undef CLIENT_SAMPLE_
        {"redlock_node_requests_total", 7003, "", 1002},
        {"redlock_node_errors_total", 7002, "", 11},
        {"redlock_node_timeouts_total", 7001, "", 20},
        {"redlock_node_down_total", 7003, "", 32},
        {"redlock_node_handshakes_total", 7002, "", 5},
        {"redlock_node_tls_resumed_total", 7003, "", 5},
        {"redlock_node_votes_total", 7002, "vote=for;", 501},
        {"redlock_node_votes_total", 7002, "vote=against;", 41},
        {"redlock_node_latency_seconds", 7001, "quantile=0.5;", 0.000150},
        {"redlock_node_latency_seconds", 7001, "quantile=0.9;", 0.0015},
        {"redlock_node_latency_seconds", 7001, "quantile=0.99;", 3.000001},
        {"redlock_node_latency_max_seconds", 7001, "", 4294.967295},
        {"redlock_node_connected", 7001, "", 1},
        {"redlock_node_connected", 7002, "", 0},
        {"redlock_node_voting", 7001, "", 1},
        {"redlock_node_voting", 7003, "", 0},
        {"redlock_node_clock_rate", 7003, "", 5.0},
        {"redlock_node_clock_suspect", 7003, "", 1},
        {"redlock_node_clock_suspect", 7001, "", 0},
        {"redlock_node_clock_incidents_total", 7003, "", 3},
        {"redlock_node_checks_own_total", 7001, "", 60},
        {"redlock_node_checks_heard_total", 7002, "", 71},
        {"redlock_node_checks_shared_total", 7003, "", 82},
        /* The node's own facts: unknown is -1, never 0 (fine). */
        {"redlock_node_may_evict", 7001, "", 0},
        {"redlock_node_may_evict", 7002, "", 1},
        {"redlock_node_may_evict", 7003, "", -1},
        {"redlock_node_fsync_always", 7001, "", 1},
        {"redlock_node_fsync_always", 7002, "", 0},
        {"redlock_node_independent", 7001, "", 1},
        {"redlock_node_independent", 7002, "", 0},
        {"redlock_node_vote_bar", 7001, "", RL_VOTES},
        {"redlock_node_vote_bar", 7002, "", RL_BAR_TWIN},
        {"redlock_node_vote_bar", 7003, "", RL_BAR_CLOCK},
    };
    struct rendering r;
    char labels[LABELS_MAX_LEN];
    size_t i;

    (void)state;
    fill_stats(&r.s, 3);
    render_and_parse(&r, NULL, 0);
    for (i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
        if (samples[i].node == 0)
            snprintf(labels, sizeof(labels), "%s", samples[i].labels);
        else
            snprintf(labels, sizeof(labels), "node=127.0.0.1:%d;%s",
                     samples[i].node, samples[i].labels);
        expect_sample(r.ps, samples[i].name, labels, samples[i].value);
    }
    /* Exact decimal seconds, not a rounded double. */
    assert_non_null(strstr(r.text, "quantile=\"0.99\"} 3.000001\n"));
    assert_non_null(strstr(r.text, "redlock_queue_wait_seconds_total "
                                   "12.345\n"));
    rendering_free(&r);
}

/* Below a second, and the largest count of ms: exact digits. */
static void test_queue_wait_is_written_in_exact_seconds(void **state)
{
    struct rendering r;

    (void)state;
    fill_stats(&r.s, 0);
    r.s.queue_wait_ms_total = 7;
    render_and_parse(&r, NULL, 0);
    assert_non_null(strstr(r.text, "redlock_queue_wait_seconds_total "
                                   "0.007\n"));
    rendering_free(&r);
    r.s.queue_wait_ms_total = UINT64_MAX;
    render_and_parse(&r, NULL, 0);
    assert_non_null(strstr(r.text, "redlock_queue_wait_seconds_total "
                                   "18446744073709551.615\n"));
    rendering_free(&r);
}

static void test_label_values_are_escaped(void **state)
{
    const char *labels[] = {"job", "a \"quoted\" back\\slash\nnewline"};
    struct rendering r;

    (void)state;
    fill_stats(&r.s, 1);
    snprintf(r.s.nodes[0].name, sizeof(r.s.nodes[0].name),
             "unix:/tmp/x\"y\\z");
    render_and_parse(&r, labels, 1);
    expect_sample(r.ps, "redlock_node_requests_total",
                  "job=a \"quoted\" back\\slash\nnewline;"
                  "node=unix:/tmp/x\"y\\z;",
                  1000);
    assert_non_null(strstr(r.text, "job=\"a \\\"quoted\\\" back\\\\slash"
                                   "\\nnewline\""));
    rendering_free(&r);
}

static void test_extra_labels_are_on_every_sample(void **state)
{
    const char *labels[] = {"resource", "deploy", "job", "cron"};
    struct rendering r;
    size_t i;

    (void)state;
    fill_stats(&r.s, 2);
    render_and_parse(&r, labels, 2);
    for (i = 0; i < r.ps->n; i++)
        assert_memory_equal(r.ps->samples[i].labels,
                            "resource=deploy;job=cron;",
                            strlen("resource=deploy;job=cron;"));
    expect_sample(r.ps, "redlock_lost_total", "resource=deploy;job=cron;", 1);
    expect_sample(r.ps, "redlock_node_latency_seconds",
                  "resource=deploy;job=cron;node=127.0.0.1:7002;"
                  "quantile=0.9;",
                  0.0015);
    rendering_free(&r);
}

static void test_zero_nodes_renders_the_client_counters(void **state)
{
    struct rendering r;

    (void)state;
    fill_stats(&r.s, 0);
    render_and_parse(&r, NULL, 0);
    assert_int_equal(r.ps->n, CLIENT_COUNTER_COUNT);
    expect_sample(r.ps, "redlock_renewals_total", "", 99);
    rendering_free(&r);
}

static void test_size_query_and_a_too_small_buffer(void **state)
{
    rl_stats s;
    size_t needed = 0;
    size_t got = 0;
    char *buf;

    (void)state;
    fill_stats(&s, 4);
    assert_int_equal(rl_stats_format_prometheus(&s, NULL, 0, NULL, 0,
                                                &needed),
                     RL_OK);
    buf = malloc(needed);
    assert_non_null(buf);
    memset(buf, 'x', needed);
    assert_int_equal(rl_stats_format_prometheus(&s, NULL, 0, buf,
                                                needed - 1, &got),
                     RL_EINVAL);
    assert_int_equal(got, needed);
    assert_int_equal(buf[0], '\0');
    assert_non_null(strstr(rl_last_error(), "too small"));
    assert_int_equal(rl_stats_format_prometheus(&s, NULL, 0, buf, 1, &got),
                     RL_EINVAL);
    assert_int_equal(buf[0], '\0');
    assert_int_equal(rl_stats_format_prometheus(&s, NULL, 0, buf, needed,
                                                &got),
                     RL_OK);
    assert_int_equal(strlen(buf) + 1, needed);
    free(buf);
}

static void test_bad_arguments_are_rejected(void **state)
{
    const char *labels[] = {"job", "x"};
    rl_stats s;
    size_t needed = 7;
    char buf[64];

    (void)state;
    fill_stats(&s, 1);
    assert_int_equal(rl_stats_format_prometheus(NULL, NULL, 0, buf,
                                                sizeof(buf), &needed),
                     RL_EINVAL);
    assert_int_equal(rl_stats_format_prometheus(&s, NULL, 0, buf,
                                                sizeof(buf), NULL),
                     RL_EINVAL);
    assert_int_equal(rl_stats_format_prometheus(&s, NULL, 0, NULL, 10,
                                                &needed),
                     RL_EINVAL);
    assert_int_equal(needed, 0);
    assert_int_equal(rl_stats_format_prometheus(&s, NULL, 1, buf,
                                                sizeof(buf), &needed),
                     RL_EINVAL);
    s.node_count = RL_STATS_MAX_NODES + 1;
    assert_int_equal(rl_stats_format_prometheus(&s, labels, 1, buf,
                                                sizeof(buf), &needed),
                     RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "node_count"));
}

static void test_bad_labels_are_rejected(void **state)
{
    static const char *const bad_names[] = {"", "1a", "__x", "node", "vote",
                                            "quantile", "a-b", "a b", NULL};
    static const char *const bad_values[] = {
        "\xff", "\xc0\x80", "\xe0\x80\x80", "\xed\xa0\x80", "a\xc3",
        "\xf4\x90\x80\x80", NULL};
    const char *labels[4];
    rl_stats s;
    size_t needed;
    char buf[64];
    size_t i;

    (void)state;
    fill_stats(&s, 1);
    for (i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
        labels[0] = bad_names[i];
        labels[1] = "v";
        assert_int_equal(rl_stats_format_prometheus(&s, labels, 1, buf,
                                                    sizeof(buf), &needed),
                         RL_EINVAL);
        assert_non_null(strstr(rl_last_error(), "label"));
    }
    for (i = 0; i < sizeof(bad_values) / sizeof(bad_values[0]); i++) {
        labels[0] = "job";
        labels[1] = bad_values[i];
        assert_int_equal(rl_stats_format_prometheus(&s, labels, 1, buf,
                                                    sizeof(buf), &needed),
                         RL_EINVAL);
    }
    labels[0] = "job";
    labels[1] = "a";
    labels[2] = "job";
    labels[3] = "b";
    assert_int_equal(rl_stats_format_prometheus(&s, labels, 2, buf,
                                                sizeof(buf), &needed),
                     RL_EINVAL);
    assert_non_null(strstr(rl_last_error(), "twice"));
    /* Valid UTF-8 beyond ASCII is fine. */
    labels[1] = "d\xc3\xa9ploiement \xe2\x82\xac \xf0\x9f\x94\x92";
    assert_int_equal(rl_stats_format_prometheus(&s, labels, 1, NULL, 0,
                                                &needed),
                     RL_OK);
}

/* The parser itself must be able to say no. */
static void test_the_parser_rejects_malformed_text(void **state)
{
    static const char *const bad[] = {
        "x_total 1\n",
        "# HELP x_total h\n# TYPE x_total counter\nx_total 1",
        "# HELP x h\n# TYPE x counter\nx 1\n",
        "# HELP x h\n# TYPE x gauge\ny 1\n",
        "# HELP x h\n# TYPE x gauge\nx{a=\"1\",a=\"2\"} 1\n",
        "# HELP x h\n# TYPE x gauge\nx{a=\"\\t\"} 1\n",
        "# HELP x h\n# TYPE x gauge\nx{a=\"1\"} 1 1700000000\n",
        "# HELP x h\n# TYPE x gauge\nx 1\nx 2\n",
        "# HELP x h\n# TYPE x gauge\nx 1\n\n",
        "# HELP x h\n# TYPE x gauge\nx 1\n# HELP y h\n# TYPE y gauge\n"
        "y 1\n# HELP x h\n# TYPE x gauge\n",
        "# HELP x h\n# TYPE x gauge\nx{a=\"1\",} 1\n",
        "# HELP x h\n# TYPE x gauge\nx abc\n",
    };
    struct parsed *ps = malloc(sizeof(*ps));
    size_t i;

    (void)state;
    assert_non_null(ps);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (parse(ps, bad[i])) {
            free(ps);
            fail_msg("accepted malformed text %zu: %s", i, bad[i]);
        }
    }
    assert_true(parse(ps, "# HELP x h\n# TYPE x gauge\nx{a=\"1\"} 1.5\n"));
    free(ps);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_family_is_rendered_and_parses),
        cmocka_unit_test(test_values_match_the_stats),
        cmocka_unit_test(test_queue_wait_is_written_in_exact_seconds),
        cmocka_unit_test(test_label_values_are_escaped),
        cmocka_unit_test(test_extra_labels_are_on_every_sample),
        cmocka_unit_test(test_zero_nodes_renders_the_client_counters),
        cmocka_unit_test(test_size_query_and_a_too_small_buffer),
        cmocka_unit_test(test_bad_arguments_are_rejected),
        cmocka_unit_test(test_bad_labels_are_rejected),
        cmocka_unit_test(test_the_parser_rejects_malformed_text),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
