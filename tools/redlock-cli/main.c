/* SPDX-License-Identifier: BSD-3-Clause */
/* main.c -- redlock-cli entry point: global options, dispatch, --help
 * and --version.
 *
 * Order of precedence: the library's defaults (rl_config_init), then the
 * environment (both loaded by cli_opts_load, cli.c)
 * ($REDLOCK_NODES, $REDLOCK_PASSWORD, $REDLOCK_MAX_TTL,
 * $REDLOCK_QUARANTINE, $REDLOCK_NO_QUARANTINE,
 * $REDLOCK_ALLOW_EVICTING_NODES, $REDLOCK_CACERT, $REDLOCK_CERT,
 * $REDLOCK_KEY),
 * then the command line. Global options may come
 * before or after the command name; each command parses the rest. Every
 * usage error exits 2 with one line on stderr naming what is wrong. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage_text[] =
"Usage: redlock-cli [GLOBAL OPTIONS] COMMAND [ARGS]\n"
"\n"
"Distributed locks on a majority of N Redis masters (Redlock).\n"
"\n"
"Commands:\n"
"  acquire R [--ttl MS] [--wait MS] [--fence]   take the lock, print token\n"
"  extend R TOKEN [--ttl MS]                    renew a lock held by TOKEN\n"
"  release R TOKEN                              release a lock held by TOKEN\n"
"  run R [OPTIONS] -- CMD [ARG...]              run CMD while holding R\n"
"  hold R [--ttl MS] [--wait MS]                hold R until stdin EOF or\n"
"                                               a signal (for coproc)\n"
"  elect NAME [OPTIONS] -- CMD [ARG...]         run CMD while leader of NAME\n"
"  leader NAME [--watch]                        the leader of NAME (owner,\n"
"                                               term)\n"
"  status R                                     who holds R (owner, validity)\n"
"  ping                                         latency, version, uptime,\n"
"                                               role, eviction, persistence\n"
"  doctor                                       check every node's fitness\n"
"                                               for Redlock, with remedies\n"
"  bench [OPTIONS]                              built-in load generator\n"
"  help [COMMAND]                               this text, or a command's\n"
"\n"
"Global options (environment variable in brackets):\n"
"  -n, --nodes URI[,URI...]  Redis masters [REDLOCK_NODES]; URI is\n"
"                            redis://[[user]:password@]host[:port][/db],\n"
"                            rediss://... (the same over TLS),\n"
"                            unix:///path[?db=N] or host:port\n"
"      --connect-timeout MS  connect timeout per node (%{connect_timeout})\n"
"      --op-timeout MS       timeout per node and request (%{op_timeout})\n"
"      --drift-factor F      clock rate error allowance, 0..0.1 (%{drift})\n"
"      --retry-count N       retries after the first attempt (%{retry_count})\n"
"      --retry-delay MS      delay between attempts (%{retry_delay})\n"
"      --retry-jitter MS     +- random jitter on the delay (%{retry_jitter})\n"
"      --prefix P            prepended to every resource name (empty)\n"
"      --password-file FILE  password for nodes whose URI has none, first\n"
"                            line of FILE [REDLOCK_PASSWORD]\n"
"      --max-ttl MS          largest TTL in use (%{max_ttl})"
" [REDLOCK_MAX_TTL];\n"
"                            --ttl must not exceed it. A node whose uptime\n"
"                            is below it does not vote (restart quarantine:\n"
"                            it may have lost keys when it restarted)\n"
"      --quarantine WHEN     auto (default): a restarted node votes at\n"
"                            once if it runs appendonly yes with\n"
"                            appendfsync always, else after --max-ttl;\n"
"                            on: every restarted node waits; off: none\n"
"                            waits, ONLY for nodes that fsync every write\n"
"                            [REDLOCK_QUARANTINE]\n"
"      --no-quarantine       --quarantine off [REDLOCK_NO_QUARANTINE=1]\n"
"      --allow-evicting-nodes  nodes that may evict keys (maxmemory with\n"
"                            a policy other than noeviction) vote anyway;\n"
"                            an evicted lock can be taken twice\n"
"                            [REDLOCK_ALLOW_EVICTING_NODES=1]\n"
"      --no-clock-guard      let nodes whose clock runs fast, slow or\n"
"                            steps vote (default: such a node does not\n"
"                            vote until it behaved for --max-ttl)\n"
"      --renew-window PCT    watchdog renewals due within PCT % of their\n"
"                            interval (at most 100 ms) go out together,\n"
"                            that much early; 0..24 (%{renew_window})\n"
"      --tls                 TLS for every TCP node (as rediss://)\n"
"      --cacert FILE         CA bundle (PEM) that signed the nodes'\n"
"                            certificates [REDLOCK_CACERT]; default: the\n"
"                            system trust store\n"
"      --cacertdir DIR       hashed CA directory (openssl rehash)\n"
"      --cert FILE           client certificate (PEM) for servers with\n"
"                            tls-auth-clients [REDLOCK_CERT]\n"
"      --key FILE            its private key (PEM) [REDLOCK_KEY]\n"
"      --sni NAME            server name to send and verify instead of\n"
"                            each node's host\n"
"      --insecure            do not verify certificates (says so on\n"
"                            stderr): encrypted, but not authenticated\n"
"      --json                machine-readable output\n"
"  -q, --quiet               no messages except errors (no wait line)\n"
"  -v, --verbose             more messages on stderr (-vv: debug); the wait\n"
"                            line also on a pipe or with --json\n"
"  -h, --help                this help ('redlock-cli COMMAND --help')\n"
"      --version             print the version and the license\n"
"\n"
"Exit codes: 0 success; 1 not acquired / not held; 2 usage or configuration\n"
"error; 3 quorum unavailable; 4 (run, hold) lock lost.\n"
"Passwords are never printed. Defaults: --ttl %{ttl}.\n"
"\n"
"Examples:\n"
"  export REDLOCK_NODES=10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379\n"
"  redlock-cli run backups -- /usr/local/bin/nightly-backup\n"
"  tok=$(redlock-cli acquire deploy --ttl 60000) && ... &&\n"
"      redlock-cli release deploy \"$tok\"\n"
"  redlock-cli --json status deploy\n"
"  redlock-cli -n redis://:pw@h1,redis://:pw@h2,redis://:pw@h3 ping\n"
"  redlock-cli doctor\n"
"  redlock-cli --tls --cacert ca.pem -n h1:6380,h2:6380,h3:6380 ping\n"
"  redlock-cli --cert client.pem --key client.key --cacert ca.pem \\\n"
"      -n rediss://h1:6380,rediss://h2:6380,rediss://h3:6380 acquire job\n";

static const struct {
    const char *name;
    cli_cmd_fn fn;
} commands[] = {
    {"acquire", cmd_acquire},
    {"extend", cmd_extend},
    {"release", cmd_release},
    {"run", cmd_run},
    {"hold", cmd_hold},
    {"elect", cmd_run},
    {"leader", cmd_leader},
    {"status", cmd_status},
    {"ping", cmd_ping},
    {"bench", cmd_bench},
    {"doctor", cmd_doctor},
};

static cli_cmd_fn find_command(const char *name)
{
    size_t i;

    for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(commands[i].name, name) == 0)
            return commands[i].fn;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    struct cli_opts o;
    cli_cmd_fn fn;
    int code;
    int m;
    int i;

    memset(&o, 0, sizeof(o));
    if (cli_opts_load(&o) != 0) {
        code = CLI_EXIT_USAGE;
        goto out;
    }
    for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
        if (cli_is_help(argv[i])) {
            cli_print_usage(usage_text);
            code = CLI_EXIT_OK;
            goto out;
        }
        if (strcmp(argv[i], "--version") == 0) {
            printf("redlock-cli %s\nLicense: BSD-3-Clause\n", rl_version());
            code = CLI_EXIT_OK;
            goto out;
        }
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        m = cli_global_option(&o, argc, argv, &i);
        if (m < 0) {
            code = CLI_EXIT_USAGE;
            goto out;
        }
        if (m == 0) {
            code = cli_fail(&o, CLI_EXIT_USAGE, "unknown option '%s' (see "
                            "redlock-cli --help)", argv[i]);
            goto out;
        }
    }
    if (i >= argc) {
        code = cli_fail(&o, CLI_EXIT_USAGE, "no command given (see "
                        "redlock-cli --help)");
        goto out;
    }
    if (strcmp(argv[i], "help") == 0) {
        if (i + 1 < argc && find_command(argv[i + 1]) != NULL) {
            char *help_argv[] = {argv[i + 1], "--help", NULL};

            o.cmd = argv[i + 1];
            code = find_command(argv[i + 1])(&o, 2, help_argv);
        } else if (i + 1 < argc) {
            code = cli_fail(&o, CLI_EXIT_USAGE, "unknown command '%s'",
                            argv[i + 1]);
        } else {
            cli_print_usage(usage_text);
            code = CLI_EXIT_OK;
        }
        goto out;
    }
    fn = find_command(argv[i]);
    if (fn == NULL) {
        code = cli_fail(&o, CLI_EXIT_USAGE, "unknown command '%s' (see "
                        "redlock-cli --help)", argv[i]);
        goto out;
    }
    o.cmd = argv[i];
    code = fn(&o, argc - i, argv + i);

out:
    cli_opts_free(&o);
    fflush(stdout);
    return code;
}
