/* SPDX-License-Identifier: BSD-3-Clause */
/* cmd_status.c -- "redlock-cli status R [--limit K]".
 *
 * Reads R's key and each node's vote on every node (rl_resource_status),
 * and shows per node: reachable, the holder's token
 * prefix (8 characters: enough to compare, not enough to release someone
 * else's lock), the PTTL and whether the node votes or is quarantined.
 * A summary (rl_resource_inspect) says whether one token holds a
 * majority, its owner, the majority's remaining validity and its term. A read-write lock
 * held by readers shows how many each node has; --limit K shows each of
 * the semaphore's K slots, read in one step per node
 * (rl_semaphore_inspect); without --limit, a free R is looked up as a
 * semaphore too, so a full one does not read "free". Exit 0 (2 usage). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
"Usage: redlock-cli [GLOBAL OPTIONS] status R [--limit K]\n"
"\n"
"Show, per node, whether it is reachable, the holder of R (first 8\n"
"characters of the token), the remaining PTTL in ms and whether the node\n"
"votes (a node younger than --max-ttl is quarantined and does not vote).\n"
"Readers of a read-write lock show as readers:N, and a line says where a\n"
"waiting writer's intent refuses new readers. --limit K shows each\n"
"slot R:slot:0..K-1 of a semaphore with K permits, all read in one step\n"
"per node; without it, when R's own key is free, the summary names the\n"
"semaphore slots a majority holds.\n"
"\n"
"The summary names the holder a majority agrees on, its owner (--owner\n"
"of acquire, run, hold; 'unknown' for a lock taken without one or by\n"
"another client), how long its validity lasts on a majority (then its\n"
"lock-delay, if it took one: the summary says when only that is left;\n"
"'held for its period' when its holder released it before the end of\n"
"its run --at-least period, which keeps it until then),\n"
"and the holder's own term when it acquired with --fence ('term being\n"
"written' between the two rounds of a fenced acquire: a leader is not\n"
"elected yet; a lock on several resources is fenced by its first\n"
"resource only: when R is a later one, or the holder took R without\n"
"--fence, the holder has no term on R).\n"
"When waiters queue with --fair, a table shows the queue a majority\n"
"holds, next to be served first: position, token (8 characters),\n"
"owner, kind (reader, or exclusive: a mutex or a writer), priority,\n"
"ticket, nodes holding it, the ms until it lapses unless its waiter\n"
"refreshes it, and the ms it has waited since it registered (the\n"
"median over those nodes, each by its own clock; - unknown). Holders\n"
"granted from the queue are not listed.\n"
"\n"
"With --json: one object with resource, held, holder, owner,\n"
"validity_ms (the holder's, without the lock-delay), lock_delay_ms,\n"
"in_lock_delay (the holder's validity is over, its lock-delay is not),\n"
"for_period (released before the end of its --at-least period: kept\n"
"until then, its job done),\n"
"blocked_ms (how long a majority's keys still refuse others), fence (the\n"
"nodes' fence counter, one for every resource: the latest fencing token\n"
"issued on them; the next fenced acquire of R gets more), term (the\n"
"holder's; null when not fenced on R or\n"
"not written yet), term_pending, writers_waiting (nodes where a waiting\n"
"writer's intent refuses new readers), holder_nodes, quorum, quorum_ok\n"
"and nodes: an array of {node, reachable, voting, holder, readers,\n"
"pttl_ms, lock_delay_ms, error}, plus readers (live readers on a\n"
"majority), readers_in_lock_delay (readers whose validity is over but\n"
"whose lock-delay still keeps writers out, on a majority), slots_held\n"
"(the semaphore slots a majority holds), queue (the fair queue a\n"
"majority holds, in order: {position, token, owner, kind (\"shared\"\n"
"or \"exclusive\"), priority, ticket, nodes, expires_in_ms, waited_ms\n"
"(null: unknown)}; null when fewer than a quorum answered) and\n"
"queue_minority.\n"
"With --limit: {\"resource\", \"limit\", \"slots\": [one object per slot]}.\n"
"Exit: 0 (also when nodes are down), 2 usage.\n"
"\n"
"Example:\n"
"  redlock-cli -n h1:6379,h2:6379,h3:6379 status deploy\n";

static int show(struct cli_opts *o, rl_client *c, const char *resource);
static int show_slots(struct cli_opts *o, rl_client *c, const char *resource,
                      uint32_t limit);

int cmd_status(struct cli_opts *o, int argc, char **argv)
{
    const char *limit_s = NULL;
    const struct cli_cmdopt opts[] = {{"limit", &limit_s, NULL}};
    char name[CLI_SLOT_NAME_MAX];
    const char *pos[1];
    rl_client *c = NULL;
    uint32_t limit = 0;
    int code;

    code = cli_parse_resource(o, argc, argv, opts, 1, usage, "resource",
                              "R [--limit K]", &pos[0]);
    if (code != 0)
        return code > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (limit_s != NULL && cli_parse_limit(o, limit_s, &limit) != 0)
        return CLI_EXIT_USAGE;
    if (cli_slot_name(name, sizeof(name), pos[0], limit) != 0)
        return cli_fail(o, CLI_EXIT_USAGE, "resource name is too long");
    code = cli_client_new(o, &c);
    if (code != CLI_EXIT_OK)
        return code;
    code = limit == 0 ? show(o, c, pos[0]) : show_slots(o, c, pos[0], limit);
    rl_client_free(c);
    return code;
}

/* The fair queue a quorum agrees on (rl_resource_queue): a table and a
 * line, or ,"queue":[...],"queue_minority":N in the JSON object. Nothing
 * in text when nobody waits fair. */
static void show_queue(const struct cli_opts *o, rl_client *c,
                       const char *resource)
{
    rl_queue_entry q[RL_QUEUE_READ_MAX];
    size_t n = 0, minority = 0, i;

    if (rl_resource_queue(c, resource, q, RL_QUEUE_READ_MAX, &n,
                          &minority) == RL_ENOQUORUM) {
        /* Fewer than a quorum answered: not an empty queue. */
        if (o->json)
            fputs(",\"queue\":null,\"queue_minority\":null", stdout);
        else
            printf("%s: fair queue unknown: fewer than a quorum of the "
                   "nodes answered\n", resource);
        return;
    }
    if (o->json) {
        fputs(",\"queue\":[", stdout);
        for (i = 0; i < n; i++) {
            printf("%s{\"position\":%zu,\"token\":\"%.*s\",\"owner\":",
                   i > 0 ? "," : "", i + 1, CLI_TOKEN_SHOWN, q[i].token);
            if (q[i].owner[0] != '\0')
                cli_json_str(stdout, q[i].owner);
            else
                fputs("null", stdout);
            printf(",\"kind\":\"%s\",\"priority\":%u,\"ticket\":%" PRIu64
                   ",\"nodes\":%u,\"expires_in_ms\":%" PRId64
                   ",\"waited_ms\":",
                   q[i].mode == RL_MODE_SHARED ? "shared" : "exclusive",
                   q[i].priority, q[i].ticket, q[i].nodes,
                   q[i].expires_in_ms);
            if (q[i].waited_ms >= 0)
                printf("%" PRId64 "}", q[i].waited_ms);
            else
                fputs("null}", stdout);
        }
        printf("],\"queue_minority\":%zu", minority);
        return;
    }
    if (n == 0 && minority == 0)
        return;
    printf("%-8s %-8s %-24s %-9s %8s %10s %5s %10s %10s\n", "POSITION",
           "TOKEN", "OWNER", "KIND", "PRIORITY", "TICKET", "NODES",
           "EXPIRES_MS", "WAITED_MS");
    for (i = 0; i < n; i++) {
        char waited[24] = "-";

        if (q[i].waited_ms >= 0)
            snprintf(waited, sizeof(waited), "%" PRId64, q[i].waited_ms);
        printf("%-8zu %-8.*s %-24s %-9s %8u %10" PRIu64 " %5u %10" PRId64
               " %10s\n",
               i + 1, CLI_TOKEN_SHOWN, q[i].token,
               q[i].owner[0] != '\0' ? q[i].owner : "-",
               q[i].mode == RL_MODE_SHARED ? "reader" : "exclusive",
               q[i].priority, q[i].ticket, q[i].nodes, q[i].expires_in_ms,
               waited);
    }
    printf("%s: %zu waiting in the fair queue on a majority", resource, n);
    if (minority > 0)
        printf(" (+%zu on a minority of nodes)", minority);
    putchar('\n');
}

/* Print one resource's status: a lock, or one semaphore slot (nested:
 * inside the JSON array of slots); held lists the slots of R's
 * semaphore a majority holds (nheld of them; status R alone). */
static void print_one(struct cli_opts *o, rl_client *c,
                      const char *resource, const rl_resource_info *info_in,
                      const rl_holder_info *h, size_t count, bool nested,
                      const uint32_t *held, uint32_t nheld)
{
    const char *pos[1] = {resource};
    const rl_resource_info info = *info_in;
    char holder[CLI_TOKEN_SHOWN + 1];
    size_t reachable = 0;
    size_t quorum;
    size_t i;
    uint32_t readers, blocking;

    for (i = 0; i < count; i++)
        reachable += h[i].reachable;
    /* The token held by the most nodes, and its owner. */
    snprintf(holder, sizeof(holder), "%s", info.token);
    quorum = count / 2 + 1;
    readers = cli_majority_readers(h, count, false);
    blocking = cli_majority_readers(h, count, true);
    if (o->json) {
        fputs("{\"resource\":", stdout);
        cli_json_str(stdout, pos[0]);
        printf(",\"held\":%s,\"readers\":%u,\"readers_in_lock_delay\":%u,"
               "\"holder\":", info.held ? "true" : "false", readers,
               blocking - readers);
        if (info.nodes_holding > 0)
            cli_json_str(stdout, holder);
        else
            fputs("null", stdout);
        fputs(",\"owner\":", stdout);
        if (info.owner[0] != '\0')
            cli_json_str(stdout, info.owner);
        else
            fputs("null", stdout);
        printf(",\"validity_ms\":%" PRId64 ",\"lock_delay_ms\":%" PRIu32
               ",\"in_lock_delay\":%s,\"blocked_ms\":%" PRId64
               ",\"fence\":%" PRIu64 ",\"term\":", info.validity_ms,
               info.lock_delay_ms,
               cli_in_lock_delay(&info) ? "true" : "false", info.blocked_ms,
               info.fence);
        if (info.term_state == RL_TERM_SET)
            printf("%" PRIu64, info.term);
        else
            fputs("null", stdout);
        printf(",\"for_period\":%s", info.for_period ? "true" : "false");
        printf(",\"term_pending\":%s,\"writers_waiting\":%u,"
               "\"holder_nodes\":%u,\"quorum\":%zu,\"quorum_ok\":%s,"
               "\"nodes\":",
               info.term_state == RL_TERM_PENDING ? "true" : "false",
               info.writers_waiting, info.nodes_holding, quorum,
               reachable >= quorum ? "true" : "false");
        cli_json_holders(stdout, h, count);
        if (!nested) {
            fputs(",\"slots_held\":[", stdout);
            for (i = 0; i < nheld; i++)
                printf("%s%u", i > 0 ? "," : "", held[i]);
            fputc(']', stdout);
            show_queue(o, c, pos[0]);
        }
        fputs(nested ? "}" : "}\n", stdout);
    } else {
        printf("%-28s %-9s %-10s %-8s %10s  %s\n", "NODE", "REACHABLE",
               "VOTING", "HOLDER", "PTTL_MS", "ERROR");
        for (i = 0; i < count; i++) {
            char tok[CLI_HOLDER_TEXT];
            char pttl[24];

            cli_holder_text(tok, sizeof(tok), &h[i]);
            cli_pttl_text(pttl, sizeof(pttl), &h[i], "free");
            printf("%-28s %-9s %-10s %-8s %10s  %s\n", h[i].name,
                   h[i].reachable ? "yes" : "no",
                   !h[i].reachable ? "no"
                   : h[i].voting   ? "yes"
                                   : "quarantine",
                   tok, pttl, h[i].error);
        }
        if (cli_in_lock_delay(&info)) {
            printf("%s: in its lock-delay: the holder's validity is over; "
                   "its keys refuse others for %" PRId64 " ms (%s on %u of "
                   "%zu nodes, owner %s)\n", pos[0], info.blocked_ms,
                   holder, info.nodes_holding, count,
                   info.owner[0] != '\0' ? info.owner : "unknown");
        } else if (info.held) {
            printf("%s: held %sby %s on %u of %zu nodes (owner %s), for %"
                   PRId64 " ms more", pos[0],
                   info.for_period ? "for its period (its job is done) "
                                   : "",
                   holder, info.nodes_holding, count,
                   info.owner[0] != '\0' ? info.owner : "unknown",
                   info.validity_ms);
            if (info.lock_delay_ms != 0)
                printf(", then its lock-delay of %" PRIu32 " ms",
                       info.lock_delay_ms);
            if (info.term_state == RL_TERM_SET)
                printf(", term %" PRIu64, info.term);
            else if (info.term_state == RL_TERM_PENDING)
                fputs(", term being written (a fenced acquire between its "
                      "rounds)", stdout);
            putchar('\n');
        } else if (readers > 0) {
            printf("%s: read by %u reader%s (on a majority)\n", pos[0],
                   readers, readers == 1 ? "" : "s");
        } else if (blocking > 0) {
            printf("%s: %u reader%s in %s lock-delay (validity over; writers "
                   "are refused until it ends)\n", pos[0], blocking,
                   blocking == 1 ? "" : "s", blocking == 1 ? "its" : "their");
        } else if (info.nodes_holding > 0) {
            printf("%s: not held by a majority (%s on %u of %zu nodes, "
                   "quorum %zu)\n", pos[0], holder, info.nodes_holding,
                   count, quorum);
        } else if (nheld > 0) {
            printf("%s: semaphore: %u permit%s held (slot%s", pos[0], nheld,
                   nheld == 1 ? "" : "s", nheld == 1 ? "" : "s");
            for (i = 0; i < nheld; i++)
                printf("%s%u", i > 0 ? ", " : " ", held[i]);
            printf("); status %s --limit K shows each\n", pos[0]);
        } else if (reachable < quorum) {
            printf("%s: unknown: only %zu of %zu nodes answered (quorum "
                   "%zu)\n", pos[0], reachable, count, quorum);
        } else {
            printf("%s: free\n", pos[0]);
        }
        if (info.writers_waiting > 0)
            printf("%s: a waiting writer's intent refuses new readers on "
                   "%u of %zu nodes\n", pos[0], info.writers_waiting, count);
        if (!nested)
            show_queue(o, c, pos[0]);
    }
}

/* status R: R's key, and, when nobody holds it, its semaphore's slots
 * (a full semaphore is not free). */
static int show(struct cli_opts *o, rl_client *c, const char *resource)
{
    rl_holder_info *h = calloc(o->cfg.node_count, sizeof(*h));
    uint32_t *held = calloc(RL_MAX_LIMIT, sizeof(*held));
    rl_resource_info info;
    uint32_t nheld = 0;
    size_t count = 0;
    int code = CLI_EXIT_OK;

    if (h == NULL || held == NULL) {
        code = cli_fail(o, CLI_EXIT_NOT_ACQUIRED, "out of memory");
        goto out;
    }
    /* Per-node failures are in the array; a quorum failure is not an
     * error for status. */
    if (rl_resource_inspect(c, resource, &info, h, o->cfg.node_count,
                            &count) == RL_EINVAL) {
        code = cli_status_exit(o, RL_EINVAL, resource);
        goto out;
    }
    if (info.nodes_holding == 0 && cli_majority_readers(h, count, true) == 0)
        nheld = cli_semaphore_slots(c, resource, false, held);
    print_one(o, c, resource, &info, h, count, false, held, nheld);

out:
    free(held);
    free(h);
    return code;
}

/* status R --limit K: the K slots, read in one step per node. */
static int show_slots(struct cli_opts *o, rl_client *c, const char *resource,
                      uint32_t limit)
{
    size_t n = o->cfg.node_count, count = 0;
    rl_resource_info *slots = calloc(limit, sizeof(*slots));
    rl_holder_info *h = calloc((size_t)limit * n, sizeof(*h));
    char name[CLI_SLOT_NAME_MAX];
    int code = CLI_EXIT_OK;
    uint32_t i;

    if (slots == NULL || h == NULL) {
        code = cli_fail(o, CLI_EXIT_NOT_ACQUIRED, "out of memory");
        goto out;
    }
    if (rl_semaphore_inspect(c, resource, limit, slots, h, n, &count) ==
        RL_EINVAL) {
        code = cli_status_exit(o, RL_EINVAL, resource);
        goto out;
    }
    if (o->json) {
        fputs("{\"resource\":", stdout);
        cli_json_str(stdout, resource);
        printf(",\"limit\":%u,\"slots\":[", limit);
    }
    for (i = 0; i < limit; i++) {
        if (i > 0)
            fputc(o->json ? ',' : '\n', stdout);
        cli_slot_name(name, sizeof(name), resource, i);
        print_one(o, c, name, &slots[i], &h[(size_t)i * n], count, true, NULL,
                  0);
    }
    if (o->json)
        fputs("]}\n", stdout);

out:
    free(h);
    free(slots);
    return code;
}
