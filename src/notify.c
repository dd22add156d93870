/* SPDX-License-Identifier: BSD-3-Clause */
/* notify.c -- release notifications.
 *
 * The release script publishes on redlock:release:<key>. A waiting acquire
 * (one that was refused and sleeps before its next attempt) registers a
 * notify_waiter for its key; the first message from any node wakes it to
 * retry at once instead of sleeping out its retry delay. Polling with
 * jitter stays as the fallback: a crashed holder publishes nothing, and a
 * message can be lost while a subscriber connection is down.
 *
 * One subscriber connection per node (conn.c in subscriber mode: AUTH
 * is a request, (UN)SUBSCRIBE are written without one, messages and
 * confirmations arrive as pushes), separate from the command connection
 * (a subscribed connection accepts no other commands), is opened the
 * first time anybody waits, or when the node's shared check is followed
 * (redlock:facts: node.c), and then kept; it uses the node's TLS target
 * and connect timeout, and reconnects with backoff and jitter like the
 * node does. A channel is
 * subscribed when the first waiter of a key arrives and stays subscribed
 * while idle (up to MAX_IDLE_CHANNELS), so contended keys are not
 * resubscribed on every hand-off; after a reconnect every channel is
 * subscribed again. A release between the refused attempt and the
 * registration of its waiter must not go unnoticed: each node's
 * confirmation of a subscription wakes the waiters like a release (what
 * that node released before it reached nobody; the nodes confirm one by
 * one, and only the last one may hold back a quorum), and on an existing
 * one notify_wait reports a release or confirmation seen since the
 * attempt started. Messages carry the releaser's token (and from release,
 * the number of clients subscribed on that node: split_message). Where
 * that number is 1 (this client alone listens), the oldest waiter that
 * takes the message on for an exclusive lock (notify_waiter.claims) is
 * the only one woken, by it and by the same release's messages from the
 * other nodes: its threads' attempts reach each node over one
 * connection, in one order, so one attempt is all a release needs. A
 * waiter ignores its own (a reader's rollback publishes; an exclusive
 * attempt's does not, src/lua/rollback.lua), or it would wake itself
 * while the holder still holds.
 *
 * This is the one module besides node.c that owns connections: the
 * subscriber ones. Their privdata is the per-node struct sub_conn, which
 * outlives them (notify_free frees the connections first, which runs
 * their callbacks, recognised as stale since sc->conn is cleared first).
 * Loop thread only. */
#include <ev.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>

#include "conn.h"
#include "notify.h"
#include "token.h"

#define CHANNEL_PREFIX "redlock:release:"
#define QUEUE_PREFIX "redlock:queue:" /* fair-queue announcements */
#define FACTS_CHANNEL "redlock:facts"  /* node checks shared (nodeshare.c) */
#define MAX_IDLE_CHANNELS 1024 /* subscriptions kept with nobody waiting */

struct channel {
    struct channel *next;
    char *name;                  /* CHANNEL_PREFIX + key */
    size_t len;
    rl_mono_us last_release_us;  /* last message or confirmation */
    struct list waiters;         /* struct notify_waiter, oldest first */
    uint64_t claimed;            /* hash of the last release token a
                                    waiter claimed (channel_wake) */
    struct notify_waiter *claimant; /* that waiter while it waits */
};

struct sub_conn {
    struct notify *nt;
    const struct node_addr *addr;
    struct tls_target *tls;      /* NULL: plaintext */
    struct conn *conn;           /* NULL when not connected */
    ev_timer retry;
    struct conn_backoff backoff;
    notify_facts_fn *facts_fn;   /* the node follows the shared check */
    void *facts_arg;
};

struct notify {
    struct ev_loop *loop;
    const struct config *cfg;
    struct sub_conn *conns;      /* one per node */
    size_t count;
    struct channel *channels;
    size_t idle;                 /* channels without waiters */
    bool closing;
};

static void sub_start(struct sub_conn *sc);

/* ---- Channels ----------------------------------------------------------- */

static struct channel *channel_find(struct notify *nt, const char *name,
                                    size_t len)
{
    struct channel *ch;

    for (ch = nt->channels; ch != NULL; ch = ch->next) {
        if (ch->len == len && memcmp(ch->name, name, len) == 0)
            return ch;
    }
    return NULL;
}

static void send_channel(struct sub_conn *sc, const char *verb,
                         const struct channel *ch);

static struct notify_waiter *waiter_of(struct list_link *link)
{
    return list_entry(link, struct notify_waiter, link);
}

/* A release message is the releaser's token, and from release and
 * release-batch a space and the number of clients subscribed to the
 * channel on that node (tokens hold no space). Sets *listeners to that
 * number, 0 where the message has none; returns the token's length. */
static size_t split_message(const char *msg, size_t len, unsigned *listeners)
{
    size_t sp = len, i;
    unsigned long n = 0;

    *listeners = 0;
    while (sp > 0 && msg[sp - 1] != ' ')
        sp--;
    if (sp == 0 || sp == len)
        return len;
    for (i = sp; i < len; i++) {
        if (msg[i] < '0' || msg[i] > '9' || n > 1000000)
            return len;
        n = n * 10 + (unsigned long)(msg[i] - '0');
    }
    *listeners = (unsigned)n;
    return sp - 1;
}

/* Wake w for a message (seen at seen_us, counting listeners) or a
 * confirmation (0 listeners). */
static void wake_one(struct notify_waiter *w, rl_mono_us seen_us,
                     unsigned listeners)
{
    /* Remembered: a waiter busy with an attempt ignores the wake, and
     * asks again (notify_wait) if that attempt fails. */
    w->seen_us = seen_us;
    w->listeners = listeners;
    w->claims = false;
    w->wake(w->arg);
}

/* Wake ch's waiters, oldest first, but not skip, for a message of token
 * (NULL: a confirmation, or a release passed on: notify_pass_on); each
 * wake may unregister itself. A waiter is not woken by its own rollback,
 * of any of its attempts (each has its own token, one stem), or it would
 * chase its own tail while the holder still holds. A fair waiter's
 * announcement waiter (own_only) is the other way round: only its own
 * acquisition's queue entry is for it, and confirmations are not. Where
 * listeners is 1 the first waiter that claims the message is the last
 * woken, and returned (see the top). */
static struct notify_waiter *wake_waiters(struct channel *ch,
                                          const char *token,
                                          size_t token_len,
                                          unsigned listeners,
                                          const struct notify_waiter *skip)
{
    struct notify_waiter *w, *next;

    for (w = waiter_of(ch->waiters.first); w != NULL; w = next) {
        next = waiter_of(w->link.next);
        if (w == skip ||
            (token == NULL ? w->own_only
                           : token_same_acquisition(token, token_len,
                                                    w->token) != w->own_only))
            continue;
        wake_one(w, ch->last_release_us, listeners);
        if (listeners == 1 && w->claims)
            return w;
    }
    return NULL;
}

/* A message (token: the releaser's) or a node's subscription
 * confirmation (token NULL), which wakes like a release: see the top. */
static void channel_wake(struct notify *nt, const char *name, size_t len,
                         const char *token, size_t token_len,
                         unsigned listeners)
{
    struct channel *ch = channel_find(nt, name, len);
    /* Only where this client alone listens is a release claimed. */
    uint64_t release = listeners == 1 && token != NULL
                           ? rl_fnv1a64(token, token_len)
                           : 0;

    if (ch == NULL)
        return;
    ch->last_release_us = mono_now_us();
    if (release != 0 && release == ch->claimed) {
        /* The same release from another node: it is its claimant's (it
         * may have been refused where this node had not let go yet). A
         * claimant that left won (or passed it on: notify_pass_on). */
        if (ch->claimant != NULL)
            wake_one(ch->claimant, ch->last_release_us, listeners);
        return;
    }
    ch->claimant = wake_waiters(ch, token, token_len, listeners, NULL);
    if (ch->claimant != NULL)
        ch->claimed = release;
}

/* ---- Subscriber connections --------------------------------------------- */

static void on_push(struct conn *c, const redisReply *r, void *privdata)
{
    struct sub_conn *sc = privdata;
    const redisReply *kind;
    const redisReply *chan;

    if (c != sc->conn || sc->nt->closing)
        return;
    if (r->type == REDIS_REPLY_ERROR) {
        config_log(sc->nt->cfg, RL_LOG_WARN, "node %s: notifications: %s",
                   sc->addr->display, r->str);
        return;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2)
        return;
    kind = r->element[0];
    chan = r->element[1];
    if (kind->type != REDIS_REPLY_STRING || chan->type != REDIS_REPLY_STRING)
        return;
    if (strcmp(kind->str, "message") == 0 && r->elements >= 3 &&
        r->element[2]->type == REDIS_REPLY_STRING) {
        const redisReply *msg = r->element[2];
        unsigned listeners;
        size_t token_len;

        if (strcmp(chan->str, FACTS_CHANNEL) == 0) {
            if (sc->facts_fn != NULL)
                sc->facts_fn(sc->facts_arg, msg->str, (size_t)msg->len);
            return;
        }
        token_len = split_message(msg->str, (size_t)msg->len, &listeners);
        channel_wake(sc->nt, chan->str, (size_t)chan->len, msg->str,
                     token_len, listeners);
    } else if (strcmp(kind->str, "subscribe") == 0) {
        /* The server took a subscription: only now is the connection
         * good (one that opens and is dropped must keep backing off). */
        conn_backoff_reset(&sc->backoff);
        channel_wake(sc->nt, chan->str, (size_t)chan->len, NULL, 0, 0);
    }
}

static void send_subscription(struct sub_conn *sc, const char *verb,
                              const char *name, size_t len)
{
    const char *argv[2] = {verb, name};
    size_t lens[2] = {strlen(verb), len};

    if (sc->conn != NULL)
        (void)conn_push_command(sc->conn, 2, argv, lens);
}

static void send_channel(struct sub_conn *sc, const char *verb,
                         const struct channel *ch)
{
    send_subscription(sc, verb, ch->name, ch->len);
}

static void subscribe_facts(struct sub_conn *sc)
{
    send_subscription(sc, "SUBSCRIBE", FACTS_CHANNEL,
                      sizeof(FACTS_CHANNEL) - 1);
}

static void on_auth(struct conn *c, const redisReply *r, const char *down,
                    void *privdata)
{
    struct sub_conn *sc = privdata;

    RL_UNUSED(c);
    RL_UNUSED(down);
    if (r != NULL && r->type == REDIS_REPLY_ERROR)
        config_log(sc->nt->cfg, RL_LOG_WARN,
                   "node %s: notifications: AUTH failed: %s",
                   sc->addr->display, r->str);
}

static void schedule_retry(struct sub_conn *sc)
{
    if (sc->nt->closing || (sc->nt->channels == NULL && sc->facts_fn == NULL))
        return;
    ev_timer_stop(sc->nt->loop, &sc->retry);
    ev_timer_set(&sc->retry, conn_backoff_next(&sc->backoff) / 1000.0, 0.0);
    ev_timer_start(sc->nt->loop, &sc->retry);
}

static void on_close(struct conn *c, const char *reason, void *privdata)
{
    struct sub_conn *sc = privdata;

    if (c != sc->conn)
        return; /* notify_free let go of it */
    sc->conn = NULL;
    config_log(sc->nt->cfg, RL_LOG_DEBUG, "node %s: notifications: %s",
               sc->addr->display, reason);
    conn_free(c); /* inside its callback: freed when that returns */
    schedule_retry(sc);
}

static void on_retry(struct ev_loop *loop, ev_timer *w, int revents)
{
    RL_UNUSED(loop);
    RL_UNUSED(revents);
    sub_start(w->data);
}

static void sub_start(struct sub_conn *sc)
{
    const struct node_addr *a = sc->addr;
    const char *argv[3];
    size_t lens[3];
    struct conn_opts o;
    struct channel *ch;
    int argc;

    if (sc->conn != NULL || sc->nt->closing)
        return;
    memset(&o, 0, sizeof(o));
    o.addr = a;
    o.tls = sc->tls;
    o.connect_timeout_ms = sc->nt->cfg->connect_timeout_ms;
    o.subscriber = true;
    o.on_close = on_close;
    o.on_push = on_push;
    o.privdata = sc;
    sc->conn = conn_new(sc->nt->loop, &o);
    if (sc->conn == NULL) {
        schedule_retry(sc);
        return;
    }
    argc = node_addr_auth_argv(a, argv);
    if (argc > 0) {
        for (int i = 0; i < argc; i++)
            lens[i] = strlen(argv[i]);
        (void)conn_command(sc->conn, argc, argv, lens, on_auth, sc);
    }
    for (ch = sc->nt->channels; ch != NULL; ch = ch->next)
        send_channel(sc, "SUBSCRIBE", ch);
    if (sc->facts_fn != NULL)
        subscribe_facts(sc);
}

/* ---- API ---------------------------------------------------------------- */

struct notify *notify_new(struct ev_loop *loop, const struct config *cfg,
                          struct tls_target *const *tls)
{
    struct notify *nt = calloc(1, sizeof(*nt));
    size_t i;

    if (nt == NULL)
        return NULL;
    nt->conns = calloc(cfg->node_count, sizeof(*nt->conns));
    if (nt->conns == NULL) {
        free(nt);
        return NULL;
    }
    nt->loop = loop;
    nt->cfg = cfg;
    nt->count = cfg->node_count;
    for (i = 0; i < nt->count; i++) {
        nt->conns[i].nt = nt;
        nt->conns[i].addr = &cfg->addrs[i];
        nt->conns[i].tls = tls != NULL ? tls[i] : NULL;
        conn_backoff_init(&nt->conns[i].backoff,
                          mono_now_us() ^ ((uint64_t)i << 40));
        ev_timer_init(&nt->conns[i].retry, on_retry, 0.0, 0.0);
        nt->conns[i].retry.data = &nt->conns[i];
    }
    return nt;
}

void notify_free(struct notify *nt)
{
    struct channel *ch, *next;
    struct conn *c;
    size_t i;

    if (nt == NULL)
        return;
    nt->closing = true;
    for (i = 0; i < nt->count; i++) {
        ev_timer_stop(nt->loop, &nt->conns[i].retry);
        c = nt->conns[i].conn;
        nt->conns[i].conn = NULL;
        conn_free(c);
    }
    for (ch = nt->channels; ch != NULL; ch = next) {
        next = ch->next;
        free(ch->name);
        free(ch);
    }
    free(nt->conns);
    free(nt);
}

static struct channel *channel_add(struct notify *nt, const char *prefix,
                                   const char *key, size_t key_len)
{
    size_t plen = strlen(prefix);
    struct channel *ch = calloc(1, sizeof(*ch));
    size_t i;

    if (ch == NULL)
        return NULL;
    ch->name = malloc(plen + key_len + 1);
    if (ch->name == NULL) {
        free(ch);
        return NULL;
    }
    memcpy(ch->name, prefix, plen);
    memcpy(ch->name + plen, key, key_len);
    ch->name[plen + key_len] = '\0';
    ch->len = plen + key_len;
    ch->next = nt->channels;
    nt->channels = ch;
    nt->idle++;
    for (i = 0; i < nt->count; i++) {
        send_channel(&nt->conns[i], "SUBSCRIBE", ch);
        sub_start(&nt->conns[i]);
    }
    return ch;
}

/* The channel prefix + key, NULL when not subscribed. */
static struct channel *channel_of(const struct notify *nt, const char *prefix,
                                  const char *key, size_t key_len)
{
    size_t plen = strlen(prefix);
    struct channel *ch;

    for (ch = nt->channels; ch != NULL; ch = ch->next) {
        if (ch->len == plen + key_len && memcmp(ch->name, prefix, plen) == 0 &&
            memcmp(ch->name + plen, key, key_len) == 0)
            return ch;
    }
    return NULL;
}

static bool wait_on(struct notify *nt, struct notify_waiter *w,
                    const char *prefix, const char *key, size_t key_len,
                    const char *token, bool own_only, rl_mono_us since_us,
                    void (*wake)(void *arg), void *arg)
{
    struct channel *ch;

    if (w->channel != NULL) /* still waiting since an earlier attempt */
        return w->seen_us >= since_us;
    ch = channel_of(nt, prefix, key, key_len);
    if (ch == NULL)
        ch = channel_add(nt, prefix, key, key_len);
    if (ch == NULL)
        return false; /* out of memory: polling still works */
    if (list_empty(&ch->waiters))
        nt->idle--;
    w->wake = wake;
    w->arg = arg;
    w->token = token;
    w->own_only = own_only;
    w->seen_us = 0;
    w->channel = ch;
    /* Oldest first: channel_wake goes in list order, so the longest
     * waiter sends its attempt first (fair hand-offs). */
    list_push_back(&ch->waiters, &w->link);
    /* Another waiter's announcement says nothing to this one. */
    return !own_only && ch->last_release_us >= since_us;
}

bool notify_wait(struct notify *nt, struct notify_waiter *w, const char *key,
                 size_t key_len, const char *token, rl_mono_us since_us,
                 void (*wake)(void *arg), void *arg)
{
    return wait_on(nt, w, CHANNEL_PREFIX, key, key_len, token, false,
                   since_us, wake, arg);
}

bool notify_wait_turn(struct notify *nt, struct notify_waiter *w,
                      const char *key, size_t key_len, const char *token,
                      rl_mono_us since_us, void (*wake)(void *arg),
                      void *arg)
{
    return wait_on(nt, w, QUEUE_PREFIX, key, key_len, token, true, since_us,
                   wake, arg);
}

bool notify_turn_awaited(const struct notify *nt, const char *key,
                         size_t key_len)
{
    const struct channel *ch = channel_of(nt, QUEUE_PREFIX, key, key_len);

    return ch != NULL && !list_empty(&ch->waiters);
}

/* Too many idle subscriptions: drop the idle ones (not on every last
 * waiter leaving: a contended key would be resubscribed, and its first
 * confirmation awaited, at every hand-off). */
static void drop_idle_channels(struct notify *nt)
{
    struct channel **pp = &nt->channels;
    struct channel *ch;
    size_t i;

    while ((ch = *pp) != NULL) {
        if (!list_empty(&ch->waiters)) {
            pp = &ch->next;
            continue;
        }
        for (i = 0; i < nt->count; i++)
            send_channel(&nt->conns[i], "UNSUBSCRIBE", ch);
        *pp = ch->next;
        free(ch->name);
        free(ch);
    }
    nt->idle = 0;
}

void notify_follow_facts(struct notify *nt, size_t index,
                         notify_facts_fn *fn, void *arg)
{
    struct sub_conn *sc = &nt->conns[index];

    if (sc->facts_fn != NULL || nt->closing)
        return;
    sc->facts_fn = fn;
    sc->facts_arg = arg;
    if (sc->conn == NULL && !ev_is_active(&sc->retry))
        sub_start(sc); /* subscribes to everything, the facts too */
    else
        subscribe_facts(sc);
}

void notify_pass_on(struct notify_waiter *w)
{
    struct channel *ch = w->channel;

    if (ch != NULL && ch->claimant == w)
        ch->claimant = wake_waiters(ch, NULL, 0, 1, w);
}

void notify_unwait(struct notify *nt, struct notify_waiter *w)
{
    struct channel *ch = w->channel;

    if (ch == NULL)
        return;
    list_remove(&ch->waiters, &w->link);
    w->channel = NULL;
    if (ch->claimant == w)
        ch->claimant = NULL;
    if (list_empty(&ch->waiters) && ++nt->idle > MAX_IDLE_CHANNELS)
        drop_idle_channels(nt);
}
