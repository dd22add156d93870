/* SPDX-License-Identifier: BSD-3-Clause */
/* interrupt.c -- an acquire that the user can interrupt while it waits
 * (acquire, run, hold).
 *
 * The acquire runs through the async API, with a cancel token, while this
 * thread polls the callback's eventfd, a signalfd of the signals the
 * command handles and, for hold, stdin (EOF ends the wait too). When the
 * wait is interrupted the token fires: the library ends the acquire at
 * once and releases whatever its attempt may hold on every node; a lock
 * granted just before is released here. Either way nothing is left
 * behind, and the callback has run before this returns. While it waits,
 * waitline.c may keep a status line on stderr. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli.h"

/* The outcome of the async acquire, shared with the loop thread. */
struct acq_wait {
    pthread_mutex_t mu;
    int efd;                    /* eventfd, written when done */
    bool done;                  /* mu: the callback ran */
    rl_status st;               /* mu */
    rl_lock *lock;              /* mu */
    char detail[RL_ERROR_LEN * 2];
};

static void acquired(rl_client *c, rl_status st, rl_lock *lock,
                     void *privdata)
{
    struct acq_wait *w = privdata;
    uint64_t one = 1;

    (void)c;
    pthread_mutex_lock(&w->mu);
    w->done = true;
    w->st = st;
    w->lock = lock;
    snprintf(w->detail, sizeof(w->detail), "%s", rl_last_error());
    /* Under the mutex: once done is seen, w is not touched any more. */
    if (write(w->efd, &one, sizeof(one)) < 0)
        w->done = true;         /* cannot fail on an eventfd counter */
    pthread_mutex_unlock(&w->mu);
}

/* True when in says the wait is over: a signal other than SIGCHLD was
 * read from in->sfd, or in->eof_fd reached its end. */
static bool interrupted(struct cli_interrupt *in, const struct pollfd *pfd)
{
    struct signalfd_siginfo si;
    char buf[512];
    ssize_t n;

    while (in->sfd >= 0 &&
           read(in->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo != SIGCHLD)
            in->sig = (int)si.ssi_signo;
    }
    if (in->eof_fd >= 0 && pfd->revents != 0) {
        n = read(in->eof_fd, buf, sizeof(buf));
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN) ||
            (pfd->revents & POLLNVAL))
            in->eof = true;
    }
    return in->sig != 0 || in->eof;
}

/* Poll until the callback ran (true) or in interrupts the wait. */
static bool wait_done(struct acq_wait *w, struct cli_interrupt *in)
{
    struct pollfd pfd[3];
    bool done;

    for (;;) {
        pfd[0].fd = w->efd;
        pfd[0].events = POLLIN;
        pfd[1].fd = in != NULL ? in->sfd : -1;
        pfd[1].events = POLLIN;
        pfd[2].fd = in != NULL ? in->eof_fd : -1;
        pfd[2].events = POLLIN;
        pfd[2].revents = 0;
        if (poll(pfd, 3, -1) < 0)
            continue;
        pthread_mutex_lock(&w->mu);
        done = w->done;
        pthread_mutex_unlock(&w->mu);
        if (done)
            return true;
        if (in != NULL && interrupted(in, &pfd[2]))
            return false;
    }
}

rl_status cli_acquire_interruptible(rl_client *c, const char *resource,
                                    const rl_acquire_opts *ao,
                                    struct cli_interrupt *in, rl_lock **out,
                                    char *detail, size_t len)
{
    rl_acquire_opts o = *ao;
    struct cli_waitline *line;
    struct acq_wait w;
    rl_status st;
    bool done;

    *out = NULL;
    in->sig = 0;
    in->eof = false;
    detail[0] = '\0';
    memset(&w, 0, sizeof(w));
    o.cancel = rl_cancel_new();
    w.efd = eventfd(0, EFD_CLOEXEC);
    if (o.cancel == NULL || w.efd < 0) {
        st = o.cancel == NULL ? RL_ENOMEM : RL_ESYSTEM;
        snprintf(detail, len, "%s: cannot wait: %s", resource,
                 rl_strerror(st));
        goto out;
    }
    pthread_mutex_init(&w.mu, NULL);
    st = rl_acquire_async(c, resource, &o, acquired, &w);
    if (st != RL_OK) {
        snprintf(detail, len, "%s", rl_last_error());
        goto out_mutex;
    }
    line = cli_waitline_start(in->show, c, resource, ao);
    done = wait_done(&w, in);
    cli_waitline_stop(line);    /* cleared before any message */
    if (!done) {
        /* Ends the acquire at once; its callback still runs. */
        rl_cancel_fire(o.cancel);
        wait_done(&w, NULL);
    }
    st = w.st;
    *out = w.lock;
    snprintf(detail, len, "%s", w.detail);
    if (in->sig != 0 || in->eof) {
        /* Granted just before the interruption: give it back. */
        if (*out != NULL)
            rl_release(*out);
        *out = NULL;
        st = RL_EABORTED;
    }
out_mutex:
    pthread_mutex_destroy(&w.mu);
out:
    if (w.efd >= 0)
        close(w.efd);
    rl_cancel_free(o.cancel);
    return st;
}

int cli_acquire_or_exit(const struct cli_opts *o, rl_client *c,
                        const char *resource, const rl_acquire_opts *ao,
                        struct cli_interrupt *in, rl_lock **out)
{
    char detail[RL_ERROR_LEN * 2];
    rl_status st;

    st = cli_acquire_interruptible(c, resource, ao, in, out, detail,
                                   sizeof(detail));
    if (in->sig != 0 || in->eof)
        return cli_interrupted(o, resource, in);
    if (st != RL_OK)
        return cli_status_exit_detail(o, st, resource, detail);
    return CLI_EXIT_OK;
}

const char *cli_sig_name(int sig)
{
    const char *n = sigabbrev_np(sig);

    return n != NULL ? n : "?";
}

int cli_interrupted(const struct cli_opts *o, const char *resource,
                    const struct cli_interrupt *in)
{
    if (in->eof) {
        if (!o->quiet)
            cli_fail(o, 0, "%s: stdin reached EOF while waiting for the "
                     "lock", resource);
        return CLI_EXIT_NOT_ACQUIRED;
    }
    if (!o->quiet)
        cli_fail(o, 0, "%s: interrupted by SIG%s while waiting for the lock",
                 resource, cli_sig_name(in->sig));
    return 128 + in->sig;
}

int cli_block_signals(bool chld)
{
    sigset_t mask;

    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    if (chld)
        sigaddset(&mask, SIGCHLD);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);
    return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}
