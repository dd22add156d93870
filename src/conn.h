/* SPDX-License-Identifier: BSD-3-Clause */
/* conn.h -- one Redis connection on a libev loop: connect (TCP or unix,
 * with a timeout), optional TLS, batched writes, replies matched in order,
 * pub/sub pushes. Loop thread only. See conn.c for the state
 * machine. */
#ifndef REDLOCK_CONN_H
#define REDLOCK_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uri.h"

struct ev_loop;
struct redisReply;
struct tls_target;
struct conn;

enum conn_state {
    CONN_CONNECTING, /* socket connect in progress */
    CONN_HANDSHAKE,  /* TLS handshake in progress */
    CONN_OPEN,       /* requests flow */
    CONN_CLOSED,     /* torn down: requests answered, close callback run */
};

/* A reply to one request, borrowed for the duration of the call. reply
 * NULL: the connection went down before the reply came, and down says
 * why (it does not name the endpoint; the owner prefixes it). Runs
 * exactly once per accepted request, never from inside conn_request. */
typedef void conn_reply_fn(struct conn *c, const struct redisReply *reply,
                           const char *down, void *privdata);
/* The connection is open (connected, TLS handshake done). */
typedef void conn_open_fn(struct conn *c, void *privdata);
/* The connection is down (connect failure or timeout, TLS failure, I/O
 * error, EOF, protocol error, conn_close, conn_free): runs once, after
 * every request was answered. */
typedef void conn_close_fn(struct conn *c, const char *reason,
                           void *privdata);
/* Subscriber mode: a pushed message (an array whose first element is
 * "message", "subscribe", "unsubscribe", "pmessage"...), or an error
 * reply that no request waits for. Borrowed. */
typedef void conn_push_fn(struct conn *c, const struct redisReply *reply,
                          void *privdata);
/* The bytes of a conn_request/conn_write are no longer needed. */
typedef void conn_release_fn(void *arg);

#define CONN_MAX_REPLY_DEFAULT (16u * 1024 * 1024)

struct conn_opts {
    const struct node_addr *addr;  /* ADDR_TCP (numeric ip + port) or
                                      ADDR_UNIX; read by conn_new only */
    struct tls_target *tls;        /* NULL: plaintext; else outlives c */
    uint32_t connect_timeout_ms;   /* connect + TLS handshake; 0: none */
    size_t max_reply_bytes;        /* largest reply (bytes held unparsed;
                                      its arrays may announce a third as
                                      many elements); 0: the default */
    bool subscriber;               /* pushes go to on_push */
    conn_open_fn *on_open;         /* may be NULL */
    conn_close_fn *on_close;       /* may be NULL */
    conn_push_fn *on_push;         /* may be NULL (pushes dropped) */
    void *privdata;                /* passed to the three above */
};

/* Start connecting. Every failure, even an immediate one, is reported
 * later, from the loop, through on_close. NULL only when out of memory or
 * when addr is not usable (no numeric ip). Requests may be queued at
 * once; they are written when the connection opens. */
struct conn *conn_new(struct ev_loop *loop, const struct conn_opts *o);

/* Queue a request: len bytes of formatted RESP (e.g. from
 * redisFormatCommandArgv) and fn/privdata for its reply (fn NULL: the
 * reply is read and dropped). The bytes are not copied: they stay valid
 * until release(arg) (NULL: they outlive the connection), called once
 * when written or dropped. Written at the end of this loop iteration
 * together with everything else queued (conn_flush writes sooner).
 * false when the connection is closed; then nothing was taken and
 * nothing is called back. */
bool conn_request(struct conn *c, const char *bytes, size_t len,
                  conn_release_fn *release, void *arg, conn_reply_fn *fn,
                  void *privdata);
/* Queue bytes that no reply answers except pushes (subscriber mode:
 * SUBSCRIBE, UNSUBSCRIBE). Same ownership rules. */
bool conn_write(struct conn *c, const char *bytes, size_t len,
                conn_release_fn *release, void *arg);
/* Format argv (copied) and conn_request it. false also on OOM. */
bool conn_command(struct conn *c, int argc, const char **argv,
                  const size_t *lens, conn_reply_fn *fn, void *privdata);
/* Format argv (copied) and conn_write it. */
bool conn_push_command(struct conn *c, int argc, const char **argv,
                       const size_t *lens);

/* Write what is queued now (an open connection), instead of at the end
 * of the loop iteration. Safe anywhere, including callbacks. */
void conn_flush(struct conn *c);
/* Read what the socket already holds now (an open connection; replies
 * go to their requests), instead of when the readable watcher runs.
 * Not inside a callback of c. */
void conn_read_now(struct conn *c);

/* Tear down now: every pending request is answered with reply NULL and
 * reason, then on_close(reason) runs. No-op when already closed. */
void conn_close(struct conn *c, const char *reason);
/* conn_close(c, "connection closed by client") if still open, then free.
 * Inside a callback of c the memory is freed when the callback returns.
 * NULL is a no-op. */
void conn_free(struct conn *c);

enum conn_state conn_get_state(const struct conn *c);
/* Requests sent and not answered yet. */
size_t conn_pending(const struct conn *c);
/* Why the connection closed ("" while it is not closed). */
const char *conn_reason(const struct conn *c);
/* Negotiated protocol ("TLSv1.3"), or NULL before the TLS handshake is
 * done and on plaintext connections. */
const char *conn_tls_version(const struct conn *c);
/* True when the TLS handshake resumed the target's previous session. */
bool conn_tls_resumed(const struct conn *c);

/* Reconnect delays of one connection owner: 25 ms doubling to 1 s, each
 * with +-25% jitter (so clients restarted together do not reconnect in
 * step). */
struct conn_backoff {
    uint32_t next_ms;
    uint64_t rng;                /* xorshift state: jitter, not security */
};

void conn_backoff_init(struct conn_backoff *b, uint64_t seed);
/* The next delay in ms (and double the one after). */
uint32_t conn_backoff_next(struct conn_backoff *b);
/* A connection worked: start again from the shortest delay. */
void conn_backoff_reset(struct conn_backoff *b);

#endif
