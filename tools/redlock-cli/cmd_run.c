/* cmd_run.c -- "redlock-cli run R [...] -- CMD [ARG...]" (DESIGN §7, §2.4).
 *
 * Holds R while CMD runs: acquire (with --wait), start CMD in its own
 * process group with REDLOCK_RESOURCE / REDLOCK_TOKEN (/ REDLOCK_FENCE)
 * and without REDLOCK_PASSWORD, renew with the watchdog, forward
 * SIGINT/SIGTERM/SIGHUP, release once CMD exits and exit with its status
 * (128+N when killed by signal N).
 *
 * The child never outlives the lock. Two mechanisms enforce it:
 *   - this process: when the lock is LOST (rl_lock_lost_fd readable) it
 *     sends the kill signal (SIGTERM or --kill-signal) at once and SIGKILL
 *     when the validity ends, then exits 4;
 *   - a supervisor process, forked BEFORE the rl_client exists (no threads
 *     yet), that receives the child (pid + pidfd over SCM_RIGHTS) and
 *     every new validity deadline (absolute CLOCK_BOOTTIME ms) over a
 *     socket, and SIGKILLs the child's process group when the last
 *     deadline it got passes. It does not depend on this process running:
 *     if redlock-cli is SIGSTOPped no new deadlines arrive, and if it dies
 *     the socket hits EOF and the last deadline is still enforced. It
 *     ignores SIGINT/SIGTERM/SIGHUP and exits on the DONE message (child
 *     reaped) or once the socket is closed with nothing left to enforce.
 * The pidfd avoids pid-reuse races: this process is the child's parent,
 * so the pid cannot be reused before it reaps the child, and the pidfd is
 * taken before that. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

/* SIGKILL this long before the deadline, so the child is gone by then. */
#define KILL_GUARD_MS 10
/* How often the validity is re-read and the child checked. */
#define TICK_MS 50

extern char **environ;

static const char usage[] =
"Usage: redlock-cli [GLOBAL OPTIONS] run R [OPTIONS] -- CMD [ARG...]\n"
"\n"
"Acquire R, run CMD while holding it (renewed by a watchdog), release it\n"
"when CMD exits and exit with CMD's status (128+N if killed by signal N).\n"
"CMD runs in its own process group with REDLOCK_RESOURCE, REDLOCK_TOKEN\n"
"and (with --fence) REDLOCK_FENCE set, and without REDLOCK_PASSWORD.\n"
"SIGINT, SIGTERM and SIGHUP are forwarded to it.\n"
"\n"
"CMD never outlives the lock: when the lock is lost CMD gets the kill\n"
"signal at once and SIGKILL when the validity ends (exit 4). A supervisor\n"
"process enforces the validity's end even if redlock-cli is stopped or\n"
"killed.\n"
"\n"
"  --ttl MS                 lock time-to-live, 1..--max-ttl (30000)\n"
"  --wait MS                wait up to MS ms for the lock ('forever')\n"
"  --fence                  issue a fencing token (REDLOCK_FENCE)\n"
"  --no-watchdog            do not renew: CMD gets the kill signal shortly\n"
"                           before the TTL runs out and SIGKILL at its end\n"
"  --kill-signal SIG        signal sent when the lock is lost (TERM)\n"
"  --conflict-exit-code N   exit code when not acquired (1)\n"
"  --metrics-file FILE      at the end, replace FILE atomically with the\n"
"                           run's figures in Prometheus text format (for\n"
"                           node_exporter's textfile collector: FILE.prom)\n"
"\n"
"Exit: CMD's status; 1 (or N) not acquired; 2 usage; 3 no quorum; 4 lock\n"
"lost (CMD was signalled); 126/127 CMD not executable / not found.\n"
"\n"
"Examples:\n"
"  redlock-cli run nightly-backup -- /usr/local/bin/backup --full\n"
"  redlock-cli run --wait 60000 deploy -- sh -c 'echo $REDLOCK_TOKEN'\n"
"  redlock-cli run --fence --conflict-exit-code 0 cron:report -- ./report\n";

enum sup_type {
    SUP_DEADLINE = 1,           /* value: boottime ms */
    SUP_CHILD = 2,              /* value: pid; a pidfd may be attached */
    SUP_DONE = 3                /* the child was reaped: exit */
};

struct sup_msg {
    uint32_t type;
    uint32_t pad;
    uint64_t value;
};

/* ---- Supervisor --------------------------------------------------------- */

static void sup_kill(int pidfd, pid_t pid)
{
    if (pidfd >= 0)
        syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
    if (pid > 0) {
        kill(-pid, SIGKILL);    /* its process group: grandchildren too */
        if (pidfd < 0)
            kill(pid, SIGKILL);
    }
}

/* Receive one message (and any fd passed with it). 0 on EOF. */
static ssize_t sup_recv(int sock, struct sup_msg *m, int *fd)
{
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {m, sizeof(*m)};
    struct msghdr mh;
    struct cmsghdr *cm;
    ssize_t n;

    memset(&mh, 0, sizeof(mh));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.buf;
    mh.msg_controllen = sizeof(ctl.buf);
    do {
        n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n <= 0)
        return n;
    for (cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
            memcpy(fd, CMSG_DATA(cm), sizeof(int));
    }
    return n;
}

/* The supervisor's whole life (see the top of the file). */
static void supervise(int sock)
{
    struct sup_msg m;
    sigset_t none;
    uint64_t deadline = 0;      /* boottime ms, 0 = none yet */
    uint64_t now;
    pid_t pid = 0;
    int pidfd = -1;
    bool eof = false;
    bool expired = false;
    struct pollfd pfd;
    int timeout;
    int fd;
    ssize_t n;

    /* Its own session: the terminal's ^C / ^Z / hang-up and a kill of
     * redlock-cli's process group do not reach it. It holds no stdio, so
     * a reader of redlock-cli's output never waits for it. */
    setsid();
    fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
        dup2(fd, STDIN_FILENO);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        if (fd > STDERR_FILENO)
            close(fd);
    }
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTSTP, SIG_IGN);
    signal(SIGTTIN, SIG_IGN);
    signal(SIGTTOU, SIG_IGN);
    signal(SIGCHLD, SIG_DFL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (;;) {
        if (eof && (deadline == 0 || expired || pid == 0))
            _exit(0);
        now = cli_boot_ms();
        if (!expired && deadline != 0 && now + KILL_GUARD_MS >= deadline) {
            expired = true;
            sup_kill(pidfd, pid);
            continue;
        }
        timeout = -1;
        if (!expired && deadline != 0)
            timeout = (int)(deadline - KILL_GUARD_MS - now);
        pfd.fd = sock;
        pfd.events = POLLIN;
        pfd.revents = 0;
        if (poll(&pfd, eof ? 0 : 1, timeout) <= 0)
            continue;
        fd = -1;
        n = sup_recv(sock, &m, &fd);
        if (n <= 0) {
            eof = true;
            continue;
        }
        if (m.type == SUP_DONE)
            _exit(0);
        if (m.type == SUP_DEADLINE)
            deadline = m.value;
        if (m.type == SUP_CHILD) {
            pid = (pid_t)m.value;
            pidfd = fd;
            if (expired)
                sup_kill(pidfd, pid);
        } else if (fd >= 0) {
            close(fd);
        }
    }
}

static int sup_send(int sock, enum sup_type type, uint64_t value, int fd)
{
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct sup_msg m = {(uint32_t)type, 0, value};
    struct iovec iov = {&m, sizeof(m)};
    struct msghdr mh;
    struct cmsghdr *cm;
    ssize_t n;

    if (sock < 0)
        return -1;
    memset(&mh, 0, sizeof(mh));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    if (fd >= 0) {
        memset(&ctl, 0, sizeof(ctl));
        mh.msg_control = ctl.buf;
        mh.msg_controllen = sizeof(ctl.buf);
        cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    }
    do {
        n = sendmsg(sock, &mh, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof(m) ? 0 : -1;
}

/* ---- The child ---------------------------------------------------------- */

/* environ without our variables and the password, plus ours: the
 * strings added are stored in added[] (to be freed with the array). */
static char **child_env(const char *resource, const char *token,
                        uint64_t fence, bool with_fence, char *added[3])
{
    static const char *drop[] = {"REDLOCK_PASSWORD=", "REDLOCK_RESOURCE=",
                                 "REDLOCK_TOKEN=", "REDLOCK_FENCE="};
    size_t n = 0;
    size_t k = 0;
    size_t i, j;
    char **env;

    while (environ[n] != NULL)
        n++;
    env = calloc(n + 4, sizeof(*env));
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
    if (with_fence &&
        asprintf(&added[2], "REDLOCK_FENCE=%" PRIu64, fence) < 0)
        added[2] = NULL;
    if (added[0] == NULL || added[1] == NULL ||
        (with_fence && added[2] == NULL)) {
        free(env);
        return NULL;
    }
    for (i = 0; i < 3; i++) {
        if (added[i] != NULL)
            env[k++] = added[i];
    }
    env[k] = NULL;
    return env;
}

/* Start CMD in its own process group with default signal handling. */
static int spawn_child(char **cmd, char **env, pid_t *pid)
{
    posix_spawnattr_t attr;
    sigset_t none;
    sigset_t def;
    int err;

    sigemptyset(&none);
    sigemptyset(&def);
    sigaddset(&def, SIGINT);
    sigaddset(&def, SIGTERM);
    sigaddset(&def, SIGHUP);
    sigaddset(&def, SIGCHLD);
    sigaddset(&def, SIGPIPE);
    sigaddset(&def, SIGQUIT);
    sigaddset(&def, SIGTSTP);
    sigaddset(&def, SIGTTIN);
    sigaddset(&def, SIGTTOU);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP |
                                        POSIX_SPAWN_SETSIGMASK |
                                        POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &def);
    err = posix_spawnp(pid, cmd[0], NULL, &attr, cmd, env);
    posix_spawnattr_destroy(&attr);
    return err;
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

static int parse(struct cli_opts *o, int argc, char **argv,
                 struct run_args *a)
{
    const char *ttl_s = NULL;
    const char *wait_s = NULL;
    const char *sig_s = NULL;
    const char *conflict_s = NULL;
    bool fence = false;
    const struct cli_cmdopt opts[] = {
        {"ttl", &ttl_s, NULL},
        {"wait", &wait_s, NULL},
        {"fence", NULL, &fence},
        {"no-watchdog", NULL, &a->no_watchdog},
        {"kill-signal", &sig_s, NULL},
        {"conflict-exit-code", &conflict_s, NULL},
        {"metrics-file", &a->metrics_file, NULL},
    };
    const char *pos[1];
    uint32_t code;
    int npos;
    int rest;
    int r;

    r = cli_parse_args(o, argc, argv, opts, sizeof(opts) / sizeof(opts[0]),
                       usage, pos, 1, &npos, &rest);
    if (r != 0)
        return r;
    if (npos < 1)
        return cli_fail(o, -1, "missing resource (usage: run R [OPTIONS] -- "
                        "CMD [ARG...])");
    if (rest < 0)
        return cli_fail(o, -1, "missing '--' before the command to run "
                        "(usage: run R [OPTIONS] -- CMD [ARG...])");
    if (rest >= argc || argv[rest][0] == '\0')
        return cli_fail(o, -1, "missing the command after '--'");
    a->resource = pos[0];
    a->cmd = argv + rest;
    a->ao.ttl_ms = cli_default_ttl(o);
    a->ao.fencing = fence;
    a->kill_signal = SIGTERM;
    a->conflict_code = CLI_EXIT_NOT_ACQUIRED;
    if (cli_check_resource(o, a->resource) != 0)
        return -1;
    if (ttl_s != NULL && cli_parse_ttl(o, "--ttl", ttl_s, &a->ao.ttl_ms) != 0)
        return -1;
    if (wait_s != NULL && cli_parse_wait(o, wait_s, &a->ao.wait_ms) != 0)
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

static const char *sig_name(int sig)
{
    const char *n = sigabbrev_np(sig);

    return n != NULL ? n : "?";
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

/* Wait for the child while keeping the supervisor's deadline current and
 * reacting to signals and to a lost lock. Returns the child's wait
 * status; *lost tells whether the child was signalled for the lock. */
static int supervise_child(struct cli_opts *o, struct run_args *a,
                           rl_lock *l, pid_t pid, int sfd, int sock,
                           uint64_t deadline, bool *lost)
{
    uint32_t ttl = a->ao.ttl_ms;
    int64_t margin = ttl / 10 < 1000 ? ttl / 10 : 1000;
    uint64_t sent = deadline;
    uint64_t kill_at = 0;       /* boottime ms, once lost */
    bool killed = false;
    struct pollfd pfd[2];
    int lost_fd = rl_lock_lost_fd(l);
    int status = 0;
    int timeout;
    uint64_t now;
    pid_t w;

    *lost = false;
    for (;;) {
        w = waitpid(pid, &status, WNOHANG | (a->tty ? WUNTRACED : 0));
        if (w == pid && WIFSTOPPED(status)) {
            job_stopped(pid, WSTOPSIG(status));
            continue;
        }
        if (w == pid)
            return status;
        now = cli_boot_ms();
        if (!*lost) {
            uint64_t d = validity_deadline(l);

            /* d wobbles by 1 ms (two floors); send real changes only.
             * A deadline sent is never later than the true one, and the
             * supervisor kills KILL_GUARD_MS early, so 2 ms of slack
             * downwards is safe. */
            if (d > sent + 20 || d + 2 < sent) {
                sup_send(sock, SUP_DEADLINE, d, -1);
                sent = d;
            }
            if (rl_lock_lost(l) ||
                (a->no_watchdog && (int64_t)(d - now) <= margin) ||
                d <= now) {
                *lost = true;
                kill_at = sent;
                if (!o->quiet)
                    cli_fail(o, 0, "%s '%s': sending SIG%s to the command"
                             ", SIGKILL when the validity ends",
                             rl_lock_lost(l) ? "lost the lock on"
                                             : "the TTL runs out for",
                             a->resource, sig_name(a->kill_signal));
                signal_child(pid, a->kill_signal);
            }
        }
        if (*lost && !killed && now + KILL_GUARD_MS >= kill_at) {
            signal_child(pid, SIGKILL);
            killed = true;
        }
        timeout = TICK_MS;
        if (*lost && !killed && kill_at - KILL_GUARD_MS - now < TICK_MS)
            timeout = (int)(kill_at - KILL_GUARD_MS - now);
        pfd[0].fd = sfd;
        pfd[0].events = POLLIN;
        pfd[1].fd = *lost ? -1 : lost_fd;
        pfd[1].events = POLLIN;
        if (poll(pfd, 2, timeout) > 0 && (pfd[0].revents & POLLIN)) {
            struct signalfd_siginfo si;

            while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                if (si.ssi_signo == SIGCHLD)
                    continue;
                cli_info(o, "forwarding SIG%s to the command",
                         sig_name((int)si.ssi_signo));
                signal_child(pid, (int)si.ssi_signo);
            }
        }
    }
}

/* The outcome of the async acquire, shared with the loop thread. */
struct acq_wait {
    pthread_mutex_t mu;
    int efd;                    /* eventfd, written when done */
    bool done;                  /* mu: the callback ran */
    bool interrupted;           /* mu: nobody waits for the lock anymore */
    rl_status st;               /* mu */
    rl_lock *lock;              /* mu */
    char detail[RL_ERROR_LEN * 2];
};

/* An interrupted acquire's record, freed once the client is. */
static struct acq_wait *abandoned_wait;

static void acquired(rl_client *c, rl_status st, rl_lock *lock,
                     void *privdata)
{
    struct acq_wait *w = privdata;
    uint64_t one = 1;

    (void)c;
    pthread_mutex_lock(&w->mu);
    w->done = true;
    w->st = st;
    snprintf(w->detail, sizeof(w->detail), "%s", rl_last_error());
    if (w->interrupted && lock != NULL) {
        /* Granted after the user gave up: give it back at once. */
        if (rl_release_async(lock, NULL, NULL) != RL_OK)
            rl_lock_free(lock);
    } else {
        w->lock = lock;
    }
    pthread_mutex_unlock(&w->mu);
    if (write(w->efd, &one, sizeof(one)) < 0)
        return;                 /* cannot fail on an eventfd counter */
}

/* Acquire with the async API so that SIGINT/SIGTERM/SIGHUP (read from
 * sfd) can interrupt a long --wait: then *sig is set, a lock granted
 * meanwhile is released, and the caller frees the client, which cancels
 * the acquire. Returns the acquire's status, detail its message. */
static rl_status acquire_or_signal(struct run_args *a, rl_client *c, int sfd,
                                   rl_lock **out, char *detail, size_t len,
                                   int *sig)
{
    struct signalfd_siginfo si;
    struct pollfd pfd[2];
    struct acq_wait *w;
    rl_lock *granted;
    rl_status st;

    *out = NULL;
    *sig = 0;
    detail[0] = '\0';
    w = calloc(1, sizeof(*w));
    if (w == NULL)
        return RL_ENOMEM;
    pthread_mutex_init(&w->mu, NULL);
    w->efd = eventfd(0, EFD_CLOEXEC);
    if (w->efd < 0) {
        free(w);
        return RL_ESYSTEM;
    }
    st = rl_acquire_async(c, a->resource, &a->ao, acquired, w);
    if (st != RL_OK) {
        snprintf(detail, len, "%s", rl_last_error());
        goto out;
    }
    for (;;) {
        pfd[0].fd = w->efd;
        pfd[0].events = POLLIN;
        pfd[1].fd = sfd;
        pfd[1].events = POLLIN;
        if (poll(pfd, 2, -1) < 0)
            continue;
        pthread_mutex_lock(&w->mu);
        if (w->done) {
            st = w->st;
            *out = w->lock;
            snprintf(detail, len, "%s", w->detail);
            pthread_mutex_unlock(&w->mu);
            goto out;
        }
        pthread_mutex_unlock(&w->mu);
        while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
            if (si.ssi_signo != SIGCHLD)
                *sig = (int)si.ssi_signo;
        }
        if (*sig != 0)
            break;
    }
    pthread_mutex_lock(&w->mu);
    w->interrupted = true;
    granted = w->lock;
    w->lock = NULL;
    pthread_mutex_unlock(&w->mu);
    if (granted != NULL)
        rl_release(granted);
    /* The callback runs exactly once, at the latest (RL_ECANCELED) inside
     * rl_client_free, so w must outlive the client: cmd_run frees it
     * after rl_client_free. */
    abandoned_wait = w;
    return RL_ECANCELED;

out:
    close(w->efd);
    pthread_mutex_destroy(&w->mu);
    free(w);
    return st;
}

int cmd_run(struct cli_opts *o, int argc, char **argv)
{
    struct run_args a;
    sigset_t mask;
    rl_client *c = NULL;
    rl_lock *l = NULL;
    char **env = NULL;
    char *added[3] = {NULL, NULL, NULL};
    pid_t sup = -1;
    pid_t pid = -1;
    int sv[2] = {-1, -1};
    int sfd = -1;
    int pidfd;
    int status;
    int code;
    int err;
    bool lost = false;
    uint64_t deadline;
    rl_status st;
    char detail[RL_ERROR_LEN * 2];
    int sig = 0;
    struct run_figures fig = {0, 0, 0};

    memset(&a, 0, sizeof(a));
    code = parse(o, argc, argv, &a);
    if (code != 0)
        return code > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (o->node_count == 0)
        return cli_fail(o, CLI_EXIT_USAGE, "no nodes: use -n/--nodes "
                        "URI[,URI...] or set REDLOCK_NODES");

    /* Block the signals we handle before any thread exists, so the
     * library's threads inherit the mask and signalfd sees them all. */
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGCHLD);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);
    a.tty = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
    if (a.tty)
        signal(SIGTTOU, SIG_IGN);   /* tcsetpgrp from the background */
    sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0 ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        code = cli_fail(o, CLI_EXIT_NOT_ACQUIRED, "cannot set up: %s",
                        strerror(errno));
        goto out;
    }
    /* The supervisor: forked while this process has a single thread. */
    sup = fork();
    if (sup < 0) {
        code = cli_fail(o, CLI_EXIT_NOT_ACQUIRED, "fork: %s",
                        strerror(errno));
        goto out;
    }
    if (sup == 0) {
        close(sv[0]);
        close(sfd);
        supervise(sv[1]);
        _exit(0);
    }
    close(sv[1]);
    sv[1] = -1;

    code = cli_client_new(o, &c);
    if (code != CLI_EXIT_OK)
        goto out;
    fig.start_us = cli_mono_us();
    st = acquire_or_signal(&a, c, sfd, &l, detail, sizeof(detail), &sig);
    if (l != NULL)
        fig.acquired_us = cli_mono_us();
    if (sig != 0) {
        /* Interrupted while waiting: freeing the client cancels the
         * acquire (a lock granted meanwhile is released). */
        if (!o->quiet)
            cli_fail(o, 0, "%s: interrupted by SIG%s while waiting for the "
                     "lock", a.resource, sig_name(sig));
        code = 128 + sig;
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
    env = child_env(a.resource, rl_lock_token(l), rl_lock_fence(l),
                    a.ao.fencing, added);
    if (env == NULL) {
        code = cli_fail(o, CLI_EXIT_NOT_ACQUIRED, "out of memory");
        goto out_release;
    }
    deadline = validity_deadline(l);
    if (deadline <= cli_boot_ms() + KILL_GUARD_MS ||
        sup_send(sv[0], SUP_DEADLINE, deadline, -1) != 0) {
        code = cli_fail(o, CLI_EXIT_LOST, "%s: the lock's validity ran out "
                        "before the command started", a.resource);
        goto out_release;
    }
    cli_info(o, "acquired '%s' (validity %" PRId64 " ms); starting %s",
             a.resource, rl_lock_validity_ms(l), a.cmd[0]);
    err = spawn_child(a.cmd, env, &pid);
    if (err != 0) {
        code = cli_fail(o, err == ENOENT ? 127 : 126, "cannot run '%s': %s",
                        a.cmd[0], strerror(err));
        goto out_release;
    }
    if (a.tty)
        tcsetpgrp(STDIN_FILENO, pid);
    pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    sup_send(sv[0], SUP_CHILD, (uint64_t)pid, pidfd);
    if (pidfd >= 0)
        close(pidfd);

    status = supervise_child(o, &a, l, pid, sfd, sv[0], deadline, &lost);
    sup_send(sv[0], SUP_DONE, 0, -1);
    if (a.tty)
        tcsetpgrp(STDIN_FILENO, getpgrp());
    if (lost)
        code = CLI_EXIT_LOST;
    else if (WIFEXITED(status))
        code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        code = 128 + WTERMSIG(status);
    else
        code = CLI_EXIT_NOT_ACQUIRED;
    /* Killed by SIGKILL after the validity ran out: the supervisor did it
     * while this process was stopped. */
    if (!lost && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL &&
        validity_deadline(l) <= cli_boot_ms() + KILL_GUARD_MS)
        code = CLI_EXIT_LOST;

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
    if (abandoned_wait != NULL) {
        close(abandoned_wait->efd);
        pthread_mutex_destroy(&abandoned_wait->mu);
        free(abandoned_wait);
        abandoned_wait = NULL;
    }
    if (sv[0] >= 0) {
        sup_send(sv[0], SUP_DONE, 0, -1);
        close(sv[0]);
    }
    if (sup > 0) {
        while (waitpid(sup, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    if (sfd >= 0)
        close(sfd);
    free(env);
    free(added[0]);
    free(added[1]);
    free(added[2]);
    /* The signal mask stays: unblocking now could deliver a late SIGTERM
     * meant for the child and replace the child's exit status with it. */
    return code;
}
