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
"  --ttl MS    new time-to-live, 1..--max-ttl (30000)\n"
"\n"
"With --json: {\"resource\":..., \"validity_ms\":..., \"nodes_ok\":...}\n"
"Exit: 0 extended, 1 not held by TOKEN, 2 usage, 3 no quorum.\n"
"\n"
"Example:\n"
"  tok=$(redlock-cli acquire job --ttl 10000)\n"
"  redlock-cli extend job \"$tok\" --ttl 10000\n";

int cmd_extend(struct cli_opts *o, int argc, char **argv)
{
    const char *ttl_s = NULL;
    const struct cli_cmdopt opts[] = {
        {"ttl", &ttl_s, NULL},
    };
    const char *pos[2];
    uint32_t ttl;
    rl_client *c = NULL;
    rl_lock *l = NULL;
    rl_status st;
    int npos;
    int code;

    code = cli_parse_args(o, argc, argv, opts, 1, usage, pos, 2, &npos, NULL);
    if (code != 0)
        return code > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (npos < 2)
        return cli_fail(o, CLI_EXIT_USAGE, "missing %s (usage: extend R "
                        "TOKEN [--ttl MS])", npos == 0 ? "resource" : "TOKEN");
    ttl = cli_default_ttl(o);
    if (cli_check_resource(o, pos[0]) != 0 ||
        (ttl_s != NULL && cli_parse_ttl(o, "--ttl", ttl_s, &ttl) != 0))
        return CLI_EXIT_USAGE;
    code = cli_adopt_handle(o, pos[0], pos[1], &c, &l);
    if (code != CLI_EXIT_OK)
        goto out;
    st = rl_extend(l, ttl);
    if (st != RL_OK) {
        code = cli_status_exit(o, st, pos[0]);
        goto out;
    }
    if (o->json) {
        fputs("{\"resource\":", stdout);
        cli_json_str(stdout, pos[0]);
        printf(",\"validity_ms\":%" PRId64 ",\"ttl_ms\":%u,\"nodes_ok\":%u,"
               "\"nodes\":%zu}\n", rl_lock_validity_ms(l), ttl,
               rl_lock_nodes_ok(l), o->node_count);
    } else {
        printf("%" PRId64 "\n", rl_lock_validity_ms(l));
    }
    code = CLI_EXIT_OK;

out:
    rl_lock_free(l);
    rl_client_free(c);
    return code;
}
