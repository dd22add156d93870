/* SPDX-License-Identifier: BSD-3-Clause */
/* cmd_extend.c -- "redlock-cli extend R TOKEN [--ttl MS]".
 *
 * Adopts the lock by its token (rl_lock_adopt) and extends it by
 * re-quorum (rl_extend): the expiry is reset only on nodes whose key still
 * holds TOKEN, an absent key is never recreated. Prints the new validity
 * in ms. Exit 0 extended, 1 not held (by this token), 3 no quorum. */
#include <inttypes.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
"Usage: redlock-cli [GLOBAL OPTIONS] extend R TOKEN [--ttl MS]\n"
"\n"
"Extend the lock on R held by TOKEN (from 'acquire') to a new TTL, on a\n"
"majority of the nodes. Prints the new validity in milliseconds.\n"
"TOKEN is what acquire printed (slot<i>/, shared/, delay<MS>/ prefixes\n"
"for a semaphore slot, a reader, a lock-delay, which extend keeps).\n"
"\n"
"  --ttl MS    new time-to-live, 1..--max-ttl (%{ttl})\n"
"\n"
"With --json: {\"resource\":..., \"validity_ms\":..., \"nodes_ok\":...}\n"
"Exit: 0 extended, 1 not held by TOKEN, 2 usage, 3 no quorum.\n"
"\n"
"Example:\n"
"  tok=$(redlock-cli acquire job --ttl 10000)\n"
"  redlock-cli extend job \"$tok\" --ttl 10000\n";

/* Extend l to *arg (uint32_t) ms and print its new validity. */
static int extend_lock(const struct cli_opts *o, const char *resource,
                       rl_lock **l, void *arg)
{
    uint32_t ttl = *(const uint32_t *)arg;
    rl_status st;

    st = rl_extend(*l, ttl);
    if (st != RL_OK)
        return cli_status_exit(o, st, resource);
    if (o->json) {
        fputs("{\"resource\":", stdout);
        cli_json_str(stdout, resource);
        printf(",\"validity_ms\":%" PRId64 ",\"ttl_ms\":%u,\"nodes_ok\":%u,"
               "\"nodes\":%zu}\n", rl_lock_validity_ms(*l), ttl,
               rl_lock_nodes_ok(*l), o->cfg.node_count);
    } else {
        printf("%" PRId64 "\n", rl_lock_validity_ms(*l));
    }
    return CLI_EXIT_OK;
}

int cmd_extend(struct cli_opts *o, int argc, char **argv)
{
    const char *ttl_s = NULL;
    const struct cli_cmdopt opts[] = {
        {"ttl", &ttl_s, NULL},
    };
    const char *pos[2];
    uint32_t ttl;
    int npos;
    int code;

    code = cli_parse_args(o, argc, argv, opts, 1, usage, pos, 2, &npos, NULL);
    if (code != 0)
        return code > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    ttl = cli_default_ttl(o);
    if (cli_check_handle_args(o, pos, npos, "extend R TOKEN [--ttl MS]") != 0)
        return CLI_EXIT_USAGE;
    if (ttl_s != NULL && cli_parse_ttl(o, "--ttl", ttl_s, &ttl) != 0)
        return CLI_EXIT_USAGE;
    return cli_on_handle(o, pos[0], pos[1], extend_lock, &ttl);
}
