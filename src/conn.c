/* SPDX-License-Identifier: BSD-3-Clause */
/* conn.c -- one Redis connection on a libev loop: the socket I/O that
 * hiredis async used to own, with TLS (tls.c), while hiredis keeps what it
 * is good at (its redisReader, bounded in resp.c, parses replies;
 * redisFormatCommandArgv formats commands).
 *
 * States (enum conn_state):
 *   CONNECTING -(writable, SO_ERROR 0)-> HANDSHAKE (TLS) or OPEN
 *   HANDSHAKE  -(SSL_connect done)-> OPEN
 *   any        -(connect timeout, TLS/I-O error, EOF, protocol error,
 *                a reply nobody asked for, conn_close, conn_free)-> CLOSED
 * The connect timer covers CONNECTING and HANDSHAKE; per-request
 * deadlines are the owner's (it calls conn_close). An immediate connect
 * failure is reported from the timer too (armed at 0), so every failure
 * reaches the owner the same way: from the loop, through on_close.
 *
 * Teardown answers every queued request exactly once (reply NULL + the
 * reason), then runs on_close once. Callbacks may call anything,
 * conn_free included: every entry point (libev callbacks, conn_close,
 * conn_free, conn_flush) counts its depth, and the memory is freed when
 * the outermost one returns. Loop thread only.
 *
 * Reconnecting is the owner's (node.c, notify.c), with the shared delay
 * policy at the end of this file (struct conn_backoff). Replies and
 * writes are described at their sections. */
#include <errno.h>
#include <limits.h>
#include <ev.h>
#include <hiredis/hiredis.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "conn.h"
#include "resp.h"
#include "tls.h"

#define READ_CHUNK 16384
#define READS_PER_EVENT 64   /* then let the other watchers run */
#define IOV_BATCH IOV_MAX      /* iovecs per sendmsg */
#define TBUF_KEEP 65536      /* TLS gather buffer kept between writes */

struct req {
    conn_reply_fn *fn;           /* NULL: read and drop the reply */
    void *privdata;
};

struct out {
    const char *bytes;
    size_t len;
    conn_release_fn *release;    /* NULL: nothing to release */
    void *arg;
};

struct conn {
    struct ev_loop *loop;
    enum conn_state state;
    int fd;                      /* -1 once closed */
    SSL *ssl;                    /* TLS, from HANDSHAKE until CLOSED */
    struct tls_target *tls;      /* NULL: plaintext */
    const char *tls_version;     /* static OpenSSL string, once open */
    bool tls_resumed;
    struct resp_reader replies;  /* parses what is read */
    bool received;               /* any byte read yet */
    uint32_t connect_timeout_ms;
    bool subscriber;
    conn_open_fn *on_open;
    conn_close_fn *on_close;
    conn_push_fn *on_push;
    void *privdata;
    ev_io rio;                   /* readable: from connected to CLOSED */
    ev_io wio;                   /* writable: connect, full socket, TLS */
    ev_timer timer;              /* connect timeout / immediate failure */
    ev_prepare flush;            /* end of the loop iteration: write */
    struct req *reqs;            /* ring, req_cap a power of two */
    size_t req_cap;
    size_t req_head;
    size_t req_count;
    struct out *outs;            /* write queue: outs[out_first..count) */
    size_t out_cap;
    size_t out_first;
    size_t out_count;
    size_t out_off;              /* bytes of outs[out_first] written */
    char *tbuf;                  /* TLS: gathered bytes to SSL_write */
    size_t tbuf_cap;
    size_t tbuf_off;             /* written */
    size_t tbuf_len;             /* gathered */
    int tbuf_retry;              /* length SSL_write must be repeated with */
    bool hs_wants_write;         /* the handshake waits for writability */
    bool read_wants_write;       /* SSL_read waits for writability */
    bool write_wants_read;       /* SSL_write waits for readability */
    bool write_blocked;          /* the socket buffer is full */
    unsigned depth;              /* entry points running on c */
    bool free_pending;           /* conn_free called: free at depth 0 */
    char reason[RL_ERRLEN];      /* why it closed (or an early failure) */
};

static void teardown(struct conn *c, const char *fmt, ...) RL_PRINTF(2, 3);
static void flush(struct conn *c);

/* ---- Lifetime ----------------------------------------------------------- */

static void destroy(struct conn *c)
{
    resp_reader_clear(&c->replies);
    free(c->reqs);
    free(c->outs);
    free(c->tbuf);
    free(c);
}

static void enter(struct conn *c)
{
    c->depth++;
}

static void leave(struct conn *c)
{
    if (--c->depth == 0 && c->free_pending)
        destroy(c);
}

static void wio_sync(struct conn *c)
{
    bool want = c->state != CONN_CLOSED &&
                (c->state == CONN_CONNECTING || c->hs_wants_write ||
                 c->read_wants_write || c->write_blocked);

    if (want && !ev_is_active(&c->wio))
        ev_io_start(c->loop, &c->wio);
    else if (!want && ev_is_active(&c->wio))
        ev_io_stop(c->loop, &c->wio);
}

static void drop_output(struct conn *c)
{
    size_t i;

    for (i = c->out_first; i < c->out_count; i++) {
        if (c->outs[i].release != NULL)
            c->outs[i].release(c->outs[i].arg);
    }
    c->out_first = c->out_count = c->out_off = 0;
    c->tbuf_off = c->tbuf_len = 0;
    c->tbuf_retry = 0;
}

/* Close everything, answer every request (reply NULL, the reason), then
 * tell the owner. The caller is an entry point (depth > 0). */
static void teardown(struct conn *c, const char *fmt, ...)
{
    struct req q;
    va_list ap;

    if (c->state == CONN_CLOSED)
        return;
    c->state = CONN_CLOSED;
    va_start(ap, fmt);
    vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
    va_end(ap);
    ev_io_stop(c->loop, &c->rio);
    ev_io_stop(c->loop, &c->wio);
    ev_timer_stop(c->loop, &c->timer);
    ev_prepare_stop(c->loop, &c->flush);
    SSL_free(c->ssl);
    c->ssl = NULL;
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    drop_output(c);
    while (c->req_count > 0) {
        q = c->reqs[c->req_head];
        c->req_head = (c->req_head + 1) & (c->req_cap - 1);
        c->req_count--;
        if (q.fn != NULL)
            q.fn(c, NULL, c->reason, q.privdata);
    }
    if (c->on_close != NULL)
        c->on_close(c, c->reason, c->privdata);
}

/* ---- Replies ------------------------------------------------------------ */

/* Reads go to the resp_reader; each reply goes to the oldest request
 * (FIFO, Redis answers in order), or in subscriber mode, when it is a
 * push, to on_push. A reply with no request, or what resp.c refuses (a
 * parse error, more than max_reply_bytes of one unfinished reply, arrays
 * announcing more elements than that many bytes can hold) fail the
 * connection. TLS reads loop while OpenSSL holds
 * buffered data (SSL_has_pending), so nothing waits for a readiness event
 * that will never come. */

/* Hand one parsed reply to its request (or on_push), then free it. */
static void dispatch(struct conn *c, redisReply *r)
{
    struct req q;

    if (c->subscriber &&
        (resp_is_push(r) || (r->type == REDIS_REPLY_ERROR && c->req_count == 0))) {
        if (c->on_push != NULL)
            c->on_push(c, r, c->privdata);
    } else if (c->req_count > 0) {
        q = c->reqs[c->req_head];
        c->req_head = (c->req_head + 1) & (c->req_cap - 1);
        c->req_count--;
        if (q.fn != NULL)
            q.fn(c, r, NULL, q.privdata);
    } else {
        teardown(c, "protocol error: a reply that no request asked for "
                    "(%s)", resp_kind(r));
    }
    freeReplyObject(r);
}

/* Parse n bytes and deliver every complete reply. false once closed. */
static bool feed(struct conn *c, const char *buf, size_t n)
{
    char why[RL_ERRLEN];
    redisReply *reply;

    if (c->ssl == NULL && !c->received && n > 0 &&
        (buf[0] == 0x15 || buf[0] == 0x16)) {
        /* A TLS record (alert, handshake) where RESP was expected. */
        teardown(c, "protocol error: the server speaks TLS (plaintext "
                    "client on a TLS port?)");
        return false;
    }
    c->received = true;
    if (!resp_feed(&c->replies, buf, n, why, sizeof(why))) {
        teardown(c, "%s", why);
        return false;
    }
    while (c->state == CONN_OPEN) {
        if (!resp_next(&c->replies, &reply, why, sizeof(why))) {
            teardown(c, "%s", why);
            return false;
        }
        if (reply == NULL)
            break;
        dispatch(c, reply);
    }
    if (c->state != CONN_OPEN)
        return false;
    if (!resp_unfinished_ok(&c->replies, why, sizeof(why))) {
        teardown(c, "%s", why);
        return false;
    }
    return true;
}

/* A TLS server drops a plaintext client without a word: say so when a
 * plaintext connection dies before its first reply (read or write). */
static const char *plain_hint(const struct conn *c)
{
    return c->received ? "" : " before any reply (is it a TLS port?)";
}

/* Read what the socket (and OpenSSL) has, a bounded number of chunks. */
static void do_read(struct conn *c)
{
    char buf[READ_CHUNK];
    char why[RL_ERRLEN];
    const char *hint = plain_hint(c);
    ssize_t n;
    bool more = true;
    int i, r, e;

    for (i = 0; i < READS_PER_EVENT && more && c->state == CONN_OPEN; i++) {
        if (c->ssl != NULL) {
            ERR_clear_error();
            r = SSL_read(c->ssl, buf, sizeof(buf));
            if (r <= 0) {
                e = SSL_get_error(c->ssl, r);
                if (e == SSL_ERROR_WANT_READ)
                    return;
                if (e == SSL_ERROR_WANT_WRITE) {
                    c->read_wants_write = true;
                    wio_sync(c);
                    return;
                }
                tls_error_text(c->ssl, r, e, !c->received, why, sizeof(why));
                teardown(c, "connection lost: %s", why);
                return;
            }
            n = r;
            more = n == (ssize_t)sizeof(buf) || SSL_has_pending(c->ssl);
        } else {
            n = recv(c->fd, buf, sizeof(buf), 0);
            if (n == 0) {
                teardown(c, "connection lost: closed by server%s", hint);
                return;
            }
            if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                    return;
                teardown(c, "connection lost: %s%s", strerror(errno), hint);
                return;
            }
            more = n == (ssize_t)sizeof(buf);
        }
        if (!feed(c, buf, (size_t)n))
            return;
    }
}

/* ---- Writes ------------------------------------------------------------- */

/* Writes: requests queue their bytes (not copied; released once written
 * or dropped). One ev_prepare per connection writes the whole queue once
 * per loop iteration: sendmsg(MSG_NOSIGNAL) over an iovec (plaintext), or
 * one SSL_write of the queue gathered into one buffer (TLS, so records
 * are full). The write watcher runs only while the kernel buffer is full
 * (or TLS needs writability to make progress). */

/* n bytes of the queue went out: release what was written in full. */
static void consume(struct conn *c, size_t n)
{
    struct out *o;

    while (n > 0 && c->out_first < c->out_count) {
        o = &c->outs[c->out_first];
        if (n < o->len - c->out_off) {
            c->out_off += n;
            return;
        }
        n -= o->len - c->out_off;
        c->out_off = 0;
        c->out_first++;
        if (o->release != NULL)
            o->release(o->arg);
    }
    if (c->out_first == c->out_count)
        c->out_first = c->out_count = 0;
}

static void flush_plain(struct conn *c)
{
    struct iovec iov[IOV_BATCH];
    struct msghdr mh;
    size_t i, k;
    ssize_t n;

    while (c->out_first < c->out_count && c->state == CONN_OPEN) {
        for (i = c->out_first, k = 0; i < c->out_count && k < IOV_BATCH;
             i++, k++) {
            size_t skip = k == 0 ? c->out_off : 0;

            iov[k].iov_base = (char *)c->outs[i].bytes + skip;
            iov[k].iov_len = c->outs[i].len - skip;
        }
        memset(&mh, 0, sizeof(mh));
        mh.msg_iov = iov;
        mh.msg_iovlen = k;
        n = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                c->write_blocked = true;
                return;
            }
            teardown(c, "connection lost: %s%s", strerror(errno),
                     plain_hint(c));
            return;
        }
        consume(c, (size_t)n);
    }
}

/* Move the queue into tbuf (one SSL_write makes full records). Bytes
 * that an SSL_write must be repeated with stay in place. */
static bool gather(struct conn *c)
{
    size_t need, i;
    struct out *o;
    char *p;

    if (c->tbuf_off > 0 && c->tbuf_retry == 0) {
        memmove(c->tbuf, c->tbuf + c->tbuf_off, c->tbuf_len - c->tbuf_off);
        c->tbuf_len -= c->tbuf_off;
        c->tbuf_off = 0;
    }
    need = c->tbuf_len - c->out_off;
    for (i = c->out_first; i < c->out_count; i++)
        need += c->outs[i].len;
    if (need > c->tbuf_cap) {
        if (need < c->tbuf_cap * 2)
            need = c->tbuf_cap * 2;
        p = realloc(c->tbuf, need);
        if (p == NULL)
            return false;
        c->tbuf = p;
        c->tbuf_cap = need;
    }
    for (i = c->out_first; i < c->out_count; i++) {
        o = &c->outs[i];
        memcpy(c->tbuf + c->tbuf_len, o->bytes + c->out_off,
               o->len - c->out_off);
        c->tbuf_len += o->len - c->out_off;
        c->out_off = 0;
        if (o->release != NULL)
            o->release(o->arg);
    }
    c->out_first = c->out_count = 0;
    return true;
}

static void flush_tls(struct conn *c)
{
    char why[RL_ERRLEN];
    size_t left;
    int want, r, e;

    if (c->out_count > c->out_first && !gather(c)) {
        teardown(c, "out of memory writing");
        return;
    }
    while (c->tbuf_off < c->tbuf_len && c->state == CONN_OPEN) {
        left = c->tbuf_len - c->tbuf_off;
        want = c->tbuf_retry > 0 ? c->tbuf_retry
                                 : (left > INT32_MAX ? INT32_MAX : (int)left);
        ERR_clear_error();
        r = SSL_write(c->ssl, c->tbuf + c->tbuf_off, want);
        if (r > 0) {
            c->tbuf_retry = 0;
            c->tbuf_off += (size_t)r;
            continue;
        }
        e = SSL_get_error(c->ssl, r);
        if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
            c->tbuf_retry = want;
            c->write_blocked = e == SSL_ERROR_WANT_WRITE;
            c->write_wants_read = e == SSL_ERROR_WANT_READ;
            return;
        }
        tls_error_text(c->ssl, r, e, !c->received, why, sizeof(why));
        teardown(c, "connection lost: %s", why);
        return;
    }
    c->tbuf_off = c->tbuf_len = 0;
    if (c->tbuf_cap > TBUF_KEEP) {
        /* A big value went out: do not hold its size for good. */
        free(c->tbuf);
        c->tbuf = NULL;
        c->tbuf_cap = 0;
    }
}

/* Write the queue now; what the socket does not take waits for the write
 * watcher. */
static void flush(struct conn *c)
{
    ev_prepare_stop(c->loop, &c->flush);
    if (c->state != CONN_OPEN)
        return;
    c->write_blocked = false;
    c->write_wants_read = false;
    if (c->ssl != NULL)
        flush_tls(c);
    else
        flush_plain(c);
    wio_sync(c);
}

/* Something was queued: write it at the end of this loop iteration. */
static void schedule_flush(struct conn *c)
{
    if (c->state == CONN_OPEN && !c->write_blocked && !c->write_wants_read &&
        !ev_is_active(&c->flush))
        ev_prepare_start(c->loop, &c->flush);
}

/* ---- Connecting --------------------------------------------------------- */

static void opened(struct conn *c)
{
    c->state = CONN_OPEN;
    ev_timer_stop(c->loop, &c->timer);
    if (c->ssl != NULL) {
        c->tls_version = SSL_get_version(c->ssl);
        c->tls_resumed = SSL_session_reused(c->ssl) == 1;
    }
    if (c->out_count > c->out_first)
        schedule_flush(c);
    if (c->on_open != NULL)
        c->on_open(c, c->privdata);
}

static void handshake(struct conn *c)
{
    char why[RL_ERRLEN];
    int r, e;

    ERR_clear_error();
    r = SSL_connect(c->ssl);
    c->hs_wants_write = false;
    if (r == 1) {
        wio_sync(c);
        opened(c);
        /* Records read along with the handshake's last flight. */
        if (c->state == CONN_OPEN && SSL_has_pending(c->ssl))
            do_read(c);
        return;
    }
    e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        c->hs_wants_write = e == SSL_ERROR_WANT_WRITE;
        wio_sync(c);
        return;
    }
    tls_error_text(c->ssl, r, e, true, why, sizeof(why));
    teardown(c, "TLS handshake failed: %s", why);
}

static void connected(struct conn *c)
{
    char err[RL_ERRLEN];
    socklen_t len = sizeof(int);
    int soerr = 0;

    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
        soerr = errno;
    if (soerr != 0) {
        teardown(c, "connect failed: %s", strerror(soerr));
        return;
    }
    ev_io_start(c->loop, &c->rio);
    if (c->tls == NULL) {
        c->state = CONN_OPEN; /* wio_sync: no longer CONNECTING */
        wio_sync(c);
        opened(c);
        return;
    }
    c->ssl = tls_ssl_new(c->tls, c->fd, err, sizeof(err));
    if (c->ssl == NULL) {
        teardown(c, "%s", err);
        return;
    }
    c->state = CONN_HANDSHAKE;
    handshake(c);
}

void conn_read_now(struct conn *c)
{
    enter(c);
    if (c->state == CONN_OPEN)
        do_read(c);
    leave(c);
}

/* An open connection's reads and writes each wait for the other
 * direction where TLS asks (a renegotiation, a full socket). */
static void open_io(struct conn *c, bool writable)
{
    if (!writable) {
        do_read(c);
        if (c->state == CONN_OPEN && c->write_wants_read)
            flush(c);
        return;
    }
    if (c->read_wants_write) {
        c->read_wants_write = false;
        do_read(c);
    }
    flush(c);
}

/* Both watchers' callback. Which one fired, not revents, says the
 * direction: libev may report EV_ERROR alone, and a connect that failed
 * must still reach connected() to be read and reported. */
static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
    struct conn *c = w->data;
    bool writable = w == &c->wio;

    RL_UNUSED(loop);
    RL_UNUSED(revents);
    enter(c);
    switch (c->state) {
    case CONN_CONNECTING:
        if (writable)
            connected(c);
        break;
    case CONN_HANDSHAKE:
        handshake(c);
        break;
    case CONN_OPEN:
        open_io(c, writable);
        break;
    default:
        break;
    }
    leave(c);
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct conn *c = w->data;
    char early[RL_ERRLEN];

    RL_UNUSED(loop);
    RL_UNUSED(revents);
    enter(c);
    if (c->reason[0] != '\0') {
        snprintf(early, sizeof(early), "%s", c->reason);
        teardown(c, "%s", early);
    } else if (c->state == CONN_CONNECTING) {
        teardown(c, "connect timed out after %u ms", c->connect_timeout_ms);
    } else if (c->state == CONN_HANDSHAKE) {
        teardown(c, "TLS handshake timed out after %u ms (not a TLS "
                    "server?)", c->connect_timeout_ms);
    }
    leave(c);
}

static void on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
    struct conn *c = w->data;

    RL_UNUSED(loop);
    RL_UNUSED(revents);
    enter(c);
    flush(c);
    leave(c);
}

/* Create the socket and start connecting; false with c->reason set. */
static bool start_connect(struct conn *c, const struct node_addr *a)
{
    struct sockaddr_storage ss;
    struct sockaddr_un *sun = (struct sockaddr_un *)&ss;
    struct addrinfo hints, *ai = NULL;
    socklen_t sslen;
    char port[16];
    int one = 1, rc;

    memset(&ss, 0, sizeof(ss));
    if (a->kind == ADDR_UNIX) {
        if (strlen(a->path) >= sizeof(sun->sun_path)) {
            snprintf(c->reason, sizeof(c->reason),
                     "connect failed: socket path too long");
            return false;
        }
        sun->sun_family = AF_UNIX;
        memcpy(sun->sun_path, a->path, strlen(a->path) + 1);
        sslen = sizeof(*sun);
    } else {
        memset(&hints, 0, sizeof(hints));
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
        snprintf(port, sizeof(port), "%d", a->port);
        rc = getaddrinfo(a->ip, port, &hints, &ai);
        if (rc != 0) {
            snprintf(c->reason, sizeof(c->reason),
                     "connect failed: bad address: %s", gai_strerror(rc));
            return false;
        }
        memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
        sslen = ai->ai_addrlen;
        freeaddrinfo(ai);
    }
    c->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
                   0);
    if (c->fd < 0) {
        snprintf(c->reason, sizeof(c->reason), "connect failed: socket: %s",
                 strerror(errno));
        return false;
    }
    if (a->kind == ADDR_TCP)
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(c->fd, (struct sockaddr *)&ss, sslen) != 0 &&
        errno != EINPROGRESS) {
        snprintf(c->reason, sizeof(c->reason), "connect failed: %s",
                 strerror(errno));
        return false;
    }
    ev_io_init(&c->rio, on_io, c->fd, EV_READ);
    ev_io_init(&c->wio, on_io, c->fd, EV_WRITE);
    c->rio.data = c;
    c->wio.data = c;
    ev_io_start(c->loop, &c->wio); /* connect completion */
    return true;
}

/* ---- API ---------------------------------------------------------------- */

struct conn *conn_new(struct ev_loop *loop, const struct conn_opts *o)
{
    const struct node_addr *a = o->addr;
    struct conn *c;
    double after;

    if (a == NULL || (a->kind == ADDR_TCP && a->ip == NULL) ||
        (a->kind == ADDR_UNIX && a->path == NULL))
        return NULL;
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->req_cap = 16;
    c->reqs = malloc(c->req_cap * sizeof(*c->reqs));
    if (!resp_reader_init(&c->replies, o->max_reply_bytes > 0
                                           ? o->max_reply_bytes
                                           : CONN_MAX_REPLY_DEFAULT) ||
        c->reqs == NULL) {
        destroy(c);
        return NULL;
    }
    c->loop = loop;
    c->state = CONN_CONNECTING;
    c->fd = -1;
    c->tls = o->tls;
    c->connect_timeout_ms = o->connect_timeout_ms;
    c->subscriber = o->subscriber;
    c->on_open = o->on_open;
    c->on_close = o->on_close;
    c->on_push = o->on_push;
    c->privdata = o->privdata;
    ev_timer_init(&c->timer, on_timer, 0.0, 0.0);
    c->timer.data = c;
    ev_prepare_init(&c->flush, on_prepare);
    c->flush.data = c;
    if (!start_connect(c, a)) {
        if (c->fd >= 0)
            close(c->fd);
        c->fd = -1;
        after = 0.0; /* report it from the loop */
    } else if (c->connect_timeout_ms > 0) {
        after = c->connect_timeout_ms / 1000.0;
        ev_now_update(loop);
    } else {
        return c;
    }
    ev_timer_set(&c->timer, after, 0.0);
    ev_timer_start(loop, &c->timer);
    return c;
}

static bool push_out(struct conn *c, const char *bytes, size_t len,
                     conn_release_fn *release, void *arg)
{
    struct out *p;
    size_t cap;

    if (c->out_count == c->out_cap) {
        cap = c->out_cap > 0 ? c->out_cap * 2 : 16;
        p = realloc(c->outs, cap * sizeof(*p));
        if (p == NULL)
            return false;
        c->outs = p;
        c->out_cap = cap;
    }
    c->outs[c->out_count].bytes = bytes;
    c->outs[c->out_count].len = len;
    c->outs[c->out_count].release = release;
    c->outs[c->out_count].arg = arg;
    c->out_count++;
    schedule_flush(c);
    return true;
}

/* Room for one more request in the ring (doubling, unwrapped in order). */
static bool reserve_request(struct conn *c)
{
    struct req *p;
    size_t i, cap;

    if (c->req_count < c->req_cap)
        return true;
    cap = c->req_cap * 2;
    p = malloc(cap * sizeof(*p));
    if (p == NULL)
        return false;
    for (i = 0; i < c->req_count; i++)
        p[i] = c->reqs[(c->req_head + i) & (c->req_cap - 1)];
    free(c->reqs);
    c->reqs = p;
    c->req_cap = cap;
    c->req_head = 0;
    return true;
}

bool conn_request(struct conn *c, const char *bytes, size_t len,
                  conn_release_fn *release, void *arg, conn_reply_fn *fn,
                  void *privdata)
{
    size_t slot;

    if (c->state == CONN_CLOSED || !reserve_request(c) ||
        !push_out(c, bytes, len, release, arg))
        return false;
    slot = (c->req_head + c->req_count) & (c->req_cap - 1);
    c->reqs[slot].fn = fn;
    c->reqs[slot].privdata = privdata;
    c->req_count++;
    return true;
}

bool conn_write(struct conn *c, const char *bytes, size_t len,
                conn_release_fn *release, void *arg)
{
    if (c->state == CONN_CLOSED)
        return false;
    return push_out(c, bytes, len, release, arg);
}

static void free_command(void *cmd)
{
    redisFreeCommand(cmd);
}

static bool send_command(struct conn *c, int argc, const char **argv,
                         const size_t *lens, bool reply, conn_reply_fn *fn,
                         void *privdata)
{
    char *cmd;
    int len;
    bool ok;

    if (c->state == CONN_CLOSED)
        return false;
    len = redisFormatCommandArgv(&cmd, argc, argv, lens);
    if (len < 0)
        return false;
    if (reply)
        ok = conn_request(c, cmd, (size_t)len, free_command, cmd, fn,
                          privdata);
    else
        ok = conn_write(c, cmd, (size_t)len, free_command, cmd);
    if (!ok)
        redisFreeCommand(cmd);
    return ok;
}

bool conn_command(struct conn *c, int argc, const char **argv,
                  const size_t *lens, conn_reply_fn *fn, void *privdata)
{
    return send_command(c, argc, argv, lens, true, fn, privdata);
}

bool conn_push_command(struct conn *c, int argc, const char **argv,
                       const size_t *lens)
{
    return send_command(c, argc, argv, lens, false, NULL, NULL);
}

void conn_flush(struct conn *c)
{
    enter(c);
    if (!c->write_blocked && !c->write_wants_read)
        flush(c);
    leave(c);
}

void conn_close(struct conn *c, const char *reason)
{
    enter(c);
    teardown(c, "%s", reason);
    leave(c);
}

void conn_free(struct conn *c)
{
    if (c == NULL)
        return;
    enter(c);
    teardown(c, "connection closed by client");
    c->free_pending = true;
    leave(c);
}

enum conn_state conn_get_state(const struct conn *c)
{
    return c->state;
}

size_t conn_pending(const struct conn *c)
{
    return c->req_count;
}

const char *conn_reason(const struct conn *c)
{
    return c->state == CONN_CLOSED ? c->reason : "";
}

const char *conn_tls_version(const struct conn *c)
{
    return c->tls_version;
}

bool conn_tls_resumed(const struct conn *c)
{
    return c->tls_resumed;
}

/* ---- Reconnect backoff -------------------------------------------------- */

#define BACKOFF_MIN_MS 25
#define BACKOFF_MAX_MS 1000

void conn_backoff_init(struct conn_backoff *b, uint64_t seed)
{
    b->next_ms = BACKOFF_MIN_MS;
    b->rng = seed | 1u;
}

uint32_t conn_backoff_next(struct conn_backoff *b)
{
    uint32_t ms = b->next_ms;
    uint32_t span = ms / 2;

    b->next_ms = ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : ms * 2;
    rl_xorshift64(&b->rng);
    if (span == 0)
        return ms;
    return ms - span / 2 + (uint32_t)(b->rng % span);
}

void conn_backoff_reset(struct conn_backoff *b)
{
    b->next_ms = BACKOFF_MIN_MS;
}
