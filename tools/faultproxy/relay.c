/* SPDX-License-Identifier: BSD-3-Clause */
/* relay.c -- one relayed connection: a client socket, an upstream socket
 * and the two byte queues between them (the chaos "slow" profile).
 *
 * Owns every struct conn (linked on proxy->conns), its two sockets, its
 * four io watchers, its three timers and every chunk queued on it.
 *
 * Lifecycle. relay_accept() creates the conn in CONN_CONNECTING and starts
 * a non-blocking connect to upstream; when it completes the conn is
 * CONN_OPEN and both sides are read. Bytes read from side s are queued on
 * dir[s] as chunks, each stamped with the monotonic time it may leave:
 * read time + delay +- jitter, never earlier than the chunk before it, so
 * order holds per direction even under jitter. dir_pump() writes the due
 * chunks to the other side and arms dir[s].timer for the next one. A FIN
 * from side s is forwarded (shutdown SHUT_WR) once dir[s] has drained;
 * when both directions are shut the conn is freed. Any read or write error
 * resets both sides, as the network would.
 *
 * Invariants:
 *  - Side s is not read while dir[s] holds FP_QUEUE_CAP bytes or more, so
 *    a queue never exceeds FP_QUEUE_CAP + FP_READ_CHUNK (backpressure).
 *  - Outside blackhole both fds are valid once the connect has succeeded.
 *    In blackhole every byte read is dropped, and a side that closes or
 *    fails is closed here as well (fd -1) without telling the other side;
 *    leaving blackhole closes such half-gone conns with FIN.
 *  - Under hold nothing is written and no chunk timer runs: the queues
 *    keep their chunks (and a FIN waits behind them) until hold is off,
 *    then every due chunk leaves at once, in order.
 *  - conn_free() is the only place a conn dies. Every function that may
 *    call it returns -1 afterwards, and its caller returns at once without
 *    touching the conn again.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "relay.h"

#define READS_PER_EVENT 4       /* recv() calls per readiness event */

enum { SIDE_CLIENT = 0, SIDE_UPSTREAM = 1 };

enum conn_state {
    CONN_CONNECTING,            /* upstream connect in progress */
    CONN_OPEN                   /* relaying */
};

struct chunk {
    struct chunk *next;
    fp_mono_us due_us;          /* may be written from then on, mono µs */
    size_t len;                 /* bytes in data */
    size_t off;                 /* bytes of data already written */
    char data[];
};

/* Bytes read from one side, waiting to be written to the other. */
struct dir {
    struct chunk *head;
    struct chunk *tail;
    size_t queued;              /* bytes on the list, head included */
    fp_mono_us last_due_us;     /* due time of the tail, mono µs */
    bool eof;                   /* the source side sent FIN */
    bool shut;                  /* FIN forwarded to the destination */
    bool want_write;            /* a due chunk met a full socket */
    ev_timer timer;             /* fires when the head chunk is due */
};

struct conn {
    struct proxy *px;
    struct list_link link;      /* on px->conns */
    enum conn_state state;
    int fd[2];                  /* by side; -1 once that side is gone */
    ev_io rd[2];                /* by side */
    ev_io wr[2];                /* by side */
    ev_timer connect_timer;     /* FP_CONNECT_TIMEOUT_MS on the connect */
    struct dir dir[2];          /* dir[s]: read from side s */
};

static const char *const side_name[2] = { "client", "upstream" };

static int dir_pump(struct conn *c, int s);

static void io_set(struct ev_loop *loop, ev_io *w, bool on)
{
    if (on && !ev_is_active(w))
        ev_io_start(loop, w);
    else if (!on && ev_is_active(w))
        ev_io_stop(loop, w);
}

static void set_nodelay(int fd)
{
    int one = 1;

    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* xorshift64: jitter needs spread, not quality. */
static uint64_t rng_next(struct proxy *px)
{
    uint64_t x = px->rng;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    px->rng = x;
    return x;
}

/* When a chunk read now may leave: now + delay +- jitter, clamped to now,
 * and never before the chunk queued ahead of it. */
static fp_mono_us chunk_due(struct proxy *px, const struct dir *d,
                            fp_mono_us now)
{
    uint64_t jitter_us = (uint64_t)px->faults.jitter_ms * 1000;
    fp_mono_us due = now + (uint64_t)px->faults.delay_ms * 1000;

    if (jitter_us > 0) {
        uint64_t r = rng_next(px) % (2 * jitter_us + 1);

        if (due + r < now + jitter_us)
            due = now;
        else
            due = due + r - jitter_us;
    }
    if (due < d->last_due_us)
        due = d->last_due_us;
    return due;
}

static int dir_push(struct proxy *px, struct dir *d, const char *data,
                    size_t len)
{
    struct chunk *ch = malloc(sizeof(*ch) + len);

    if (ch == NULL)
        return -1;
    ch->next = NULL;
    ch->len = len;
    ch->off = 0;
    ch->due_us = chunk_due(px, d, mono_now_us());
    memcpy(ch->data, data, len);
    if (d->tail != NULL)
        d->tail->next = ch;
    else
        d->head = ch;
    d->tail = ch;
    d->queued += len;
    d->last_due_us = ch->due_us;
    return 0;
}

static void dir_discard(struct proxy *px, struct dir *d)
{
    struct chunk *ch = d->head;

    while (ch != NULL) {
        struct chunk *next = ch->next;

        free(ch);
        ch = next;
    }
    d->head = NULL;
    d->tail = NULL;
    d->queued = 0;
    d->last_due_us = 0;
    d->want_write = false;
    ev_timer_stop(px->loop, &d->timer);
}

/* Arms d->timer to fire after wait_us. ev_now_update first: the loop's
 * cached time is from the start of this iteration, and a timer started
 * against it would fire early by however long this iteration has run. */
static void dir_arm(struct proxy *px, struct dir *d, fp_mono_us wait_us)
{
    ev_timer_stop(px->loop, &d->timer);
    ev_now_update(px->loop);
    ev_timer_set(&d->timer, (ev_tstamp)wait_us / 1e6, 0.);
    ev_timer_start(px->loop, &d->timer);
}

/* Recomputes which io watchers run from the conn's state: the single place
 * that decides reading (backpressure, EOF, blackhole) and writing. */
static void conn_watch(struct conn *c)
{
    struct proxy *px = c->px;
    bool bh = px->faults.blackhole;
    bool open = c->state == CONN_OPEN;
    int s;

    for (s = 0; s < 2; s++) {
        const struct dir *d = &c->dir[s];
        bool rd = false;
        bool wr = false;

        if (c->fd[s] >= 0) {
            /* In blackhole the client is read (and dropped) even while
             * the upstream connect is still in progress. */
            rd = !d->eof && (open || (bh && s == SIDE_CLIENT)) &&
                 (bh || d->queued < FP_QUEUE_CAP);
            if (s == SIDE_UPSTREAM && !open)
                wr = true;
            else
                wr = c->dir[1 - s].want_write;
        }
        io_set(px->loop, &c->rd[s], rd);
        io_set(px->loop, &c->wr[s], wr);
    }
}

static void conn_free(struct conn *c, enum relay_close how)
{
    struct proxy *px = c->px;
    int s;

    for (s = 0; s < 2; s++) {
        if (c->fd[s] >= 0) {
            ev_io_stop(px->loop, &c->rd[s]);
            ev_io_stop(px->loop, &c->wr[s]);
            fp_close(c->fd[s], how == RELAY_RST);
            c->fd[s] = -1;
        }
        dir_discard(px, &c->dir[s]);
    }
    ev_timer_stop(px->loop, &c->connect_timer);
    list_remove(&px->conns, &c->link);
    px->nconns--;
    free(c);
}

/* Blackhole only: side s closed or failed. Close it here too and keep the
 * other side open and silent. Returns -1 when that freed the conn. */
static int side_gone(struct conn *c, int s)
{
    struct proxy *px = c->px;

    ev_io_stop(px->loop, &c->rd[s]);
    ev_io_stop(px->loop, &c->wr[s]);
    fp_close(c->fd[s], false);
    c->fd[s] = -1;
    dir_discard(px, &c->dir[0]);
    dir_discard(px, &c->dir[1]);
    if (s == SIDE_UPSTREAM)
        ev_timer_stop(px->loop, &c->connect_timer);
    if (c->fd[1 - s] < 0) {
        conn_free(c, RELAY_FIN);
        return -1;
    }
    return 0;
}

/* The upstream connect failed: reset the client (the closest thing to the
 * ECONNREFUSED it would have seen without us), or in blackhole keep the
 * client open and silent. Returns -1 when the conn was freed. */
static int connect_failed(struct conn *c, int err)
{
    struct proxy *px = c->px;

    ev_timer_stop(px->loop, &c->connect_timer);
    if (px->faults.blackhole) {
        fp_log(px, "upstream %s: %s; black-holed client kept open",
               px->up_name, strerror(err));
        return side_gone(c, SIDE_UPSTREAM);
    }
    fp_log(px, "upstream %s: %s; client connection reset", px->up_name,
           strerror(err));
    conn_free(c, RELAY_RST);
    return -1;
}

static void connect_done(struct conn *c)
{
    struct proxy *px = c->px;
    int err = 0;
    socklen_t len = sizeof(err);

    if (getsockopt(c->fd[SIDE_UPSTREAM], SOL_SOCKET, SO_ERROR, &err,
                   &len) < 0)
        err = errno;
    if (err == EINPROGRESS || err == EINTR)
        return;
    if (err != 0) {
        if (connect_failed(c, err) < 0)
            return;
        conn_watch(c);
        return;
    }
    ev_timer_stop(px->loop, &c->connect_timer);
    c->state = CONN_OPEN;
    conn_watch(c);
}

/* Writes the due chunks of dir[s] to the other side; arms the timer for
 * the first chunk not yet due; forwards a FIN once the queue is empty.
 * Returns -1 when the conn was freed (write error, or both sides done). */
static int dir_pump(struct conn *c, int s)
{
    struct proxy *px = c->px;
    struct dir *d = &c->dir[s];
    int dst = 1 - s;
    fp_mono_us now;

    if (px->faults.blackhole) {
        dir_discard(px, d);
        return 0;
    }
    if (c->state != CONN_OPEN || c->fd[dst] < 0)
        return 0;
    d->want_write = false;
    if (px->faults.hold) {
        ev_timer_stop(px->loop, &d->timer); /* relay_set_hold resumes */
        return 0;
    }
    now = mono_now_us();
    while (d->head != NULL) {
        struct chunk *ch = d->head;
        ssize_t n;

        if (ch->due_us > now) {
            dir_arm(px, d, ch->due_us - now);
            return 0;
        }
        n = send(c->fd[dst], ch->data + ch->off, ch->len - ch->off,
                 MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                d->want_write = true;
                break;
            }
            if (errno != EPIPE && errno != ECONNRESET)
                fp_log(px, "%s write: %s; connection reset",
                       side_name[dst], strerror(errno));
            conn_free(c, RELAY_RST);
            return -1;
        }
        if (s == SIDE_CLIENT)
            px->bytes_up += (uint64_t)n;
        else
            px->bytes_down += (uint64_t)n;
        ch->off += (size_t)n;
        if (ch->off < ch->len) {
            d->want_write = true;
            break;
        }
        d->head = ch->next;
        if (d->head == NULL)
            d->tail = NULL;
        d->queued -= ch->len;
        free(ch);
    }
    ev_timer_stop(px->loop, &d->timer);
    if (d->head != NULL)
        return 0;
    if (d->eof && !d->shut) {
        (void)shutdown(c->fd[dst], SHUT_WR);
        d->shut = true;
    }
    if (c->dir[0].shut && c->dir[1].shut) {
        conn_free(c, RELAY_FIN);
        return -1;
    }
    return 0;
}

/* Reads what side s has sent, queues it (or drops it in blackhole), then
 * pumps. Returns -1 when the conn was freed. */
static int side_read(struct conn *c, int s)
{
    struct proxy *px = c->px;
    struct dir *d = &c->dir[s];
    int i;

    for (i = 0; i < READS_PER_EVENT; i++) {
        bool bh = px->faults.blackhole;
        ssize_t n;

        if (!bh && d->queued >= FP_QUEUE_CAP)
            break;
        n = recv(c->fd[s], px->buf, sizeof(px->buf), 0);
        if (n > 0) {
            if (bh)
                continue;
            if (dir_push(px, d, px->buf, (size_t)n) < 0) {
                fp_log(px, "out of memory; connection reset");
                conn_free(c, RELAY_RST);
                return -1;
            }
            continue;
        }
        if (n == 0) {
            if (bh)
                return side_gone(c, s);
            d->eof = true;
            break;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            break;
        if (bh)
            return side_gone(c, s);
        if (errno != ECONNRESET)
            fp_log(px, "%s read: %s; connection reset", side_name[s],
                   strerror(errno));
        conn_free(c, RELAY_RST);
        return -1;
    }
    if (dir_pump(c, s) < 0)
        return -1;
    conn_watch(c);
    return 0;
}

static struct conn *conn_of_io(ev_io *w, int *side, bool writer)
{
    struct conn *c = w->data;
    ev_io *client_w = writer ? &c->wr[SIDE_CLIENT] : &c->rd[SIDE_CLIENT];

    *side = w == client_w ? SIDE_CLIENT : SIDE_UPSTREAM;
    return c;
}

static void rd_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    int s;
    struct conn *c = conn_of_io(w, &s, false);

    (void)loop;
    (void)revents;
    (void)side_read(c, s);
}

static void wr_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    int s;
    struct conn *c = conn_of_io(w, &s, true);

    (void)loop;
    (void)revents;
    if (s == SIDE_UPSTREAM && c->state == CONN_CONNECTING) {
        connect_done(c);
        return;
    }
    if (dir_pump(c, 1 - s) < 0)
        return;
    conn_watch(c);
}

static void dir_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct conn *c = w->data;
    int s = w == &c->dir[SIDE_CLIENT].timer ? SIDE_CLIENT : SIDE_UPSTREAM;

    (void)loop;
    (void)revents;
    if (dir_pump(c, s) < 0)
        return;
    conn_watch(c);
}

static void connect_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct conn *c = w->data;

    (void)loop;
    (void)revents;
    if (connect_failed(c, ETIMEDOUT) < 0)
        return;
    conn_watch(c);
}

/* Opens the upstream socket and starts the connect. Returns -1 when the
 * conn was freed. */
static int conn_connect(struct conn *c)
{
    struct proxy *px = c->px;
    int fd;

    fd = socket(px->up_addr.ss_family,
                SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fp_log(px, "upstream socket: %s; client connection reset",
               strerror(errno));
        conn_free(c, RELAY_RST);
        return -1;
    }
    c->fd[SIDE_UPSTREAM] = fd;
    ev_io_init(&c->rd[SIDE_UPSTREAM], rd_cb, fd, EV_READ);
    ev_io_init(&c->wr[SIDE_UPSTREAM], wr_cb, fd, EV_WRITE);
    c->rd[SIDE_UPSTREAM].data = c;
    c->wr[SIDE_UPSTREAM].data = c;
    set_nodelay(fd);
    if (connect(fd, (const struct sockaddr *)&px->up_addr,
                px->up_addrlen) == 0) {
        c->state = CONN_OPEN;
        return 0;
    }
    if (errno == EINPROGRESS || errno == EINTR) {
        ev_timer_start(px->loop, &c->connect_timer);
        return 0;
    }
    return connect_failed(c, errno);
}

void relay_accept(struct proxy *px, int cfd)
{
    struct conn *c;
    int s;

    if (px->faults.refuse) {
        fp_close(cfd, true);
        return;
    }
    c = fp_accepted_new(px, cfd, sizeof(*c), "client connection reset");
    if (c == NULL)
        return;
    c->px = px;
    c->state = CONN_CONNECTING;
    c->fd[SIDE_CLIENT] = cfd;
    c->fd[SIDE_UPSTREAM] = -1;
    ev_io_init(&c->rd[SIDE_CLIENT], rd_cb, cfd, EV_READ);
    ev_io_init(&c->wr[SIDE_CLIENT], wr_cb, cfd, EV_WRITE);
    c->rd[SIDE_CLIENT].data = c;
    c->wr[SIDE_CLIENT].data = c;
    for (s = 0; s < 2; s++) {
        ev_init(&c->dir[s].timer, dir_timer_cb);
        c->dir[s].timer.data = c;
    }
    ev_timer_init(&c->connect_timer, connect_timer_cb,
                  FP_CONNECT_TIMEOUT_MS / 1e3, 0.);
    c->connect_timer.data = c;
    list_push_front(&px->conns, &c->link);
    px->nconns++;
    set_nodelay(cfd);
    if (conn_connect(c) < 0)
        return;
    conn_watch(c);
}

void relay_close_all(struct proxy *px, enum relay_close how)
{
    while (!list_empty(&px->conns))
        conn_free(list_entry(px->conns.first, struct conn, link), how);
}

/* Entering blackhole: drop what is queued, and treat a side that already
 * sent FIN as gone, since in blackhole its FIN is never forwarded. Returns
 * -1 when the conn was freed. */
static int conn_enter_blackhole(struct conn *c)
{
    int s;

    dir_discard(c->px, &c->dir[0]);
    dir_discard(c->px, &c->dir[1]);
    for (s = 0; s < 2; s++) {
        if (c->dir[s].eof && c->fd[s] >= 0 && side_gone(c, s) < 0)
            return -1;
    }
    return 0;
}

void relay_set_hold(struct proxy *px, bool on)
{
    struct conn *c;
    struct conn *next;

    px->faults.hold = on;
    if (on)
        return;
    for (c = list_entry(px->conns.first, struct conn, link); c != NULL;
         c = next) {
        next = list_entry(c->link.next, struct conn, link);
        if (dir_pump(c, SIDE_CLIENT) < 0 || dir_pump(c, SIDE_UPSTREAM) < 0)
            continue;
        conn_watch(c);
    }
}

void relay_set_blackhole(struct proxy *px, bool on)
{
    struct conn *c;
    struct conn *next;

    px->faults.blackhole = on;
    for (c = list_entry(px->conns.first, struct conn, link); c != NULL;
         c = next) {
        next = list_entry(c->link.next, struct conn, link);
        if (on) {
            if (conn_enter_blackhole(c) < 0)
                continue;
        } else if (c->fd[SIDE_CLIENT] < 0 || c->fd[SIDE_UPSTREAM] < 0) {
            conn_free(c, RELAY_FIN);
            continue;
        }
        conn_watch(c);
    }
}
