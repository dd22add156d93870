/* SPDX-License-Identifier: BSD-3-Clause */
/* redlock-bench.c -- the benchmark phases that only tools/bench-compare.sh
 * runs, beside redlock-cli as redis-benchmark stands beside redis-cli:
 * built with the tree, never installed. What a user measures is
 * `redlock-cli bench`; this program shares tools/redlock-cli/bench_common.c
 * with it.
 *
 *   floor    the fan-out round-trip floor: PING (and, in alternate rounds,
 *            SET key NX PX 1000 on a fresh key) to every node at once over
 *            direct connections, time until a quorum and until all have
 *            answered: what a Redlock round cannot beat on this machine;
 *   restart  the last node watched through rl_client_node_stats while the
 *            script kills it (or its connection): when it was seen down
 *            and when it voted again.
 *
 * It takes redlock-cli's global options and environment ($REDLOCK_NODES
 * and the others), through the CLI's own code (cli.c). */
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "cli.h"

static const char usage[] =
"Usage: redlock-bench floor|restart [GLOBAL OPTIONS] [OPTIONS]\n"
"\n"
"The phases tools/bench-compare.sh runs besides `redlock-cli bench`.\n"
"Global options and environment: as redlock-cli's (-n, --json, ...).\n"
"\n"
"  floor              the command to every node at once over direct\n"
"                     plaintext connections, no lock library: PING and\n"
"                     SET key tk NX PX 1000, time until a quorum and all\n"
"                     answered (quorum_us, all_us, set_quorum_us,\n"
"                     set_all_us: {p50,p90,p99,max}), rounds\n"
"  restart            watch the last node until it goes down and votes\n"
"                     again: down_unix_ms, vote_unix_ms, reconnect_ms,\n"
"                     handshakes, tls_resumed\n"
"  --duration S       seconds to measure (floor) or to wait (restart) (3)\n"
"  --label TEXT       copied into the JSON object\n"
"Exit: 0, 2 usage, 3 no quorum.\n";

struct rbench {
    struct cli_opts *o;
    const char *label;
    rl_client *c;
    rl_uri **uris;              /* o->cfg.node_count parsed node URIs */
    redisContext **direct;      /* floor: a connection per node */
};

/* One fan-out round: send the formatted command cmd to every node at
 * once, poll until each has answered. *tq: µs until a quorum had answered,
 * *tall: until all had. 0, or -1 when a node failed, replied with an
 * error or stayed silent. */
static int floor_round(struct rbench *b, struct pollfd *pfd, const char *cmd,
                       size_t len, uint64_t *tq, uint64_t *tall)
{
    size_t nn = b->o->cfg.node_count;
    size_t quorum = nn / 2 + 1;
    uint64_t t0 = cli_mono_us();
    size_t done = 0;
    size_t i;
    int wdone;

    *tq = 0;
    for (i = 0; i < nn; i++) {
        pfd[i].events = POLLIN;
        if (redisAppendFormattedCommand(b->direct[i], cmd, len) != REDIS_OK)
            return -1;
        do {
            if (redisBufferWrite(b->direct[i], &wdone) != REDIS_OK)
                return -1;
        } while (!wdone);
    }
    while (done < nn) {
        if (poll(pfd, (nfds_t)nn, BENCH_DIRECT_TIMEOUT_MS) <= 0)
            return -1;
        for (i = 0; i < nn; i++) {
            void *reply = NULL;

            if ((pfd[i].revents & (POLLIN | POLLERR | POLLHUP)) == 0)
                continue;
            if (redisBufferRead(b->direct[i]) != REDIS_OK ||
                redisGetReplyFromReader(b->direct[i], &reply) != REDIS_OK)
                return -1;
            if (reply == NULL)
                continue;           /* partial reply: poll again */
            if (bench_reply_is(reply, REDIS_REPLY_ERROR))
                return -1;
            pfd[i].events = 0;
            done++;
            if (done == quorum)
                *tq = cli_mono_us() - t0;
        }
    }
    *tall = cli_mono_us() - t0;
    return 0;
}

/* Fan-out floor: PING every node at once over direct connections, record
 * the time until a quorum (N/2+1) and until every node has answered, next
 * round once all have: what a Redlock round cannot beat on this machine.
 * Alternating with it, the same fan-out of SET key NX PX 1000 on a fresh
 * key (what an acquire sends, with no lock library around it). */
static int phase_floor(struct rbench *b, double duration)
{
    struct cli_opts *o = b->o;
    size_t nn = o->cfg.node_count;
    struct pollfd *pfd;
    struct bench_samples q = {0}, all = {0}, sq = {0}, sall = {0};
    uint64_t rounds = 0;
    uint64_t tq, tall, tend, start;
    char *ping = NULL;
    char *set = NULL;
    char key[64];
    int ping_len;
    int set_len;
    size_t i;
    int code = 0;

    pfd = calloc(nn, sizeof(*pfd));
    ping_len = redisFormatCommand(&ping, "PING");
    if (pfd == NULL || ping_len < 0) {
        code = cli_fail(o, CLI_EXIT_NO_QUORUM, "floor: out of memory");
        goto out;
    }
    for (i = 0; i < nn; i++) {
        if (bench_direct_is_tls(o, b->uris[i])) {
            code = cli_fail(o, CLI_EXIT_USAGE, "floor: node %zu (%s) uses "
                            "TLS; the floor's direct connections are "
                            "plaintext only", i, rl_uri_name(b->uris[i]));
            goto out;
        }
        b->direct[i] = bench_direct_connect(o, b->uris[i]);
        if (b->direct[i] == NULL) {
            const char *name = rl_uri_name(b->uris[i]);

            code = cli_fail(o, CLI_EXIT_NO_QUORUM, "floor: cannot reach "
                            "node %zu (%s)", i, name != NULL ? name : "?");
            goto out;
        }
        pfd[i].fd = b->direct[i]->fd;
    }
    start = cli_mono_us();
    tend = start + (uint64_t)(duration * 1e6);
    while (cli_mono_us() < tend) {
        if (floor_round(b, pfd, ping, (size_t)ping_len, &tq, &tall) != 0)
            break;
        bench_samples_add(&q, tq);
        bench_samples_add(&all, tall);
        snprintf(key, sizeof(key), "bench:%ld:floor:%" PRIu64,
                 (long)getpid(), rounds);
        set_len = redisFormatCommand(&set, "SET %s tk NX PX 1000", key);
        if (set_len < 0)
            break;
        /* "+OK" or a nil reply (the key exists): both answer the round */
        if (floor_round(b, pfd, set, (size_t)set_len, &tq, &tall) != 0)
            break;
        redisFreeCommand(set);
        set = NULL;
        bench_samples_add(&sq, tq);
        bench_samples_add(&sall, tall);
        rounds++;
    }
    if (cli_mono_us() < tend) {
        code = cli_fail(o, CLI_EXIT_NO_QUORUM, "floor: a node failed or did "
                        "not answer within %d ms", BENCH_DIRECT_TIMEOUT_MS);
        goto out;
    }
    if (o->json) {
        printf("{\"phase\":\"floor\",\"label\":");
        cli_json_str(stdout, b->label);
        printf(",\"nodes\":%zu,\"concurrency\":1,\"duration_s\":%.3f,"
               "\"rounds\":%" PRIu64 ",\"quorum\":%zu", nn,
               (double)(cli_mono_us() - start) / 1e6, rounds, nn / 2 + 1);
        bench_json_pct("quorum_us", &q);
        bench_json_pct("all_us", &all);
        bench_json_pct("set_quorum_us", &sq);
        bench_json_pct("set_all_us", &sall);
        printf(",\"failures\":0}\n");
    } else {
        uint64_t pq[4], pa[4], psq[4], psa[4];

        bench_percentiles(&q, pq);
        bench_percentiles(&all, pa);
        bench_percentiles(&sq, psq);
        bench_percentiles(&sall, psa);
        printf("floor: %zu nodes, %" PRIu64 " rounds: PING %zu of %zu p50 %"
               PRIu64 " p99 %" PRIu64 " us, all p50 %" PRIu64 " p99 %" PRIu64
               " us; SET NX PX %zu of %zu p50 %" PRIu64 " p99 %" PRIu64
               " us, all p50 %" PRIu64 " p99 %" PRIu64 " us\n", nn, rounds,
               nn / 2 + 1, nn, pq[0], pq[2], pa[0], pa[2], nn / 2 + 1, nn,
               psq[0], psq[2], psa[0], psa[2]);
    }
    fflush(stdout);

out:
    for (i = 0; i < nn; i++) {
        if (b->direct[i] != NULL)
            redisFree(b->direct[i]);
        b->direct[i] = NULL;
    }
    redisFreeCommand(set);
    redisFreeCommand(ping);
    free(q.v);
    free(all.v);
    free(sq.v);
    free(sall.v);
    free(pfd);
    return code;
}

/* ---- restart: one node's way back --------------------------------------- */

static int64_t unix_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Poll the last node's counters every millisecond for up to `duration` seconds:
 * the first moment the last node is not connected, then the first moment
 * it votes again. Prints one object: phase "restart", node, down_unix_ms,
 * vote_unix_ms (CLOCK_REALTIME, to compare with the script's own clock;
 * -1 when not seen), reconnect_ms (down to voting, -1 when it did not
 * vote again in time), and the handshakes (and TLS resumptions among them)
 * the node's connection made meanwhile. */
static int phase_restart(struct rbench *b, double duration)
{
    struct cli_opts *o = b->o;
    size_t i = o->cfg.node_count - 1;
    rl_node_stats ns;
    uint64_t t_end = cli_mono_us() + (uint64_t)(duration * 1e6);
    uint64_t t_down = 0, t_vote = 0;
    int64_t down_unix = -1, vote_unix = -1;
    uint64_t hs0 = 0, res0 = 0, hs = 0, res = 0;

    while (t_vote == 0 && cli_mono_us() < t_end) {
        if (rl_client_node_stats(b->c, i, &ns) == RL_OK) {
            if (t_down == 0) {
                hs0 = ns.handshakes;
                res0 = ns.tls_resumed;
            }
            hs = ns.handshakes - hs0;
            res = ns.tls_resumed - res0;
            if (t_down == 0 && !ns.connected) {
                t_down = cli_mono_us();
                down_unix = unix_ms();
            } else if (t_down != 0 && ns.voting) {
                t_vote = cli_mono_us();
                vote_unix = unix_ms();
            }
        }
        bench_sleep_s(0.001);
    }
    if (o->json) {
        printf("{\"phase\":\"restart\",\"label\":");
        cli_json_str(stdout, b->label);
        printf(",\"node\":");
        cli_json_str(stdout, o->nodes[i]);
        printf(",\"down_unix_ms\":%" PRId64 ",\"vote_unix_ms\":%" PRId64
               ",\"reconnect_ms\":%.1f,\"handshakes\":%" PRIu64
               ",\"tls_resumed\":%" PRIu64 "}\n", down_unix, vote_unix,
               t_vote != 0 ? (double)(t_vote - t_down) / 1e3 : -1.0, hs,
               res);
    } else {
        printf("restart %s: ", o->nodes[i]);
        if (t_vote != 0)
            printf("down to voting in %.1f ms (%" PRIu64 " handshakes, %"
                   PRIu64 " TLS resumed)\n",
                   (double)(t_vote - t_down) / 1e3, hs, res);
        else
            printf("did not go down and vote again in time\n");
    }
    return CLI_EXIT_OK;
}

int main(int argc, char **argv)
{
    struct cli_opts o;
    struct rbench b;
    const char *dur_s = NULL;
    const char *label_s = "";
    const struct cli_cmdopt opts[] = {
        {"duration", &dur_s, NULL},
        {"label", &label_s, NULL},
    };
    double duration = 3.0;
    rl_node_info *ping = NULL;
    const char *pos[1];
    size_t count;
    size_t i;
    int npos;
    int code;

    memset(&o, 0, sizeof(o));
    memset(&b, 0, sizeof(b));
    o.prog = "redlock-bench";
    if (argc < 2 || cli_is_help(argv[1])) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    if (strcmp(argv[1], "floor") != 0 && strcmp(argv[1], "restart") != 0) {
        code = cli_fail(&o, CLI_EXIT_USAGE, "unknown phase '%s' (floor or "
                        "restart)", argv[1]);
        goto out;
    }
    o.cmd = argv[1];
    if (cli_opts_load(&o) != 0) {
        code = CLI_EXIT_USAGE;
        goto out;
    }
    code = cli_parse_args(&o, argc - 1, argv + 1, opts,
                          sizeof(opts) / sizeof(opts[0]), usage, pos, 0,
                          &npos, NULL);
    if (code != 0) {
        code = code > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
        goto out;
    }
    if (dur_s != NULL && cli_parse_double(dur_s, 0.01, 3600, &duration) != 0) {
        code = cli_fail(&o, CLI_EXIT_USAGE, "--duration: '%s' is not a "
                        "number of seconds in 0.01..3600", dur_s);
        goto out;
    }
    b.o = &o;
    b.label = label_s;
    code = cli_client_new(&o, &b.c);
    if (code != CLI_EXIT_OK)
        goto out;
    b.uris = calloc(o.cfg.node_count, sizeof(*b.uris));
    b.direct = calloc(o.cfg.node_count, sizeof(*b.direct));
    ping = calloc(o.cfg.node_count, sizeof(*ping));
    if (b.uris == NULL || b.direct == NULL || ping == NULL) {
        code = cli_fail(&o, CLI_EXIT_NO_QUORUM, "out of memory");
        goto out;
    }
    /* rl_client_new accepted these URIs: only memory can fail here. */
    for (i = 0; i < o.cfg.node_count; i++) {
        if (rl_uri_parse(o.nodes[i], &b.uris[i]) != RL_OK) {
            code = cli_fail(&o, CLI_EXIT_NO_QUORUM, "node %zu: %s", i,
                            rl_last_error());
            goto out;
        }
    }
    if (rl_client_ping(b.c, ping, o.cfg.node_count, &count) != RL_OK) {
        code = cli_fail(&o, CLI_EXIT_NO_QUORUM, "quorum unavailable: %s",
                        rl_last_error());
        goto out;
    }
    if (strcmp(o.cmd, "floor") == 0)
        code = phase_floor(&b, duration);
    else
        code = phase_restart(&b, duration);

out:
    free(ping);
    rl_client_free(b.c);
    for (i = 0; b.uris != NULL && i < o.cfg.node_count; i++)
        rl_uri_free(b.uris[i]);
    free(b.uris);
    free(b.direct);
    cli_opts_free(&o);
    fflush(stdout);
    return code;
}
