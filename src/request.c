/* SPDX-License-Identifier: BSD-3-Clause */
/* request.c -- a node's requests: records, deadlines and their timer,
 * replies handed to their owners, the NOSCRIPT resend, sending, and the
 * rollbacks kept while the node is down (the state machine that drives
 * them is node.c). Notes on requests, writes and rollbacks open the
 * sections below. */
#include <stdio.h>
#include <string.h>

#include "nodeimpl.h"

/* The longest array reply our scripts send: queue-inspect's, the node's
 * time and 4 fields per entry, RL_QUEUE_READ_MAX entries (the others
 * stay under 16). Kept on the stack of deliver, ~12 KB. */
#define MAX_ARRAY_ELEMENTS (1 + 4 * RL_QUEUE_READ_MAX)
#define MAX_DEFERRED 4096 /* rollbacks kept per down node */

static struct request *send_wire(struct node *n, struct request *r,
                                 struct wire *w, rl_mono_us now);
static bool defer(struct node *n, struct request *r);
static void set_deadline(const struct node *n, struct request *r,
                         const struct request *ahead, rl_mono_us now);
static void batch_reply(struct node *n, struct request *b,
                        const redisReply *reply);

/* ---- Request records ---------------------------------------------------- */

/* Requests. The privdata handed to conn is a struct request owned by the
 * node, never an operation: conn may call back after the operation
 * finished (late reply) or with reply == NULL while the connection dies.
 * The owner (operation) may detach at any time; the record is freed only
 * in the conn reply callback, which conn runs exactly once per request.
 * Records are kept in send order (Redis answers in order) and one ev_timer
 * per node is armed for the oldest deadline. A request still unanswered at
 * its deadline means the connection is stuck (e.g. SIGSTOPped server): it
 * is torn down with conn_close, which answers every pending request with
 * NULL (reported as REPLY_DOWN with the timeout as reason), and the node
 * backs off. A connection that dies by itself (EOF, I/O or TLS error,
 * connect timeout) is handled at its first NULL reply or at its close
 * callback, whichever comes first, so owners reacting to REPLY_DOWN
 * already see the node down. */

/* The request on a list at link; NULL at the end of the list. */
struct request *request_of(struct list_link *link)
{
    return list_entry(link, struct request, link);
}

static void request_free(struct request *r)
{
    wire_unref(r->wire);
    free(r);
}

/* Hand r to its owner once, then forget the owner. */
static void request_report(struct request *r, const struct node_reply *reply)
{
    node_reply_fn *fn = r->fn;

    r->fn = NULL;
    if (fn != NULL)
        fn(r->owner, r->slot, reply);
}

static void report_failure(struct request *r, enum reply_kind kind,
                           const char *why)
{
    struct node_reply reply = {0};

    reply.kind = kind;
    reply.str = why;
    reply.len = strlen(why);
    request_report(r, &reply);
}

void request_detach(struct request *r)
{
    if (r != NULL)
        r->fn = NULL;
}

static void arm_request_timer(struct node *n)
{
    struct request *oldest = request_of(n->pending.first);
    rl_mono_us now;
    double after;

    if (ev_is_active(&n->request_timer) || oldest == NULL)
        return;
    now = mono_now_us();
    after = oldest->deadline_us > now
                ? (double)(oldest->deadline_us - now) / 1e6
                : 0.0;
    ev_timer_set(&n->request_timer, after, 0.0);
    ev_timer_start(n->loop, &n->request_timer);
}

/* Deadlines never decrease along the queue (send_wire keeps them so), so
 * only the oldest request can be overdue first. If it is, the connection
 * is stuck (e.g. a SIGSTOPped server): it is torn down before anyone is
 * told, so owners that react (rollbacks) already see the node down; every
 * pending request is then reported REPLY_DOWN with the timeout as reason.
 * Replies the socket already holds are read first: libev runs the
 * watchers of one loop iteration latest first, so a timer due in the
 * iteration that also found the socket readable runs before the read --
 * and every time this thread was kept off the CPU past op_timeout_ms
 * (a loaded machine), answers that had arrived were thrown away as
 * timeouts and a healthy node was taken down. A late answer is safe to
 * use: each round's outcome is reckoned from its start. */
bool node_read_now(struct node *n)
{
    if (n->conn == NULL || conn_get_state(n->conn) != CONN_OPEN)
        return false;
    conn_read_now(n->conn);
    return true;
}

void request_on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct node *n = w->data;
    struct request *r = request_of(n->pending.first);
    rl_mono_us waited_ms;

    RL_UNUSED(loop);
    RL_UNUSED(revents);
    /* Reading may answer r, or close the connection. */
    if (r != NULL && r->deadline_us <= mono_now_us() && node_read_now(n)) {
        if (n->conn == NULL || ev_is_active(&n->request_timer))
            return; /* down, or re-armed for the next request */
        r = request_of(n->pending.first);
    }
    if (r == NULL || r->deadline_us > mono_now_us()) {
        arm_request_timer(n);
        return;
    }
    /* Not open yet: conn's own timer bounds the connect and the TLS
     * handshake by the same connect_timeout_ms and says which one hung
     * (on_open re-arms this timer). */
    if (n->conn != NULL && conn_get_state(n->conn) != CONN_OPEN)
        return;
    /* Its own wait: the op timeout for commands, the connect timeout
     * for the handshake and a node's checks before it is ready. */
    waited_ms = (r->deadline_us - r->sent_us) / 1000u;
    for (; r != NULL; r = request_of(r->link.next)) {
        struct request *it = r->role == REQ_BATCH
                                 ? request_of(r->items.first)
                                 : r;

        for (; it != NULL; it = it == r ? NULL : request_of(it->link.next)) {
            if (it->fn != NULL)
                n->stats.timeouts++;
        }
    }
    connection_fail(n, "%s: no reply within %llu ms", n->addr->display,
                    (unsigned long long)waited_ms);
}

/* ---- Reply handling ----------------------------------------------------- */

/* Deliver a hiredis reply to the owner as a borrowed node_reply. Arrays
 * keep at most MAX_ARRAY_ELEMENTS scalar elements (all our scripts need). */
static void deliver(struct request *r, const redisReply *reply)
{
    struct node_reply out;
    struct node_reply elems[MAX_ARRAY_ELEMENTS];

    wire_reply_view(reply, &out, elems, MAX_ARRAY_ELEMENTS);
    if (out.kind == REPLY_ERROR)
        r->node->stats.errors++;
    request_report(r, &out);
}


/* NOSCRIPT: the server lost its script cache (SCRIPT FLUSH, restart).
 * Send r's command again as w (its EVAL form, a new reference, NULL on
 * OOM) with the same record, so the owner's request handle stays valid.
 * Returns false if r must be freed. */
static bool resend(struct node *n, struct request *r, struct wire *w)
{
    wire_unref(r->wire);
    r->wire = NULL;
    if (w != NULL && send_wire(n, r, w, mono_now_us()) != NULL) {
        wire_unref(w); /* r holds its own reference */
        return true;
    }
    wire_unref(w);
    report_failure(r, REPLY_DOWN, "connection lost resending EVAL");
    return false;
}

/* r's connection went away unanswered: a rollback waits for the next
 * handshake, anything else is reported down. Returns false if r must be
 * freed. */
static bool lost(struct node *n, struct request *r)
{
    if (r->persist && defer(n, r))
        return true;
    /* The connection is going away: connect failure, EOF, a stuck
     * request, or our free. */
    if (r->fn != NULL) {
        n->stats.down++;
        report_failure(r, REPLY_DOWN,
                       n->last_error[0] ? n->last_error : "connection closed");
    }
    return false;
}

uint32_t node_latency_percentile(const struct node *n, double p)
{
    return latency_percentile(n->stats.latency, n->stats.latency_max_us, p);
}

void node_count_vote(struct node *n, bool granted)
{
    if (granted)
        n->stats.votes_for++;
    else
        n->stats.votes_against++;
}

static void on_reply(struct conn *c, const redisReply *reply,
                     const char *down, void *privdata)
{
    struct request *r = privdata;
    struct node *n = r->node;

    if (reply == NULL)
        connection_lost(n, c, down);
    list_remove(&n->pending, &r->link);
    if (r->role == REQ_BATCH) {
        batch_reply(n, r, reply);
    } else if (reply == NULL) {
        if (lost(n, r))
            return; /* unanswered rollback: again after the reconnect */
    } else if (r->role != REQ_USER) {
        node_own_reply(n, r, reply);
    } else if (wire_resend_as_eval(r->wire, reply,
                                   r->fn != NULL || r->forget)) {
        if (resend(n, r, wire_eval_form(r->wire)))
            return;
    } else {
        latency_record(n->stats.latency, &n->stats.latency_max_us,
                       mono_now_us() - r->sent_us);
        if (r->fn != NULL)
            deliver(r, reply);
    }
    request_free(r);
}

/* ---- Sending ------------------------------------------------------------ */

/* Writes: conn writes everything queued in one loop iteration at its end
 * (one write per node per iteration); sockets are close-on-exec from
 * their creation. */

/* Rollbacks (releases after a failed acquire) that cannot be sent because
 * the node is down are kept, bounded, until the next handshake, however
 * late: a SET stuck in a paused node's socket buffer lands when it
 * resumes and lives a whole TTL from then, and a compare-and-delete of
 * our own token is harmless at any time. */

/* conn is done with the bytes of a queued write. */
static void release_wire(void *arg)
{
    wire_unref(arg);
}

/* r's deadline when it leaves at now: the op timeout for commands (and
 * clock samples of a ready node), the connect timeout for the handshake;
 * never before the request ahead of it (behind the handshake, nothing
 * times out before it). */
static void set_deadline(const struct node *n, struct request *r,
                         const struct request *ahead, rl_mono_us now)
{
    uint32_t timeout_ms = r->role == REQ_USER ||
                                  (r->role == REQ_TIME &&
                                   n->state == NODE_READY)
                              ? n->cfg->op_timeout_ms
                              : n->cfg->connect_timeout_ms;

    r->deadline_us = now + (rl_mono_us)timeout_ms * 1000u;
    if (ahead != NULL && ahead->deadline_us > r->deadline_us)
        r->deadline_us = ahead->deadline_us;
}

/* Queue w on the connection for r (r and the queued write each take a
 * reference); now is the send time. */
static struct request *send_wire(struct node *n, struct request *r,
                                 struct wire *w, rl_mono_us now)
{
    const char *bytes;
    size_t len;

    r->node = n;
    r->sent_us = now;
    set_deadline(n, r, request_of(n->pending.last), now);
    if (n->conn == NULL)
        return NULL;
    bytes = wire_bytes(w, &len);
    if (!conn_request(n->conn, bytes, len, release_wire, wire_ref(w),
                      on_reply, r)) {
        wire_unref(w);
        return NULL;
    }
    r->wire = wire_ref(w);
    list_push_back(&n->pending, &r->link);
    n->stats.requests++;
    arm_request_timer(n);
    return r;
}

void request_send_time(struct node *n, rl_mono_us now)
{
    struct request *r = calloc(1, sizeof(*r));

    if (r == NULL)
        return;
    r->role = REQ_TIME;
    if (send_wire(n, r, n->time_wire, now) == NULL) {
        free(r);
        return;
    }
    clockguard_asked(&n->vote.clock, r->sent_us);
}

static bool node_accepts(struct node *n, const char **why)
{
    if (n->state == NODE_READY ||
        (n->state == NODE_CONNECTING && n->failures == 0))
        return true;
    n->stats.down++;
    if (why != NULL)
        *why = n->last_error[0] ? n->last_error : "node is not connected";
    return false;
}

/* Send r's command w at now: after a clock sample when w is on the lock
 * path and the guard wants one. False when it could not be sent. */
static bool send_user(struct node *n, struct request *r, struct wire *w,
                      rl_mono_us now)
{
    struct wire *eval;
    bool sent;

    if (wire_wants_sample(w) && n->cfg->clock_guard &&
        clockguard_due(&n->vote.clock, now))
        request_send_time(n, now);
    /* Behind a handshake whose SCRIPT EXISTS is unanswered, the server
     * may lack the script until the loads that answer queues: send the
     * source (EVAL) rather than pay NOSCRIPT's round trip, which a
     * caller's loop might not run in time (a renewal). */
    eval = !n->scripts_known && wire_is_script(w) ? wire_eval_form(w) : NULL;
    sent = send_wire(n, r, eval != NULL ? eval : w, now) != NULL;
    wire_unref(eval); /* r holds its own reference */
    return sent;
}

static void batch_add(struct node *n, struct request *r, struct wire *w);
static bool batch_passes(const struct node *n, const struct wire *w);
static bool batch_send(struct node *n);

struct request *node_send_wire(struct node *n, struct wire *w,
                               node_reply_fn *fn, void *owner, size_t slot,
                               const char **why)
{
    struct request *r;

    if (!node_accepts(n, why))
        return NULL;
    r = calloc(1, sizeof(*r));
    if (r == NULL) {
        if (why != NULL)
            *why = "out of memory";
        return NULL;
    }
    r->fn = fn;
    r->owner = owner;
    r->slot = slot;
    r->role = REQ_USER;
    r->forget = fn == NULL;
    if (wire_batchable(w)) {
        batch_add(n, r, w);
        return r;
    }
    /* The batch leaves first, unless w touches one key and none of the
     * batch's: the node runs our commands on each key in the order they
     * were made. */
    if (!batch_passes(n, w))
        batch_send(n);
    if (!send_user(n, r, w, mono_now_us())) {
        free(r);
        if (why != NULL)
            *why = "connection is closing";
        return NULL;
    }
    return r;
}

struct request *node_send(struct node *n, int argc, const char **argv,
                          const size_t *lens, node_reply_fn *fn, void *owner,
                          size_t slot, const char **why)
{
    struct wire *w = wire_new(NULL, 0, argc, argv, lens);
    struct request *r;

    if (w == NULL) {
        if (why != NULL)
            *why = "out of memory";
        return NULL;
    }
    r = node_send_wire(n, w, fn, owner, slot, why);
    wire_unref(w);
    return r;
}

/* Keep r (which holds its wire reference) for the next handshake. False
 * when the node is closing or keeps too many already. */
static bool defer(struct node *n, struct request *r)
{
    if (n->state == NODE_CLOSED || n->deferred_count >= MAX_DEFERRED)
        return false;
    list_push_front(&n->deferred, &r->link);
    n->deferred_count++;
    return true;
}

void node_send_wire_or_defer(struct node *n, struct wire *w)
{
    struct request *r = node_send_wire(n, w, NULL, NULL, 0, NULL);

    if (r != NULL) {
        r->persist = true;
        return;
    }
    r = calloc(1, sizeof(*r));
    if (r == NULL)
        return;
    r->wire = wire_ref(w);
    r->node = n;
    r->role = REQ_USER;
    r->forget = true;
    r->persist = true;
    if (!defer(n, r))
        request_free(r);
}

void request_flush_deferred(struct node *n)
{
    struct request *r = request_of(list_take(&n->deferred).first);
    struct request *next;

    n->deferred_count = 0;
    for (; r != NULL; r = next) {
        struct wire *w = r->wire;

        next = request_of(r->link.next);
        r->wire = NULL;
        if (send_wire(n, r, w, mono_now_us()) != NULL) {
            wire_unref(w); /* r took its own reference */
            continue;
        }
        wire_unref(w);
        free(r);
    }
}

void request_free_deferred(struct node *n)
{
    struct request *r, *next;

    for (r = request_of(list_take(&n->deferred).first); r != NULL; r = next) {
        next = request_of(r->link.next);
        request_free(r);
    }
    n->deferred_count = 0;
}

bool request_internal(struct node *n, enum req_role role, int argc,
                      const char **argv)
{
    size_t lens[INTERNAL_ARGS_MAX];
    struct request *r;
    struct wire *w;
    int i;

    for (i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    w = wire_new(NULL, 0, argc, argv, lens);
    r = calloc(1, sizeof(*r));
    if (w != NULL && r != NULL) {
        r->role = role;
        if (send_wire(n, r, w, mono_now_us()) != NULL) {
            wire_unref(w); /* r took its own reference */
            return true;
        }
    }
    wire_unref(w);
    free(r);
    return false;
}

/* What was queued while connecting leaves now: a sample's bracket starts
 * here, not before the TCP connect, and so do the deadlines: a TCP + TLS
 * connect that took most of the connect timeout (a distant managed
 * Redis) must not leave the handshake's AUTH and INFO none. */
void request_opened(struct node *n)
{
    struct request *r, *ahead;
    rl_mono_us now = mono_now_us();

    for (r = request_of(n->pending.first), ahead = NULL; r != NULL;
         ahead = r, r = request_of(r->link.next)) {
        r->sent_us = now;
        set_deadline(n, r, ahead, now);
    }
    arm_request_timer(n);
}

/* ---- Batches ------------------------------------------------------------ */

/* Batches. The release of a plain single-key lock (wire_batchable) is
 * not written at once: it waits on n->batch for the end of the loop
 * iteration (n->batch_watcher, an ev_prepare that runs before the
 * connections' own, which write), then leaves with the others as one
 * release-batch call -- or as itself when it is alone, so a lone lock's
 * release and its latency are what they were without batching. Nothing
 * waits for a batch to fill. A command that touches one key none of the
 * batch's (a plain acquire's SET NX PX, the other common command) passes
 * it; any other command sends the batch first: the node runs our
 * commands on each key in the order they were made. Each request keeps
 * its record (its owner's handle, its own command for a resend); the
 * batch's record (REQ_BATCH) carries them and its reply answers each as
 * its own call would have been answered: a character per key, or the
 * whole call's error, timeout or lost connection for each (a rollback
 * among them waits for the reconnect). A NOSCRIPT ran nothing: each
 * goes again alone, as EVAL. (A batch of SET NX PX would cost a node
 * more than the SETs: a call from Lua costs what a command does.) */

#define BATCH_MAX 256 /* requests per release-batch call */

/* The bit of key in n->batch_keys (FNV-1a, folded: keys that differ in
 * their last byte differ in the low bits). */
static unsigned key_bit(const char *key, size_t len)
{
    uint64_t h = rl_fnv1a64(key, len);

    h ^= h >> 32;
    h ^= h >> 16;
    return (unsigned)((h ^ (h >> 8)) & 255u);
}

static bool batch_has(const struct node *n, unsigned bit)
{
    return (n->batch_keys[bit / 64] & (UINT64_C(1) << (bit % 64))) != 0;
}

static bool batch_passes(const struct node *n, const struct wire *w)
{
    const char *key;
    size_t len;

    if (n->batch_count == 0)
        return true;
    return wire_key(w, &key, &len) && !batch_has(n, key_bit(key, len));
}

static void batch_add(struct node *n, struct request *r, struct wire *w)
{
    const char *key;
    size_t len;
    unsigned bit;

    wire_key(w, &key, &len); /* a batchable command has one */
    bit = key_bit(key, len);
    /* A key the batch may hold already: that batch leaves first, so a
     * release-batch never names a key twice (its contract). */
    if (n->batch_count > 0 && batch_has(n, bit))
        batch_send(n);
    if (n->batch_count == 0) {
        n->batch_conn = n->conn;
        ev_prepare_start(n->loop, &n->batch_watcher);
    }
    r->node = n;
    r->wire = wire_ref(w);
    list_push_back(&n->batch, &r->link);
    n->batch_keys[bit / 64] |= UINT64_C(1) << (bit % 64);
    if (++n->batch_count == BATCH_MAX)
        batch_send(n);
}

static void batch_done(struct node *n)
{
    n->batch_count = 0;
    n->batch_conn = NULL;
    memset(n->batch_keys, 0, sizeof(n->batch_keys));
    ev_prepare_stop(n->loop, &n->batch_watcher);
}

/* One release-batch call over the requests of items, NULL on OOM. */
static struct wire *batch_wire(const struct list *items, size_t count)
{
    struct wire *wires[BATCH_MAX];
    struct request *r = request_of(items->first);
    size_t i;

    for (i = 0; i < count; i++, r = request_of(r->link.next))
        wires[i] = r->wire;
    return wire_batch_new(wires, count);
}

/* Send the batch now. False when it cannot be (its connection went
 * down, or out of memory): it stays for batch_fail. */
static bool batch_send(struct node *n)
{
    size_t count = n->batch_count;
    struct list items;
    struct request *b, *r;
    struct wire *w;

    if (count == 0)
        return true;
    if (n->conn == NULL || n->batch_conn != n->conn)
        return false;
    items = list_take(&n->batch);
    b = request_of(items.first);
    if (count == 1) {
        w = b->wire; /* alone: its own command */
        b->wire = NULL;
    } else {
        w = batch_wire(&items, count);
        b = w != NULL ? calloc(1, sizeof(*b)) : NULL;
        if (b != NULL)
            b->role = REQ_BATCH;
    }
    if (b == NULL || !send_user(n, b, w, mono_now_us())) {
        n->batch = items;
        if (count == 1) {
            b->wire = w;
        } else {
            wire_unref(w);
            free(b);
        }
        return false;
    }
    wire_unref(w); /* b holds its own reference */
    if (count > 1) {
        b->items = items;
        b->nitems = count;
        for (r = request_of(items.first); r != NULL;
             r = request_of(r->link.next)) {
            r->sent_us = b->sent_us;
            r->deadline_us = b->deadline_us;
        }
        n->stats.requests += count - 1; /* send_wire counted one */
    }
    batch_done(n);
    return true;
}

/* The batch cannot leave: each request is answered as one whose
 * connection went away. */
static void batch_fail(struct node *n)
{
    struct request *r = request_of(list_take(&n->batch).first);
    struct request *next;

    batch_done(n);
    for (; r != NULL; r = next) {
        next = request_of(r->link.next);
        if (!lost(n, r))
            request_free(r);
    }
}

void request_on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
    struct node *n = w->data;

    RL_UNUSED(loop);
    RL_UNUSED(revents);
    request_end_batch(n);
    if (n->conn != NULL)
        conn_flush(n->conn); /* the connection's watcher may have run */
}

void request_end_batch(struct node *n)
{
    if (!batch_send(n))
        batch_fail(n);
}

/* The reply to a release-batch call b, for each request it carries. */
static void batch_reply(struct node *n, struct request *b,
                        const redisReply *reply)
{
    struct request *r = request_of(list_take(&b->items).first);
    bool noscript = reply != NULL && wire_resend_as_eval(b->wire, reply, true);
    bool per_key = reply != NULL && reply->type == REDIS_REPLY_STRING &&
                   (size_t)reply->len == b->nitems;
    rl_mono_us now = mono_now_us();
    struct node_reply answer;
    struct request *next;
    size_t i;

    for (i = 0; r != NULL; i++, r = next) {
        next = request_of(r->link.next);
        if (reply == NULL) {
            if (lost(n, r))
                continue;
        } else if (noscript) {
            /* Not one ran: each again alone, as EVAL. */
            if (wire_resend_as_eval(r->wire, reply,
                                    r->fn != NULL || r->forget) &&
                resend(n, r, wire_eval_form(r->wire)))
                continue;
        } else if (r->fn != NULL) {
            latency_record(n->stats.latency, &n->stats.latency_max_us,
                           now - r->sent_us);
            if (per_key && wire_batch_answer(reply->str[i], &answer))
                request_report(r, &answer);
            else if (reply->type == REDIS_REPLY_ERROR)
                deliver(r, reply);
            else {
                n->stats.errors++;
                report_failure(r, REPLY_ERROR,
                               per_key ? "ERR release-batch failed on this key"
                                       : "ERR release-batch: unexpected reply");
            }
        }
        request_free(r);
    }
}
