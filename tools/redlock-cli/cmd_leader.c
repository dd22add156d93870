/* cmd_leader.c -- "redlock-cli leader NAME [--watch]": who
 * leads NAME (see elect), from rl_resource_inspect: the value a majority
 * holds, its owner (the published value), its term (the fencing token)
 * and how long a majority still holds it.
 *
 * --watch prints a line per change of leader (a new token, or none) until
 * SIGINT/SIGTERM/SIGHUP (exit 0). It polls every WATCH_TICK_MS: a crashed
 * leader publishes no release, and the public API has no subscription to
 * release notifications. Exit 0 a leader, 1 none, 2 usage. */
#include <inttypes.h>
#include <poll.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli.h"

/* How often --watch reads the nodes, ms. */
#define WATCH_TICK_MS 100

static const char usage[] =
"Usage: redlock-cli [GLOBAL OPTIONS] leader NAME [--watch]\n"
"\n"
"Show the current leader of NAME (see 'elect'): its owner (the published\n"
"value), its term (strictly increasing from leader to leader) and how\n"
"long a majority of the nodes still holds its lock.\n"
"\n"
"  --watch   print a line per change of leader (or of 'none') until\n"
"            SIGINT/SIGTERM; the nodes are read every 100 ms\n"
"\n"
"With --json: one object (a line per change with --watch): name, leader\n"
"(true/false), owner, term, validity_ms, holder (8 characters of the\n"
"token).\n"
"Exit: 0 a leader (--watch: stopped by a signal), 1 none, 2 usage.\n"
"\n"
"Examples:\n"
"  redlock-cli leader scheduler\n"
"  redlock-cli --json leader scheduler --watch\n";

static void print_leader(const struct cli_opts *o, const char *name,
                         const rl_resource_info *info)
{
    if (o->json) {
        fputs("{\"name\":", stdout);
        cli_json_str(stdout, name);
        printf(",\"leader\":%s,\"owner\":", info->held ? "true" : "false");
        if (info->held && info->owner[0] != '\0')
            cli_json_str(stdout, info->owner);
        else
            fputs("null", stdout);
        printf(",\"term\":%" PRIu64 ",\"validity_ms\":%" PRId64
               ",\"holder\":", info->held ? info->fence : 0,
               info->validity_ms);
        if (info->held)
            printf("\"%.*s\"", CLI_TOKEN_SHOWN, info->token);
        else
            fputs("null", stdout);
        fputs("}\n", stdout);
    } else if (info->held) {
        printf("%s: leader %s, term %" PRIu64 ", valid %" PRId64
               " ms (holder %.*s)\n", name,
               info->owner[0] != '\0' ? info->owner : "unknown",
               info->fence, info->validity_ms, CLI_TOKEN_SHOWN, info->token);
    } else {
        printf("%s: no leader\n", name);
    }
    fflush(stdout);
}

/* Print a line whenever the leader changes, until a signal. */
static int watch(const struct cli_opts *o, rl_client *c, const char *name,
                 int sfd)
{
    char last[sizeof(((rl_resource_info *)0)->token)] = "\x01";
    struct signalfd_siginfo si;
    struct pollfd pfd;
    rl_resource_info info;

    for (;;) {
        if (rl_resource_inspect(c, name, &info, NULL, 0, NULL) == RL_EINVAL)
            return cli_status_exit(o, RL_EINVAL, name);
        if (!info.held)
            info.token[0] = '\0';
        if (strcmp(last, info.token) != 0) {
            snprintf(last, sizeof(last), "%s", info.token);
            print_leader(o, name, &info);
        }
        pfd.fd = sfd;
        pfd.events = POLLIN;
        if (poll(&pfd, 1, WATCH_TICK_MS) > 0 &&
            read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
            return CLI_EXIT_OK;
    }
}

int cmd_leader(struct cli_opts *o, int argc, char **argv)
{
    bool watching = false;
    const struct cli_cmdopt opts[] = {{"watch", NULL, &watching}};
    rl_resource_info info;
    const char *pos[1];
    rl_client *c = NULL;
    int sfd = -1;
    int code;

    code = cli_parse_resource(o, argc, argv, opts, 1, usage, "NAME",
                              "NAME [--watch]", &pos[0]);
    if (code != 0)
        return code > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (watching) {
        sfd = cli_block_signals(false);
        if (sfd < 0)
            return cli_fail(o, CLI_EXIT_USAGE, "cannot set up signals");
    }
    code = cli_client_new(o, &c);
    if (code != CLI_EXIT_OK)
        goto out;
    if (watching) {
        code = watch(o, c, pos[0], sfd);
        goto out;
    }
    if (rl_resource_inspect(c, pos[0], &info, NULL, 0, NULL) == RL_EINVAL) {
        code = cli_status_exit(o, RL_EINVAL, pos[0]);
        goto out;
    }
    print_leader(o, pos[0], &info);
    code = info.held ? CLI_EXIT_OK : CLI_EXIT_NOT_ACQUIRED;

out:
    rl_client_free(c);
    if (sfd >= 0)
        close(sfd);
    return code;
}
