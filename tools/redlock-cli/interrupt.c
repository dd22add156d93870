/* interrupt.c -- an acquire that the user can interrupt while it waits
 * (run, hold).
 *
 * The acquire runs through the async API while this thread polls the
 * callback's eventfd, a signalfd of the signals the command handles and,
 * for hold, stdin (EOF ends the wait too). When the wait is interrupted,
 * a lock granted meanwhile is released at once, and the caller frees the
 * client, which cancels the acquire still in flight. The callback's
 * record may be reached until then, so it outlives the wait: it is freed
 * by cli_interrupt_cleanup, after rl_client_free. */
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

static void wait_free(struct acq_wait *w)
{
    close(w->efd);
    pthread_mutex_destroy(&w->mu);
    free(w);
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

rl_status cli_acquire_interruptible(rl_client *c, const char *resource,
                                    const rl_acquire_opts *ao,
                                    struct cli_interrupt *in, rl_lock **out,
                                    char *detail, size_t len)
{
    struct pollfd pfd[3];
    struct acq_wait *w;
    rl_lock *granted;
    rl_status st;

    *out = NULL;
    in->sig = 0;
    in->eof = false;
    detail[0] = '\0';
    w = calloc(1, sizeof(*w));
    if (w == NULL)
        return RL_ENOMEM;
    pthread_mutex_init(&w->mu, NULL);
    w->efd = eventfd(0, EFD_CLOEXEC);
    if (w->efd < 0) {
        pthread_mutex_destroy(&w->mu);
        free(w);
        return RL_ESYSTEM;
    }
    st = rl_acquire_async(c, resource, ao, acquired, w);
    if (st != RL_OK) {
        snprintf(detail, len, "%s", rl_last_error());
        wait_free(w);
        return st;
    }
    for (;;) {
        pfd[0].fd = w->efd;
        pfd[0].events = POLLIN;
        pfd[1].fd = in->sfd;
        pfd[1].events = POLLIN;
        pfd[2].fd = in->eof_fd;
        pfd[2].events = POLLIN;
        pfd[2].revents = 0;
        if (poll(pfd, 3, -1) < 0)
            continue;
        pthread_mutex_lock(&w->mu);
        if (w->done) {
            st = w->st;
            *out = w->lock;
            snprintf(detail, len, "%s", w->detail);
            pthread_mutex_unlock(&w->mu);
            wait_free(w);
            return st;
        }
        pthread_mutex_unlock(&w->mu);
        if (interrupted(in, &pfd[2]))
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
     * rl_client_free, so w must outlive the client. */
    abandoned_wait = w;
    return RL_ECANCELED;
}

void cli_interrupt_cleanup(void)
{
    if (abandoned_wait != NULL) {
        wait_free(abandoned_wait);
        abandoned_wait = NULL;
    }
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
