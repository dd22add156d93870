/* SPDX-License-Identifier: BSD-3-Clause */
/* node.c -- one Redis node over our own connection layer (conn.c, with
 * optional TLS) on libev.
 *
 * States (enum node_state):
 *   IDLE -> CONNECTING -> READY -> (error, EOF, stuck request) -> BACKOFF
 *   BACKOFF -(timer: 25 ms doubling to 1 s, +-25% jitter)-> CONNECTING
 * CONNECTING queues AUTH, SELECT and INFO server on the new connection
 * before anything else, so every later command runs authenticated, in the
 * right db, and after we know the server's version and uptime
 * (restart quarantine). The connection's own timer bounds the TCP connect
 * and the TLS handshake by connect_timeout_ms; the handshake commands are
 * bounded by it too (their request deadline).
 * A node that has failed before fails new requests at once until its
 * handshake succeeds again ("known down": the quorum does not wait for it).
 *
 * Requests, their deadlines and the rollbacks kept while a node is down
 * are request.c's; the vote's policy is vote.c's, the wire's wire.c's.
 * Notes on the clock guard, the safety facts and connection ownership
 * open the sections below. */
#include <ev.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodeimpl.h"
#include "resolver.h"

static void connection_start(struct node *n);
static void scripts_missing(struct node *n, const redisReply *reply);

/* The node check. Every VOTE_CHECK_INTERVAL_MS a ready node is asked
 * again, in one write, for what can change its vote, so a policy or
 * persistence change, a node turned replica, or (through its replication
 * stream) one that became another node's twin is seen within about that
 * long; nothing on the lock path waits for it. Only what can change is
 * asked for each time, in the cheapest commands that tell it:
 *   CONFIG GET maxmemory maxmemory-policy appendonly appendfsync;
 *   INFO replication: the role, and the stream (a master takes a new
 *     one when its first replica attaches) that tells a twin;
 *   INFO stats: evicted_keys, so a policy changed and changed back
 *     between two checks still shows
 * (from Redis 7 on, one CONFIG GET and one INFO replication stats).
 * What an idle client costs a node is mostly the node's wake-up for
 * each check that arrives on its own, not the commands
 * (docs/idle-cost.md): so every client checks a node at the instants of
 * the node's grid on the wall clock (vote_next_check_us; clients' clocks
 * keep to NTP's milliseconds), and the node serves the checks of all its
 * idle clients in about one wake-up. The wait to the next instant is a
 * monotonic timer of half to one and a half intervals: a wall clock that
 * jumps, stops or runs back moves the checks, never stops them or makes
 * them come faster.
 * Every FULL_CHECK_EVERY-th check, and the one after a refused CONFIG
 * GET (hosted Redis, an ACL: then every check is full), asks
 * INFO for its default sections, as the handshake does; a restart is a
 * new connection, whose handshake reads everything again. A check's
 * answers collect in n->reading and become the node's facts at its last
 * reply.
 The shared check (a
 * follower takes other clients' readings instead) is nodeshare.c's. */
#define FULL_CHECK_EVERY 60

/* Clock guard: the handshake reads TIME, and a lock-path command (marked
 * by wire_sample_time) gets a TIME pipelined right before it, in the same
 * write, whenever clockguard_due says the node needs a sample (the first
 * few on a connection, then at most one per CLOCK_SAMPLE_INTERVAL_US).
 * Each reading is a sample bracketed by the
 * request's send time (queue time, or the connection's open for the
 * handshake) and its receipt; clockguard.c decides from them (through
 * vote.c). The TIME reply is handled before the reply of the command
 * behind it, so a node whose sample is inconsistent never has that reply
 * counted as a vote. */

/* A TIME reply (handshake or pipelined). An error fails a handshake (the
 * guard needs TIME); later it only costs the sample. */
static void time_reply(struct node *n, struct request *r,
                       const redisReply *reply)
{
    struct clock_sample sm = {r->sent_us, 0, 0};

    if (wire_reply_time(reply, &sm.server_us)) {
        sm.recv_us = mono_now_us();
        vote_clock_sample(&n->vote, n->cfg, n->addr->display, &sm);
        return;
    }
    if (n->state == NODE_CONNECTING)
        connection_fail(n, "%s: TIME failed (clock guard; turn it off for "
                        "servers without TIME): %.*s",
                        n->addr->display,
                        reply->type == REDIS_REPLY_ERROR ? (int)reply->len
                                                         : 0,
                        reply->type == REDIS_REPLY_ERROR ? reply->str : "");
}

/* ---- Safety facts ------------------------------------------------------- */

/* The lowest-index node before n whose facts say it is n's server (or
 * replication stream), or -1. The first node of such a group votes; the
 * others are duplicates. */
static int lowest_twin(const struct node *n)
{
    size_t i;

    if (!n->facts_known)
        return -1;
    for (i = 0; i < n->index; i++) {
        const struct node *p = n->peers[i];

        if (p != NULL && p->facts_known &&
            facts_same_server(&n->facts, &p->facts) != NULL)
            return (int)i;
    }
    return -1;
}

static void update_twin(struct node *n)
{
    int was = n->twin_of;
    const struct node *p;

    n->twin_of = lowest_twin(n);
    if (n->twin_of == was)
        return;
    if (n->twin_of < 0) {
        config_log(n->cfg, RL_LOG_WARN,
                   "node %s is no longer the same server as another node",
                   n->addr->display);
        return;
    }
    p = n->peers[n->twin_of];
    config_log(n->cfg, RL_LOG_WARN,
               "node %s is %s as node %s: it does not vote (a majority "
               "needs independent servers: list each one once)",
               n->addr->display, facts_same_server(&n->facts, &p->facts),
               p->addr->display);
}

/* n's identity may have changed: so may every node's duplicate. */
static void update_twins(struct node *n)
{
    size_t i;

    for (i = 0; i < n->npeers; i++)
        if (n->peers[i] != NULL)
            update_twin(n->peers[i]);
}

/* n's facts were read again (before: the previous reading, NULL at the
 * first): the same server or stream may now be another node's. */
static void update_twins_if_moved(struct node *n,
                                  const struct node_facts *before)
{
    if (before == NULL || strcmp(before->run_id, n->facts.run_id) != 0 ||
        strcmp(before->replid, n->facts.replid) != 0)
        update_twins(n);
}

/* A reading (a check's, ours or another client's) becomes the node's
 * facts. */
void node_take_reading(struct node *n, const struct node_facts *reading)
{
    struct node_facts before = n->facts;

    n->facts = *reading;
    /* The same connection is the same server: keep its start. */
    memcpy(n->facts.run_id, before.run_id, sizeof(before.run_id));
    vote_read(&n->vote, n->cfg, n->addr->display, &n->facts, &before,
              mono_now_us());
    update_twins_if_moved(n, &before);
}

/* The INFO that ends a node check: what the check read becomes the
 * node's facts. */
static void check_reply(struct node *n, const redisReply *reply)
{
    n->check_pending = false;
    if (reply->type != REDIS_REPLY_STRING) {
        share_end(n);
        return; /* an error now: keep what the last readings said */
    }
    if (n->check_full)
        facts_from_info(&n->reading, reply->str);
    else
        facts_merge_info(&n->reading, reply->str);
    node_take_reading(n, &n->reading);
    share_check_done(n);
}

/* A CONFIG GET reply (name, value pairs) read into f. Refused (hosted
 * Redis, an ACL): appendfsync is unknown, and the next check asks INFO
 * for everything. */
static void config_reply(struct node *n, struct node_facts *f,
                         const redisReply *reply)
{
    size_t i;

    if (reply->type != REDIS_REPLY_ARRAY) {
        f->appendfsync[0] = '\0';
        n->check_refused = true;
        return;
    }
    for (i = 0; i + 1 < reply->elements; i += 2)
        if (reply->element[i]->type == REDIS_REPLY_STRING &&
            reply->element[i + 1]->type == REDIS_REPLY_STRING)
            facts_from_config(f, reply->element[i]->str,
                              reply->element[i + 1]->str);
}

/* A check's replies before its last: kept in n->reading. */
static void check_part_reply(struct node *n, struct request *r,
                             const redisReply *reply)
{
    if (r->role == REQ_CHECK_CONFIG)
        config_reply(n, &n->reading, reply);
    else if (reply->type == REDIS_REPLY_STRING)
        facts_merge_info(&n->reading, reply->str);
}

static void handshake_done(struct node *n, const redisReply *info)
{
    struct node_facts before = n->facts;
    const struct node_facts *was = n->facts_known ? &before : NULL;

    facts_from_info(&n->facts, info->str);
    n->facts_known = true;
    vote_handshake(&n->vote, n->cfg, n->addr->display, &n->facts, was,
                   mono_now_us());
    update_twins_if_moved(n, was);
    n->checks_to_full = FULL_CHECK_EVERY - 1; /* this was one */
    n->state = NODE_READY;
    n->failures = 0;
    n->stats.handshakes++;
    if (conn_tls_resumed(n->conn))
        n->stats.tls_resumed++;
    conn_backoff_reset(&n->backoff);
    n->last_error[0] = '\0';
    request_flush_deferred(n);
    config_log(n->cfg, RL_LOG_INFO, "node %s ready (redis %s, up %llu s)",
               n->addr->display, n->facts.version,
               (unsigned long long)(node_uptime_ms(n) / 1000));
}

static void handshake_reply(struct node *n, struct request *r,
                            const redisReply *reply)
{
    static const char *const what[] = {
        [REQ_AUTH] = "AUTH", [REQ_SELECT] = "SELECT", [REQ_INFO] = "INFO"};

    /* Preloading scripts only saves a NOSCRIPT round trip later. */
    if (r->role == REQ_SCRIPT_LOAD)
        return;
    if (r->role == REQ_SCRIPT_EXISTS) {
        scripts_missing(n, reply);
        return;
    }
    if (r->role == REQ_CONFIG) {
        n->facts.appendfsync[0] = '\0'; /* not the last server's */
        config_reply(n, &n->facts, reply);
        return;
    }
    if (r->role == REQ_CHECK) {
        check_reply(n, reply);
        return;
    }
    if (r->role >= REQ_CHECK_CONFIG) {
        check_part_reply(n, r, reply);
        return;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        connection_fail(n, "%s: %s failed: %.*s", n->addr->display,
                        what[r->role], (int)reply->len, reply->str);
        return;
    }
    if (r->role == REQ_INFO) {
        if (reply->type != REDIS_REPLY_STRING) {
            connection_fail(n, "%s: unexpected INFO reply", n->addr->display);
            return;
        }
        handshake_done(n, reply);
    }
}

void node_own_reply(struct node *n, struct request *r,
                    const redisReply *reply)
{
    if (r->role == REQ_TIME)
        time_reply(n, r, reply);
    else if (r->role == REQ_SHARE)
        share_reply(n, reply);
    else
        handshake_reply(n, r, reply);
}

/* ---- Connection lifecycle ----------------------------------------------- */

/* Connection ownership: n->conn is the current connection or NULL; it is
 * cleared before the node frees it (conn_free defers the memory while one
 * of its callbacks runs), so callbacks of an old connection are
 * recognised and never touch the node's state. */

static void schedule_reconnect(struct node *n)
{
    uint32_t delay = conn_backoff_next(&n->backoff);

    n->state = NODE_BACKOFF;
    ev_timer_stop(n->loop, &n->backoff_timer);
    ev_timer_set(&n->backoff_timer, delay / 1000.0, 0.0);
    ev_timer_start(n->loop, &n->backoff_timer);
}

/* The node lost its connection (reason set in last_error): count it,
 * back off (unless closing), stop the request timer. */
static void node_down(struct node *n)
{
    n->check_pending = false;
    share_end(n);
    /* A node given by name may have moved: look it up again, off the
     * loop; the next connect after the answer goes there. */
    if (n->state != NODE_CLOSED && n->resolving == NULL &&
        uri_host_is_name(n->addr))
        n->resolving = resolve_start(n->addr->host, n->addr->display);
    if (n->state == NODE_READY || n->failures == 0)
        config_log(n->cfg, RL_LOG_WARN, "node down: %s", n->last_error);
    n->failures++;
    n->conn = NULL;
    n->batch_conn = NULL; /* the batch fails when its watcher runs */
    ev_timer_stop(n->loop, &n->request_timer);
    if (n->state != NODE_CLOSED)
        schedule_reconnect(n);
}

void connection_fail(struct node *n, const char *fmt, ...)
{
    struct conn *c = n->conn;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(n->last_error, sizeof(n->last_error), fmt, ap);
    va_end(ap);
    node_down(n);
    if (c != NULL) {
        conn_close(c, n->last_error);
        conn_free(c);
    }
}

/* The connection died by itself (connect failure or timeout, TLS error,
 * EOF, I/O or protocol error): called at its first unanswered request or
 * at its close, whichever comes first; a connection the node already let
 * go of is ignored. conn names the reason, the node prefixes its name. */
void connection_lost(struct node *n, struct conn *c, const char *reason)
{
    if (c != n->conn)
        return;
    snprintf(n->last_error, sizeof(n->last_error), "%s: %s",
             n->addr->display, reason);
    node_down(n);
    conn_free(c); /* inside its callback: freed when that returns */
}

/* The socket is connected (and the TLS handshake done): from now on the
 * handshake commands' deadlines are the node's to enforce. */
static void on_open(struct conn *c, void *privdata)
{
    struct node *n = privdata;

    if (c != n->conn)
        return;
    request_opened(n);
}

static void on_close(struct conn *c, const char *reason, void *privdata)
{
    connection_lost(privdata, c, reason);
}

/* Ask the server which of our scripts it has (one SCRIPT EXISTS); the
 * reply loads the others (scripts_missing), so EVALSHA normally finds
 * them. A server keeps its scripts until it restarts or flushes them:
 * a client, a CLI run each, mostly finds them all and loads none
 * (loading them all cost a node more than the lock itself, issue 45).
 * What is sent before the loads land (behind the handshake, on a fresh
 * server) gets NOSCRIPT and is resent as EVAL. */
static bool queue_script_exists(struct node *n)
{
    const char *argv[2 + SCRIPT_COUNT] = {"SCRIPT", "EXISTS"};
    int id;

    for (id = 0; id < SCRIPT_COUNT; id++)
        argv[2 + id] = script_get((enum script_id)id)->sha1;
    return request_internal(n, REQ_SCRIPT_EXISTS, 2 + SCRIPT_COUNT, argv);
}

/* SCRIPT EXISTS answered: SCRIPT LOAD those the server lacks (an error:
 * all of them). */
static void scripts_missing(struct node *n, const redisReply *reply)
{
    const char *argv[3] = {"SCRIPT", "LOAD", NULL};
    bool answered = reply->type == REDIS_REPLY_ARRAY &&
                    reply->elements == SCRIPT_COUNT;
    size_t id;

    for (id = 0; id < SCRIPT_COUNT; id++) {
        if (answered && reply->element[id]->type == REDIS_REPLY_INTEGER &&
            reply->element[id]->integer == 1)
            continue;
        argv[2] = script_get((enum script_id)id)->source;
        if (!request_internal(n, REQ_SCRIPT_LOAD, 3, argv))
            break; /* out of memory: EVALSHA falls back to EVAL */
    }
    n->scripts_known = true;
}

static bool queue_handshake(struct node *n)
{
    const struct node_addr *a = n->addr;
    const char *argv[3];
    char db[16];
    int argc = 0;
    int role;

    for (role = REQ_AUTH; role <= REQ_SCRIPT_EXISTS; role++) {
        argc = 0;
        if (role == REQ_AUTH) {
            argc = node_addr_auth_argv(a, argv);
            if (argc == 0)
                continue;
        } else if (role == REQ_SELECT) {
            if (a->db == 0)
                continue;
            snprintf(db, sizeof(db), "%d", a->db);
            argv[argc++] = "SELECT";
            argv[argc++] = db;
        } else if (role == REQ_CONFIG) {
            argv[argc++] = "CONFIG";
            argv[argc++] = "GET";
            argv[argc++] = "appendfsync";
        } else if (role == REQ_INFO) {
            if (n->cfg->clock_guard)
                request_send_time(n, mono_now_us());
            /* The default sections: server, memory, persistence,
             * replication and cluster among them (facts.h). */
            argv[argc++] = "INFO";
        } else {
            if (!queue_script_exists(n))
                return false;
            continue;
        }
        if (!request_internal(n, (enum req_role)role, argc, argv))
            return false;
    }
    return true;
}

/* The answer of a lookup started at a failure, if it came: a new address
 * is where this and later connections go (and the notifications'); it
 * is a new server only if its run_id says so. A node whose name has no
 * address yet keeps the lookup's failure as its error. */
static void take_new_address(struct node *n)
{
    struct node_addr *a = &n->cfg->addrs[n->index];
    char err[RL_ERRLEN];
    char *ip = NULL;
    rl_status st;

    if (n->resolving == NULL ||
        !resolve_poll(n->resolving, &ip, &st, err, sizeof(err)))
        return;
    resolve_drop(n->resolving);
    n->resolving = NULL;
    if (st != RL_OK && a->ip == NULL) {
        snprintf(n->last_error, sizeof(n->last_error), "%s", err);
        return;
    }
    if (st != RL_OK) {
        config_log(n->cfg, RL_LOG_DEBUG, "node %s: %s (trying %s again)",
                   a->display, err, a->ip);
        return;
    }
    if (a->ip != NULL && strcmp(ip, a->ip) == 0) {
        free(ip);
        return;
    }
    config_log(n->cfg, RL_LOG_WARN,
               "node %s: host '%s' now resolves to %s (was %s): "
               "connecting there", a->display, a->host, ip,
               a->ip != NULL ? a->ip : "not resolved");
    free(a->ip);
    a->ip = ip;
}

static void connection_start(struct node *n)
{
    struct conn_opts o;

    take_new_address(n);
    if (n->addr->kind == ADDR_TCP && n->addr->ip == NULL) {
        /* Its name does not resolve (yet): a node that is down, looked
         * up again (node_down) at each of its reconnect delays. */
        node_down(n);
        return;
    }
    memset(&o, 0, sizeof(o));
    o.addr = n->addr;
    o.tls = n->tls;
    o.connect_timeout_ms = n->cfg->connect_timeout_ms;
    o.on_open = on_open;
    o.on_close = on_close;
    o.privdata = n;
    n->conn = conn_new(n->loop, &o);
    if (n->conn == NULL) {
        snprintf(n->last_error, sizeof(n->last_error),
                 "%s: out of memory connecting", n->addr->display);
        node_down(n);
        return;
    }
    n->state = NODE_CONNECTING;
    n->scripts_known = false;
    n->check_refused = false;
    clockguard_reconnect(&n->vote.clock);
    if (!queue_handshake(n))
        connection_fail(n, "%s: cannot queue the handshake",
                        n->addr->display);
}

static bool queue_check(struct node *n)
{
    static const char *const names[] = {"maxmemory", "maxmemory-policy",
                                        "appendonly", "appendfsync"};
    const char *sections[] = {"INFO", "replication", "stats"};
    const char *argv[INTERNAL_ARGS_MAX] = {"CONFIG", "GET"};
    const char *info[2] = {"INFO", NULL};
    bool several = atoi(n->facts.version) >= 7; /* names per command */
    size_t i;

    if (several) {
        memcpy(argv + 2, names, sizeof(names));
        if (!request_internal(n, REQ_CHECK_CONFIG,
                              (int)(2 + ARRAY_SIZE(names)), argv))
            return false;
    } else {
        for (i = 0; i < ARRAY_SIZE(names); i++) {
            argv[2] = names[i];
            if (!request_internal(n, REQ_CHECK_CONFIG, 3, argv))
                return false;
        }
    }
    if (n->check_full) /* the default sections, as the handshake's */
        return request_internal(n, REQ_CHECK, 1, info);
    if (several)
        return request_internal(n, REQ_CHECK, (int)ARRAY_SIZE(sections),
                                sections);
    info[1] = "replication";
    if (!request_internal(n, REQ_CHECK_INFO, 2, info))
        return false;
    info[1] = "stats";
    return request_internal(n, REQ_CHECK, 2, info);
}

/* The check timer set for the node's next grid instant. */
static void schedule_check(struct node *n)
{
    uint64_t now = wall_now_us();

    ev_timer_set(&n->check_timer,
                 (double)(vote_next_check_us(n->addr, now) - now) / 1e6, 0.0);
    ev_timer_start(n->loop, &n->check_timer);
}

void node_send_check(struct node *n)
{
    n->check_refused = false;
    n->reading = n->facts;
    n->check_sent_us = mono_now_us();
    if (queue_check(n)) {
        n->check_pending = true;
        n->stats.checks_own++;
        if (n->own_checks < FOLLOW_AFTER_CHECKS)
            n->own_checks++;
    }
}

static void on_check_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct node *n = w->data;
    bool heard;

    RL_UNUSED(loop);
    RL_UNUSED(revents);
    schedule_check(n);
    if (n->state != NODE_READY || n->check_pending)
        return;
    heard = share_instant(n);
    n->check_full = n->check_refused || n->checks_to_full == 0;
    n->checks_to_full = n->check_full ? FULL_CHECK_EVERY - 1
                                      : n->checks_to_full - 1;
    if (n->takeover != TAKEOVER_NONE)
        return; /* the takeover checks */
    if (heard && !n->check_full)
        return; /* another client's reading came: it was our check */
    node_send_check(n);
}

static void on_backoff_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct node *n = w->data;

    RL_UNUSED(loop);
    RL_UNUSED(revents);
    if (n->state == NODE_BACKOFF)
        connection_start(n);
}

/* ---- Public (internal) API ---------------------------------------------- */

struct node *node_new(struct ev_loop *loop, const struct config *cfg,
                      struct node *const *peers, size_t index,
                      struct tls_target *tls, struct notify *nt)
{
    static const char *const time_argv[1] = {"TIME"};
    static const size_t time_len[1] = {4};
    struct node *n = calloc(1, sizeof(*n));

    if (n == NULL)
        return NULL;
    n->time_wire = wire_new(NULL, 0, 1, (const char **)time_argv, time_len);
    if (n->time_wire == NULL) {
        free(n);
        return NULL;
    }
    n->loop = loop;
    n->cfg = cfg;
    n->addr = &cfg->addrs[index];
    n->tls = tls;
    n->notify = nt;
    n->state = NODE_IDLE;
    n->peers = peers;
    n->npeers = cfg->node_count;
    n->index = index;
    n->twin_of = -1;
    snprintf(n->last_error, sizeof(n->last_error), "%s",
             cfg->unresolved[index]);
    conn_backoff_init(&n->backoff, mono_now_us() ^ ((uint64_t)index << 32));
    ev_timer_init(&n->request_timer, request_on_timer, 0.0, 0.0);
    n->request_timer.data = n;
    /* Before the connections' own prepare watchers, which write. */
    ev_prepare_init(&n->batch_watcher, request_on_prepare);
    ev_set_priority(&n->batch_watcher, EV_MAXPRI);
    n->batch_watcher.data = n;
    ev_timer_init(&n->backoff_timer, on_backoff_timer, 0.0, 0.0);
    n->backoff_timer.data = n;
    ev_timer_init(&n->check_timer, on_check_timer, 0.0, 0.0);
    n->check_timer.data = n;
    share_init(n);
    return n;
}

void node_start(struct node *n)
{
    if (n->state != NODE_IDLE)
        return;
    schedule_check(n);
    connection_start(n);
}

void node_free(struct node *n)
{
    struct conn *c;

    if (n == NULL)
        return;
    request_end_batch(n);
    n->state = NODE_CLOSED;
    ev_timer_stop(n->loop, &n->request_timer);
    ev_timer_stop(n->loop, &n->backoff_timer);
    ev_timer_stop(n->loop, &n->check_timer);
    share_stop(n);
    resolve_drop(n->resolving);
    n->resolving = NULL;
    snprintf(n->last_error, sizeof(n->last_error), "%s: client closed",
             n->addr->display);
    c = n->conn;
    n->conn = NULL;
    if (c != NULL) {
        /* What was queued in this iteration (the last releases) leaves
         * before the close; pending callbacks then run, with NULL. */
        conn_flush(c);
        conn_free(c);
    }
    request_free_deferred(n);
    wire_unref(n->time_wire);
    free(n);
}

const char *node_name(const struct node *n)
{
    return n->addr->display;
}

enum node_state node_get_state(const struct node *n)
{
    return n->state;
}

int64_t node_uptime_ms(const struct node *n)
{
    return vote_uptime_ms(&n->vote, mono_now_us());
}

bool node_started_after(const struct node *n, rl_mono_us t)
{
    return vote_started_after(&n->vote, t);
}

bool node_settled_by(const struct node *n, rl_mono_us t)
{
    return vote_quarantine_left_ms(n->cfg, &n->vote, t) == 0;
}

bool node_restart_trusted(const struct node *n)
{
    return vote_restart_trusted(n->cfg, &n->vote);
}

enum node_bar node_vote_bar(const struct node *n)
{
    return vote_bar(n->cfg, &n->vote, n->state == NODE_READY,
                    n->twin_of >= 0, mono_now_us());
}

bool node_voting(const struct node *n)
{
    return node_vote_bar(n) == NODE_BAR_NONE;
}

bool node_keeps_keys(const struct node *n)
{
    return vote_keeps_keys(node_vote_bar(n));
}

int64_t node_quarantine_left_ms(const struct node *n)
{
    if (n->state != NODE_READY)
        return -1;
    return vote_quarantine_left_ms(n->cfg, &n->vote, mono_now_us());
}

const struct node_facts *node_get_facts(const struct node *n)
{
    return &n->facts;
}

int node_twin_of(const struct node *n)
{
    return n->twin_of;
}

const char *node_version(const struct node *n)
{
    return n->facts.version;
}

const char *node_tls_version(const struct node *n)
{
    return n->state == NODE_READY && n->conn != NULL
               ? conn_tls_version(n->conn)
               : NULL;
}

const struct node_stats *node_get_stats(const struct node *n)
{
    return &n->stats;
}

enum node_clock node_clock_state(const struct node *n)
{
    if (!n->cfg->clock_guard)
        return NODE_CLOCK_OFF;
    if (n->vote.clock.suspect)
        return NODE_CLOCK_SUSPECT;
    return n->vote.clock.samples < 2 ? NODE_CLOCK_UNKNOWN : NODE_CLOCK_OK;
}

double node_clock_rate(const struct node *n)
{
    return n->vote.clock.rate;
}

uint64_t node_clock_incidents(const struct node *n)
{
    return n->vote.clock.incidents;
}
