/* cmd_release.c -- "redlock-cli release R TOKEN" and "release --force R".
 *
 * release R TOKEN adopts the lock by its token and releases it by
 * compare-and-delete on every node. Exit 0 when released or already free,
 * 1 when a majority holds another token, 3 when too few nodes answered.
 * release --force R is the admin's force unlock
 * (rl_resource_force_unlock): R's key goes on every node whatever token it
 * holds, and the holders removed are shown per node by token prefix (8
 * characters, as status shows them: enough to recognise, not enough to
 * release) or as readers:N for a read-write lock's readers. Exit 0 when
 * removed from a majority (R was locked; its holder has lost it), 1 when
 * R was already free (stale keys on a minority are removed too), 3 when
 * too few nodes answered. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
"Usage: redlock-cli [GLOBAL OPTIONS] release R TOKEN\n"
"       redlock-cli [GLOBAL OPTIONS] release --force R\n"
"\n"
"Release the lock on R held by TOKEN (compare-and-delete on every node).\n"
"TOKEN is what acquire printed: for a semaphore slot, a reader or a lock\n"
"with a lock-delay it starts with slot<i>/, shared/ or delay<MS>/.\n"
"\n"
"Exit: 0 released or already free, 1 held by another token, 2 usage,\n"
"3 no quorum (the keys expire by themselves).\n"
"\n"
"--force (admin): delete R on every node whatever token holds it, and\n"
"show per node the holder removed (first 8 characters of its token, or\n"
"readers:N for the readers of a read-write lock, removed too). The\n"
"holder is not asked: it loses the lock (its watchdog reports it lost,\n"
"`run` signals its command). Fence counters are never touched. A lock\n"
"whose holder's validity was already over (only its lock-delay was left)\n"
"is said to be so: removing it ends the delay, nobody loses anything.\n"
"With --json: one object with resource, result (\"removed\", \"free\" or\n"
"\"no_quorum\"), removed, quorum, in_lock_delay and nodes: an array of\n"
"{node, reachable, holder, readers, pttl_ms, lock_delay_ms, error}.\n"
"Exit: 0 removed from a majority, 1 already free, 2 usage, 3 no quorum\n"
"(removed where nodes answered).\n"
"\n"
"Examples:\n"
"  tok=$(redlock-cli acquire deploy) && ./deploy.sh;\n"
"  redlock-cli release deploy \"$tok\"\n"
"  redlock-cli release --force deploy     # after a lost deployment\n";

/* Did the lock removed have validity left on fewer than a quorum of
 * the nodes (its holder's validity over, only its lock-delay left)? */
static bool removed_in_lock_delay(const rl_holder_info *h, size_t count)
{
    size_t i, delayed = 0, valid = 0;

    for (i = 0; i < count; i++) {
        if (!h[i].reachable || h[i].token[0] == '\0')
            continue;
        if (h[i].pttl_ms >= 0 && h[i].pttl_ms <= h[i].lock_delay_ms)
            delayed++;
        else
            valid++;
    }
    return delayed > 0 && valid < count / 2 + 1;
}

static void print_forced(const struct cli_opts *o, const char *resource,
                         const rl_holder_info *h, size_t count,
                         size_t removed, const char *result)
{
    bool delayed = removed_in_lock_delay(h, count);
    size_t i;

    if (o->json) {
        fputs("{\"resource\":", stdout);
        cli_json_str(stdout, resource);
        printf(",\"result\":\"%s\",\"removed\":%zu,\"quorum\":%zu,"
               "\"in_lock_delay\":%s,\"nodes\":", result, removed,
               count / 2 + 1, delayed ? "true" : "false");
        cli_json_holders(stdout, h, count);
        fputs("}\n", stdout);
        return;
    }
    printf("%-28s %-9s %-8s %10s  %s\n", "NODE", "REACHABLE", "REMOVED",
           "PTTL_MS", "ERROR");
    for (i = 0; i < count; i++) {
        char tok[CLI_HOLDER_TEXT];
        char pttl[24];

        cli_holder_text(tok, sizeof(tok), &h[i]);
        cli_pttl_text(pttl, sizeof(pttl), &h[i], "-");
        printf("%-28s %-9s %-8s %10s  %s\n", h[i].name,
               h[i].reachable ? "yes" : "no", tok, pttl, h[i].error);
    }
    if (strcmp(result, "removed") == 0 && delayed)
        printf("%s: removed from %zu of %zu nodes: its holder's validity "
               "was already over; this ended its lock-delay\n", resource,
               removed, count);
    else if (strcmp(result, "removed") == 0)
        printf("%s: removed from %zu of %zu nodes: its holder has lost the "
               "lock\n", resource, removed, count);
    else if (strcmp(result, "free") == 0 && removed > 0)
        printf("%s: was not held by a majority; stale keys removed from %zu "
               "of %zu nodes\n", resource, removed, count);
    else if (strcmp(result, "free") == 0)
        printf("%s: already free\n", resource);
    else
        printf("%s: too few nodes answered; removed from %zu of %zu nodes\n",
               resource, removed, count);
}

/* release --force R */
static int force_release(struct cli_opts *o, const char *resource)
{
    rl_holder_info *h = NULL;
    rl_client *c = NULL;
    size_t count = 0;
    size_t removed = 0;
    rl_status st;
    int code;

    code = cli_client_new(o, &c);
    if (code != CLI_EXIT_OK)
        return code;
    h = calloc(o->cfg.node_count, sizeof(*h));
    if (h == NULL) {
        code = cli_fail(o, CLI_EXIT_NOT_ACQUIRED, "out of memory");
        goto out;
    }
    st = rl_resource_force_unlock(c, resource, h, o->cfg.node_count, &count,
                                  &removed);
    if (st != RL_OK && st != RL_ENOQUORUM) {
        code = cli_status_exit(o, st, resource);
        goto out;
    }
    if (st == RL_ENOQUORUM)
        code = CLI_EXIT_NO_QUORUM;
    else if (removed >= count / 2 + 1)
        code = CLI_EXIT_OK;
    else
        code = CLI_EXIT_NOT_ACQUIRED;
    if (!o->quiet || o->json)
        print_forced(o, resource, h, count, removed,
                     code == CLI_EXIT_OK            ? "removed"
                     : code == CLI_EXIT_NO_QUORUM ? "no_quorum"
                                                  : "free");
    if (st == RL_ENOQUORUM)
        code = cli_status_exit(o, st, resource);

out:
    free(h);
    rl_client_free(c);
    return code;
}

/* Release *l (consuming it): a lock whose validity ran out is free now,
 * as asked. */
static int release_lock(const struct cli_opts *o, const char *resource,
                        rl_lock **l, void *arg)
{
    rl_status st;

    (void)arg;
    st = rl_release(*l);
    *l = NULL;
    if (st == RL_ELOST)
        st = RL_OK;
    if (st != RL_OK)
        return cli_status_exit(o, st, resource);
    if (o->json) {
        fputs("{\"resource\":", stdout);
        cli_json_str(stdout, resource);
        fputs(",\"released\":true}\n", stdout);
    }
    cli_info(o, "released '%s'", resource);
    return CLI_EXIT_OK;
}

int cmd_release(struct cli_opts *o, int argc, char **argv)
{
    const char *pos[2];
    bool force = false;
    const struct cli_cmdopt opts[] = {{"force", NULL, &force}};
    int npos;
    int code;

    code = cli_parse_args(o, argc, argv, opts, 1, usage, pos, 2, &npos, NULL);
    if (code != 0)
        return code > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (force && npos != 1)
        return cli_fail(o, CLI_EXIT_USAGE, "%s (usage: release --force R)",
                        npos == 0 ? "missing resource"
                                  : "--force takes no TOKEN");
    if (force)
        return cli_check_resource(o, pos[0]) != 0
                   ? CLI_EXIT_USAGE
                   : force_release(o, pos[0]);
    if (cli_check_handle_args(o, pos, npos, "release R TOKEN") != 0)
        return CLI_EXIT_USAGE;
    return cli_on_handle(o, pos[0], pos[1], release_lock, NULL);
}
