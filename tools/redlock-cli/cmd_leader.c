/* SPDX-License-Identifier: BSD-3-Clause */
/* cmd_leader.c -- "redlock-cli leader NAME [--watch]": who
 * leads NAME (see elect), from rl_resource_inspect: the value a majority
 * holds, its owner (the published value), its term (the fencing token)
 * and how long a majority still holds it. A campaign sets its key a round
 * before its term: a one-shot read that finds a candidate between its
 * rounds (RL_TERM_PENDING) reads again, backing off, and reports
 * "election in progress" (exit 1) if it is still unsettled after about a
 * second; --watch reports only settled leaders (rl_observe).
 *
 * --watch prints a line per change of leader (another leader, none, or a
 * proclaimed owner) until SIGINT/SIGTERM/SIGHUP (exit 0), from
 * rl_observe: the lines are printed on the client's loop thread while
 * this one waits for the signal (or for the observer's failure, told
 * over a pipe). Exit 0 a leader, 1 none (or an election in progress),
 * 2 usage, 3 unknown (fewer than a majority answered). */
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static const char usage[] =
"Usage: redlock-cli [GLOBAL OPTIONS] leader NAME [--watch]\n"
"\n"
"Show the current leader of NAME (see 'elect'): its owner (the published\n"
"value), its term (strictly increasing from leader to leader) and how\n"
"long a majority of the nodes still holds its lock.\n"
"\n"
"  --watch   print a line per change of leader (another leader, none, or\n"
"            a proclaimed owner) until SIGINT/SIGTERM; the nodes are read\n"
"            again on every release, when the leader's validity runs out\n"
"            and every retry delay while there is none\n"
"\n"
"A leader is shown only with its own term: a candidate that holds the\n"
"name but has not written its term yet (the second round of its\n"
"campaign) is read again for up to about a second, then shown as\n"
"'election in progress'.\n"
"\n"
"A name whose last holder's validity is over but whose lock-delay is not\n"
"(acquire --lock-delay) has no leader; the line says for how long the\n"
"name is still kept.\n"
"\n"
"With --json: one object (a line per change with --watch): name, leader\n"
"(true/false), electing (true while a candidate is between its rounds),\n"
"in_lock_delay (true while only a lock-delay keeps the name),\n"
"owner, term, validity_ms, holder (8 characters of the token).\n"
"Exit: 0 a leader (--watch: stopped by a signal), 1 none or an election\n"
"in progress, 2 usage, 3 unknown (fewer than a majority answered).\n"
"\n"
"Examples:\n"
"  redlock-cli leader scheduler\n"
"  redlock-cli --json leader scheduler --watch\n";

/* Re-reads of a candidate between its rounds: 2 ms, doubling, ~1 s in
 * all. */
#define SETTLE_READS 10

/* A leader: held, not by a candidate whose term is unwritten, and with
 * validity left (not only its lock-delay). */
static bool is_leader(const rl_resource_info *info)
{
    return info->held && info->term_state != RL_TERM_PENDING &&
           !cli_in_lock_delay(info);
}

static void print_leader(const struct cli_opts *o, const char *name,
                         const rl_resource_info *info)
{
    bool leader = is_leader(info);
    bool delayed = cli_in_lock_delay(info);
    bool electing = info->held && !leader && !delayed;

    if (o->json) {
        fputs("{\"name\":", stdout);
        cli_json_str(stdout, name);
        printf(",\"leader\":%s,\"electing\":%s,\"in_lock_delay\":%s,"
               "\"owner\":", leader ? "true" : "false",
               electing ? "true" : "false", delayed ? "true" : "false");
        if (leader && info->owner[0] != '\0')
            cli_json_str(stdout, info->owner);
        else
            fputs("null", stdout);
        printf(",\"term\":%" PRIu64 ",\"validity_ms\":%" PRId64
               ",\"holder\":", leader ? info->term : 0,
               leader ? info->validity_ms : 0);
        if (leader)
            printf("\"%.*s\"", CLI_TOKEN_SHOWN, info->token);
        else
            fputs("null", stdout);
        fputs("}\n", stdout);
    } else if (leader) {
        printf("%s: leader %s, term %" PRIu64 ", valid %" PRId64
               " ms (holder %.*s)\n", name,
               info->owner[0] != '\0' ? info->owner : "unknown",
               info->term, info->validity_ms, CLI_TOKEN_SHOWN, info->token);
    } else if (delayed) {
        printf("%s: no leader: the last leader's validity is over; its "
               "lock-delay keeps the name for %" PRId64 " ms\n", name,
               info->blocked_ms);
    } else if (electing) {
        printf("%s: election in progress (a candidate holds the name; its "
               "term is not written yet)\n", name);
    } else {
        printf("%s: no leader\n", name);
    }
    fflush(stdout);
}

/* One read; a candidate between its rounds is read again until it has
 * settled either way, or SETTLE_READS later. */
static rl_status read_leader(rl_client *c, const char *name,
                             rl_resource_info *info)
{
    struct timespec pause = {0, 2000000};
    rl_status st;
    int i;

    for (i = 0;; i++) {
        st = rl_resource_inspect(c, name, info, NULL, 0, NULL);
        if (st == RL_EINVAL || !info->held ||
            info->term_state != RL_TERM_PENDING || i == SETTLE_READS)
            return st;
        nanosleep(&pause, NULL);
        if (pause.tv_nsec < 200000000)
            pause.tv_nsec *= 2;
    }
}

struct watch {
    const struct cli_opts *o;
    const char *name;
    int fail_fd;                 /* write end: the observer failed */
};

/* Loop thread: a change (or the observer's end). */
static void changed(rl_observer *obs, rl_status st,
                    const rl_resource_info *info, void *privdata)
{
    struct watch *w = privdata;
    char byte = 1;

    (void)obs;
    if (st == RL_OK) {
        print_leader(w->o, w->name, info);
        return;
    }
    cli_status_exit(w->o, st, w->name);
    if (write(w->fail_fd, &byte, 1) < 0) {
        /* the pipe is ours and empty: cannot fail */
    }
}

/* Print a line whenever the leader changes, until a signal. */
static int watch(const struct cli_opts *o, rl_client *c, const char *name,
                 int sfd)
{
    struct watch w = {o, name, -1};
    struct pollfd pfd[2];
    rl_observer *obs = NULL;
    rl_status st;
    int fds[2];
    int code;

    if (pipe2(fds, O_CLOEXEC) != 0)
        return cli_fail(o, CLI_EXIT_USAGE, "cannot make a pipe");
    w.fail_fd = fds[1];
    st = rl_observe(c, name, changed, &w, &obs);
    if (st != RL_OK) {
        code = cli_status_exit(o, st, name);
        goto out;
    }
    pfd[0].fd = sfd;
    pfd[0].events = POLLIN;
    pfd[1].fd = fds[0];
    pfd[1].events = POLLIN;
    while (poll(pfd, 2, -1) < 0)
        ;
    code = pfd[1].revents != 0 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    rl_observe_stop(obs);
out:
    close(fds[0]);
    close(fds[1]);
    return code;
}

int cmd_leader(struct cli_opts *o, int argc, char **argv)
{
    bool watching = false;
    const struct cli_cmdopt opts[] = {{"watch", NULL, &watching}};
    rl_resource_info info;
    const char *pos[1];
    rl_client *c = NULL;
    rl_status st;
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
    st = read_leader(c, pos[0], &info);
    if (st == RL_EINVAL || st == RL_ENOQUORUM) {
        /* Too few answers: unknown, as status says, not "no leader". */
        code = cli_status_exit(o, st, pos[0]);
        goto out;
    }
    print_leader(o, pos[0], &info);
    code = is_leader(&info) ? CLI_EXIT_OK : CLI_EXIT_NOT_ACQUIRED;

out:
    rl_client_free(c);
    if (sfd >= 0)
        close(sfd);
    return code;
}
