/* SPDX-License-Identifier: BSD-3-Clause */
/* nodeimpl.h -- struct node and struct request, shared by the two files
 * of the node module: node.c (the connection's state machine: handshake,
 * checks, reconnect, the public getters) and request.c (its requests:
 * records, deadlines, sending, deferral, replies). No other file includes
 * it. */
#ifndef REDLOCK_NODEIMPL_H
#define REDLOCK_NODEIMPL_H

#include <ev.h>
#include <hiredis/hiredis.h>

#include "conn.h"
#include "list.h"
#include "node.h"
#include "vote.h"
#include "wire.h"

/* The longest internal command: SCRIPT EXISTS of every script. */
#define INTERNAL_ARGS_MAX (2 + SCRIPT_COUNT)

enum req_role {
    REQ_USER,
    REQ_AUTH,
    REQ_SELECT,
    REQ_CONFIG,      /* CONFIG GET appendfsync of the handshake */
    REQ_INFO,        /* INFO of the handshake */
    REQ_SCRIPT_EXISTS, /* which scripts the server has (handshake) */
    REQ_SCRIPT_LOAD,   /* one it lacks */
    REQ_TIME,        /* a clock sample (handshake or pipelined) */
    REQ_CHECK_CONFIG, /* CONFIG GET of a node check */
    REQ_CHECK_INFO,  /* an INFO of a node check before its last */
    REQ_CHECK,       /* the INFO that ends a node check */
    REQ_BATCH,       /* a release-batch call carrying user requests */
    REQ_SHARE,       /* PUBLISH of a check's reading (shared check) */
};

/* A follower's takeover of the shared check (nodeshare.c): after
 * VOTE_SHARE_EVERY silent instants it waits its delay, checks, and
 * publishes (after its delay again when the check was slow: a stalled
 * node); a reading heard at any step ends it. */
enum takeover {
    TAKEOVER_NONE,
    TAKEOVER_WAIT_CHECK,   /* our check after our delay */
    TAKEOVER_CHECKING,     /* it is on its way */
    TAKEOVER_WAIT_PUBLISH, /* it came back slow but fresh: published
                              after our delay */
};

struct request {
    struct list_link link;      /* on its node's pending, deferred or
                                   batch list, or its batch's items */
    struct node *node;
    node_reply_fn *fn;          /* NULL once detached or reported */
    void *owner;
    size_t slot;
    enum req_role role;
    rl_mono_us deadline_us;     /* report a timeout after this, boottime */
    rl_mono_us sent_us;         /* when it was sent, boottime */
    struct wire *wire;          /* the command (a reference) */
    bool forget;                /* fire and forget: never had an owner */
    bool persist;               /* a rollback: resent after a reconnect
                                   until a server has answered it */
    struct list items;          /* REQ_BATCH: the requests it carries,
                                   in order */
    size_t nitems;
};

struct node {
    struct ev_loop *loop;
    const struct config *cfg;
    const struct node_addr *addr;
    enum node_state state;
    struct tls_target *tls;     /* NULL: plaintext */
    struct conn *conn;          /* NULL unless CONNECTING or READY */
    bool scripts_known;         /* this connection's SCRIPT EXISTS was
                                   answered and the loads it asked for
                                   queued: EVALSHA finds the scripts
                                   behind them; before, a script call
                                   goes out as EVAL (no NOSCRIPT round
                                   trip on a fresh server) */
    struct list pending;        /* requests sent, oldest first */
    struct list deferred;       /* rollbacks waiting for a reconnect,
                                   newest first */
    size_t deferred_count;
    struct list batch;          /* batchable requests of this loop
                                   iteration, not sent yet, oldest first */
    size_t batch_count;
    uint64_t batch_keys[4];     /* their keys' hashes, a bit each of 256:
                                   a command to a key not there may pass
                                   the batch */
    struct conn *batch_conn;    /* the connection they were accepted on;
                                   NULL once it went down */
    ev_prepare batch_watcher;   /* end of the iteration: send them */
    ev_timer request_timer;     /* fires at the oldest deadline */
    ev_timer backoff_timer;     /* reconnect */
    struct conn_backoff backoff; /* reconnect delays */
    unsigned failures;          /* since the last good handshake */
    struct node_facts facts;    /* from the last INFO (+ CONFIG GET) */
    struct vote_record vote;    /* what the readings tell the vote */
    bool facts_known;           /* a handshake has read them */
    bool check_pending;         /* a node check awaits its last INFO */
    bool check_full;            /* the check asks INFO for everything */
    bool check_refused;         /* CONFIG GET was refused: the next
                                   check is a full one */
    unsigned checks_to_full;    /* checks until the next full one */
    struct node_facts reading;  /* the answers of the check so far */
    ev_timer check_timer;       /* the node check, at the node's grid's
                                   next instant */
    /* The shared check (nodeshare.c): */
    struct notify *notify;      /* the client's (freed just before the
                                   nodes, in one loop callback) */
    uint64_t check_id;          /* ours among the node's clients */
    unsigned own_checks;        /* checks this node sent, up to
                                   FOLLOW_AFTER_CHECKS */
    bool following;             /* subscribed to the node's readings */
    bool publishing;            /* our checks' readings are published */
    bool share_refused;         /* PUBLISH was refused: never again */
    unsigned unheard;           /* instants since another client's
                                   reading was last heard */
    unsigned unshared;          /* our checks since we last published */
    enum takeover takeover;     /* where our takeover stands */
    ev_timer takeover_timer;    /* its delays (by our id) */
    bool reading_fresh;         /* our last check came back within
                                   SHARE_FRESH_MS, unrefused */
    char shared_line[FACTS_SHARE_MAX]; /* what we last published */
    rl_mono_us check_sent_us;   /* our pending check's send */
    struct node *const *peers;  /* every node of the client (index order) */
    size_t npeers;
    size_t index;               /* ours in peers */
    int twin_of;                /* lower-index node that is the same
                                   server, -1 none: we do not vote */
    struct resolve_job *resolving; /* host name looked up again after a
                                      failure, or NULL */
    char last_error[RL_ERRLEN];
    struct node_stats stats;
    struct wire *time_wire;     /* "TIME", shared by the node's samples */
};

/* node.c, for nodeshare.c */

/* A node's check sent now (check_pending while it is on its way). */
void node_send_check(struct node *n);
/* A reading (a check's, ours or another client's) becomes the node's
 * facts. */
void node_take_reading(struct node *n, const struct node_facts *reading);

/* nodeshare.c: the shared check (a follower takes other clients'
 * readings of the node instead of checking it) */

/* Checks of our own before a client follows the node's readings. */
#define FOLLOW_AFTER_CHECKS 8

/* The node's check_id and takeover timer (node_new). */
void share_init(struct node *n);
/* Stops the takeover timer (node_free). */
void share_stop(struct node *n);
/* The shared check's part at a check instant: whether a reading heard
 * from another client stands for our check (none is sent) or not; while
 * n->takeover is not TAKEOVER_NONE the takeover sends the check. */
bool share_instant(struct node *n);
/* Our check's reading was taken: published, or the takeover's next
 * step. */
void share_check_done(struct node *n);
/* Ends a takeover (the connection went down, a check failed). */
void share_end(struct node *n);
/* The reply of our PUBLISH: an error means we may not share. */
void share_reply(struct node *n, const redisReply *reply);

/* request.c */

/* The request on a list at link; NULL at the end of the list. */
struct request *request_of(struct list_link *link);
/* Queue one of the node's own commands (argc <= INTERNAL_ARGS_MAX).
 * False when it could not be. */
bool request_internal(struct node *n, enum req_role role, int argc,
                      const char **argv);
/* Queue a TIME (a clock sample); nothing happens when it cannot be. */
void request_send_time(struct node *n, rl_mono_us now);
/* The connection opened: what was queued while connecting leaves now. */
void request_opened(struct node *n);
/* After a handshake: send what waited for the node. */
void request_flush_deferred(struct node *n);
void request_free_deferred(struct node *n);
/* The batch watcher (n->batch_watcher, data n) runs: send the batch. */
void request_on_prepare(struct ev_loop *loop, ev_prepare *w, int revents);
/* node_free: the batch leaves now (or fails). */
void request_end_batch(struct node *n);
/* The request timer (n->request_timer, data n) fired. */
void request_on_timer(struct ev_loop *loop, ev_timer *w, int revents);

/* node.c */

/* Give up on the current connection: remember why, close it (every
 * pending request is answered NULL and reported REPLY_DOWN), back off. */
void connection_fail(struct node *n, const char *fmt, ...) RL_PRINTF(2, 3);
/* The connection c died by itself, for reason. */
void connection_lost(struct node *n, struct conn *c, const char *reason);
/* The reply to one of the node's own requests (handshake, check, TIME). */
void node_own_reply(struct node *n, struct request *r,
                    const redisReply *reply);

#endif
