/* cmd_release.c -- "redlock-cli release R TOKEN" (DESIGN §7).
 *
 * Adopts the lock by its token and releases it by compare-and-delete on
 * every node. Exit 0 when released or already free, 1 when a majority
 * holds another token, 3 when too few nodes answered. */
#include <string.h>

#include "cli.h"

static const char usage[] =
"Usage: redlock-cli [GLOBAL OPTIONS] release R TOKEN\n"
"\n"
"Release the lock on R held by TOKEN (compare-and-delete on every node).\n"
"\n"
"Exit: 0 released or already free, 1 held by another token, 2 usage,\n"
"3 no quorum (the keys expire by themselves).\n"
"\n"
"Example:\n"
"  tok=$(redlock-cli acquire deploy) && ./deploy.sh;\n"
"  redlock-cli release deploy \"$tok\"\n";

int cmd_release(struct cli_opts *o, int argc, char **argv)
{
    const char *pos[2];
    rl_client *c = NULL;
    rl_lock *l = NULL;
    rl_status st;
    int npos;
    int code;

    code = cli_parse_args(o, argc, argv, NULL, 0, usage, pos, 2, &npos, NULL);
    if (code != 0)
        return code > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (npos < 2)
        return cli_fail(o, CLI_EXIT_USAGE, "missing %s (usage: release R "
                        "TOKEN)", npos == 0 ? "resource" : "TOKEN");
    if (cli_check_resource(o, pos[0]) != 0)
        return CLI_EXIT_USAGE;
    code = cli_adopt_token(o, pos[0], pos[1], &c, &l);
    if (code != CLI_EXIT_OK)
        goto out;
    st = rl_release(l);         /* consumes l */
    l = NULL;
    if (st == RL_ELOST)
        st = RL_OK;             /* ran out before: free now, as asked */
    if (st != RL_OK) {
        code = cli_status_exit(o, st, pos[0]);
        goto out;
    }
    if (o->json) {
        fputs("{\"resource\":", stdout);
        cli_json_str(stdout, pos[0]);
        fputs(",\"released\":true}\n", stdout);
    }
    cli_info(o, "released '%s'", pos[0]);
    code = CLI_EXIT_OK;

out:
    rl_lock_free(l);
    rl_client_free(c);
    return code;
}
