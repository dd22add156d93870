/* SPDX-License-Identifier: BSD-3-Clause */
/* queue.c -- fair waiting over a quorum (docs/fair-queue.md section 2).
 *
 * Safety never depends on this module: the lock is still the key on a
 * majority, and the queue only gives the nodes a reason to refuse
 * (fair-acquire grants only the head). What it decides is who tries when.
 *
 * The order: the first attempt of a fair acquire is fair-acquire with no
 * score, granted only where nobody is queued (uncontended: one round, as
 * a plain SET). Refused, every reply carries the node's redlock:qt:K; from a
 * quorum of replies the ticket is max(redlock:qt:K) + 1 (a refused first
 * attempt also increments the counter it read, so newcomers that reach
 * the nodes one after another are ordered by arrival), so a registration that
 * a quorum acknowledged before our first attempt was sent has a smaller
 * ticket than ours (any two majorities share a node). The score,
 * (RL_MAX_PRIORITY - priority) * 2^44 + ticket, is the same on every
 * node; equal scores are ordered by token (a sorted set's rule).
 *
 * The wait: queue-enter registers the entry on every node and is resent
 * every QUEUE_REFRESH_MS as its refresh (an entry lives QUEUE_ENTRY_MS by
 * its node's clock, so a dead waiter's lapses wherever it stands). Every
 * reply tells where we stand on that node and whether the lock is free
 * there. We attempt only when it may be our turn: a node announced us
 * (redlock:queue:K names the head when the lock is free there), a release
 * came while we head a quorum, or a refresh found us at the head of a
 * quorum with the lock free there. Waiters behind the head only refresh,
 * so a release wakes one attempt, not a herd. A waiter at the head that
 * was refused (a plain client holds the lock, or an attempt split) polls
 * at the retry delay, as a plain waiter does.
 *
 * Leaving: a waiter that gives up removes its entry on every node
 * (queue-leave); a granted one keeps it until its release (fair-release),
 * or until it lapses, so the next waiter is announced when the lock is
 * free again.
 *
 * A semaphore of L permits (semaphore.c owns the wait, its slot attempts
 * borrow it) queues at its base key: the entitled are the first L
 * entries (the head of a mutex's queue is its first 1), and a node
 * grants a slot to a queued waiter only with fewer non-holders ahead of
 * it than slots free there (src/lua/include/queue_semaphore.lua). Loop thread only. */
#include <stdio.h>
#include <string.h>

#include "retry.h"
#include "notify.h"
#include "queue.h"

#define TICKET_BITS 44

/* QUEUE_ENTRY_MS in decimal, the attempts' entry_px: spelled out, so no
 * attempt formats it (a refresh's is its period's: refresh_period_ms). */
#define ENTRY_PX "1500"
_Static_assert(QUEUE_ENTRY_MS == 1500u, "ENTRY_PX is QUEUE_ENTRY_MS");

struct fair_wait {
    rl_client *c;
    const struct lock_rec *rec;  /* the token (and the key attempted) */
    char *qkey;                  /* the queue's key: the lock's, or a
                                    semaphore's base key */
    size_t qkey_len;
    uint32_t limit;              /* permits: 1 a mutex, L a semaphore */
    char limit_s[12];            /* a semaphore's L, appended to its
                                    scripts' ARGV; '' for a mutex */
    fair_turn_fn *turn;
    void *arg;
    uint32_t priority;
    uint64_t ticket;             /* 0: none taken yet */
    char score[24];              /* decimal, '' until the ticket */
    char ticket_s[24];
    bool sleeping;               /* between fair_wait_turn and turn() */
    bool granted;
    bool left;                   /* queue-leave sent */
    bool refreshing;             /* a queue-enter round is in flight */
    bool uncounted;              /* the first attempt was a bare SET NX,
                                    refused: no counter read yet */
    uint32_t period_ms;          /* the last refresh's period */
    char entry_px[12];           /* and its entry's life, 3 periods */
    rl_mono_us registered_us;    /* when the ticket was taken */
    int64_t qt[RL_MAX_NODES];    /* redlock:qt:K per node from the last attempt,
                                    -1: no reply */
    int64_t rank[RL_MAX_NODES];  /* our place per node from its latest
                                    reply, -1 absent or unknown, below
                                    -1: not queued there yet (place()) */
    bool free_[RL_MAX_NODES];    /* the lock was free there */
    bool readers_seen;           /* a reply's "free" was -1: readers */
    /* A writer's intent (fair_intent_nodes): an earlier attempt may have
     * marked it there, or the latest one did not prove it did not. */
    bool intent_may[RL_MAX_NODES];
    bool intent_open[RL_MAX_NODES];
    rl_mono_us deadline_us;      /* 0: none */
    struct loop_timer *tick;
    struct quorum_round round;   /* queue-enter, or the final leave */
    struct notify_waiter turn_w; /* announcements naming us */
    struct notify_waiter release_w; /* releases by others */
    void (*left_done)(void *owner);
    void *left_owner;
};

/* The metrics: a registration is a waiter while it is queued (from the
 * ticket until it is granted or leaves), and ends once, granted (its wait
 * from the ticket counted) or given up. */
static void count_registered(struct fair_wait *f)
{
    f->registered_us = mono_now_us();
    client_count(f->c, STAT_QUEUE_REGISTRATIONS);
    client_count(f->c, STAT_QUEUE_WAITERS);
}

static void count_ended(struct fair_wait *f, bool granted)
{
    if (!fair_queued(f))
        return;
    if (granted) {
        atomic_fetch_add(&f->c->stats[STAT_QUEUE_WAIT_MS],
                         (mono_now_us() - f->registered_us) / 1000u);
        client_count(f->c, STAT_QUEUE_WAIT_COUNT);
    } else {
        client_count(f->c, STAT_QUEUE_LEAVES);
    }
    atomic_fetch_sub(&f->c->stats[STAT_QUEUE_WAITERS], 1);
}

/* Nodes where we stand within the first limit entries (the head of a
 * mutex's queue). */
static size_t count_entitled(const struct fair_wait *f)
{
    size_t i, n = 0;

    for (i = 0; i < f->c->node_count; i++)
        n += f->rank[i] >= 0 && f->rank[i] < (int64_t)f->limit;
    return n;
}

static size_t count_free(const struct fair_wait *f)
{
    size_t i, n = 0;

    for (i = 0; i < f->c->node_count; i++)
        n += f->free_[i];
    return n;
}

/* At the head (a semaphore's: among the first limit) on a quorum. */
static bool heads_quorum(const struct fair_wait *f)
{
    return count_entitled(f) >= quorum_size(f->c->node_count);
}

/* It is our turn: stop sleeping and let acquire.c attempt. */
static void take_turn(struct fair_wait *f, bool expired)
{
    if (!f->sleeping)
        return; /* an attempt is in flight already */
    f->sleeping = false;
    loop_timer_stop(f->tick);
    f->turn(f->arg, expired);
}

/* A node announced us: the lock is free there and we head its queue. */
static void announced(void *arg)
{
    take_turn(arg, false);
}

/* Somebody released the lock (or our subscription became active): worth
 * an attempt only for the head; the others wait for their announcement. */
static void released(void *arg)
{
    struct fair_wait *f = arg;

    if (heads_quorum(f))
        take_turn(f, false);
}

/* A reply's "free": 1 free here, 0 held, -1 held by readers (an
 * exclusive caller's reply). */
static void note_free(struct fair_wait *f, size_t slot,
                      const struct node_reply *e)
{
    f->free_[slot] = e->kind == REPLY_INTEGER && e->integer == 1;
    if (e->kind == REPLY_INTEGER && e->integer == -1)
        f->readers_seen = true;
}

static enum vote enter_classify(void *owner, size_t slot,
                                const struct node_reply *r)
{
    struct fair_wait *f = owner;

    if (r->kind != REPLY_ARRAY || r->elements < 3)
        return VOTE_ERROR;
    f->rank[slot] = r->element[0].kind == REPLY_INTEGER
                        ? r->element[0].integer
                        : -1;
    note_free(f, slot, &r->element[1]);
    return VOTE_YES;
}

static void enter_done(void *owner, enum verdict v)
{
    struct fair_wait *f = owner;

    RL_UNUSED(v); /* fewer than a quorum: the next refresh resends it */
    f->refreshing = false;
    if (heads_quorum(f) && count_free(f) >= quorum_size(f->c->node_count))
        take_turn(f, false);
}

/* Our place on node i from its latest reply: the rank, or before we
 * registered the place we take there (a refused first attempt answers
 * -1 - the entries queued); -1 unknown or nobody queued. */
static int64_t place(const struct fair_wait *f, size_t i)
{
    return f->rank[i] >= -1 ? f->rank[i] : -1 - f->rank[i];
}

/* The refresh period: QUEUE_REFRESH_MS, one more for every
 * QUEUE_RANKS_PER_PERIOD waiters that stand between us and a turn on
 * the node where we stand nearest (places from the latest replies: the
 * registration's from the first attempt's), up to QUEUE_REFRESH_MAX_MS.
 * A waiter's turn comes by announcement, not by its refresh, which only
 * keeps its entry alive: a crowd's refreshes per acquisition stay
 * nearly flat as it grows (a newcomer at the back of 11 waiters is
 * served before its first refresh is due), and a dead waiter's entry,
 * however far back it died, lapses within 3 x QUEUE_REFRESH_MAX_MS. */
static uint32_t refresh_period_ms(const struct fair_wait *f)
{
    int64_t near = -1, ahead, p;
    size_t i;

    for (i = 0; i < f->c->node_count; i++) {
        p = place(f, i);
        if (p >= 0 && (near < 0 || p < near))
            near = p;
    }
    ahead = near - (int64_t)f->limit; /* waiters before our turn, less 1 */
    if (ahead < 0)
        return QUEUE_REFRESH_MS;
    if (ahead >= (int64_t)QUEUE_REFRESH_MAX_MS / QUEUE_REFRESH_MS *
                     QUEUE_RANKS_PER_PERIOD)
        return QUEUE_REFRESH_MAX_MS;
    return QUEUE_REFRESH_MS * (1u + (uint32_t)ahead / QUEUE_RANKS_PER_PERIOD);
}

/* queue-enter to every node: the registration, and each refresh (the
 * same call: it re-adds an entry a node lost, with the same score), its
 * entry living three of its period (f->period_ms). */
static void refresh(struct fair_wait *f)
{
    /* ARGV[5] the kind, ARGV[6] a semaphore's permits. */
    const char *argv[7] = {f->qkey, f->rec->token, f->entry_px,
                           f->score, f->ticket_s,
                           f->rec->shared ? "s" : "x", f->limit_s};
    size_t lens[7];
    struct round_cmd cmd = {script_get(SCRIPT_QUEUE_ENTER), 1,
                            f->limit_s[0] != '\0' ? 7 : 6, argv, lens};
    enum verdict v;
    size_t i;

    if (f->refreshing)
        return;
    f->refreshing = true;
    f->period_ms = refresh_period_ms(f);
    snprintf(f->entry_px, sizeof(f->entry_px), "%u", 3u * f->period_ms);
    for (i = 0; i < 7; i++)
        lens[i] = strlen(argv[i]);
    v = round_start(&f->round, ROUND_ALL, &cmd, enter_classify, enter_done,
                    f);
    /* Decided at once (every node down): nothing new was learnt, and
     * turn() must not run inside the caller (fair_wait_turn). */
    if (v != VERDICT_PENDING)
        f->refreshing = false;
}

static void arm(struct fair_wait *f, uint64_t after_us)
{
    rl_mono_us now = mono_now_us();

    if (f->deadline_us != 0 && now + after_us > f->deadline_us)
        after_us = f->deadline_us > now ? f->deadline_us - now : 0;
    loop_timer_arm(f->tick, after_us);
}

/* The sleeper's clock: the deadline, else an attempt (no ticket yet, or
 * refused at the head: poll as a plain waiter does) or a refresh. */
static void on_tick(void *arg)
{
    struct fair_wait *f = arg;
    rl_mono_us now = mono_now_us();

    if (!f->sleeping)
        return;
    if (f->deadline_us != 0 && now >= f->deadline_us) {
        take_turn(f, true);
        return;
    }
    if (f->ticket == 0 || heads_quorum(f)) {
        take_turn(f, false);
        return;
    }
    refresh(f);
    arm(f, (uint64_t)f->period_ms * 1000u);
}

/* True the first time this client waits or attempts fair: its first
 * fair acquire starts with a counted attempt (fair_first_is_set). */
static bool first_fair(rl_client *c)
{
    bool first = !c->fair_begun;

    c->fair_begun = true;
    return first;
}

struct fair_wait *fair_new(rl_client *c, const struct lock_rec *rec,
                           const char *qkey, size_t qkey_len,
                           uint32_t limit, uint32_t priority,
                           fair_turn_fn *turn, void *arg)
{
    struct fair_wait *f = calloc(1, sizeof(*f));
    size_t i;

    if (f == NULL)
        return NULL;
    f->qkey = malloc(qkey_len + 1);
    if (f->qkey == NULL ||
        round_init(&f->round, c->nodes, c->node_count) != RL_OK) {
        free(f->qkey);
        free(f);
        return NULL;
    }
    f->tick = loop_timer_new(c->loop, on_tick, f);
    if (f->tick == NULL) {
        round_clear(&f->round);
        free(f->qkey);
        free(f);
        return NULL;
    }
    memcpy(f->qkey, qkey, qkey_len);
    f->qkey[qkey_len] = '\0';
    f->qkey_len = qkey_len;
    f->limit = limit > 0 ? limit : 1;
    if (limit > 0)
        snprintf(f->limit_s, sizeof(f->limit_s), "%u", limit);
    first_fair(c); /* a semaphore's wait comes before its first attempt */
    for (i = 0; i < c->node_count; i++) {
        f->qt[i] = -1;   /* no reply yet */
        f->rank[i] = -1; /* nowhere yet: not at the head of anything */
    }
    f->c = c;
    f->rec = rec;
    f->priority = priority;
    f->turn = turn;
    f->arg = arg;
    return f;
}

/* queue-leave of our token (argv and lens: the caller's, 3 each). */
static struct round_cmd leave_cmd(const struct fair_wait *f,
                                  const char **argv, size_t *lens)
{
    argv[0] = f->qkey;
    lens[0] = f->qkey_len;
    argv[1] = f->rec->token;
    lens[1] = f->rec->token_len;
    argv[2] = f->limit_s;
    lens[2] = strlen(f->limit_s);
    return (struct round_cmd){script_get(SCRIPT_QUEUE_LEAVE), 1,
                              f->limit_s[0] != '\0' ? 3 : 2, argv, lens};
}

void fair_free(struct fair_wait *f)
{
    const char *argv[3];
    size_t lens[3];
    struct round_cmd cmd;

    if (f == NULL)
        return;
    if (fair_queued(f)) {
        count_ended(f, false); /* cancelled, or its client freed */
        cmd = leave_cmd(f, argv, lens);
        round_broadcast(f->round.nodes, f->round.n, &cmd);
    }
    notify_unwait(f->c->notify, &f->turn_w);
    notify_unwait(f->c->notify, &f->release_w);
    round_clear(&f->round);
    loop_timer_free(f->tick);
    free(f->qkey);
    free(f);
}

/* fair-acquire of rec's key (fair-acquire-fenced with fence,
 * fair-reader-acquire for a reader) with ARGV token, px, then nargs of
 * args: entry_px, score, ticket[, a writer's intent PX[, a semaphore's
 * queue key and permits]] (src/lua/include/fair_try.lua). */
static void attempt_cmd(const struct lock_rec *rec, const char *px,
                        const char *const *args, int nargs,
                        const char *const *fence, struct fair_cmd *out)
{
    int i, nkeys = fence != NULL ? 4 : 1;
    enum script_id id = rec->shared     ? SCRIPT_FAIR_READER_ACQUIRE
                        : fence != NULL ? SCRIPT_FAIR_ACQUIRE_FENCED
                                        : SCRIPT_FAIR_ACQUIRE;

    out->argv[0] = rec->keys[0];
    out->lens[0] = rec->key_lens[0];
    for (i = 1; i < nkeys; i++) {
        out->argv[i] = fence[i - 1];
        out->lens[i] = strlen(fence[i - 1]);
    }
    out->argv[nkeys] = rec->token;
    out->lens[nkeys] = rec->token_len;
    out->argv[nkeys + 1] = px;
    out->lens[nkeys + 1] = strlen(px);
    for (i = 0; i < nargs; i++) {
        out->argv[nkeys + 2 + i] = args[i];
        out->lens[nkeys + 2 + i] = strlen(args[i]);
    }
    out->cmd = (struct round_cmd){script_get(id), nkeys, nkeys + 2 + nargs,
                                  out->argv, out->lens};
}

bool fair_first_is_set(rl_client *c, const struct lock_rec *rec, bool fenced)
{
    bool first = first_fair(c);

    /* A mutex's (or writer's) key is never free where waiters queue: it
     * holds QUEUE_RESERVED there (src/lua/include/queue.lua settle), so a bare SET NX is
     * granted only where nobody queues, as fair-acquire's fast path is,
     * at the cost of a plain acquire. Refused, it read no counter: the
     * next attempt is fair-acquire's first (fair_wait_turn). Two cases
     * start with that one: a waiter of this client queues for the key
     * (the SET would be refused), and the client's first fair acquire
     * (every `run`'s). The counter it reads is the newcomers' order, and the step from a SET
     * to the counted attempt is where processes that start together --
     * a fleet's cron job, a CLI per acquire -- lose theirs: a process
     * scheduled out between the two is passed by later ones (2.0-2.6 %
     * of the probe's acquisitions, all in its start-up burst:
     * docs/fair-queue.md 2.0, "The reservation"). */
    return !first && !rec->shared && !fenced && rec->slot < 0 &&
           !notify_turn_awaited(c->notify, rec->keys[0], rec->key_lens[0]);
}

void fair_first_cmd(const struct lock_rec *rec, const char *px,
                    const char *const *fence, struct fair_cmd *out)
{
    static const char *const args[3] = {ENTRY_PX, "", ""};

    attempt_cmd(rec, px, args, 3, fence, out);
}

void fair_attempt_cmd(struct fair_wait *f, const char *px,
                      const char *const *fence, const char *intent_px,
                      struct fair_cmd *out)
{
    const char *args[6] = {ENTRY_PX, f->score, f->ticket_s,
                           intent_px != NULL ? intent_px : "", f->qkey,
                           f->limit_s};
    int nargs = f->limit_s[0] != '\0' ? 6 : intent_px != NULL ? 4 : 3;
    size_t i;

    for (i = 0; i < f->c->node_count; i++) {
        f->qt[i] = -1;
        f->intent_may[i] = f->intent_may[i] || f->intent_open[i];
        f->intent_open[i] = intent_px != NULL;
    }
    attempt_cmd(f->rec, px, args, nargs, fence, out);
}

bool fair_fast_grant(const struct node_reply *r)
{
    return (r->kind == REPLY_INTEGER && r->integer == 1) ||
           node_reply_status_is(r, "OK");
}

void fair_fast_granted(struct fair_wait *f, size_t slot)
{
    f->qt[slot] = 0;
    f->rank[slot] = 0;
    f->free_[slot] = false;
}

enum vote fair_classify(struct fair_wait *f, size_t slot,
                        const struct node_reply *r, struct fence_read *fr,
                        bool voting)
{
    /* The fenced reply is acquire-fenced's three, then the queue's. */
    size_t q = fr != NULL ? 3 : 1;
    const struct node_reply *e = r->element;
    struct node_reply head;
    bool granted;

    if ((r->kind == REPLY_INTEGER || r->kind == REPLY_STATUS) &&
        fr == NULL) {
        /* fair-acquire's fast path (no score, no queue on the node):
         * {1, '0', 0, 0} as one integer, or a mutex's first SET NX
         * (fair_first_is_set); a refusal is an array, or the SET's
         * nil. */
        if (!fair_fast_grant(r))
            return VOTE_ERROR;
        fair_fast_granted(f, slot);
        return VOTE_YES;
    }
    if (r->kind == REPLY_NIL && fr == NULL) {
        f->uncounted = true;
        return VOTE_NO;
    }
    if (r->kind != REPLY_ARRAY || r->elements != q + 3 ||
        e[0].kind != REPLY_INTEGER || e[q].kind != REPLY_STRING)
        return VOTE_ERROR;
    if (fr != NULL) {
        head = *r;
        head.elements = 3;
        if (!fence_read_reply(fr, &head, voting, &granted))
            return VOTE_ERROR;
    }
    f->qt[slot] = (int64_t)strtoull(e[q].str, NULL, 10);
    f->rank[slot] = e[q + 1].kind == REPLY_INTEGER ? e[q + 1].integer : -1;
    note_free(f, slot, &e[q + 2]);
    /* fair-acquire marks a writer's intent only when refused at its
     * turn, rank 0 (src/lua/include/fair_try.lua refused()); the fenced
     * twin's reply is not read for it. */
    if (fr == NULL && (e[0].integer == 1 || f->rank[slot] != 0))
        f->intent_open[slot] = false;
    return e[0].integer == 1 ? VOTE_YES : VOTE_NO;
}

/* The ticket from a quorum of the first attempt's replies: the largest
 * redlock:qt:K + 1. False when fewer than a quorum replied. */
static bool take_ticket(struct fair_wait *f)
{
    size_t i, replies = 0;
    int64_t max = 0;

    for (i = 0; i < f->c->node_count; i++) {
        if (f->qt[i] < 0)
            continue;
        replies++;
        if (f->qt[i] > max)
            max = f->qt[i];
    }
    if (replies < quorum_size(f->c->node_count) ||
        (uint64_t)max + 1 >= UINT64_C(1) << TICKET_BITS)
        return false;
    f->ticket = (uint64_t)max + 1;
    snprintf(f->ticket_s, sizeof(f->ticket_s), "%llu",
             (unsigned long long)f->ticket);
    snprintf(f->score, sizeof(f->score), "%llu",
             (unsigned long long)(((uint64_t)(RL_MAX_PRIORITY - f->priority)
                                   << TICKET_BITS) +
                                  f->ticket));
    return true;
}

void fair_wait_turn(struct fair_wait *f, rl_mono_us since_us,
                    rl_mono_us deadline_us)
{
    rl_client *c = f->c;
    bool registering = false, released_since;
    uint64_t pause_us;

    f->deadline_us = deadline_us;
    f->sleeping = true;
    if (f->ticket == 0) {
        if (!take_ticket(f)) {
            if (f->uncounted) {
                /* A mutex's first SET NX was refused: read the
                 * counters (fair-acquire's first attempt) at once. */
                f->uncounted = false;
                take_turn(f, false);
                return;
            }
            /* No quorum answered: read again after a retry delay. */
            arm(f, (uint64_t)c->cfg.retry_delay_ms * 1000u);
            return;
        }
        registering = true;
        count_registered(f);
        refresh(f); /* its period from our place: f->period_ms */
    }
    /* Subscribed at the first refusal, before the registration's reply
     * can come: that reply says whether we may try at once; a release
     * after it reaches us, or (a new channel) the first confirmation
     * wakes released() and we try if we head the queue. An OOM here
     * only costs the wake-ups: the ticks poll. */
    /* A semaphore's releases are its slots' (any of them): its waiters
     * learn of a fair holder's from the announcements, of a plain one's
     * at their poll or refresh. */
    released_since = f->limit_s[0] == '\0' &&
                     notify_wait(c->notify, &f->release_w, f->qkey,
                                 f->qkey_len, f->rec->token, since_us,
                                 released, f);
    /* An announcement naming us, or a release while we head the queue,
     * came while the attempt was in flight. */
    if (notify_wait_turn(c->notify, &f->turn_w, f->qkey, f->qkey_len,
                         f->rec->token, since_us, announced, f) ||
        (released_since && heads_quorum(f))) {
        take_turn(f, false);
        return;
    }
    if (!registering && heads_quorum(f)) {
        /* Refused at the head (a plain client holds it, or the attempt
         * split): poll as a plain waiter does, and wake on its release. */
        pause_us = retry_budget_pause_us(&(struct retry_budget){0}, c,
                                         mono_now_us());
        arm(f, pause_us);
        return;
    }
    arm(f, (uint64_t)(registering ? f->period_ms : QUEUE_REFRESH_MS) *
               1000u);
}

bool fair_another_slot(const struct fair_wait *f)
{
    size_t i, unqueued = 0, need = quorum_size(f->c->node_count);

    if (count_free(f) < need)
        return false; /* every slot is taken on a majority */
    if (f->ticket != 0)
        return heads_quorum(f);
    for (i = 0; i < f->c->node_count; i++)
        unqueued += f->qt[i] == 0; /* no queue there: the fast path */
    return unqueued >= need;
}

bool fair_readers_seen(const struct fair_wait *f)
{
    return f->readers_seen;
}

size_t fair_intent_nodes(const struct fair_wait *f, struct node **nodes,
                         struct node **out)
{
    size_t i, n = 0;

    for (i = 0; i < f->c->node_count; i++)
        if (f->intent_may[i] || f->intent_open[i])
            out[n++] = nodes[i];
    return n;
}

void fair_granted(struct fair_wait *f)
{
    count_ended(f, true);
    f->granted = true;
}

bool fair_queued(const struct fair_wait *f)
{
    return f->ticket != 0 && !f->granted && !f->left;
}

static void left_all(void *owner, enum verdict v)
{
    struct fair_wait *f = owner;

    RL_UNUSED(v); /* the nodes that did not answer drop it as it lapses */
    f->left_done(f->left_owner);
}

void fair_leave(struct fair_wait *f, void (*done)(void *owner), void *owner)
{
    const char *argv[3];
    size_t lens[3];
    struct round_cmd cmd = leave_cmd(f, argv, lens);

    round_cancel(&f->round); /* a refresh in flight: its entry is ours */
    f->refreshing = false;
    f->sleeping = false;
    loop_timer_stop(f->tick);
    count_ended(f, false);
    f->left = true;
    f->left_done = done;
    f->left_owner = owner;
    if (round_start(&f->round, ROUND_ALL, &cmd, round_classify_landed,
                    left_all, f) != VERDICT_PENDING)
        done(owner);
}
