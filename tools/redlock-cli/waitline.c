/* SPDX-License-Identifier: BSD-3-Clause */
/* waitline.c -- the line a person watches while acquire, run or hold
 * waits (--wait) for a lock someone else holds.
 *
 * On a terminal (stderr a TTY, and no --json unless -v) one status line
 * on stderr is rewritten in place (\r, then erase to the end of the line)
 * four times a second: who holds the resource (its owner, as status
 * shows it), for how long more (until its key expires, lock-delay
 * included), how long we have waited and, with --fair, our place in the
 * queue. It is cleared when the wait ends, before anything else is
 * printed; nothing is drawn while we are a background job. With -v and
 * stderr not a terminal, a line is printed each time the holder or our
 * place changes instead. -q: nothing.
 *
 * Cost to the nodes: the holder is read at most once a second, the
 * first time after GRACE_MS (a lock taken at once shows nothing):
 * rl_resource_inspect, one read-only script per node (a semaphore's
 * slots: rl_semaphore_inspect, one script per node too); with --fair
 * the queue as well (rl_resource_queue, one more per node). Between two
 * reads the remaining time counts down by the local clock. The reads
 * block up to about op_timeout_ms, so a thread of its own does them and
 * the wait loop (interrupt.c) never waits for one, except when it stops
 * the line at the end of the wait. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* Before the first read: a lock taken at once shows nothing. */
#define GRACE_MS 300
/* Between two reads of the nodes. */
#define READ_MS 1000
/* Between two redraws of the line on a terminal. */
#define DRAW_MS 250
/* The longest line built (a terminal narrower cuts it). */
#define LINE_LEN 1024

struct cli_waitline {
    const struct cli_opts *o;
    rl_client *c;
    const char *resource;
    uint32_t limit;             /* a semaphore's permits, or 0 */
    bool fair;
    const char *owner;          /* ours (--owner or host:pid), or NULL */
    bool tty;                   /* rewrite one line in place */
    bool erase;                 /* the terminal knows ESC [ K */
    rl_holder_info *nodes;      /* node_count entries, for each read */
    rl_resource_info *slots;    /* limit entries, or NULL */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;                  /* mu: the wait is over */
    uint64_t start_us;          /* cli_mono_us() when the wait began */
    /* The last read (the thread's own). */
    uint64_t read_us;
    char who[RL_OWNER_MAX + 160]; /* "held by OWNER (TOKEN)", ... */
    int64_t left_ms;            /* at read_us: until the holder's key
                                   expires; -1 no expiry, -2 none */
    char place[64];             /* "place 2 of 3 in the queue", or "" */
    /* What is on the screen (tty) or was printed last (pipe). */
    size_t shown;
    char logged[LINE_LEN];
};

/* A duration for a person: "4.2s", "37s", "12m05s", "3h07m". */
static void duration_text(char *buf, size_t len, int64_t ms)
{
    if (ms < 10000)
        snprintf(buf, len, "%.1fs", (double)ms / 1000.0);
    else if (ms < 60000)
        snprintf(buf, len, "%llds", (long long)(ms / 1000));
    else if (ms < 3600000)
        snprintf(buf, len, "%lldm%02llds", (long long)(ms / 60000),
                 (long long)(ms / 1000 % 60));
    else
        snprintf(buf, len, "%lldh%02lldm", (long long)(ms / 3600000),
                 (long long)(ms / 60000 % 60));
}

/* "OWNER (TOKEN)": the owner as status names it, and the first
 * characters of the token. */
static void holder_text(char *buf, size_t len, const rl_resource_info *i)
{
    snprintf(buf, len, "%s (%.*s)",
             i->owner[0] != '\0' ? i->owner : "owner unknown",
             CLI_TOKEN_SHOWN, i->token);
}

/* A read that did not say who holds it: say why. True when st failed. */
static bool read_failed(struct cli_waitline *w, rl_status st)
{
    if (st == RL_ENOQUORUM)
        snprintf(w->who, sizeof(w->who), "fewer than a quorum of the "
                 "nodes answered");
    else if (st != RL_OK)
        snprintf(w->who, sizeof(w->who), "cannot read the nodes: %s",
                 rl_strerror(st));
    return st != RL_OK;
}

/* Who holds a mutex, a writer's or a reader's resource. */
static void read_lock(struct cli_waitline *w)
{
    char holder[RL_OWNER_MAX + 32];
    rl_resource_info info;
    size_t count = 0;
    uint32_t readers;
    rl_status st;

    w->left_ms = -2;
    st = rl_resource_inspect(w->c, w->resource, &info, w->nodes,
                             w->o->cfg.node_count, &count);
    if (read_failed(w, st))
        return;
    holder_text(holder, sizeof(holder), &info);
    readers = cli_majority_readers(w->nodes, count, true);
    if (info.held) {
        snprintf(w->who, sizeof(w->who), "held by %s%s", holder,
                 cli_in_lock_delay(&info) ? " in its lock-delay" : "");
        w->left_ms = info.blocked_ms;
    } else if (readers > 0) {
        snprintf(w->who, sizeof(w->who), "read by %u reader%s", readers,
                 readers == 1 ? "" : "s");
    } else if (info.nodes_holding > 0) {
        snprintf(w->who, sizeof(w->who), "held by %s on %u of %u nodes, "
                 "no majority", holder, info.nodes_holding,
                 info.node_count);
    } else {
        snprintf(w->who, sizeof(w->who), "free");
    }
}

/* How many of a semaphore's permits are held, and, when all are, which
 * holder's key expires first. */
static void read_permits(struct cli_waitline *w)
{
    char holder[RL_OWNER_MAX + 48];
    const rl_resource_info *first = NULL;
    uint32_t held = 0, i;

    w->left_ms = -2;
    if (read_failed(w, rl_semaphore_inspect(w->c, w->resource, w->limit,
                                            w->slots, NULL, 0, NULL)))
        return;
    for (i = 0; i < w->limit; i++) {
        if (!w->slots[i].held)
            continue;
        held++;
        if (w->slots[i].blocked_ms >= 0 &&
            (first == NULL || w->slots[i].blocked_ms < first->blocked_ms))
            first = &w->slots[i];
    }
    holder[0] = '\0';
    if (held == w->limit && first != NULL) {
        strcpy(holder, ", first to end: ");
        holder_text(holder + strlen(holder), sizeof(holder) - strlen(holder),
                    first);
        w->left_ms = first->blocked_ms;
    }
    snprintf(w->who, sizeof(w->who), "%u of %u permit%s held%s", held,
             w->limit, w->limit == 1 ? "" : "s", holder);
}

/* Our place in the fair queue: found by our owner, when one entry only
 * carries it (the token is not known before the grant). */
static void read_place(struct cli_waitline *w)
{
    rl_queue_entry q[RL_QUEUE_READ_MAX];
    size_t n = 0, i, mine = 0, found = 0;

    w->place[0] = '\0';
    if (rl_resource_queue(w->c, w->resource, q, RL_QUEUE_READ_MAX, &n,
                          NULL) != RL_OK || n == 0)
        return;
    for (i = 0; w->owner != NULL && i < n; i++) {
        if (strcmp(q[i].owner, w->owner) == 0) {
            mine = i + 1;
            found++;
        }
    }
    if (found == 1)
        snprintf(w->place, sizeof(w->place), "place %zu of %zu in the queue",
                 mine, n);
    else
        snprintf(w->place, sizeof(w->place), "%zu in the queue", n);
}

/* The line as of now; with times false, without what changes by itself
 * (the countdown, the time waited): what a pipe gets a line for. */
static void line_text(const struct cli_waitline *w, char *buf, size_t len,
                      bool times)
{
    uint64_t now = cli_mono_us();
    char left[32] = "", waited[32];
    int64_t ms;

    if (times && w->left_ms == -1) {
        snprintf(left, sizeof(left), ", no expiry");
    } else if (times && w->left_ms >= 0) {
        ms = w->left_ms - (int64_t)((now - w->read_us) / 1000u);
        duration_text(waited, sizeof(waited), ms > 0 ? ms : 0);
        snprintf(left, sizeof(left), ", %s left", waited);
    }
    duration_text(waited, sizeof(waited),
                  (int64_t)((now - w->start_us) / 1000u));
    snprintf(buf, len, "waiting for %s: %s%s%s%s%s%s", w->resource, w->who,
             left, times ? "; waited " : "", times ? waited : "",
             w->place[0] != '\0' ? "; " : "", w->place);
}

/* The terminal's width, 0 when unknown. */
static size_t columns(void)
{
    struct winsize ws;

    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) != 0)
        return 0;
    return ws.ws_col;
}

/* Not while a job in the background: the terminal is the foreground's
 * (true when it is not our controlling terminal at all). */
static bool foreground(void)
{
    pid_t pg = tcgetpgrp(STDERR_FILENO);

    return pg <= 0 || pg == getpgrp();
}

/* Rewrite the line in place (tty), or print it when it says something
 * new (pipe, -v). */
static void show(struct cli_waitline *w)
{
    char line[LINE_LEN];
    size_t n, cols;

    if (!w->tty) {
        line_text(w, line, sizeof(line), false);
        if (strcmp(line, w->logged) != 0) {
            memcpy(w->logged, line, sizeof(line));
            line_text(w, line, sizeof(line), true);
            cli_info(w->o, "%s", line);
        }
        return;
    }
    if (!foreground())
        return;
    line_text(w, line, sizeof(line), true);
    n = strlen(line);
    cols = columns();
    /* A line that wraps could not be rewritten in place. */
    if (cols > 1 && n > cols - 1)
        n = cols - 1;
    if (w->erase)
        fprintf(stderr, "\r%.*s\033[K", (int)n, line);
    else
        fprintf(stderr, "\r%.*s%*s", (int)n, line,
                w->shown > n ? (int)(w->shown - n) : 0, "");
    fflush(stderr);
    w->shown = n;
}

/* Sleep until at_us (cli_mono_us) or the stop. True once stopped. */
static bool pause_until(struct cli_waitline *w, uint64_t at_us)
{
    struct timespec ts;
    bool stop;

    ts.tv_sec = (time_t)(at_us / 1000000u);
    ts.tv_nsec = (long)(at_us % 1000000u) * 1000;
    pthread_mutex_lock(&w->mu);
    while (!w->stop && cli_mono_us() < at_us)
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    stop = w->stop;
    pthread_mutex_unlock(&w->mu);
    return stop;
}

static void *follow(void *arg)
{
    struct cli_waitline *w = arg;
    uint64_t at = w->start_us + GRACE_MS * 1000u, next_read = at;

    while (!pause_until(w, at)) {
        if (cli_mono_us() >= next_read) {
            if (w->limit > 0)
                read_permits(w);
            else
                read_lock(w);
            if (w->fair)
                read_place(w);
            w->read_us = cli_mono_us();
            /* Counted from the read's end: a slow read is not followed
             * by another at once. */
            next_read = w->read_us + READ_MS * 1000u;
        }
        show(w);
        at = cli_mono_us() + DRAW_MS * 1000u;
    }
    return NULL;
}

static void waitline_free(struct cli_waitline *w)
{
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w->slots);
    free(w->nodes);
    free(w);
}

struct cli_waitline *cli_waitline_start(const struct cli_opts *o,
                                        rl_client *c, const char *resource,
                                        const rl_acquire_opts *ao)
{
    struct cli_waitline *w;
    pthread_condattr_t ca;
    const char *term = getenv("TERM");
    bool tty = isatty(STDERR_FILENO);

    if (o == NULL || o->quiet || ao->wait_ms == 0 ||
        (o->verbose == 0 && (!tty || o->json)))
        return NULL;
    w = calloc(1, sizeof(*w));
    if (w == NULL)
        return NULL;
    w->o = o;
    w->c = c;
    w->resource = resource;
    w->limit = ao->limit;
    w->fair = ao->fair != 0 || ao->priority != 0;
    w->owner = ao->owner;
    w->tty = tty;
    w->erase = term == NULL || strcmp(term, "dumb") != 0;
    w->start_us = cli_mono_us();
    w->nodes = calloc(o->cfg.node_count, sizeof(*w->nodes));
    w->slots = ao->limit > 0 ? calloc(ao->limit, sizeof(*w->slots)) : NULL;
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);  /* cli_mono_us */
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    /* The line is a courtesy: without memory or a thread, no line. */
    if (w->nodes == NULL || (ao->limit > 0 && w->slots == NULL) ||
        pthread_create(&w->thread, NULL, follow, w) != 0) {
        waitline_free(w);
        return NULL;
    }
    return w;
}

void cli_waitline_stop(struct cli_waitline *w)
{
    if (w == NULL)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    if (w->tty && w->shown > 0 && foreground()) {
        if (w->erase)
            fputs("\r\033[K", stderr);
        else
            fprintf(stderr, "\r%*s\r", (int)w->shown, "");
        fflush(stderr);
    }
    waitline_free(w);
}
