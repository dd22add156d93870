/* SPDX-License-Identifier: BSD-3-Clause */
/* cmd_hold.c -- "redlock-cli hold R [--ttl MS] [--wait MS] [--fence]
 * [--limit K | --shared] [--lock-delay MS]".
 *
 * A lock held by a process, for shells: acquire (waiting with --wait),
 * print what acquire prints and flush, keep the lock renewed by the
 * watchdog, and release it when the caller is done with it: stdin reaches
 * EOF (the usual end of a coproc or a pipe), SIGTERM, SIGINT or SIGHUP
 * arrives, or the parent process dies (PR_SET_PDEATHSIG sends SIGHUP; the
 * parent's pid is also checked every tick, for a parent whose thread that
 * forked us ended earlier). Whatever stdin carries is read and dropped.
 * When the lock is lost it says so on stderr and exits 4: the holder must
 * stop using the resource. Exit 0 released, 1 not acquired (or the wait
 * was ended by EOF), 128+N a signal N ended the wait, 2 usage, 3 no
 * quorum, 4 lost. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli.h"

/* How often the parent's pid is checked, ms. */
#define PARENT_TICK_MS 200

static const char usage[] =
"Usage: redlock-cli [GLOBAL OPTIONS] hold R [--ttl MS] [--wait MS] [--fence]\n"
"                                          [--limit K] [--shared]\n"
"                                          [--lock-delay MS] [--fair]\n"
"                                          [--priority N]\n"
"\n"
"Acquire R, print its token on stdout (line 1; what acquire prints, or\n"
"one JSON object with --json) and keep the lock renewed until one of:\n"
"  - stdin reaches EOF (what it carries is read and ignored),\n"
"  - SIGTERM, SIGINT or SIGHUP arrives,\n"
"  - the parent process dies;\n"
"then release it and exit 0. When the lock is lost (its renewal failed)\n"
"it says so on stderr and exits 4 at once: stop using the resource.\n"
"A process that starts it with stdin at EOF (/dev/null, as for a\n"
"background job of a script) sees it release at once: give it a pipe.\n"
"\n"
"  --ttl MS    lock time-to-live, 1..--max-ttl (%{ttl}); renewed every\n"
"              third of it\n"
"  --wait MS   keep trying for up to MS ms ('forever'); a signal or EOF\n"
"              on stdin ends the wait; a terminal shows it on one line\n"
"              (as for acquire)\n"
"  --fence     also issue a fencing token, printed on stdout line 2\n"
"  --limit K, --shared, --lock-delay MS, --owner S, --fair,\n"
"  --priority N  as for acquire\n"
"\n"
"Exit: 0 released; 1 not acquired; 2 usage; 3 no quorum; 4 lock lost;\n"
"128+N signal N arrived while waiting.\n"
"\n"
"Examples (bash):\n"
"  coproc LOCK { redlock-cli hold deploy --ttl 10000; }\n"
"  read -r tok <&\"${LOCK[0]}\" || exit 1     # acquired\n"
"  ./deploy.sh                                # the lock is renewed\n"
"  exec {LOCK[1]}>&-; wait \"$LOCK_PID\"       # EOF: released, exit 0\n";

/* Why holding ended. */
enum hold_end {
    HOLD_EOF,
    HOLD_SIGNAL,
    HOLD_PARENT,
    HOLD_LOST
};

static const char *end_text(enum hold_end e)
{
    switch (e) {
    case HOLD_EOF:
        return "stdin reached EOF";
    case HOLD_SIGNAL:
        return "a signal arrived";
    case HOLD_PARENT:
        return "the parent process died";
    case HOLD_LOST:
        return "the lock was lost";
    }
    return "?";
}

/* Hold l until something in the file header ends it. */
static enum hold_end hold_until_done(rl_lock *l, int sfd, pid_t parent)
{
    struct signalfd_siginfo si;
    struct pollfd pfd[3];
    bool stdin_open = true;
    char buf[4096];
    ssize_t n;

    for (;;) {
        if (rl_lock_lost(l) || rl_lock_validity_ms(l) <= 0)
            return HOLD_LOST;
        if (getppid() != parent)
            return HOLD_PARENT;
        pfd[0].fd = stdin_open ? STDIN_FILENO : -1;
        pfd[0].events = POLLIN;
        pfd[1].fd = sfd;
        pfd[1].events = POLLIN;
        pfd[2].fd = rl_lock_lost_fd(l);
        pfd[2].events = POLLIN;
        if (poll(pfd, 3, PARENT_TICK_MS) <= 0)
            continue;
        if ((pfd[1].revents & POLLIN) &&
            read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
            return HOLD_SIGNAL;
        if (pfd[0].revents & POLLNVAL)
            return HOLD_EOF;
        if (pfd[0].revents != 0) {
            n = read(STDIN_FILENO, buf, sizeof(buf));
            if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
                return HOLD_EOF;
        }
    }
}

int cmd_hold(struct cli_opts *o, int argc, char **argv)
{
    struct cli_acquire a;
    enum hold_end end;
    pid_t parent;
    rl_status st;
    int code;

    /* The parent's death arrives as a SIGHUP read from a.in.sfd (the
     * signals are blocked before any thread exists, and the library's
     * threads inherit the mask). */
    parent = getppid();
    code = cli_acquire_start(o, argc, argv, usage, &a);
    if (code != CLI_EXIT_OK)
        goto out;
    a.ao.auto_extend = true;
    if (prctl(PR_SET_PDEATHSIG, SIGHUP) != 0 || getppid() != parent) {
        code = cli_fail(o, CLI_EXIT_NOT_ACQUIRED, "%s: the parent process "
                        "is gone", a.resource);
        goto out;
    }
    a.in.eof_fd = STDIN_FILENO;
    code = cli_acquire_take(o, &a);
    if (code != CLI_EXIT_OK)
        goto out;
    fflush(stdout);

    end = hold_until_done(a.l, a.in.sfd, parent);
    cli_info(o, "%s: %s; releasing", a.resource, end_text(end));
    if (end == HOLD_LOST) {
        code = cli_fail(o, CLI_EXIT_LOST, "%s: lost the lock (a renewal "
                        "failed: the nodes no longer hold our token or did "
                        "not answer in time); stop using the resource",
                        a.resource);
    }
    rl_watchdog_stop(a.l);
    st = rl_release(a.l);       /* also when lost: deletes keys still ours */
    a.l = NULL;
    if (end != HOLD_LOST && st == RL_ELOST) /* validity over, or too few
                                               nodes still had the key */
        code = cli_fail(o, CLI_EXIT_LOST, "%s", rl_last_error());
    else if (end != HOLD_LOST && st != RL_OK)
        code = cli_status_exit(o, st, a.resource);

out:
    cli_acquire_free(&a);
    return code < 0 ? CLI_EXIT_OK : code;
}
