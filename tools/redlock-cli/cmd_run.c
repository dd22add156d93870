/* SPDX-License-Identifier: BSD-3-Clause */
/* cmd_run.c -- "redlock-cli run R [...] -- CMD [ARG...]".
 *
 * Holds R while CMD runs: acquire (with --wait), start CMD in its own
 * process group with REDLOCK_RESOURCE, REDLOCK_TOKEN and REDLOCK_FENCE (0
 * without --fence) and without REDLOCK_PASSWORD, renew with the watchdog,
 * forward SIGINT/SIGTERM/SIGHUP, release once CMD exits and exit with its
 * status (128+N when killed by signal N).
 *
 * The child never outlives the lock. Two processes enforce it:
 *   - this process: when the lock is LOST (rl_lock_lost_fd readable) it
 *     sends the kill signal (SIGTERM or --kill-signal) at once and SIGKILL
 *     when the validity ends, then exits 4;
 *   - a supervisor process, forked BEFORE the rl_client exists (a single
 *     thread, no library descriptor), which gets every new validity
 *     deadline (absolute CLOCK_BOOTTIME ms) over a socket and SIGKILLs
 *     CMD's process group when the last deadline it got passes. It does
 *     not depend on this process running: if redlock-cli is SIGSTOPped no
 *     new deadlines arrive, and if it dies the socket hits EOF and the
 *     last deadline is still enforced.
 * The supervisor is CMD's parent: it forks and execs CMD itself when told
 * to (SUP_START), so no moment exists where CMD runs and the supervisor
 * does not hold its pid; and CMD dies with it (PR_SET_PDEATHSIG). It
 * watches CMD with waitid(WNOWAIT) and reports stops and the exit, but
 * reaps CMD only when it exits itself, after this process said DONE or
 * died. Until then CMD's pid, and its process group (the unreaped leader
 * keeps it), cannot be reused, so every kill(-pid) of either process hits
 * CMD's group and nothing else.
 *
 * Descriptors: everything both processes open is close-on-exec; the
 * supervisor gives CMD its copies of redlock-cli's stdin, stdout and
 * stderr as 0, 1, 2, and was forked before any library socket existed,
 * so CMD inherits nothing either opened.
 * The supervisor's own 0, 1, 2 are /dev/null, so a reader of redlock-cli's
 * output never waits for it. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

/* SIGKILL this long before the deadline, so the child is gone by then. */
#define KILL_GUARD_MS 10
/* How often the validity is re-read and the child checked. */
#define TICK_MS 50
/* Room for the token in a SUP_START message. */
#define SUP_TEXT_LEN 256

extern char **environ;

/* "elect NAME": run CMD while leader (the campaign waits forever, the
 * lock is fenced and CMD gets REDLOCK_TERM). Set before the supervisor
 * is forked, so both processes see it. */
static bool elect_mode;

static const char usage[] =
"Usage: redlock-cli [GLOBAL OPTIONS] run R [OPTIONS] -- CMD [ARG...]\n"
"\n"
"Acquire R, run CMD while holding it (renewed by a watchdog), release it\n"
"when CMD exits and exit with CMD's status (128+N if killed by signal N).\n"
"CMD runs in its own process group with REDLOCK_RESOURCE, REDLOCK_TOKEN\n"
"and REDLOCK_FENCE (0 without --fence) set, without REDLOCK_PASSWORD, and\n"
"with none of the descriptors redlock-cli opens (no Redis connection).\n"
"SIGINT, SIGTERM and SIGHUP are forwarded to it.\n"
"\n"
"CMD never outlives the lock: when the lock is lost CMD gets the kill\n"
"signal at once and SIGKILL when the validity ends (exit 4). A supervisor\n"
"process, CMD's parent, enforces the validity's end even if redlock-cli\n"
"is stopped or killed.\n"
"\n"
"  --ttl MS                 lock time-to-live, 1..--max-ttl (%{ttl})\n"
"  --wait MS                wait up to MS ms for the lock ('forever'); a\n"
"                           terminal shows the wait on one line (see acquire)\n"
"  --fence                  issue a fencing token (REDLOCK_FENCE)\n"
"  --no-watchdog            do not renew: CMD gets the kill signal shortly\n"
"                           before the TTL runs out and SIGKILL at its end\n"
"  --kill-signal SIG        signal sent when the lock is lost (TERM)\n"
"  --conflict-exit-code N   exit code when not acquired (1)\n"
"  --metrics-file FILE      at the end, replace FILE atomically with the\n"
"                           run's figures in Prometheus text format (for\n"
"                           node_exporter's textfile collector: FILE.prom)\n"
"  --limit K                hold one of K permits (a semaphore of K slot\n"
"                           locks, like 'consul lock -n K')\n"
"  --shared                 hold R as a reader (readers share it; plain\n"
"                           runs and acquires of R are the writers)\n"
"  --lock-delay MS          keys outlive the TTL by MS unless released\n"
"  --owner S                who holds it, shown by status (host:pid)\n"
"  --fair                   wait in R's queue: served first come, first\n"
"                           served among fair waiters (a mutex, a\n"
"                           --limit semaphore, a writer, or a reader\n"
"                           with --shared)\n"
"  --priority N             0..255, implies --fair: higher classes first\n"
"  --at-least MS            once per period: when CMD ends sooner, keep R\n"
"                           (same token and owner) until MS after the\n"
"                           grant, so the rest of the fleet's period finds\n"
"                           it held; 1..--max-ttl\n"
"\n"
"Exit: CMD's status; 1 (or N) not acquired; 2 usage; 3 no quorum; 4 lock\n"
"lost (CMD was signalled); 126/127 CMD not executable / not found.\n"
"\n"
"Examples:\n"
"  redlock-cli run nightly-backup -- /usr/local/bin/backup --full\n"
"  redlock-cli run --wait 60000 deploy -- sh -c 'echo $REDLOCK_TOKEN'\n"
"  redlock-cli run --fence --conflict-exit-code 0 cron:report -- ./report\n"
"  redlock-cli run --at-least 60000 --conflict-exit-code 0 minutely -- ./job\n"
"  redlock-cli run --limit 4 --wait forever encoders -- ./encode job.mp4\n";

static const char elect_usage[] =
"Usage: redlock-cli [GLOBAL OPTIONS] elect NAME [OPTIONS] -- CMD [ARG...]\n"
"\n"
"Campaign for leadership of NAME and run CMD while leader: 'run NAME\n"
"--wait forever --fence' -- wait until the lock on NAME is ours, hold it\n"
"with the watchdog, and run CMD with REDLOCK_TERM set to the term (the\n"
"fencing token: strictly greater than every earlier leader's) besides\n"
"run's variables. The published value is --owner (host:pid by default);\n"
"'redlock-cli leader NAME' shows it. CMD never outlives the leadership:\n"
"when the lock is lost CMD is signalled (exit 4), as for run. When\n"
"redlock-cli or its host dies, another candidate takes over once the\n"
"TTL has run out.\n"
"\n"
"Options: those of run (--ttl MS, --wait MS to give up, --kill-signal,\n"
"--conflict-exit-code, --metrics-file, --owner S, --fair, --priority N,\n"
"...): with --fair, candidates become leader in the order they started\n"
"waiting.\n"
"Exit: CMD's status; 1 the --wait ran out; 2 usage; 3 no quorum; 4 the\n"
"leadership was lost.\n"
"\n"
"Example:\n"
"  redlock-cli elect scheduler --ttl 10000 -- ./scheduler --term-env\n";

/* Messages on the socket between redlock-cli and the supervisor. */
enum sup_type {
    SUP_DEADLINE = 1,           /* -> sup. value: boottime ms */
    SUP_START = 2,              /* -> sup. value: fence, text: token */
    SUP_DONE = 3,               /* -> sup. CMD's exit was seen: reap, exit */
    SUP_STARTED = 4,            /* <- sup. value: CMD's pid */
    SUP_FAILED = 5,             /* <- sup. arg: errno (ETIMEDOUT: expired) */
    SUP_STOPPED = 6,            /* <- sup. arg: the signal that stopped CMD */
    SUP_EXPIRED = 7,            /* <- sup. the deadline passed: CMD killed */
    SUP_EXITED = 8              /* <- sup. arg: CLD_* code, value: status */
};

struct sup_msg {
    uint32_t type;
    int32_t arg;
    uint64_t value;
    char text[SUP_TEXT_LEN];
};

static int sup_send(int sock, enum sup_type type, int32_t arg,
                    uint64_t value, const char *text)
{
    struct sup_msg m;
    ssize_t n;

    if (sock < 0)
        return -1;
    memset(&m, 0, sizeof(m));
    m.type = (uint32_t)type;
    m.arg = arg;
    m.value = value;
    if (text != NULL) {
        if (strlen(text) >= sizeof(m.text)) {
            errno = EMSGSIZE;
            return -1;
        }
        strcpy(m.text, text);
    }
    /* Never blocks: the peer reads as it goes, and one that is stopped
     * must not stop the sender. */
    do {
        n = send(sock, &m, sizeof(m), MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof(m) ? 0 : -1;
}

/* Receive one message. 0 on EOF, -1 on error (EAGAIN: none yet). */
static ssize_t sup_recv(int sock, struct sup_msg *m, bool block)
{
    ssize_t n;

    do {
        n = recv(sock, m, sizeof(*m), block ? 0 : MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n > 0 && n != (ssize_t)sizeof(*m)) {
        errno = EPROTO;
        return -1;
    }
    m->text[sizeof(m->text) - 1] = '\0';
    return n;
}

/* ---- The child ---------------------------------------------------------- */

/* environ without our variables and the password, plus ours: the
 * strings added are stored in added[] (to be freed with the array). */
static char **child_env(const char *resource, const char *token,
                        uint64_t fence, char *added[4])
{
    static const char *drop[] = {"REDLOCK_PASSWORD=", "REDLOCK_RESOURCE=",
                                 "REDLOCK_TOKEN=", "REDLOCK_FENCE=",
                                 "REDLOCK_TERM="};
    size_t n = 0;
    size_t k = 0;
    size_t i, j;
    char **env;

    while (environ[n] != NULL)
        n++;
    env = calloc(n + 5, sizeof(*env));
    if (env == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        bool skip = false;

        for (j = 0; j < sizeof(drop) / sizeof(drop[0]); j++) {
            if (strncmp(environ[i], drop[j], strlen(drop[j])) == 0)
                skip = true;
        }
        if (!skip)
            env[k++] = environ[i];
    }
    if (asprintf(&added[0], "REDLOCK_RESOURCE=%s", resource) < 0)
        added[0] = NULL;
    if (asprintf(&added[1], "REDLOCK_TOKEN=%s", token) < 0)
        added[1] = NULL;
    if (asprintf(&added[2], "REDLOCK_FENCE=%" PRIu64, fence) < 0)
        added[2] = NULL;
    /* elect: the term is the fencing token. */
    if (elect_mode &&
        asprintf(&added[3], "REDLOCK_TERM=%" PRIu64, fence) < 0)
        added[3] = NULL;
    if (added[0] == NULL || added[1] == NULL || added[2] == NULL ||
        (elect_mode && added[3] == NULL)) {
        free(env);
        return NULL;
    }
    for (i = 0; i < (size_t)(elect_mode ? 4 : 3); i++)
        env[k++] = added[i];
    env[k] = NULL;
    return env;
}

/* In the forked child: become CMD, in its own process group, with stdio[]
 * as 0, 1, 2 and default signal handling. On failure the errno goes to
 * errfd (close-on-exec: EOF there means the exec worked). */
static void child_exec(const int stdio[3], char **cmd, char **env,
                       int errfd, pid_t sup)
{
    static const int deflt[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE,
                                SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU};
    sigset_t none;
    size_t i;
    int err;

    setpgid(0, 0);
    for (i = 0; i < 3; i++) {
        if (stdio[i] >= 0)
            dup2(stdio[i], (int)i);     /* the copy loses close-on-exec */
        else
            close((int)i);
    }
    for (i = 0; i < sizeof(deflt) / sizeof(deflt[0]); i++)
        signal(deflt[i], SIG_DFL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* No CMD without the process that enforces its deadline. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != sup) {
        err = ESRCH;
    } else {
        environ = env;
        execvp(cmd[0], cmd);
        err = errno;
    }
    while (write(errfd, &err, sizeof(err)) < 0 && errno == EINTR)
        ;
    _exit(127);
}

/* ---- Supervisor --------------------------------------------------------- */

struct sup {
    int sock;
    int sfd;                    /* signalfd (SIGCHLD) */
    int stdio[3];               /* redlock-cli's 0, 1, 2 for CMD, or -1 */
    bool tty;                   /* report CMD's stops (job control) */
    pid_t pid;                  /* CMD, 0 before it started; unreaped */
    bool exited;                /* CMD exited (seen with WNOWAIT) */
    bool expired;               /* the deadline passed: CMD was killed */
    bool done;                  /* redlock-cli said DONE */
    bool gone;                  /* DONE or EOF: nobody signals CMD but us */
    uint64_t deadline;          /* boottime ms, 0 = none yet */
};

/* The supervisor's own process group in the same session (so that CMD,
 * its child, can be given the terminal): the terminal's ^C / ^Z and a
 * kill of redlock-cli's process group do not reach it. */
static void sup_detach(struct sup *s)
{
    static const int ign[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGTSTP,
                              SIGTTIN, SIGTTOU};
    size_t i;
    int fd;

    setpgid(0, 0);
    for (i = 0; i < 3; i++)
        s->stdio[i] = fcntl((int)i, F_DUPFD_CLOEXEC, 3);
    fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
        for (i = 0; i < 3; i++)
            dup2(fd, (int)i);
        if (fd > STDERR_FILENO)
            close(fd);
    }
    for (i = 0; i < sizeof(ign) / sizeof(ign[0]); i++)
        signal(ign[i], SIG_IGN);
    /* Not ignored (that would reap CMD); blocked since before the fork and
     * read from the inherited signalfd, which reads the signals of the
     * process reading it. */
    signal(SIGCHLD, SIG_DFL);
}

static void sup_close_stdio(struct sup *s)
{
    size_t i;

    for (i = 0; i < 3; i++) {
        if (s->stdio[i] >= 0)
            close(s->stdio[i]);
        s->stdio[i] = -1;
    }
}

/* SUP_START: fork and exec CMD, and answer STARTED or FAILED. */
static void sup_start(struct sup *s, char **cmd, const char *resource,
                      const struct sup_msg *m)
{
    char *added[4] = {NULL, NULL, NULL, NULL};
    char **env = NULL;
    int ep[2] = {-1, -1};
    int err = 0;
    pid_t self = getpid();
    pid_t pid = -1;
    ssize_t n;

    if (s->expired || s->deadline == 0 ||
        cli_boot_ms() + KILL_GUARD_MS >= s->deadline)
        err = ETIMEDOUT;
    else if ((env = child_env(resource, m->text, m->value, added)) == NULL)
        err = ENOMEM;
    else if (pipe2(ep, O_CLOEXEC) != 0)
        err = errno;
    else if ((pid = fork()) < 0)
        err = errno;
    else if (pid == 0)
        child_exec(s->stdio, cmd, env, ep[1], self);
    if (pid > 0) {
        close(ep[1]);
        ep[1] = -1;
        do {
            n = read(ep[0], &err, sizeof(err));
        } while (n < 0 && errno == EINTR);
        if (n != 0) {
            if (n != (ssize_t)sizeof(err))
                err = EIO;
            while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
        }
    }
    if (ep[0] >= 0)
        close(ep[0]);
    if (ep[1] >= 0)
        close(ep[1]);
    free(env);
    free(added[0]);
    free(added[1]);
    free(added[2]);
    free(added[3]);
    sup_close_stdio(s);
    if (err != 0) {
        sup_send(s->sock, SUP_FAILED, err, 0, NULL);
        return;
    }
    s->pid = pid;
    sup_send(s->sock, SUP_STARTED, 0, (uint64_t)pid, NULL);
}

/* Report CMD's stops (consumed) and its exit (not reaped). */
static void sup_watch(struct sup *s)
{
    struct signalfd_siginfo ssi;
    siginfo_t si;

    while (read(s->sfd, &ssi, sizeof(ssi)) == (ssize_t)sizeof(ssi))
        ;
    if (s->pid == 0 || s->exited)
        return;
    memset(&si, 0, sizeof(si));
    while (s->tty && waitid(P_PID, (id_t)s->pid, &si, WSTOPPED | WNOHANG) == 0
           && si.si_pid == s->pid) {
        sup_send(s->sock, SUP_STOPPED, si.si_status, 0, NULL);
        memset(&si, 0, sizeof(si));
    }
    memset(&si, 0, sizeof(si));
    if (waitid(P_PID, (id_t)s->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        si.si_pid == s->pid) {
        s->exited = true;
        sup_send(s->sock, SUP_EXITED, si.si_code, (uint64_t)si.si_status,
                 NULL);
    }
}

static void sup_kill(const struct sup *s)
{
    if (s->pid > 0) {
        kill(-s->pid, SIGKILL); /* its process group: grandchildren too */
        kill(s->pid, SIGKILL);  /* also if CMD left its group */
    }
}

/* The supervisor's whole life (see the top of the file): started by
 * redlock-cli's fork with sock its end of the socket, sfd the signalfd
 * (SIGCHLD blocked), cmd and resource from the command line. */
static void supervise(int sock, int sfd, char **cmd, const char *resource,
                      bool tty)
{
    struct sup s;
    struct sup_msg m;
    struct pollfd pfd[2];
    uint64_t now;
    int timeout;
    ssize_t n;

    memset(&s, 0, sizeof(s));
    s.sock = sock;
    s.sfd = sfd;
    s.tty = tty;
    sup_detach(&s);
    for (;;) {
        sup_watch(&s);
        /* Done when nobody else can signal CMD, and CMD is over (its
         * group killed if redlock-cli did not see its exit). */
        if (s.gone && (s.pid == 0 || (s.exited && (s.done || s.expired))))
            break;
        now = cli_boot_ms();
        if (!s.expired && s.deadline != 0 &&
            now + KILL_GUARD_MS >= s.deadline) {
            s.expired = true;
            if (s.pid > 0 && !s.exited)
                sup_send(s.sock, SUP_EXPIRED, 0, 0, NULL);
            sup_kill(&s);
            continue;
        }
        timeout = -1;
        if (!s.expired && s.deadline != 0)
            timeout = (int)(s.deadline - KILL_GUARD_MS - now);
        pfd[0].fd = s.gone ? -1 : s.sock;
        pfd[0].events = POLLIN;
        pfd[1].fd = s.sfd;
        pfd[1].events = POLLIN;
        if (poll(pfd, 2, timeout) <= 0 || pfd[0].revents == 0)
            continue;
        n = sup_recv(s.sock, &m, false);
        if (n < 0 && errno == EAGAIN)
            continue;
        if (n <= 0 || m.type == SUP_DONE) {
            s.gone = true;
            s.done = n > 0;
        } else if (m.type == SUP_DEADLINE) {
            s.deadline = m.value;
        } else if (m.type == SUP_START) {
            sup_start(&s, cmd, resource, &m);
        }
    }
    sup_close_stdio(&s);
    if (s.pid > 0) {
        while (waitpid(s.pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    _exit(0);
}

/* ---- The command -------------------------------------------------------- */

struct run_args {
    const char *resource;
    rl_acquire_opts ao;
    bool no_watchdog;
    int kill_signal;
    int conflict_code;
    char **cmd;
    bool tty;                   /* we own the terminal: hand it to CMD */
    const char *metrics_file;   /* --metrics-file, or NULL */
};

/* --at-least MS: 1..--max-ttl, the bound of a key's life (a key kept
 * longer could be forgotten by a restarted node that votes again). */
static int parse_at_least(const struct cli_opts *o, const char *s,
                          rl_acquire_opts *ao)
{
    uint32_t ms;

    if (s[0] == '-')
        return cli_fail(o, -1, "--at-least: '%s' is negative: the period "
                        "is 1..--max-ttl (%u ms) after the grant", s,
                        o->cfg.max_ttl_ms);
    if (cli_parse_ttl(o, "--at-least", s, &ms) != 0)
        return -1;
    ao->at_least_ms = ms;
    return 0;
}

static int parse(struct cli_opts *o, int argc, char **argv,
                 struct run_args *a)
{
    const char *ttl_s = NULL;
    const char *wait_s = NULL;
    const char *sig_s = NULL;
    const char *conflict_s = NULL;
    const char *at_least_s = NULL;
    bool fence = false;
    struct cli_kind kind = {0};
    const struct cli_cmdopt opts[] = {
        CLI_KIND_OPTS(kind),
        {"ttl", &ttl_s, NULL},
        {"wait", &wait_s, NULL},
        {"fence", NULL, &fence},
        {"no-watchdog", NULL, &a->no_watchdog},
        {"kill-signal", &sig_s, NULL},
        {"conflict-exit-code", &conflict_s, NULL},
        {"metrics-file", &a->metrics_file, NULL},
        {"at-least", &at_least_s, NULL},
    };
    const char *pos[1];
    uint32_t code;
    int npos;
    int rest;
    int r;

    r = cli_parse_args(o, argc, argv, opts, sizeof(opts) / sizeof(opts[0]),
                       elect_mode ? elect_usage : usage, pos, 1, &npos,
                       &rest);
    if (r != 0)
        return r;
    if (npos < 1)
        return cli_fail(o, -1, "missing resource (usage: %s R [OPTIONS] -- "
                        "CMD [ARG...])", argv[0]);
    if (rest < 0)
        return cli_fail(o, -1, "missing '--' before the command to run "
                        "(usage: %s R [OPTIONS] -- CMD [ARG...])", argv[0]);
    if (rest >= argc || argv[rest][0] == '\0')
        return cli_fail(o, -1, "missing the command after '--'");
    a->resource = pos[0];
    a->cmd = argv + rest;
    a->ao.ttl_ms = cli_default_ttl(o);
    a->ao.fencing = fence || elect_mode;
    if (elect_mode)
        a->ao.wait_ms = RL_WAIT_FOREVER;
    a->kill_signal = SIGTERM;
    a->conflict_code = CLI_EXIT_NOT_ACQUIRED;
    if (cli_check_resource(o, a->resource) != 0)
        return -1;
    if (ttl_s != NULL && cli_parse_ttl(o, "--ttl", ttl_s, &a->ao.ttl_ms) != 0)
        return -1;
    if (wait_s != NULL && cli_parse_wait(o, wait_s, &a->ao.wait_ms) != 0)
        return -1;
    if (cli_kind_apply(o, &kind, &a->ao) != 0)
        return -1;
    if (at_least_s != NULL && parse_at_least(o, at_least_s, &a->ao) != 0)
        return -1;
    if (sig_s != NULL) {
        a->kill_signal = cli_parse_signal(sig_s);
        if (a->kill_signal < 0 || a->kill_signal == SIGSTOP)
            return cli_fail(o, -1, "--kill-signal: '%s' is not a signal "
                            "name or number", sig_s);
    }
    if (conflict_s != NULL) {
        if (cli_parse_u32(conflict_s, 0, 255, &code) != 0)
            return cli_fail(o, -1, "--conflict-exit-code: '%s' is not a "
                            "number in 0..255", conflict_s);
        a->conflict_code = (int)code;
    }
    if (a->metrics_file != NULL &&
        cli_check_metrics_file(o, a->metrics_file) != 0)
        return -1;
    return 0;
}

/* Signal the child's process group (and the child itself). */
static void signal_child(pid_t pid, int sig)
{
    if (kill(-pid, sig) != 0)
        kill(pid, sig);
}

/* Interactive use (stdin is our terminal and we are in the foreground):
 * CMD gets the terminal, as a shell would give it. A CMD stopped by
 * SIGTTIN/SIGTTOU before it had the terminal is handed it and continued;
 * one stopped by ^Z stops the whole job: we take the terminal back and
 * stop too, and give it back on SIGCONT (fg). Meanwhile the lock is not
 * renewed, and the supervisor still ends CMD when the validity ends. */
static void job_stopped(pid_t pid, int sig)
{
    if (sig != SIGTTIN && sig != SIGTTOU) {
        tcsetpgrp(STDIN_FILENO, getpgrp());
        raise(SIGSTOP);
    }
    tcsetpgrp(STDIN_FILENO, pid);
    kill(-pid, SIGCONT);
}

/* Deadline of the lock's validity, boottime ms. Clock first, then the
 * validity, so the sum can only be early, never late. */
static uint64_t validity_deadline(const rl_lock *l)
{
    uint64_t now = cli_boot_ms();
    int64_t v = rl_lock_validity_ms(l);

    return v > 0 ? now + (uint64_t)v : now;
}

/* The exit code for CMD's end as the supervisor saw it (waitid's si_code
 * and si_status). expired: the supervisor killed CMD when the validity
 * ended (this process was stopped, or is late). */
static int child_exit_code(bool lost, bool expired, int code,
                           uint64_t status)
{
    if (lost)
        return CLI_EXIT_LOST;
    if (code == CLD_EXITED)
        return (int)(status & 0xff);
    if (expired)
        return CLI_EXIT_LOST;
    return 128 + (int)status;
}

/* Wait for the child's end (reported by the supervisor) while keeping the
 * supervisor's deadline current and reacting to signals, to the child's
 * stops and to a lost lock. Returns the exit code of the run. */
static int supervise_child(struct cli_opts *o, struct run_args *a,
                           rl_lock *l, pid_t pid, int sfd, int sock,
                           uint64_t deadline)
{
    uint32_t ttl = a->ao.ttl_ms;
    int64_t margin = ttl / 10 < 1000 ? ttl / 10 : 1000;
    uint64_t sent = deadline;
    uint64_t kill_at = 0;       /* boottime ms, once lost */
    bool lost = false;
    bool killed = false;
    bool expired = false;
    struct pollfd pfd[3];
    struct sup_msg m;
    int lost_fd = rl_lock_lost_fd(l);
    int timeout;
    uint64_t now;
    ssize_t n;

    for (;;) {
        n = sup_recv(sock, &m, false);
        if (n > 0 && m.type == SUP_STOPPED && a->tty) {
            job_stopped(pid, m.arg);
            continue;
        }
        if (n > 0 && m.type == SUP_EXPIRED) {
            expired = true;
            continue;
        }
        if (n > 0 && m.type == SUP_EXITED)
            return child_exit_code(lost, expired, m.arg, m.value);
        if (n == 0 || (n < 0 && errno != EAGAIN)) {
            /* CMD died with it (PR_SET_PDEATHSIG). */
            return cli_fail(o, CLI_EXIT_LOST, "%s: the supervisor process "
                            "died: the command was killed", a->resource);
        }
        now = cli_boot_ms();
        if (!lost) {
            uint64_t d = validity_deadline(l);

            /* d wobbles by 1 ms (two floors); send real changes only.
             * A deadline sent is never later than the true one, and the
             * supervisor kills KILL_GUARD_MS early, so 2 ms of slack
             * downwards is safe. */
            if ((d > sent + 20 || d + 2 < sent) &&
                sup_send(sock, SUP_DEADLINE, 0, d, NULL) == 0)
                sent = d;
            if (rl_lock_lost(l) ||
                (a->no_watchdog && (int64_t)(d - now) <= margin) ||
                d <= now) {
                lost = true;
                kill_at = sent;
                if (!o->quiet)
                    cli_fail(o, 0, "%s '%s': sending SIG%s to the command"
                             ", SIGKILL when the validity ends",
                             rl_lock_lost(l) ? "lost the lock on"
                                             : "the TTL runs out for",
                             a->resource, cli_sig_name(a->kill_signal));
                signal_child(pid, a->kill_signal);
            }
        }
        if (lost && !killed && now + KILL_GUARD_MS >= kill_at) {
            signal_child(pid, SIGKILL);
            killed = true;
        }
        timeout = TICK_MS;
        if (lost && !killed && kill_at - KILL_GUARD_MS - now < TICK_MS)
            timeout = (int)(kill_at - KILL_GUARD_MS - now);
        pfd[0].fd = sfd;
        pfd[0].events = POLLIN;
        pfd[1].fd = lost ? -1 : lost_fd;
        pfd[1].events = POLLIN;
        pfd[2].fd = sock;
        pfd[2].events = POLLIN;
        if (poll(pfd, 3, timeout) > 0 && (pfd[0].revents & POLLIN)) {
            struct signalfd_siginfo si;

            while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                if (si.ssi_signo == SIGCHLD)
                    continue;
                cli_info(o, "forwarding SIG%s to the command",
                         cli_sig_name((int)si.ssi_signo));
                signal_child(pid, (int)si.ssi_signo);
            }
        }
    }
}

/* Have the supervisor start CMD: CLI_EXIT_OK and *pid, or the exit code
 * after a message. */
static int start_child(struct cli_opts *o, const struct run_args *a,
                       const rl_lock *l, int sock, pid_t *pid)
{
    uint64_t fence = a->ao.fencing ? rl_lock_fence(l) : 0;
    struct sup_msg m;
    ssize_t n;

    if (sup_send(sock, SUP_START, 0, fence, rl_lock_token(l)) != 0)
        return cli_fail(o, CLI_EXIT_NOT_ACQUIRED, "%s: cannot reach the "
                        "supervisor process: %s", a->resource,
                        strerror(errno));
    n = sup_recv(sock, &m, true);
    if (n > 0 && m.type == SUP_STARTED) {
        *pid = (pid_t)m.value;
        return CLI_EXIT_OK;
    }
    if (n > 0 && m.type == SUP_FAILED && m.arg == ETIMEDOUT)
        return cli_fail(o, CLI_EXIT_LOST, "%s: the lock's validity ran out "
                        "before the command started", a->resource);
    if (n > 0 && m.type == SUP_FAILED)
        return cli_fail(o, m.arg == ENOENT ? 127 : 126, "cannot run '%s': "
                        "%s", a->cmd[0], strerror(m.arg));
    if (n == 0)
        /* Gone after it was told to start CMD, which may have started
         * and died with it (PR_SET_PDEATHSIG): as when it dies later. */
        return cli_fail(o, CLI_EXIT_LOST, "%s: the supervisor process "
                        "died: the command, if it started, was killed",
                        a->resource);
    return cli_fail(o, CLI_EXIT_NOT_ACQUIRED, "%s: the supervisor process "
                    "did not answer", a->resource);
}

int cmd_run(struct cli_opts *o, int argc, char **argv)
{
    struct run_args a;
    struct cli_interrupt in;
    rl_client *c = NULL;
    rl_lock *l = NULL;
    pid_t sup = -1;
    pid_t pid = -1;
    int sv[2] = {-1, -1};
    int sfd = -1;
    int code;
    uint64_t deadline;
    rl_status st;
    char detail[RL_ERROR_LEN * 2];
    int sig = 0;
    struct run_figures fig = {0, 0, 0};

    memset(&a, 0, sizeof(a));
    elect_mode = strcmp(argv[0], "elect") == 0;
    code = parse(o, argc, argv, &a);
    if (code != 0)
        return code > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (o->cfg.node_count == 0)
        return cli_fail(o, CLI_EXIT_USAGE, "no nodes: use -n/--nodes "
                        "URI[,URI...] or set REDLOCK_NODES");

    /* Block the signals we handle before any thread exists, so the
     * library's threads inherit the mask and signalfd sees them all. */
    sfd = cli_block_signals(true);
    a.tty = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
    if (a.tty)
        signal(SIGTTOU, SIG_IGN);   /* tcsetpgrp from the background */
    if (sfd < 0 ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        code = cli_fail(o, CLI_EXIT_NOT_ACQUIRED, "cannot set up: %s",
                        strerror(errno));
        goto out;
    }
    /* The supervisor: forked while this process has a single thread and
     * no descriptor of the library. It keeps sfd for its SIGCHLD. */
    sup = fork();
    if (sup < 0) {
        code = cli_fail(o, CLI_EXIT_NOT_ACQUIRED, "fork: %s",
                        strerror(errno));
        goto out;
    }
    if (sup == 0) {
        close(sv[0]);
        supervise(sv[1], sfd, a.cmd, a.resource, a.tty);
        _exit(0);
    }
    close(sv[1]);
    sv[1] = -1;

    code = cli_client_new(o, &c);
    if (code != CLI_EXIT_OK)
        goto out;
    fig.start_us = cli_mono_us();
    in.sfd = sfd;
    in.eof_fd = -1;
    in.show = o;                /* the wait line */
    st = cli_acquire_interruptible(c, a.resource, &a.ao, &in, &l, detail,
                                   sizeof(detail));
    sig = in.sig;
    if (l != NULL)
        fig.acquired_us = cli_mono_us();
    if (sig != 0) {
        /* Nothing of the canceled acquire is left on the nodes. */
        code = cli_interrupted(o, a.resource, &in);
        goto out;
    }
    if (st == RL_ENOTACQUIRED || st == RL_ETIMEOUT) {
        if (!o->quiet)
            cli_fail(o, 0, "%s", detail);
        code = a.conflict_code;
        goto out;
    }
    if (st != RL_OK) {
        code = cli_status_exit_detail(o, st, a.resource, detail);
        goto out;
    }
    if (!a.no_watchdog) {
        st = rl_watchdog_start(l, &a.ao);
        if (st != RL_OK) {
            code = cli_fail(o, CLI_EXIT_NOT_ACQUIRED, "%s: cannot start the "
                            "watchdog: %s: %s", a.resource, rl_strerror(st),
                            rl_last_error());
            goto out_release;
        }
    }
    deadline = validity_deadline(l);
    if (deadline <= cli_boot_ms() + KILL_GUARD_MS ||
        sup_send(sv[0], SUP_DEADLINE, 0, deadline, NULL) != 0) {
        code = cli_fail(o, CLI_EXIT_LOST, "%s: the lock's validity ran out "
                        "before the command started", a.resource);
        goto out_release;
    }
    cli_info(o, "acquired '%s' (validity %" PRId64 " ms); starting %s",
             a.resource, rl_lock_validity_ms(l), a.cmd[0]);
    code = start_child(o, &a, l, sv[0], &pid);
    if (code != CLI_EXIT_OK)
        goto out_release;
    if (a.tty)
        tcsetpgrp(STDIN_FILENO, pid);
    code = supervise_child(o, &a, l, pid, sfd, sv[0], deadline);
    /* From here on the supervisor may reap CMD: no more signals to it. */
    sup_send(sv[0], SUP_DONE, 0, 0, NULL);
    if (a.tty)
        tcsetpgrp(STDIN_FILENO, getpgrp());

out_release:
    rl_watchdog_stop(l);
    st = rl_release(l);         /* also when lost: deletes keys still ours */
    l = NULL;
    fig.released_us = cli_mono_us();
    if (st != RL_OK && st != RL_ELOST && code == CLI_EXIT_OK)
        cli_info(o, "release of '%s': %s: %s", a.resource, rl_strerror(st),
                 rl_last_error());

out:
    rl_lock_free(l);
    if (a.metrics_file != NULL)
        cli_write_run_metrics(o, a.metrics_file, a.resource, &fig, code, c);
    rl_client_free(c);
    if (sv[0] >= 0) {
        sup_send(sv[0], SUP_DONE, 0, 0, NULL);
        close(sv[0]);
    }
    if (sup > 0) {
        while (waitpid(sup, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    if (sfd >= 0)
        close(sfd);
    /* The signal mask stays: unblocking now could deliver a late SIGTERM
     * meant for the child and replace the child's exit status with it. */
    return code;
}
