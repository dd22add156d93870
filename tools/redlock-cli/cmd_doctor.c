/* SPDX-License-Identifier: BSD-3-Clause */
/* cmd_doctor.c -- "redlock-cli doctor": is every node fit to
 * hold Redlock's keys, and if not, what to change.
 *
 * Public API only: three rl_client_ping rounds (the node's facts from the
 * last one, the median PING latency) and one rl_resource_status of a
 * probe resource, which runs the read-only inspection script (EVALSHA)
 * on a key nobody holds: nothing is written, no key is created. Each
 * node gets one verdict per check, pass / warn / fail, or unknown where
 * the public API cannot tell (permissions beyond running a script, and
 * every check of a node that did not answer); every verdict other than
 * pass comes with a one-sentence remedy. Exit 3 on any fail or when no
 * quorum of nodes votes, else 1 on any warning, else 0; unknown does not
 * change the exit status. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
"Usage: redlock-cli [GLOBAL OPTIONS] doctor\n"
"\n"
"Check every node for what Redlock's safety rests on and print one line\n"
"per node and check: pass, warn or fail (unknown where it cannot be\n"
"told), with a remedy for anything but pass. Checks: reachable; version\n"
"(fail below 2.6.12: no SET NX PX; warn below 6.0: no ACL users);\n"
"role (fail unless master); independence (fail when two entries are one\n"
"server); eviction (fail when maxmemory is set with a policy other than\n"
"noeviction, or is not reported; warn with --allow-evicting-nodes);\n"
"persistence against --quarantine (off fails unless the node runs\n"
"appendonly yes + appendfsync always); clock (fail when suspect, warn\n"
"while unknown or with --no-clock-guard); latency (warn above half of\n"
"--op-timeout, fail above it); cluster (warn when cluster mode is on);\n"
"permissions (fail when the node refuses to run a script, otherwise\n"
"unknown: check the rest with ACL DRYRUN); votes (whether its vote\n"
"counts now). Nothing is written to the nodes.\n"
"\n"
"With --json: one object {nodes: [{node, checks: [{check, status,\n"
"detail, remedy}]}], summary: {nodes, independent, voting, quorum,\n"
"quorum_ok, pass, warn, fail, unknown, exit}}.\n"
"Exit: 0 all pass, 1 a warning, 3 a failure or no quorum votes, 2 usage\n"
"(also when two entries of --nodes are one server).\n"
"\n"
"Example:\n"
"  redlock-cli -n 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 doctor\n";

/* The probe read by the permissions check (under --prefix). */
#define PROBE_RESOURCE "redlock-cli-doctor-probe"
/* rl_client_ping rounds; the latency is their median. */
#define PING_ROUNDS 3

enum status { ST_PASS, ST_WARN, ST_FAIL, ST_UNKNOWN, ST_COUNT };

static const char *const status_names[ST_COUNT] = {"pass", "warn", "fail",
                                                   "unknown"};

struct verdict {
    enum status status;
    char detail[384];
    char remedy[384];
};

struct doctor {
    const struct cli_opts *o;
    const rl_node_info *all;       /* the last ping round */
    size_t count;
    const int64_t *latency_us;     /* median per node, -1 none */
    const rl_holder_info *probe;   /* the permissions probe, or NULL */
    size_t tally[ST_COUNT];
};

static void set(struct verdict *v, enum status s, const char *remedy,
                const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void set(struct verdict *v, enum status s, const char *remedy,
                const char *fmt, ...)
{
    va_list ap;

    v->status = s;
    snprintf(v->remedy, sizeof(v->remedy), "%s", remedy);
    va_start(ap, fmt);
    vsnprintf(v->detail, sizeof(v->detail), fmt, ap);
    va_end(ap);
}

/* ---- Checks ------------------------------------------------------------- */

static void check_reachable(const struct doctor *d, size_t i,
                            struct verdict *v)
{
    const rl_node_info *n = &d->all[i];

    if (n->reachable)
        set(v, ST_PASS, "", "answered PING");
    else
        set(v, ST_FAIL, "Start the node, or fix its address, port, "
            "password or TLS settings in --nodes.", "no answer: %s",
            n->error[0] != '\0' ? n->error : "unreachable");
}

/* SET NX PX and Lua scripts exist since 2.6.12, everything the library
 * sends (EVALSHA, PEXPIREAT, CONFIG GET, TIME) works there; ACL users,
 * which let the lock client run only what it needs, came with 6.0. */
static void check_version(const struct doctor *d, size_t i,
                          struct verdict *v)
{
    const char *ver = d->all[i].version;
    unsigned major = 0, minor = 0, patch = 0;
    unsigned long num;

    if (sscanf(ver, "%u.%u.%u", &major, &minor, &patch) < 2) {
        set(v, ST_WARN, "Check the node's version with INFO server; "
            "Redlock needs 2.6.12 or later, 6.0 or later advised.",
            "version not reported");
        return;
    }
    num = major * 10000ul + minor * 100ul + patch;
    if (num < 20612)
        set(v, ST_FAIL, "Upgrade to Redis 6.0 or later.",
            "Redis %s lacks SET NX PX and Lua scripts (2.6.12)", ver);
    else if (major < 6)
        set(v, ST_WARN, "Upgrade to Redis 6.0 or later to give the lock "
            "client an ACL user limited to the commands it needs.",
            "Redis %s has no ACL users (6.0)", ver);
    else
        set(v, ST_PASS, "", "Redis %s", ver);
}

static void check_role(const struct doctor *d, size_t i, struct verdict *v)
{
    const char *role = d->all[i].role;

    if (strcmp(role, "master") == 0)
        set(v, ST_PASS, "", "master");
    else
        set(v, ST_FAIL, "List masters only: a replica holds its master's "
            "keys, not a vote of its own.", "role %s: it does not vote",
            role[0] != '\0' ? role : "not reported");
}

static void check_independence(const struct doctor *d, size_t i,
                               struct verdict *v)
{
    const rl_node_info *n = &d->all[i];

    if (n->twin_of < 0 || (size_t)n->twin_of >= d->count)
        set(v, ST_PASS, "", "no other entry is the same server");
    else
        set(v, ST_FAIL, "Remove one of the two entries from --nodes: a "
            "majority needs independent masters.",
            "the same server (or replication stream) as nodes[%d] %s: "
            "one vote between them", n->twin_of, d->all[n->twin_of].name);
}

static void check_eviction(const struct doctor *d, size_t i,
                           struct verdict *v)
{
    const rl_node_info *n = &d->all[i];
    const char *policy = n->maxmemory_policy[0] != '\0'
                             ? n->maxmemory_policy : "not reported";
    bool allowed = d->o->cfg.allow_evicting_nodes;

    if (n->may_evict == RL_FACT_NO) {
        set(v, ST_PASS, "", "maxmemory %" PRIu64 ", policy %s: keys live "
            "until their TTL", n->maxmemory, policy);
        return;
    }
    if (n->may_evict == RL_FACT_YES && !allowed) {
        set(v, ST_FAIL, "Set maxmemory-policy noeviction (or maxmemory 0) "
            "on the node, or accept the risk with --allow-evicting-nodes.",
            "maxmemory %" PRIu64 " with policy %s may evict a lock key "
            "before its TTL, so another client could take the lock; it "
            "does not vote", n->maxmemory, policy);
        return;
    }
    if (n->may_evict == RL_FACT_YES) {
        set(v, ST_WARN, "Set maxmemory-policy noeviction (or maxmemory 0): "
            "an evicted lock key lets a second client take the lock.",
            "maxmemory %" PRIu64 " with policy %s may evict a lock key; it "
            "votes (--allow-evicting-nodes)", n->maxmemory, policy);
        return;
    }
    /* Unknown counts against the node: without the option it does not
     * vote, which is a failure of the node as much as a known policy. */
    set(v, allowed ? ST_WARN : ST_FAIL, "Let the client read INFO memory "
        "(maxmemory, maxmemory_policy), or set maxmemory-policy "
        "noeviction and use --allow-evicting-nodes.",
        "maxmemory or its policy not reported%s", allowed ? ": it votes "
        "(--allow-evicting-nodes)" : ": it does not vote");
}

static void check_persistence(const struct doctor *d, size_t i,
                              struct verdict *v)
{
    const rl_node_info *n = &d->all[i];
    char what[64];

    snprintf(what, sizeof(what), "appendonly %s, appendfsync %s",
             cli_fact_word(n->aof_enabled, false),
             n->appendfsync[0] != '\0' ? n->appendfsync : "not reported");
    switch (d->o->cfg.restart_trust) {
    case RL_RESTART_QUARANTINE:
        set(v, ST_PASS, "", "%s; --quarantine on: after a restart it waits "
            "--max-ttl (%u ms) before voting", what, d->o->cfg.max_ttl_ms);
        return;
    case RL_RESTART_TRUST:
        if (n->fsync_always == RL_FACT_YES)
            set(v, ST_PASS, "", "%s; --quarantine off: a restart loses "
                "nothing it acknowledged", what);
        else
            set(v, ST_FAIL, "Run the node with appendonly yes and "
                "appendfsync always, or use --quarantine auto.",
                "%s; --quarantine off trusts a restarted node at once, but "
                "this one can lose lock keys it acknowledged, so a lock "
                "could be granted twice", what);
        return;
    default:
        if (n->fsync_always == RL_FACT_YES)
            set(v, ST_PASS, "", "%s; --quarantine auto: restarts are "
                "trusted at once", what);
        else
            set(v, ST_PASS, "", "%s; --quarantine auto: after a restart it "
                "is quarantined for --max-ttl (%u ms)", what,
                d->o->cfg.max_ttl_ms);
        return;
    }
}

static void check_clock(const struct doctor *d, size_t i, struct verdict *v)
{
    const rl_node_info *n = &d->all[i];

    switch (n->clock_state) {
    case RL_CLOCK_OK:
        if (n->clock_rate > 0)
            set(v, ST_PASS, "", "runs at our rate (x%.4f)", n->clock_rate);
        else
            set(v, ST_PASS, "", "runs at our rate");
        return;
    case RL_CLOCK_SUSPECT:
        set(v, ST_FAIL, "Fix the node's time keeping (NTP slewing, no "
            "manual steps); it votes again once its clock behaved for "
            "--max-ttl.", "clock-suspect (x%.4f against ours): it does not "
            "vote", n->clock_rate);
        return;
    case RL_CLOCK_UNKNOWN:
        set(v, ST_WARN, "Run doctor again: the clock guard needs two TIME "
            "samples, or the node refuses TIME.", "rate not measured yet");
        return;
    default:
        set(v, ST_WARN, "Drop --no-clock-guard unless the nodes refuse TIME.",
            "clock guard off: a node whose clock runs fast is not seen");
        return;
    }
}

static void check_latency(const struct doctor *d, size_t i,
                          struct verdict *v)
{
    int64_t us = d->latency_us[i];
    int64_t limit = (int64_t)d->o->cfg.op_timeout_ms * 1000;
    char remedy[160];

    snprintf(remedy, sizeof(remedy), "Raise --op-timeout (%u ms) above "
             "twice the round trip, or run the client closer to the node.",
             d->o->cfg.op_timeout_ms);
    if (us > limit)
        set(v, ST_FAIL, remedy, "PING %" PRId64 " us (median of %d), above "
            "--op-timeout %u ms: its replies come too late to count", us,
            PING_ROUNDS, d->o->cfg.op_timeout_ms);
    else if (us > limit / 2)
        set(v, ST_WARN, remedy, "PING %" PRId64 " us (median of %d), above "
            "half of --op-timeout %u ms", us, PING_ROUNDS,
            d->o->cfg.op_timeout_ms);
    else
        set(v, ST_PASS, "", "PING %" PRId64 " us (median of %d), "
            "--op-timeout %u ms", us, PING_ROUNDS, d->o->cfg.op_timeout_ms);
}

/* A warning, not a failure: no safety is at stake (a MOVED reply is a
 * refused vote), and a one-node cluster serving every slot works. */
static void check_cluster(const struct doctor *d, size_t i,
                          struct verdict *v)
{
    const rl_node_info *n = &d->all[i];

    if (n->cluster_enabled == RL_FACT_YES)
        set(v, ST_WARN, "List standalone masters (cluster-enabled no): a "
            "cluster node refuses keys of slots it does not serve.",
            "cluster mode: keys of other slots get MOVED, a refused vote");
    else
        set(v, ST_PASS, "", "cluster mode %s",
            n->cluster_enabled == RL_FACT_NO ? "off" : "not reported");
}

/* The probe ran the read-only script (EVALSHA + GET/PTTL in Lua). That
 * says nothing of SET, PEXPIRE, DEL or PUBLISH, so a probe that ran is
 * "unknown", never a pass. */
static void check_permissions(const struct doctor *d, size_t i,
                              struct verdict *v)
{
    static const char dryrun[] =
        "Check the rest with ACL DRYRUN <user> for EVALSHA, EVAL, SCRIPT "
        "LOAD, SET, DEL, PEXPIRE, PUBLISH, SUBSCRIBE, INFO, CONFIG GET and "
        "TIME on the lock keys and redlock:* (Redis 7).";
    const rl_holder_info *h = d->probe != NULL ? &d->probe[i] : NULL;

    if (h == NULL)
        set(v, ST_UNKNOWN, dryrun, "not probed");
    else if (strstr(h->error, "NOPERM") != NULL &&
             strstr(h->error, "command") != NULL)
        set(v, ST_FAIL, "Grant the lock user +@scripting, +set, +del, "
            "+pexpire, +publish, +subscribe, +info, +config|get and +time.",
            "refused to run a script: %s", h->error);
    else if (h->error[0] != '\0')
        set(v, ST_WARN, dryrun, "the read-only probe of '%s' failed: %s",
            PROBE_RESOURCE, h->error);
    else
        set(v, ST_UNKNOWN, dryrun, "scripts run (a read-only probe); "
            "writes are not checked");
}

static void check_votes(const struct doctor *d, size_t i, struct verdict *v)
{
    const rl_node_info *n = &d->all[i];
    int64_t left = (int64_t)d->o->cfg.max_ttl_ms - n->uptime_ms;

    if (n->voting)
        set(v, ST_PASS, "", "its vote counts");
    else if (n->vote_bar == RL_BAR_QUARANTINE)
        set(v, ST_WARN, "Wait, or run it with appendonly yes + appendfsync "
            "always (trusted at once under --quarantine auto).",
            "restart quarantine: up %" PRId64 " s, votes in about %" PRId64
            " s", n->uptime_ms / 1000, left > 0 ? (left + 999) / 1000 : 0);
    else
        set(v, ST_FAIL, "See the failed check above.",
            "it does not vote (%s)", cli_vote_bar_name(n->vote_bar));
}

static const struct {
    const char *name;
    void (*run)(const struct doctor *d, size_t i, struct verdict *v);
} checks[] = {
    {"reachable", check_reachable},
    {"version", check_version},
    {"role", check_role},
    {"independence", check_independence},
    {"eviction", check_eviction},
    {"persistence", check_persistence},
    {"clock", check_clock},
    {"latency", check_latency},
    {"cluster", check_cluster},
    {"permissions", check_permissions},
    {"votes", check_votes},
};
#define CHECKS (sizeof(checks) / sizeof(checks[0]))

/* ---- Running and printing ----------------------------------------------- */

static void run_check(struct doctor *d, size_t i, size_t k, struct verdict *v)
{
    if (k > 0 && !d->all[i].reachable)
        set(v, ST_UNKNOWN, "", "not checked: the node did not answer");
    else
        checks[k].run(d, i, v);
    d->tally[v->status]++;
}

static void print_node_json(struct doctor *d, size_t i)
{
    struct verdict v;
    size_t k;

    printf("%s{\"node\":", i > 0 ? "," : "");
    cli_json_str(stdout, d->all[i].name);
    fputs(",\"checks\":[", stdout);
    for (k = 0; k < CHECKS; k++) {
        run_check(d, i, k, &v);
        printf("%s{\"check\":\"%s\",\"status\":\"%s\",\"detail\":",
               k > 0 ? "," : "", checks[k].name, status_names[v.status]);
        cli_json_str(stdout, v.detail);
        fputs(",\"remedy\":", stdout);
        cli_json_str(stdout, v.remedy);
        fputc('}', stdout);
    }
    fputs("]}", stdout);
}

static void print_node_text(struct doctor *d, size_t i)
{
    struct verdict v;
    size_t k;

    for (k = 0; k < CHECKS; k++) {
        run_check(d, i, k, &v);
        printf("%-24s %-12s %-7s %s%s%s\n", d->all[i].name, checks[k].name,
               status_names[v.status], v.detail,
               v.remedy[0] != '\0' ? " -- remedy: " : "", v.remedy);
    }
}

static int compare_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a;
    int64_t y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

/* Per node, the median of the rounds it answered (-1: none). */
static void median_latency(const int64_t *samples, size_t count,
                           int64_t *out)
{
    int64_t row[PING_ROUNDS];
    size_t i, r, n;

    for (i = 0; i < count; i++) {
        for (r = 0, n = 0; r < PING_ROUNDS; r++) {
            if (samples[r * count + i] >= 0)
                row[n++] = samples[r * count + i];
        }
        qsort(row, n, sizeof(row[0]), compare_i64);
        out[i] = n > 0 ? row[n / 2] : -1;
    }
}

/* More ping rounds after the first (facts from the last), and the
 * permissions probe. CLI_EXIT_OK or an exit code after a message. */
static int gather(struct cli_opts *o, rl_client *c, rl_node_info *p,
                  size_t count, rl_status *st, int64_t *latency,
                  rl_holder_info *probe, bool *probed)
{
    int64_t *samples = calloc(PING_ROUNDS * count, sizeof(*samples));
    size_t i, r, n;
    rl_status pst;

    if (samples == NULL)
        return cli_fail(o, CLI_EXIT_NOT_ACQUIRED, "out of memory");
    for (r = 0; r < PING_ROUNDS; r++) {
        if (r > 0)
            *st = rl_client_ping(c, p, count, &n);
        if (*st != RL_OK && *st != RL_ENOQUORUM) {
            free(samples);
            return cli_status_exit(o, *st, "doctor");
        }
        for (i = 0; i < count; i++)
            samples[r * count + i] = p[i].reachable ? p[i].latency_us : -1;
    }
    median_latency(samples, count, latency);
    free(samples);
    pst = rl_resource_status(c, PROBE_RESOURCE, probe, count, &n);
    *probed = pst == RL_OK || pst == RL_ENOQUORUM;
    return CLI_EXIT_OK;
}

int cmd_doctor(struct cli_opts *o, int argc, char **argv)
{
    rl_node_info *p = NULL;
    rl_holder_info *probe = NULL;
    int64_t *latency = NULL;
    rl_client *c = NULL;
    rl_status st = RL_OK;
    struct doctor d;
    char summary[160];
    size_t count = 0;
    size_t voting, independent;
    bool probed = false;
    size_t i;
    int code;

    code = cli_ping_nodes(o, argc, argv, usage, &c, &p, &count, &st);
    if (code != CLI_EXIT_OK)
        goto out;
    latency = calloc(count, sizeof(*latency));
    probe = calloc(count, sizeof(*probe));
    if (latency == NULL || probe == NULL) {
        code = cli_fail(o, CLI_EXIT_NOT_ACQUIRED, "out of memory");
        goto out;
    }
    code = gather(o, c, p, count, &st, latency, probe, &probed);
    if (code != CLI_EXIT_OK)
        goto out;
    memset(&d, 0, sizeof(d));
    d.o = o;
    d.all = p;
    d.count = count;
    d.latency_us = latency;
    d.probe = probed ? probe : NULL;
    if (o->json)
        fputs("{\"nodes\":[", stdout);
    else
        printf("%-24s %-12s %-7s %s\n", "NODE", "CHECK", "STATUS", "DETAIL");
    for (i = 0; i < count; i++) {
        if (o->json)
            print_node_json(&d, i);
        else
            print_node_text(&d, i);
    }
    code = d.tally[ST_FAIL] > 0 || st != RL_OK ? CLI_EXIT_NO_QUORUM
           : d.tally[ST_WARN] > 0              ? CLI_EXIT_NOT_ACQUIRED
                                               : CLI_EXIT_OK;
    cli_count_nodes(p, count, &voting, &independent);
    if (o->json) {
        printf("],\"summary\":{\"nodes\":%zu,\"independent\":%zu,"
               "\"voting\":%zu,\"quorum\":%zu,\"quorum_ok\":%s,\"pass\":%zu,"
               "\"warn\":%zu,\"fail\":%zu,\"unknown\":%zu,\"exit\":%d}}\n",
               count, independent, voting, count / 2 + 1,
               st == RL_OK ? "true" : "false", d.tally[ST_PASS],
               d.tally[ST_WARN], d.tally[ST_FAIL], d.tally[ST_UNKNOWN], code);
    } else {
        cli_nodes_summary(summary, sizeof(summary), p, count, st);
        printf("%s; %zu pass, %zu warn, %zu fail, %zu unknown\n", summary,
               d.tally[ST_PASS], d.tally[ST_WARN], d.tally[ST_FAIL],
               d.tally[ST_UNKNOWN]);
    }
    cli_quorum_warning(o, p, count, st);

out:
    free(probe);
    free(latency);
    free(p);
    rl_client_free(c);
    return code < 0 ? CLI_EXIT_OK : code;
}
