/* SPDX-License-Identifier: BSD-3-Clause */
/* cli.h -- what the redlock-cli files share.
 *
 * The global options (parsed once by main.c), the exit codes of the
 * contract, strict number parsing, JSON string output, and the helpers
 * that turn the options into an rl_client. The CLI uses the public API
 * only: nothing here includes a src/ header. */
#ifndef REDLOCK_CLI_H
#define REDLOCK_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <redlock.h>

/* Exit codes (contract: README "Command line"). */
enum cli_exit {
    CLI_EXIT_OK = 0,
    CLI_EXIT_NOT_ACQUIRED = 1,  /* or: not held, held by another token */
    CLI_EXIT_USAGE = 2,         /* usage or configuration error */
    CLI_EXIT_NO_QUORUM = 3,     /* too few nodes answered */
    CLI_EXIT_LOST = 4           /* run: the lock was lost, child signalled */
};

/* The global options, after the environment and the command line. */
struct cli_opts {
    /* The client's configuration: rl_config_init's defaults, then the
     * environment and the options. Its strings are borrowed from argv and
     * the environment, except nodes and password (below). */
    rl_config cfg;
    char **nodes;               /* cfg.nodes, cfg.node_count URIs (owned) */
    char *password;             /* cfg.password (owned, wiped on free), or
                                   NULL */
    bool nodes_from_cli;        /* -n seen: it replaces $REDLOCK_NODES */
    bool json;
    bool quiet;
    int verbose;                /* -v count */
    const char *cmd;            /* command name, for messages */
    const char *prog;           /* program name, for messages; NULL:
                                   "redlock-cli" */
};

/* One command: parses its own arguments (argv[0] is the command name) and
 * returns the process exit code. */
typedef int (*cli_cmd_fn)(struct cli_opts *o, int argc, char **argv);

int cmd_acquire(struct cli_opts *o, int argc, char **argv);
int cmd_extend(struct cli_opts *o, int argc, char **argv);
int cmd_release(struct cli_opts *o, int argc, char **argv);
int cmd_run(struct cli_opts *o, int argc, char **argv);
int cmd_status(struct cli_opts *o, int argc, char **argv);
int cmd_ping(struct cli_opts *o, int argc, char **argv);
int cmd_bench(struct cli_opts *o, int argc, char **argv);
int cmd_doctor(struct cli_opts *o, int argc, char **argv);
int cmd_hold(struct cli_opts *o, int argc, char **argv);
int cmd_leader(struct cli_opts *o, int argc, char **argv);
/* cmd_run also runs "elect" (argv[0] says which). */

/* ---- Messages ------------------------------------------------------------ */

/* "redlock-cli: <cmd>: <text>\n" on stderr, always one line (newlines in
 * the text become spaces). Returns code, so "return cli_fail(o, 2, ...)". */
int cli_fail(const struct cli_opts *o, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An informational line on stderr, printed only with -v. */
void cli_info(const struct cli_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Write s as a JSON string (with the quotes). */
void cli_json_str(FILE *f, const char *s);
/* A held lock whose holder's validity is over and whose lock-delay is
 * not: its keys still refuse others (status, leader). */
bool cli_in_lock_delay(const rl_resource_info *info);
/* The JSON array of per-node holders (status, release --force): node,
 * reachable, voting, holder (the first 8 characters of the token, or
 * null), readers (live readers of a read-write lock, else 0),
 * readers_in_lock_delay (readers past their validity, in their
 * lock-delay), pttl_ms, lock_delay_ms (the lock-delay the token carries:
 * pttl_ms includes it), error. */
void cli_json_holders(FILE *f, const rl_holder_info *h, size_t count);
/* The fewest readers of a read-write lock a majority of the voting
 * nodes reports (0 if none): within their validity, and with delayed
 * those in their lock-delay too (all that keep writers out). */
uint32_t cli_majority_readers(const rl_holder_info *h, size_t count,
                              bool delayed);
/* A holder's HOLDER column (status, release --force) into buf (at least
 * CLI_HOLDER_TEXT bytes): "readers:N" for readers of a read-write lock,
 * else the token's first 8 characters, or "-" when it holds none. */
#define CLI_HOLDER_TEXT 24
void cli_holder_text(char *buf, size_t len, const rl_holder_info *h);
/* A holder's PTTL_MS column (status, release --force) into buf: "-" when
 * the node did not answer, free_word when it holds no key, "no-expiry",
 * or the milliseconds left. */
void cli_pttl_text(char *buf, size_t len, const rl_holder_info *h,
                   const char *free_word);

/* ---- Numbers ------------------------------------------------------------- */

/* Parse a whole decimal string into [lo, hi]. Leading spaces, signs,
 * trailing garbage and overflow are errors. 0 on success, -1 on error. */
int cli_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);
int cli_parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out);
/* A finite decimal number in [lo, hi]. */
int cli_parse_double(const char *s, double lo, double hi, double *out);
/* A signal: "TERM", "SIGTERM" or a number 1..64. -1 when unknown. */
int cli_parse_signal(const char *s);
/* Monotonic (CLOCK_MONOTONIC) and boot (CLOCK_BOOTTIME) time. */
uint64_t cli_mono_us(void);
uint64_t cli_boot_ms(void);

/* ---- Option parsing helpers ---------------------------------------------- */

/* Match argv[*i] against a long option "--name" (and short "-c" when c is
 * not 0). Returns 1 and sets *val (for options with a value: "--name=V",
 * "--name V", "-cV", "-c V") when it matches, 0 when it does not, -1 (with
 * the message printed) when the value is missing. has_val: the option
 * takes a value. */
int cli_match(const struct cli_opts *o, int argc, char **argv, int *i,
              const char *name, char c, bool has_val, const char **val);
/* Try the global options at argv[*i] (also accepted after the command).
 * 1 consumed, 0 not a global option, -1 error (exit 2 printed). */
int cli_global_option(struct cli_opts *o, int argc, char **argv, int *i);
/* Parse a --quarantine value (auto, on, off) into *out (enum
 * rl_restart_trust). from: the option or variable named in the error.
 * 0, or -1 with the usage error printed. */
int cli_parse_quarantine(const struct cli_opts *o, const char *from,
                         const char *s, uint8_t *out);
/* The --quarantine word for an rl_restart_trust value. */
const char *cli_quarantine_name(uint8_t restart_trust);
/* Parse --ttl's value: 1..max_ttl. Prints the error; -1 on error. */
/* The TTL used without --ttl: the library default, capped by --max-ttl. */
uint32_t cli_default_ttl(const struct cli_opts *o);
int cli_parse_ttl(const struct cli_opts *o, const char *opt, const char *s,
                  uint32_t *out);
/* Parse --wait's value: milliseconds, or "forever". A negative number is
 * a usage error (printed). */
int cli_parse_wait(const struct cli_opts *o, const char *s, int64_t *out);
/* Check a resource argument (non-empty, not in "redlock:"). */
int cli_check_resource(const struct cli_opts *o, const char *r);
/* One command-specific option: a flag (flag != NULL) or an option with a
 * value (val != NULL receives it). */
struct cli_cmdopt {
    const char *name;
    const char **val;
    bool *flag;
};
/* Print a help text on stdout with each "%{name}" replaced by the
 * library's default: connect_timeout, op_timeout, drift, retry_count,
 * retry_delay, retry_jitter, max_ttl, renew_window (rl_config_init) and
 * ttl (RL_DEFAULT_TTL_MS). */
void cli_print_usage(const char *text);
/* Parse a command's arguments (argv[0] is the command): its own options,
 * the global ones, -h/--help (prints usage) and up to maxpos positional
 * arguments into pos[] (*npos of them). With rest != NULL ("run"), "--"
 * ends the parsing and *rest is the index after it (-1 when absent);
 * otherwise "--" makes what follows positional. Returns 0 to go on, 1 when
 * help was printed (exit 0), -1 on a usage error (printed, exit 2). */
int cli_parse_args(struct cli_opts *o, int argc, char **argv,
                   const struct cli_cmdopt *opts, size_t nopts,
                   const char *usage, const char **pos, int maxpos,
                   int *npos, int *rest);
/* cli_parse_args for a command with one resource argument, checked with
 * cli_check_resource into *resource; what and synopsis name it in the
 * message when it is missing ("missing <what> (usage: <cmd>
 * <synopsis>)"). 0 to go on, 1 help printed, -1 usage error (printed). */
int cli_parse_resource(struct cli_opts *o, int argc, char **argv,
                       const struct cli_cmdopt *opts, size_t nopts,
                       const char *usage, const char *what,
                       const char *synopsis, const char **resource);
/* True when argv[i] is -h or --help. */
bool cli_is_help(const char *arg);

/* ---- Client -------------------------------------------------------------- */

/* Final checks (nodes present) and rl_client_new. Returns CLI_EXIT_OK and
 * *out, or an exit code with the message printed. */
int cli_client_new(struct cli_opts *o, rl_client **out);
/* For extend/release R TOKEN: check TOKEN, connect, and make a handle for
 * the token (rl_lock_adopt_opts with ao, which may be NULL; name: the
 * key's name, R or one of its slots; errors name R). CLI_EXIT_OK, or the
 * exit code after a message; on failure *c and *l are NULL or must still
 * be freed. */
int cli_adopt_token(struct cli_opts *o, const char *resource,
                    const char *name, const char *token,
                    const rl_acquire_opts *ao, rl_client **c, rl_lock **l);
/* Token prefix shown for a holder: enough to tell holders apart. */
#define CLI_TOKEN_SHOWN 8
/* Map a failed library status to an exit code, printing rl_last_error()
 * (or "what: <status text>" when there is none). */
int cli_status_exit(const struct cli_opts *o, rl_status st, const char *what);
/* The same with the detail text given (e.g. copied in a callback). */
int cli_status_exit_detail(const struct cli_opts *o, rl_status st,
                           const char *what, const char *detail);
/* The library's defaults (rl_config_init), then the environment
 * ($REDLOCK_NODES and the other $REDLOCK_* variables), into a zeroed *o.
 * -1 (message printed) on a bad value. */
int cli_opts_load(struct cli_opts *o);
/* Free what the options own (wipes the password). */
void cli_opts_free(struct cli_opts *o);

/* ---- Lock kinds (kinds.c) ----------------------------------------------- */

/* The raw values of --limit K, --shared, --lock-delay MS, --owner S,
 * --fair and --priority N (the options of the commands that acquire). */
struct cli_kind {
    const char *limit_s;
    const char *delay_s;
    bool shared;
    const char *owner_s;
    bool fair;
    const char *priority_s;
};
/* Entries for a command's option table (6 of them). */
#define CLI_KIND_OPTS(k)                                                      \
    {"limit", &(k).limit_s, NULL}, {"shared", NULL, &(k).shared},             \
        {"lock-delay", &(k).delay_s, NULL}, {"owner", &(k).owner_s, NULL},    \
        {"fair", NULL, &(k).fair}, {"priority", &(k).priority_s, NULL}
#define CLI_KIND_NOPTS 6
/* Parse --limit s into *limit (1..RL_MAX_LIMIT). 0, or -1 with the usage
 * error printed. */
int cli_parse_limit(const struct cli_opts *o, const char *s,
                    uint32_t *limit);
/* Check k and set ao's limit, mode, lock_delay_ms, fair, priority and
 * owner (--owner, or host:pid; kept in static storage). 0, or -1 with the usage error
 * printed. */
int cli_kind_apply(const struct cli_opts *o, const struct cli_kind *k,
                   rl_acquire_opts *ao);
/* --owner S: at most RL_OWNER_MAX visible ASCII bytes ('' is fine). 0,
 * or -1 with the usage error printed. */
int cli_check_owner(const struct cli_opts *o, const char *s);
/* True when ao asks for anything but a plain mutex. */
bool cli_kind_any(const rl_acquire_opts *ao);
/* Print l's handle: "[slot<i>/][shared/][delay<MS>/]TOKEN" (a plain
 * mutex: the bare token). */
void cli_print_handle(FILE *f, const rl_lock *l, uint32_t delay_ms);
/* The arguments "R TOKEN" of extend and release, after cli_parse_args
 * (npos of them in pos): a missing one is named with synopsis ("missing
 * TOKEN (usage: <synopsis>)"), and R is checked (cli_check_resource). 0,
 * or -1 with the usage error printed. */
int cli_check_handle_args(const struct cli_opts *o, const char *const *pos,
                          int npos, const char *synopsis);
/* What extend or release does to the lock it adopted: the exit code
 * (after a message when not CLI_EXIT_OK). It may consume *l (and set it
 * to NULL). */
typedef int (*cli_handle_fn)(const struct cli_opts *o, const char *resource,
                             rl_lock **l, void *arg);
/* Connect, adopt resource's lock by a handle cli_print_handle printed (or
 * a bare token: cli_adopt_token, for the slot's key, a reader or the
 * lock-delay the handle names), run fn(o, resource, &l, arg) on it and
 * free the lock handle and the client. fn's exit code, or the adoption's
 * after a message. */
int cli_on_handle(struct cli_opts *o, const char *resource,
                  const char *handle, cli_handle_fn fn, void *arg);
/* resource's semaphore slots, read in one step (every possible slot:
 * the limit is not known here): the numbers of those a majority holds
 * (any_node false) or that some node holds (true), ascending, into out
 * (RL_MAX_LIMIT entries); their count (0 when none, or on an error). */
uint32_t cli_semaphore_slots(rl_client *c, const char *resource,
                             bool any_node, uint32_t *out);

/* "<resource>:slot:<slot>" into buf; -1 when it does not fit. */
#define CLI_SLOT_NAME_MAX 540
int cli_slot_name(char *buf, size_t len, const char *resource,
                  uint32_t slot);

/* ---- Node facts (cmd_ping.c; ping and doctor) --------------------------- */

/* The clock state's word: "ok", "suspect", "unknown" ("?" outside JSON),
 * "off". */
const char *cli_clock_name(int32_t state, bool json);
/* Why a node does not vote (rl_vote_bar): "yes" (it votes), "no" (down),
 * "twin", "role", "evicts", "clock", "quarantine". */
const char *cli_vote_bar_name(uint8_t bar);
/* An rl_fact as a word ("yes", "no", "?") or a JSON value ("true",
 * "false", "null"). */
const char *cli_fact_word(int8_t fact, bool json);
/* Nodes that vote, and independent servers: reachable nodes that are no
 * duplicate (twin_of < 0) of a node listed before them. */
void cli_count_nodes(const rl_node_info *p, size_t count, size_t *voting,
                     size_t *independent);
/* "3 nodes, 2 independent servers, 2 voting, quorum 2: ok" (or
 * UNAVAILABLE when st is not RL_OK) into buf. */
void cli_nodes_summary(char *buf, size_t len, const rl_node_info *p,
                       size_t count, rl_status st);
/* For a command that takes no argument but the options (ping, doctor):
 * parse argv (usage printed for -h), create the client and ping every
 * node: *p (malloc'd, o->node_count entries, *count filled) and the
 * ping's status (RL_OK or RL_ENOQUORUM) in *st. CLI_EXIT_OK to go on,
 * -1 when help was printed (exit 0), or an exit code after a message;
 * *c and *p must be freed either way. */
int cli_ping_nodes(struct cli_opts *o, int argc, char **argv,
                   const char *help, rl_client **c, rl_node_info **p,
                   size_t *count, rl_status *st);
/* Unless st is RL_OK (or -q): "quorum unavailable: V of N nodes voting,
 * need Q" on stderr. */
void cli_quorum_warning(const struct cli_opts *o, const rl_node_info *p,
                        size_t count, rl_status st);
/* ---- Interruptible acquire (interrupt.c) -------------------------------- */

/* Block SIGINT, SIGTERM, SIGHUP (and SIGCHLD when chld) in this thread --
 * call it before any thread exists, so the library's threads inherit the
 * mask -- ignore SIGPIPE, and return a close-on-exec, non-blocking
 * signalfd for them (-1 on error, errno set). */
int cli_block_signals(bool chld);
/* What may end a wait, and what did. */
struct cli_interrupt {
    int sfd;                    /* signalfd (cli_block_signals), or -1 */
    int eof_fd;                 /* its EOF ends the wait (hold: stdin; what
                                   it holds is read and dropped), or -1 */
    const struct cli_opts *show; /* show the wait line (waitline.c) as
                                   these options say, or NULL */
    int sig;                    /* out: the signal that ended it, or 0 */
    bool eof;                   /* out: eof_fd reached its end */
};
/* Acquire resource with ao, waiting until the outcome or until a signal
 * (not SIGCHLD) or EOF in says so. Returns the acquire's status with
 * detail its message; after an interruption RL_EABORTED, with in->sig or
 * in->eof set: the acquire was canceled and nothing of it is left on the
 * nodes (a lock granted meanwhile was released). in->show: the wait line
 * (cli_waitline_start), cleared before this returns. */
rl_status cli_acquire_interruptible(rl_client *c, const char *resource,
                                    const rl_acquire_opts *ao,
                                    struct cli_interrupt *in, rl_lock **out,
                                    char *detail, size_t len);
/* Say that the wait was interrupted (unless -q) and return the exit code:
 * 128+N for signal N, CLI_EXIT_NOT_ACQUIRED for EOF. */
int cli_interrupted(const struct cli_opts *o, const char *resource,
                    const struct cli_interrupt *in);
/* cli_acquire_interruptible, then the exit code: CLI_EXIT_OK with *out,
 * or after the message (cli_interrupted, cli_status_exit_detail). */
int cli_acquire_or_exit(const struct cli_opts *o, rl_client *c,
                        const char *resource, const rl_acquire_opts *ao,
                        struct cli_interrupt *in, rl_lock **out);
/* "TERM" for SIGTERM; "?" when unknown. */
const char *cli_sig_name(int sig);

/* ---- The line a person watches while waiting (waitline.c) ------------- */

/* Start following the wait of an acquire of resource with ao (both must
 * live until the stop): with --wait, on a terminal (stderr a TTY, no
 * --json) or with -v, and not with -q, a thread reads who holds it at
 * most once a second and keeps one status line on stderr up to date (in
 * place on a TTY; one line per change otherwise). NULL when nothing is
 * shown. */
struct cli_waitline;
struct cli_waitline *cli_waitline_start(const struct cli_opts *o,
                                        rl_client *c, const char *resource,
                                        const rl_acquire_opts *ao);
/* The wait is over: stop the thread, clear the line and free w (NULL:
 * no-op). */
void cli_waitline_stop(struct cli_waitline *w);

/* ---- Acquire arguments and output (cmd_acquire.c) ------------------------ */

/* An acquire from the command line (acquire, hold). */
struct cli_acquire {
    const char *resource;
    rl_acquire_opts ao;
    bool fence;                 /* --fence: the fence on stdout line 2 */
    struct cli_interrupt in;    /* in.sfd from cli_block_signals */
    rl_client *c;
    rl_lock *l;                 /* the lock, once acquired */
};
/* Parse "CMD R [--ttl MS] [--wait MS] [--fence] [--limit K] [--shared]
 * [--lock-delay MS] [--owner S]" (acquire, hold) into *a (zeroed first,
 * no end of the wait but a signal), then block the signals
 * (cli_block_signals: call it before any thread exists). CLI_EXIT_OK to
 * go on, -1 when help was printed (exit 0), or an exit code after a
 * message; cli_acquire_free(a) either way. */
int cli_acquire_start(struct cli_opts *o, int argc, char **argv,
                      const char *help, struct cli_acquire *a);
/* Connect, acquire a->resource with a->ao (cli_acquire_or_exit) and
 * print what acquire prints: the handle (and the fence on line 2 with
 * --fence), or with --json one object. CLI_EXIT_OK with a->l, or the exit
 * code after a message. */
int cli_acquire_take(struct cli_opts *o, struct cli_acquire *a);
/* Free a's lock handle (the key stays in Redis) and client, and close its
 * signalfd. */
void cli_acquire_free(struct cli_acquire *a);

/* ---- run --metrics-file (run_metrics.c) ---------------------------------- */

/* One run's moments, cli_mono_us(); 0 = did not happen. */
struct run_figures {
    uint64_t start_us;          /* the acquire started */
    uint64_t acquired_us;       /* the lock was granted */
    uint64_t released_us;       /* the lock was released */
};
/* At parse time: path names a file in a directory we may write in.
 * 0, or -1 with the message printed. */
int cli_check_metrics_file(const struct cli_opts *o, const char *path);
/* Replace path atomically with the run's figures, the exit status and c's
 * statistics (c may be NULL) in Prometheus text format, every sample
 * labelled resource. 0, or -1 with the message printed. */
int cli_write_run_metrics(const struct cli_opts *o, const char *path,
                          const char *resource, const struct run_figures *r,
                          int status, rl_client *c);

#endif /* REDLOCK_CLI_H */
