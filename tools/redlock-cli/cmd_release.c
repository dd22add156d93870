/* SPDX-License-Identifier: BSD-3-Clause */
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
 * too few nodes answered. A semaphore's slots (R:slot:<i>, found in one
 * read of every possible slot) are removed the same way. */
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
"`run` signals its command). The slots of a semaphore R are removed\n"
"too, each shown as R:slot:<i>. Fence counters are never touched. A lock\n"
"whose holder's validity was already over (only its lock-delay was left)\n"
"is said to be so: removing it ends the delay, nobody loses anything.\n"
"With --json: one object with resource, result (\"removed\", \"free\" or\n"
"\"no_quorum\"), removed, quorum, in_lock_delay, nodes: an array of\n"
"{node, reachable, holder, readers, pttl_ms, lock_delay_ms, error}, and\n"
"slots: one such object (with slot) per semaphore slot removed.\n"
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

/* One key removed by force: R's, or one of its semaphore's slots. */
struct forced {
    char name[CLI_SLOT_NAME_MAX];
    int64_t slot;                /* -1: R itself */
    rl_holder_info *h;           /* per node */
    size_t count, removed;
    rl_status st;                /* RL_OK or RL_ENOQUORUM */
};

static const char *forced_result(const struct forced *f)
{
    return f->st == RL_ENOQUORUM              ? "no_quorum"
           : f->removed >= f->count / 2 + 1 ? "removed"
                                              : "free";
}

/* Remove f->name by force; RL_OK, RL_ENOQUORUM or the call's failure. */
static rl_status force_one(const struct cli_opts *o, rl_client *c,
                           struct forced *f)
{
    f->h = calloc(o->cfg.node_count, sizeof(*f->h));
    if (f->h == NULL)
        return RL_ENOMEM;
    f->st = rl_resource_force_unlock(c, f->name, f->h, o->cfg.node_count,
                                     &f->count, &f->removed);
    return f->st;
}

/* The JSON object of f, without its closing brace. */
static void print_forced_json(const struct forced *f)
{
    fputs("{\"resource\":", stdout);
    cli_json_str(stdout, f->name);
    if (f->slot >= 0)
        printf(",\"slot\":%lld", (long long)f->slot);
    printf(",\"result\":\"%s\",\"removed\":%zu,\"quorum\":%zu,"
           "\"in_lock_delay\":%s,\"nodes\":", forced_result(f), f->removed,
           f->count / 2 + 1,
           removed_in_lock_delay(f->h, f->count) ? "true" : "false");
    cli_json_holders(stdout, f->h, f->count);
}

static void print_forced_text(const struct forced *f)
{
    const char *result = forced_result(f);
    const char *name = f->name;
    size_t i, removed = f->removed, count = f->count;

    printf("%-28s %-9s %-8s %10s  %s\n", "NODE", "REACHABLE", "REMOVED",
           "PTTL_MS", "ERROR");
    for (i = 0; i < count; i++) {
        char tok[CLI_HOLDER_TEXT];
        char pttl[24];

        cli_holder_text(tok, sizeof(tok), &f->h[i]);
        cli_pttl_text(pttl, sizeof(pttl), &f->h[i], "-");
        printf("%-28s %-9s %-8s %10s  %s\n", f->h[i].name,
               f->h[i].reachable ? "yes" : "no", tok, pttl, f->h[i].error);
    }
    if (strcmp(result, "removed") == 0 &&
        removed_in_lock_delay(f->h, count))
        printf("%s: removed from %zu of %zu nodes: its holder's validity "
               "was already over; this ended its lock-delay\n", name,
               removed, count);
    else if (strcmp(result, "removed") == 0)
        printf("%s: removed from %zu of %zu nodes: its holder has lost the "
               "lock\n", name, removed, count);
    else if (strcmp(result, "free") == 0 && removed > 0)
        printf("%s: was not held by a majority; stale keys removed from %zu "
               "of %zu nodes\n", name, removed, count);
    else if (strcmp(result, "free") == 0)
        printf("%s: already free\n", name);
    else
        printf("%s: too few nodes answered; removed from %zu of %zu nodes\n",
               name, removed, count);
}

/* R's semaphore slots that hold a key on some node into f[1..]; the
 * number found. */
static size_t find_slots(rl_client *c, const char *resource,
                         struct forced *f)
{
    uint32_t *slots = calloc(RL_MAX_LIMIT, sizeof(*slots));
    uint32_t i, found;
    size_t n = 0;

    if (slots == NULL)
        return 0;
    found = cli_semaphore_slots(c, resource, true, slots);
    for (i = 0; i < found; i++) {
        if (cli_slot_name(f[1 + n].name, sizeof(f[1 + n].name), resource,
                          slots[i]) != 0)
            break;
        f[1 + n++].slot = slots[i];
    }
    free(slots);
    return n;
}

/* release --force R: R's key, and its semaphore's slots if it has any
 * (a semaphore's permits are keys of their own). */
static int force_release(struct cli_opts *o, const char *resource)
{
    struct forced *f = calloc(1 + RL_MAX_LIMIT, sizeof(*f));
    rl_client *c = NULL;
    size_t nslots = 0, i;
    rl_status st = RL_OK;
    bool removed = false;
    int code;

    code = cli_client_new(o, &c);
    if (code != CLI_EXIT_OK) {
        free(f);
        return code;
    }
    if (f == NULL) {
        code = cli_fail(o, CLI_EXIT_NOT_ACQUIRED, "out of memory");
        goto out;
    }
    snprintf(f[0].name, sizeof(f[0].name), "%s", resource);
    f[0].slot = -1;
    nslots = find_slots(c, resource, f);
    for (i = 0; i <= nslots; i++) {
        rl_status one = force_one(o, c, &f[i]);

        if (one != RL_OK && one != RL_ENOQUORUM) {
            code = cli_status_exit(o, one, f[i].name);
            goto out;
        }
        if (one == RL_ENOQUORUM)
            st = one;
        removed = removed || strcmp(forced_result(&f[i]), "removed") == 0;
    }
    code = st == RL_ENOQUORUM ? CLI_EXIT_NO_QUORUM
           : removed          ? CLI_EXIT_OK
                              : CLI_EXIT_NOT_ACQUIRED;
    if (o->json) {
        print_forced_json(&f[0]);
        fputs(",\"slots\":[", stdout);
        for (i = 1; i <= nslots; i++) {
            fputs(i > 1 ? "," : "", stdout);
            print_forced_json(&f[i]);
            fputc('}', stdout);
        }
        fputs("]}\n", stdout);
    } else if (!o->quiet) {
        /* A semaphore's R has no key of its own: its slots say it all. */
        size_t first = nslots > 0 && f[0].st == RL_OK && f[0].removed == 0;

        for (i = first; i <= nslots; i++) {
            fputs(i > first ? "\n" : "", stdout);
            print_forced_text(&f[i]);
        }
    }
    if (st == RL_ENOQUORUM)
        code = cli_status_exit(o, st, resource);

out:
    for (i = 0; f != NULL && i <= nslots; i++)
        free(f[i].h);
    free(f);
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
