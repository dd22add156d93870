/* SPDX-License-Identifier: BSD-3-Clause */
/* cmd_ping.c -- "redlock-cli ping", and the node facts it
 * shares with "doctor".
 *
 * PINGs every node at once (rl_client_ping) and shows, per node, the
 * latency, Redis version, uptime, its clock, what it says of itself
 * (role, eviction policy, persistence) and whether its vote counts, and
 * if not why: down, a duplicate of a node listed before it (the same
 * server or replication stream), not a master, may evict keys, clock
 * suspect, or restart quarantine. The summary counts independent
 * servers, since two entries of one server are one vote's worth of
 * safety. Exit 0 when a quorum of nodes is reachable and voting, 3
 * otherwise. */
#include <inttypes.h>
#include <stdlib.h>

#include "cli.h"

static const char usage[] =
"Usage: redlock-cli [GLOBAL OPTIONS] ping\n"
"\n"
"PING every node; show latency (us), Redis version, uptime (s), its clock\n"
"(rate against ours and ok / suspect / ? / off, see --no-clock-guard),\n"
"its role, whether it may evict keys (EVICTS yes/no/?) under which\n"
"maxmemory-policy/maxmemory (POLICY), its persistence (PERSIST: aof/\n"
"<appendfsync>, no-aof or ?) and whether it votes; if not, why: no\n"
"(down), twin (the same server as a node listed before it), role (not a\n"
"master), evicts (see --allow-evicting-nodes), clock, quarantine\n"
"(restarted less than --max-ttl ago; see --quarantine).\n"
"\n"
"With --json: one object with quorum_ok, voting, quorum, independent\n"
"and nodes: an array of {node, reachable, latency_us, version, tls,\n"
"uptime_ms, clock_rate, clock_state, voting, error, role, may_evict,\n"
"maxmemory_policy, maxmemory, aof_enabled, appendfsync, fsync_always,\n"
"cluster_enabled, vote_bar, twin_of, twin_of_node, independent};\n"
"clock_rate is null while unknown, clock_state one of \"ok\", \"suspect\",\n"
"\"unknown\", \"off\"; the yes/no facts are true, false or null (not\n"
"reported); vote_bar \"votes\", \"down\", \"twin\", \"role\", \"evicts\",\n"
"\"clock\" or \"quarantine\"; twin_of the index of the node it duplicates\n"
"or null.\n"
"Exit: 0 a quorum votes, 3 it does not, 2 usage.\n"
"\n"
"Example:\n"
"  redlock-cli -n 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 ping\n";

const char *cli_clock_name(int32_t state, bool json)
{
    switch (state) {
    case RL_CLOCK_OK:
        return "ok";
    case RL_CLOCK_SUSPECT:
        return "suspect";
    case RL_CLOCK_UNKNOWN:
        return json ? "unknown" : "?";
    default:
        return "off";
    }
}

const char *cli_vote_bar_name(uint8_t bar)
{
    switch (bar) {
    case RL_VOTES:
        return "yes";
    case RL_BAR_DOWN:
        return "no";
    case RL_BAR_TWIN:
        return "twin";
    case RL_BAR_ROLE:
        return "role";
    case RL_BAR_EVICTS:
        return "evicts";
    case RL_BAR_CLOCK:
        return "clock";
    case RL_BAR_QUARANTINE:
        return "quarantine";
    }
    return "?";
}

const char *cli_fact_word(int8_t fact, bool json)
{
    if (fact == RL_FACT_YES)
        return json ? "true" : "yes";
    if (fact == RL_FACT_NO)
        return json ? "false" : "no";
    return json ? "null" : "?";
}

void cli_count_nodes(const rl_node_info *p, size_t count, size_t *voting,
                     size_t *independent)
{
    size_t i;

    *voting = 0;
    *independent = 0;
    for (i = 0; i < count; i++) {
        if (p[i].reachable && p[i].voting)
            (*voting)++;
        if (p[i].reachable && p[i].twin_of < 0)
            (*independent)++;
    }
}

void cli_nodes_summary(char *buf, size_t len, const rl_node_info *p,
                       size_t count, rl_status st)
{
    size_t voting, independent;

    cli_count_nodes(p, count, &voting, &independent);
    snprintf(buf, len, "%zu node%s, %zu independent server%s, %zu voting, "
             "quorum %zu: %s", count, count == 1 ? "" : "s", independent,
             independent == 1 ? "" : "s", voting, count / 2 + 1,
             st == RL_OK ? "ok" : "UNAVAILABLE");
}

int cli_ping_nodes(struct cli_opts *o, int argc, char **argv,
                   const char *help, rl_client **c, rl_node_info **p,
                   size_t *count, rl_status *st)
{
    const char *pos[1];
    int npos;
    int code;

    *c = NULL;
    *p = NULL;
    *count = 0;
    code = cli_parse_args(o, argc, argv, NULL, 0, help, pos, 0, &npos, NULL);
    if (code != 0)
        return code > 0 ? -1 : CLI_EXIT_USAGE;
    code = cli_client_new(o, c);
    if (code != CLI_EXIT_OK)
        return code;
    *p = calloc(o->cfg.node_count, sizeof(**p));
    if (*p == NULL)
        return cli_fail(o, CLI_EXIT_NOT_ACQUIRED, "out of memory");
    *st = rl_client_ping(*c, *p, o->cfg.node_count, count);
    if (*st != RL_OK && *st != RL_ENOQUORUM)
        return cli_status_exit(o, *st, o->cmd);
    return CLI_EXIT_OK;
}

void cli_quorum_warning(const struct cli_opts *o, const rl_node_info *p,
                        size_t count, rl_status st)
{
    size_t voting, independent;

    cli_count_nodes(p, count, &voting, &independent);
    if (st != RL_OK && !o->quiet)
        cli_fail(o, 0, "quorum unavailable: %zu of %zu nodes voting, need "
                 "%zu", voting, count, count / 2 + 1);
}

/* "4mb", "1gb", "1000" (bytes), "0": maxmemory as redis.conf writes it. */
static void put_bytes(char *buf, size_t len, uint64_t b)
{
    static const char *const units[] = {"gb", "mb", "kb"};
    uint64_t unit = (uint64_t)1 << 30;
    size_t k;

    for (k = 0; k < 3; k++, unit >>= 10) {
        if (b != 0 && b % unit == 0) {
            snprintf(buf, len, "%" PRIu64 "%s", b / unit, units[k]);
            return;
        }
    }
    snprintf(buf, len, "%" PRIu64, b);
}

static void print_json_str_or_null(const char *s)
{
    if (s[0] != '\0')
        cli_json_str(stdout, s);
    else
        fputs("null", stdout);
}

/* The node a twin duplicates, or NULL. */
static const rl_node_info *twin(const rl_node_info *all, size_t count,
                                size_t i)
{
    if (all[i].twin_of < 0 || (size_t)all[i].twin_of >= count)
        return NULL;
    return &all[all[i].twin_of];
}

static void print_json_node(const rl_node_info *all, size_t count, size_t i)
{
    const rl_node_info *p = &all[i];
    const rl_node_info *t = twin(all, count, i);

    printf("{\"node\":");
    cli_json_str(stdout, p->name);
    printf(",\"reachable\":%s,\"latency_us\":%" PRId64 ",\"version\":",
           p->reachable ? "true" : "false", p->latency_us);
    cli_json_str(stdout, p->version);
    fputs(",\"tls\":", stdout);
    cli_json_str(stdout, p->tls);
    printf(",\"uptime_ms\":%" PRId64, p->uptime_ms);
    if (p->clock_rate > 0)
        printf(",\"clock_rate\":%.4f", p->clock_rate);
    else
        fputs(",\"clock_rate\":null", stdout);
    printf(",\"clock_state\":\"%s\",\"voting\":%s,\"error\":",
           cli_clock_name(p->clock_state, true),
           p->voting ? "true" : "false");
    cli_json_str(stdout, p->error);
    fputs(",\"role\":", stdout);
    print_json_str_or_null(p->role);
    printf(",\"may_evict\":%s,\"maxmemory_policy\":",
           cli_fact_word(p->may_evict, true));
    print_json_str_or_null(p->maxmemory_policy);
    printf(",\"maxmemory\":%" PRIu64 ",\"aof_enabled\":%s,\"appendfsync\":",
           p->maxmemory, cli_fact_word(p->aof_enabled, true));
    print_json_str_or_null(p->appendfsync);
    printf(",\"fsync_always\":%s,\"cluster_enabled\":%s,\"vote_bar\":\"%s\"",
           cli_fact_word(p->fsync_always, true),
           cli_fact_word(p->cluster_enabled, true),
           p->vote_bar == RL_VOTES      ? "votes"
           : p->vote_bar == RL_BAR_DOWN ? "down"
                                        : cli_vote_bar_name(p->vote_bar));
    if (t != NULL) {
        printf(",\"twin_of\":%d,\"twin_of_node\":", p->twin_of);
        cli_json_str(stdout, t->name);
    } else {
        fputs(",\"twin_of\":null,\"twin_of_node\":null", stdout);
    }
    printf(",\"independent\":%s}",
           p->reachable && t == NULL ? "true" : "false");
}

#define ROW "%-24s %-9s %10s %-8s %-7s %8s %-12s %-6s %-6s %-20s %-12s " \
            "%-10s %s\n"

static void print_row(const rl_node_info *all, size_t count, size_t i)
{
    const rl_node_info *p = &all[i];
    const rl_node_info *t = twin(all, count, i);
    char lat[24] = "-";
    char up[24] = "-";
    char clk[40];
    char mem[24];
    char policy[48];
    char persist[24];

    if (p->latency_us >= 0)
        snprintf(lat, sizeof(lat), "%" PRId64, p->latency_us);
    if (p->uptime_ms >= 0)
        snprintf(up, sizeof(up), "%" PRId64, p->uptime_ms / 1000);
    if (p->clock_rate > 0)
        snprintf(clk, sizeof(clk), "x%.3f %s", p->clock_rate,
                 cli_clock_name(p->clock_state, false));
    else
        snprintf(clk, sizeof(clk), "%s",
                 cli_clock_name(p->clock_state, false));
    put_bytes(mem, sizeof(mem), p->maxmemory);
    snprintf(policy, sizeof(policy), "%s/%s",
             p->maxmemory_policy[0] != '\0' ? p->maxmemory_policy : "?",
             mem);
    if (p->aof_enabled == RL_FACT_YES)
        snprintf(persist, sizeof(persist), "aof/%s",
                 p->appendfsync[0] != '\0' ? p->appendfsync : "?");
    else
        snprintf(persist, sizeof(persist), "%s",
                 p->aof_enabled == RL_FACT_NO ? "no-aof" : "?");
    if (!p->reachable)
        snprintf(policy, sizeof(policy), "-");
    printf(ROW, p->name, p->reachable ? "yes" : "no", lat,
           p->version[0] != '\0' ? p->version : "-",
           p->tls[0] != '\0' ? p->tls : "-", up, clk,
           p->role[0] != '\0' ? p->role : "-",
           p->reachable ? cli_fact_word(p->may_evict, false) : "-", policy,
           p->reachable ? persist : "-", cli_vote_bar_name(p->vote_bar),
           p->error);
    if (t != NULL && p->error[0] == '\0')
        printf("  %s is the same server (or replication stream) as %s: "
               "one vote between them\n", p->name, t->name);
}

int cmd_ping(struct cli_opts *o, int argc, char **argv)
{
    rl_node_info *p = NULL;
    rl_client *c = NULL;
    rl_status st = RL_OK;
    char summary[160];
    size_t count = 0;
    size_t voting, independent;
    size_t i;
    int code;

    code = cli_ping_nodes(o, argc, argv, usage, &c, &p, &count, &st);
    if (code != CLI_EXIT_OK)
        goto out;
    cli_count_nodes(p, count, &voting, &independent);
    if (o->json) {
        printf("{\"quorum_ok\":%s,\"voting\":%zu,\"quorum\":%zu,"
               "\"independent\":%zu,\"nodes\":[",
               st == RL_OK ? "true" : "false", voting, count / 2 + 1,
               independent);
        for (i = 0; i < count; i++) {
            if (i > 0)
                fputc(',', stdout);
            print_json_node(p, count, i);
        }
        fputs("]}\n", stdout);
    } else {
        printf(ROW, "NODE", "REACHABLE", "LATENCY_US", "VERSION", "TLS",
               "UPTIME_S", "CLOCK", "ROLE", "EVICTS", "POLICY", "PERSIST",
               "VOTING", "ERROR");
        for (i = 0; i < count; i++)
            print_row(p, count, i);
        cli_nodes_summary(summary, sizeof(summary), p, count, st);
        printf("%s\n", summary);
    }
    code = st == RL_OK ? CLI_EXIT_OK : CLI_EXIT_NO_QUORUM;
    cli_quorum_warning(o, p, count, st);

out:
    free(p);
    rl_client_free(c);
    return code < 0 ? CLI_EXIT_OK : code;
}
