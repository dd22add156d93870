/* SPDX-License-Identifier: BSD-3-Clause */
/* cmd_acquire.c -- "redlock-cli acquire R [--ttl MS] [--wait MS] [--fence]
 * [--limit K | --shared] [--lock-delay MS]".
 *
 * Takes the lock once (with the retry policy, or waiting up to --wait),
 * prints the token on stdout line 1 (or one JSON object) and leaves the
 * lock in Redis: the handle is freed without releasing, so the key lives
 * until its TTL or a "release R TOKEN". SIGINT, SIGTERM or SIGHUP while it
 * waits cancels the acquire, leaving no key behind (exit 128+N). Exit 0
 * acquired, 1 not acquired, 3 no quorum, 2 usage. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char usage[] =
"Usage: redlock-cli [GLOBAL OPTIONS] acquire R [--ttl MS] [--wait MS]\n"
"                                             [--fence] [--limit K]\n"
"                                             [--shared] [--lock-delay MS]\n"
"                                             [--owner S] [--fair]\n"
"                                             [--priority N]\n"
"\n"
"Acquire the lock on resource R and print its token on stdout (line 1).\n"
"The lock stays held until its TTL runs out or 'release R TOKEN'.\n"
"\n"
"  --ttl MS    lock time-to-live, 1..--max-ttl (%{ttl})\n"
"  --wait MS   keep trying for up to MS ms ('forever': until acquired);\n"
"              without it the retry policy (--retry-count) applies.\n"
"              On a terminal one line on stderr shows the wait: who\n"
"              holds R (owner), for how long more, how long we waited,\n"
"              the place in the queue with --fair; cleared once\n"
"              acquired (-v: also on a pipe or with --json; -q: never)\n"
"  --fence     also issue a fencing token (strictly increasing), printed\n"
"              on stdout line 2\n"
"  --limit K   a semaphore with K permits (1..1024): take one of the K slot\n"
"              locks R:slot:0..K-1; prints slot<i>/TOKEN\n"
"  --shared    a reader of the read-write lock R (readers share, writers --\n"
"              plain acquires -- exclude them); prints shared/TOKEN\n"
"  --lock-delay MS  keep the key MS ms beyond the TTL unless released, so\n"
"              a crashed holder is succeeded only after its writes drain;\n"
"              prints delay<MS>/TOKEN. release and extend take what acquire\n"
"              printed.\n"
"  --owner S   who holds it, shown by status: up to 64 visible ASCII\n"
"              characters (default host:pid; '' for none). Stored in the\n"
"              value after the token: the token printed ends with .S\n"
"  --fair      wait in R's queue: fair waiters are served first come,\n"
"              first served (docs/fair-queue.md); with --limit the\n"
"              permits go in queue order; with --shared a reader\n"
"              waits for the writers queued before it only\n"
"  --priority N  0..255, implies --fair: a higher class is served first,\n"
"              first come, first served within a class (default 0)\n"
"\n"
"With --json: one object with token, validity_ms, ttl_ms, fence, nodes_ok\n"
"and nodes.\n"
"SIGINT, SIGTERM or SIGHUP while it waits ends the wait at once and\n"
"leaves no key behind.\n"
"Exit: 0 acquired, 1 held by another client, 2 usage, 3 no quorum,\n"
"128+N signal N arrived while waiting.\n"
"\n"
"Examples:\n"
"  tok=$(redlock-cli acquire deploy --ttl 60000) || exit 1\n"
"  redlock-cli --json acquire deploy --wait 10000 --fence\n";

/* What acquire prints for a's lock: the handle (and the fence on line 2
 * with --fence), or with --json one object. */
static void print_acquired(const struct cli_opts *o,
                           const struct cli_acquire *a)
{
    const rl_acquire_opts *ao = &a->ao;
    const rl_lock *l = a->l;

    if (o->json) {
        fputs("{\"resource\":", stdout);
        cli_json_str(stdout, a->resource);
        fputs(",\"token\":", stdout);
        cli_json_str(stdout, rl_lock_token(l));
        if (cli_kind_any(ao)) {
            fputs(",\"handle\":\"", stdout);
            cli_print_handle(stdout, l, ao->lock_delay_ms);
            printf("\",\"slot\":%d,\"shared\":%s,\"lock_delay_ms\":%u",
                   rl_lock_slot(l),
                   rl_lock_mode(l) == RL_MODE_SHARED ? "true" : "false",
                   ao->lock_delay_ms);
        }
        printf(",\"validity_ms\":%" PRId64 ",\"ttl_ms\":%u,\"fence\":%" PRIu64
               ",\"nodes_ok\":%u,\"nodes\":%zu}\n", rl_lock_validity_ms(l),
               ao->ttl_ms, rl_lock_fence(l), rl_lock_nodes_ok(l),
               o->cfg.node_count);
    } else {
        cli_print_handle(stdout, l, ao->lock_delay_ms);
        putchar('\n');
        if (a->fence)
            printf("%" PRIu64 "\n", rl_lock_fence(l));
        cli_info(o, "acquired '%s': validity %" PRId64 " ms, %u of %zu "
                 "nodes", a->resource, rl_lock_validity_ms(l),
                 rl_lock_nodes_ok(l), o->cfg.node_count);
    }
}

/* Parse the arguments into *a. 0 to go on, 1 when help was printed, -1 on
 * a usage error (printed). */
static int acquire_args(struct cli_opts *o, int argc, char **argv,
                        const char *help, struct cli_acquire *a)
{
    const char *ttl_s = NULL;
    const char *wait_s = NULL;
    struct cli_kind kind = {0};
    const struct cli_cmdopt opts[] = {
        {"ttl", &ttl_s, NULL},
        {"wait", &wait_s, NULL},
        {"fence", NULL, &a->fence},
        CLI_KIND_OPTS(kind),
    };
    rl_acquire_opts *ao = &a->ao;
    int code;

    code = cli_parse_resource(o, argc, argv, opts, 3 + CLI_KIND_NOPTS, help,
                              "resource", "R [--ttl MS] [--wait MS] "
                              "[--fence]", &a->resource);
    if (code != 0)
        return code;
    ao->ttl_ms = cli_default_ttl(o);
    if ((ttl_s != NULL && cli_parse_ttl(o, "--ttl", ttl_s, &ao->ttl_ms) != 0) ||
        (wait_s != NULL && cli_parse_wait(o, wait_s, &ao->wait_ms) != 0) ||
        cli_kind_apply(o, &kind, ao) != 0)
        return -1;
    ao->fencing = a->fence;
    return 0;
}

int cli_acquire_start(struct cli_opts *o, int argc, char **argv,
                      const char *help, struct cli_acquire *a)
{
    int code;

    memset(a, 0, sizeof(*a));
    a->in.sfd = -1;
    a->in.eof_fd = -1;
    a->in.show = o;             /* the wait line */
    code = acquire_args(o, argc, argv, help, a);
    if (code != 0)
        return code > 0 ? -1 : CLI_EXIT_USAGE;
    /* Before any thread exists (the library's inherit the mask): a
     * signal ends the wait and leaves no key behind. */
    a->in.sfd = cli_block_signals(false);
    if (a->in.sfd < 0)
        return cli_fail(o, CLI_EXIT_NOT_ACQUIRED, "cannot set up: %s",
                        strerror(errno));
    return CLI_EXIT_OK;
}

int cli_acquire_take(struct cli_opts *o, struct cli_acquire *a)
{
    int code;

    code = cli_client_new(o, &a->c);
    if (code != CLI_EXIT_OK)
        return code;
    code = cli_acquire_or_exit(o, a->c, a->resource, &a->ao, &a->in, &a->l);
    if (code == CLI_EXIT_OK)
        print_acquired(o, a);
    return code;
}

void cli_acquire_free(struct cli_acquire *a)
{
    rl_lock_free(a->l);
    rl_client_free(a->c);
    if (a->in.sfd >= 0)
        close(a->in.sfd);
}

int cmd_acquire(struct cli_opts *o, int argc, char **argv)
{
    struct cli_acquire a;
    int code;

    code = cli_acquire_start(o, argc, argv, usage, &a);
    if (code == CLI_EXIT_OK)
        code = cli_acquire_take(o, &a);
    /* Keep the key in Redis: free the handle, do not release. */
    cli_acquire_free(&a);
    return code < 0 ? CLI_EXIT_OK : code;
}
