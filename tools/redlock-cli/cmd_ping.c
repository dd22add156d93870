/* cmd_ping.c -- "redlock-cli ping" (DESIGN §7).
 *
 * PINGs every node at once (rl_client_ping) and shows, per node, the
 * latency, Redis version, uptime and whether its vote counts (a node whose
 * uptime is below --max-ttl is quarantined, DESIGN §5.7). Exit 0 when a
 * quorum of nodes is reachable and voting, 3 otherwise. The CLOCK column
 * is the clock guard's view (issue 15): the node's clock rate against
 * ours and "ok", "suspect" (it does not vote), "?" (too few samples) or
 * "off". */
#include <inttypes.h>
#include <stdlib.h>

#include "cli.h"

static const char usage[] =
"Usage: redlock-cli [GLOBAL OPTIONS] ping\n"
"\n"
"PING every node; show latency (us), Redis version, uptime (s), its clock\n"
"(rate against ours and ok / suspect / ? / off, see --no-clock-guard) and\n"
"whether the node votes or is quarantined (uptime below --max-ttl; see\n"
"--no-quarantine) or clock-suspect.\n"
"\n"
"With --json: one object with quorum_ok, voting, quorum and nodes: an\n"
"array of {node, reachable, latency_us, version, uptime_ms, clock_rate,\n"
"clock_state, voting, error}; clock_rate is null while unknown,\n"
"clock_state one of \"ok\", \"suspect\", \"unknown\", \"off\".\n"
"Exit: 0 a quorum votes, 3 it does not, 2 usage.\n"
"\n"
"Example:\n"
"  redlock-cli -n 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 ping\n";

static const char *clock_name(int32_t state, bool json)
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

int cmd_ping(struct cli_opts *o, int argc, char **argv)
{
    const char *pos[1];
    rl_node_info *p = NULL;
    rl_client *c = NULL;
    rl_status st;
    size_t count = 0;
    size_t voting = 0;
    size_t i;
    int npos;
    int code;

    code = cli_parse_args(o, argc, argv, NULL, 0, usage, pos, 0, &npos, NULL);
    if (code != 0)
        return code > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    code = cli_client_new(o, &c);
    if (code != CLI_EXIT_OK)
        return code;
    p = calloc(o->node_count, sizeof(*p));
    if (p == NULL) {
        code = cli_fail(o, CLI_EXIT_NOT_ACQUIRED, "out of memory");
        goto out;
    }
    st = rl_client_ping(c, p, o->node_count, &count);
    if (st != RL_OK && st != RL_ENOQUORUM) {
        code = cli_status_exit(o, st, "ping");
        goto out;
    }
    for (i = 0; i < count; i++) {
        if (p[i].reachable && p[i].voting)
            voting++;
    }
    if (o->json) {
        printf("{\"quorum_ok\":%s,\"voting\":%zu,\"quorum\":%zu,\"nodes\":[",
               st == RL_OK ? "true" : "false", voting, count / 2 + 1);
        for (i = 0; i < count; i++) {
            printf("%s{\"node\":", i > 0 ? "," : "");
            cli_json_str(stdout, p[i].name);
            printf(",\"reachable\":%s,\"latency_us\":%" PRId64 ",\"version\":",
                   p[i].reachable ? "true" : "false", p[i].latency_us);
            cli_json_str(stdout, p[i].version);
            fputs(",\"tls\":", stdout);
            cli_json_str(stdout, p[i].tls);
            printf(",\"uptime_ms\":%" PRId64, p[i].uptime_ms);
            if (p[i].clock_rate > 0)
                printf(",\"clock_rate\":%.4f", p[i].clock_rate);
            else
                fputs(",\"clock_rate\":null", stdout);
            printf(",\"clock_state\":\"%s\",\"voting\":%s,\"error\":",
                   clock_name(p[i].clock_state, true),
                   p[i].voting ? "true" : "false");
            cli_json_str(stdout, p[i].error);
            fputs("}", stdout);
        }
        fputs("]}\n", stdout);
    } else {
        printf("%-28s %-9s %10s %-10s %-7s %10s %-16s %-11s %s\n", "NODE",
               "REACHABLE", "LATENCY_US", "VERSION", "TLS", "UPTIME_S",
               "CLOCK", "VOTING", "ERROR");
        for (i = 0; i < count; i++) {
            char lat[24] = "-";
            char up[24] = "-";
            char clk[40];

            if (p[i].latency_us >= 0)
                snprintf(lat, sizeof(lat), "%" PRId64, p[i].latency_us);
            if (p[i].uptime_ms >= 0)
                snprintf(up, sizeof(up), "%" PRId64, p[i].uptime_ms / 1000);
            if (p[i].clock_rate > 0)
                snprintf(clk, sizeof(clk), "x%.3f %s", p[i].clock_rate,
                         clock_name(p[i].clock_state, false));
            else
                snprintf(clk, sizeof(clk), "%s",
                         clock_name(p[i].clock_state, false));
            printf("%-28s %-9s %10s %-10s %-7s %10s %-16s %-11s %s\n",
                   p[i].name, p[i].reachable ? "yes" : "no", lat,
                   p[i].version[0] != '\0' ? p[i].version : "-",
                   p[i].tls[0] != '\0' ? p[i].tls : "-", up, clk,
                   !p[i].reachable                        ? "no"
                   : p[i].voting                          ? "yes"
                   : p[i].clock_state == RL_CLOCK_SUSPECT ? "clock"
                                                          : "quarantine",
                   p[i].error);
        }
        printf("%zu of %zu nodes voting, quorum %zu: %s\n", voting, count,
               count / 2 + 1, st == RL_OK ? "ok" : "UNAVAILABLE");
    }
    code = st == RL_OK ? CLI_EXIT_OK : CLI_EXIT_NO_QUORUM;
    if (st != RL_OK && !o->quiet)
        cli_fail(o, code, "quorum unavailable: %zu of %zu nodes voting, need "
                 "%zu", voting, count, count / 2 + 1);

out:
    free(p);
    rl_client_free(c);
    return code;
}
