/* SPDX-License-Identifier: BSD-3-Clause */
/* extend.c -- re-quorum extension rounds: one lock (a user's
 * extend), or a batch of locks (the watchdog's coalesced renewals).
 *
 * The extend script resets the expiry only on nodes where every key still
 * holds our token, and never recreates an absent key: a key that vanished
 * while we were paused past its expiry may have been taken and released by
 * someone else meanwhile, and resurrecting it would hide that lapse.
 * A quorum saying yes renews the lock from the round's start (the holder
 * computes the new validity from t0); a majority saying "absent / not
 * ours" means the lock is gone (RL_ELOST); fewer answers than a quorum
 * leave the validity as it was (RL_ENOQUORUM).
 * Exception: a node provably restarted since we acquired (its earliest
 * possible start is after our acquisition) lost our key for a reason that
 * hides nothing; it gets SET NX again first so it blocks others -- unless
 * restarted node is trusted to keep its keys (node_restart_trusted),
 * where an absent key is a real lapse.
 * Vote withdrawal: the holder keeps the set of nodes whose
 * vote counts for its lock. A node that answers that our key is gone
 * (absent, or another token) no longer blocks anybody: its vote is
 * withdrawn the moment the answer arrives; a clock-suspect node's vote
 * does not count either (its key may expire early). When those left,
 * with the nodes that have not answered the round yet, are fewer than a
 * quorum, the lock is lost now (RL_ELOST), not at its safety margin. A
 * voting node that renewed our key counts again. Keys are never
 * recreated.
 * Lock kinds: keys get PX ttl + the record's lock-delay; a
 * reader's round runs reader-extend (lockrec_script_cmd), is never put
 * back on a restarted node (SET NX would make it an exclusive holder;
 * the restart quarantine covers it) and is never batched (holder.c).
 * A round is owned by its caller (the holder) and lives on the loop
 * thread from extend_new to done or extend_abort. The watchdog's batches
 * are described at "Batches" below. */
#include <stdio.h>
#include <string.h>

#include "extend.h"

struct extend_round {
    rl_client *client;
    const struct lock_rec *rec;
    uint32_t ttl_ms;
    rl_mono_us confirmed_us;
    uint64_t *holders;
    extend_done_fn *done;
    void *owner;
    char ttl_buf[LOCKREC_PX_LEN];
    struct quorum_round round;
};

static void extend_free(struct extend_round *e)
{
    round_clear(&e->round);
    free(e);
}

void extend_abort(struct extend_round *e)
{
    if (e != NULL)
        extend_free(e);
}

rl_status extend_outcome(enum verdict v, const char *resource, size_t n,
                         size_t yes, size_t refused, const char *detail)
{
    if (v == VERDICT_SUCCESS) {
        rl_error_clear();
        return RL_OK;
    }
    if (refused > n - quorum_size(n))
        return rl_fail(RL_ELOST,
                       "'%s' is no longer held: %zu of %zu nodes hold no "
                       "key with this token",
                       resource, refused, n);
    return rl_fail(RL_ENOQUORUM,
                   "'%s': extension reached %zu of %zu nodes (need %zu): %s",
                   resource, yes, n, quorum_size(n), detail);
}

/* The nodes of bits (bit i: node i) whose keys count: not clock-suspect,
 * not a duplicate, a replica or an evicting node (node_keeps_keys). */
static uint64_t keeping(uint64_t bits, struct node **nodes, size_t n)
{
    uint64_t keeps = 0;
    size_t j;

    for (j = 0; j < n; j++) {
        if ((bits >> j & 1u) && node_keeps_keys(nodes[j]))
            keeps |= UINT64_C(1) << j;
    }
    return keeps;
}

uint64_t extend_holders_after(uint64_t holders, size_t i, enum vote v,
                              bool voting)
{
    if (v == VOTE_YES && voting)
        return holders | UINT64_C(1) << i;
    if (v == VOTE_NO)
        return holders & ~(UINT64_C(1) << i);
    return holders;
}

bool extend_lost_now(uint64_t holders, uint64_t unanswered, uint64_t keeps,
                     size_t n)
{
    uint64_t nodes = n >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << n) - 1;

    return (size_t)__builtin_popcountll((holders | unanswered) & keeps &
                                        nodes) < quorum_size(n);
}

/* Apply node i's answer v to a lock's holders; true when the lock is
 * lost now (extend_lost_now over the nodes' facts). */
static bool withdraw(uint64_t *holders, struct node **nodes, size_t n,
                     size_t i, enum vote v, uint64_t unanswered)
{
    *holders = extend_holders_after(*holders, i, v,
                                    v == VOTE_YES && node_voting(nodes[i]));
    return extend_lost_now(*holders, unanswered,
                           keeping(*holders | unanswered, nodes, n), n);
}

static rl_status withdrawn(const char *resource, uint64_t holders,
                           struct node **nodes, size_t n)
{
    return rl_fail(RL_ELOST,
                   "'%s' is no longer held: only %zu of %zu nodes still "
                   "hold it with a vote that counts (need %zu); a key "
                   "vanished early, or a node's clock is suspect, or a "
                   "node may evict keys or is not an independent master",
                   resource,
                   (size_t)__builtin_popcountll(keeping(holders, nodes, n)),
                   n,
                   quorum_size(n));
}

static enum vote classify(void *owner, size_t slot,
                          const struct node_reply *r)
{
    struct extend_round *e = owner;
    enum vote v = round_classify_one(NULL, slot, r);
    uint64_t unanswered = 0;
    size_t j;

    for (j = 0; j < e->round.n; j++)
        if (j != slot && e->round.slots[j].vote == VOTE_NONE)
            unanswered |= UINT64_C(1) << j;
    if (withdraw(e->holders, e->round.nodes, e->round.n, slot, v,
                 unanswered))
        e->round.abort = true;
    return v;
}

static void decided(void *owner, enum verdict v)
{
    struct extend_round *e = owner;
    struct quorum_round *q = &e->round;
    extend_done_fn *done = e->done;
    void *done_owner = e->owner;
    rl_mono_us t0 = q->t0;
    unsigned voters = (unsigned)q->yes;
    rl_status st = q->abort ? withdrawn(e->rec->resource, *e->holders,
                                        q->nodes, q->n)
                            : extend_outcome(v, e->rec->resource, q->n, q->yes,
                                      q->refused, q->detail);

    extend_free(e);
    done(done_owner, st, t0, voters);
}

/* A node that started after our last round a quorum granted (acquire or
 * renewal: confirmed_us) has lost our key in its restart: put it back
 * with SET NX (never overwriting anybody) so the node blocks others
 * again. Once per restart: a node that started before that round either
 * got our key then or refused it, so an absent key there is a lapse and
 * stays absent (the SPIN model found the every-extend restore hiding
 * one). It only votes once it is older than max_ttl_ms (restart
 * quarantine). */
static void restore_on_restarted_nodes(rl_client *c,
                                       const struct lock_rec *r,
                                       rl_mono_us confirmed_us,
                                       uint32_t ttl_ms)
{
    char ttl[LOCKREC_PX_LEN] = "";
    const char *argv[6] = {"SET", NULL, lockrec_published(r), "NX", "PX",
                           ttl};
    size_t lens[6];
    size_t i, k;
    int j;

    if (confirmed_us == 0 || r->shared)
        return;
    for (i = 0; i < c->node_count; i++) {
        if (!node_started_after(c->nodes[i], confirmed_us) ||
            node_restart_trusted(c->nodes[i]))
            continue;
        if (ttl[0] == '\0') /* only now: this runs for every renewal */
            lockrec_px(r, ttl_ms, ttl);
        for (k = 0; k < r->nkeys; k++) {
            argv[1] = r->keys[k];
            for (j = 0; j < 6; j++)
                lens[j] = strlen(argv[j]);
            node_send(c->nodes[i], 6, argv, lens, NULL, NULL, 0, NULL);
        }
    }
}

struct extend_round *extend_new(rl_client *c, const struct lock_rec *rec,
                                uint32_t ttl_ms, rl_mono_us confirmed_us,
                                uint64_t *holders, extend_done_fn *done,
                                void *owner)
{
    struct extend_round *e =
        ROUND_OWNER_NEW(struct extend_round, c, "an extension");

    if (e == NULL)
        return NULL;
    e->client = c;
    e->rec = rec;
    e->ttl_ms = ttl_ms;
    e->confirmed_us = confirmed_us;
    e->holders = holders;
    e->done = done;
    e->owner = owner;
    lockrec_px(rec, ttl_ms, e->ttl_buf);
    return e;
}

void extend_run(struct extend_round *e)
{
    struct lock_cmd cmd;
    enum verdict v;

    restore_on_restarted_nodes(e->client, e->rec, e->confirmed_us,
                               e->ttl_ms);
    lockrec_script_cmd(e->rec, SCRIPT_EXTEND, e->ttl_buf, &cmd);
    v = round_start(&e->round, ROUND_EARLY, &cmd.cmd, classify, decided, e);
    if (v != VERDICT_PENDING)
        decided(e, v);
}

/* ---- Batches ------------------------------------------------------------ */

/* A batch sends one touch-batch script call per node for up to
 * EXTEND_BATCH_MAX_LOCKS one-key locks; each node answers one code per
 * lock. Every lock is decided on its own, by the same rule as a single
 * round, over the nodes' answers for that lock only: a lock's key failing
 * on a node never affects another lock. Every lock of a batch gets the
 * batch's start as t0. A lock's owner may drop it at any time (release,
 * free, lost): its outcome is then never reported. The batch lives until
 * every node answered (or failed: a node's timeout bounds it) and every
 * lock was decided or dropped, so its owner can bound the work queued on
 * the nodes by the number of batches alive; then it is empty again and
 * goes back to its owner for reuse. */

struct batch_item {
    const struct lock_rec *rec; /* NULL once dropped or decided */
    void *owner;
    uint32_t ttl_ms;
    rl_mono_us confirmed_us;
    uint64_t *holders;          /* the holder's voting nodes */
    uint8_t yes, no, refused;   /* this lock's votes so far */
};

/* The script call's arguments, kept across runs: KEYS (one per lock),
 * then per run of equal PX: px, count, tokens (at most 4 per lock). */
#define BATCH_MAX_ARGS (4 * EXTEND_BATCH_MAX_LOCKS)
/* Digits of the largest uint64_t (put_decimal). */
#define DECIMAL_MAX 21 /* a u64's 20 digits, or a px and 'f' */

struct extend_batch {
    rl_client *client;
    extend_done_fn *done;
    extend_batch_over_fn *over;
    void *over_arg;
    rl_mono_us t0;
    size_t count;               /* items added */
    size_t open;                /* items neither decided nor dropped */
    size_t replies;             /* nodes that answered (or failed) */
    uint64_t answered;          /* ... bit per node */
    bool running;               /* inside a reply: do not end yet */
    bool sent;
    struct request **reqs;      /* per node, in flight or NULL */
    const char **argv;          /* BATCH_MAX_ARGS, made at the first run */
    size_t *lens;
    char (*nums)[2][DECIMAL_MAX]; /* per run: px and count */
    char detail[RL_ERRLEN];     /* first failure: node + reason */
    struct batch_item items[];  /* EXTEND_BATCH_MAX_LOCKS */
};

struct extend_batch *extend_batch_new(rl_client *c, extend_done_fn *done,
                                      extend_batch_over_fn *over,
                                      void *over_arg)
{
    struct extend_batch *b =
        calloc(1, sizeof(*b) +
                      EXTEND_BATCH_MAX_LOCKS * sizeof(struct batch_item));

    if (b == NULL)
        return NULL;
    b->reqs = calloc(c->node_count, sizeof(*b->reqs));
    if (b->reqs == NULL) {
        free(b);
        return NULL;
    }
    b->client = c;
    b->done = done;
    b->over = over;
    b->over_arg = over_arg;
    return b;
}

void extend_batch_free(struct extend_batch *b)
{
    if (b == NULL)
        return;
    free(b->argv);
    free(b->reqs);
    free(b);
}

bool extend_batch_takes(const struct lock_rec *rec)
{
    return rec->nkeys == 1 && !rec->shared;
}

bool extend_batch_full(const struct extend_batch *b)
{
    return b->sent || b->count == EXTEND_BATCH_MAX_LOCKS;
}

void extend_batch_add(struct extend_batch *b, const struct lock_rec *rec,
                      uint32_t ttl_ms, rl_mono_us confirmed_us,
                      uint64_t *holders, void *owner)
{
    struct batch_item *it = &b->items[b->count];

    it->rec = rec;
    it->owner = owner;
    it->ttl_ms = ttl_ms;
    it->confirmed_us = confirmed_us;
    it->holders = holders;
    it->yes = it->no = it->refused = 0;
    b->open++;
    b->count++;
}

/* Over: empty again, handed back to its owner (reuse or free). */
static void batch_over(struct extend_batch *b)
{
    b->count = b->open = b->replies = 0;
    b->answered = 0;
    b->sent = false;
    b->detail[0] = '\0';
    b->over(b->over_arg, b);
}

/* Over once every lock is decided or dropped and every node answered
 * (not while a reply is walking the items, nor before every node got the
 * command). */
static void batch_maybe_over(struct extend_batch *b)
{
    if (b->open == 0 && !b->running && b->sent &&
        b->replies == b->client->node_count)
        batch_over(b);
}

void extend_batch_drop(struct extend_batch *b, const void *owner)
{
    size_t i;

    /* Rare (a lock released, freed or lost while renewing): a scan keeps
     * the slot out of every held lock. */
    for (i = 0; b != NULL && i < b->count; i++) {
        if (b->items[i].rec != NULL && b->items[i].owner == owner) {
            b->items[i].rec = NULL;
            b->open--;
            batch_maybe_over(b);
            return;
        }
    }
}

/* The item's verdict is st: report it, once. */
static void batch_decided(struct extend_batch *b, struct batch_item *it,
                          rl_status st)
{
    it->rec = NULL;
    b->open--;
    b->done(it->owner, st, b->t0, it->yes);
}

/* Count node's answer for one lock (code: '1', '0', '2', or 0 for a
 * failed node); report the lock once its verdict is certain, or lost at
 * once when too few nodes still hold it. */
static void batch_vote(struct extend_batch *b, size_t slot, size_t node,
                       char code)
{
    struct batch_item *it = &b->items[slot];
    struct node *n = b->client->nodes[node];
    size_t nodes = b->client->node_count;
    const struct lock_rec *rec = it->rec;
    enum vote vote = code == '1' ? VOTE_YES
                     : code == '0' || code == '2' ? VOTE_NO
                                                  : VOTE_ERROR;
    enum verdict v;

    if (withdraw(it->holders, b->client->nodes, nodes, node, vote,
                 ~b->answered)) {
        batch_decided(b, it, withdrawn(rec->resource, *it->holders,
                                       b->client->nodes, nodes));
        return;
    }
    if (code == '1' && node_voting(n)) {
        it->yes++;
        node_count_vote(n, true);
    } else {
        it->no++;
        node_count_vote(n, false);
        it->refused += code == '0' || code == '2';
    }
    v = quorum_verdict(nodes, it->yes, it->no);
    if (v == VERDICT_PENDING)
        return;
    batch_decided(b, it, extend_outcome(v, rec->resource, nodes, it->yes,
                                        it->refused, b->detail));
}

/* One node answered (or failed): every open lock gets its vote. */
static void batch_node_done(struct extend_batch *b, size_t node,
                            const struct node_reply *r)
{
    struct node *n = b->client->nodes[node];
    bool valid = r->kind == REPLY_STRING && r->len == b->count;
    size_t i;

    b->reqs[node] = NULL;
    b->replies++;
    b->answered |= UINT64_C(1) << node;
    if (!valid && b->detail[0] == '\0') {
        if (r->kind == REPLY_ERROR || r->kind == REPLY_DOWN)
            snprintf(b->detail, sizeof(b->detail), "%s: %.*s",
                     node_name(n), (int)r->len, r->str);
        else
            snprintf(b->detail, sizeof(b->detail),
                     "%s: unexpected touch-batch reply", node_name(n));
    }
    b->running = true;
    for (i = 0; i < b->count; i++)
        if (b->items[i].rec != NULL)
            batch_vote(b, i, node, valid ? r->str[i] : 0);
    b->running = false;
}

static void on_batch_reply(void *owner, size_t slot,
                           const struct node_reply *r)
{
    struct extend_batch *b = owner;

    batch_node_done(b, slot, r);
    batch_maybe_over(b);
}

/* Decimal digits of v into buf (DECIMAL_MAX bytes, not terminated);
 * returns how many (snprintf costs more than the rest of a lock's part of
 * the batch). */
static size_t put_decimal(char *buf, uint64_t v)
{
    char tmp[DECIMAL_MAX];
    size_t n = 0, i;

    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    return n;
}

/* The script call over every item: KEYS = the items' keys in order, ARGV
 * = for each run of items with the same PX (ttl + lock-delay) and the
 * same fencing: px ("<px>f": fenced, their records are renewed too), how
 * many, their tokens. NULL on OOM. */
static struct wire *batch_wire(struct extend_batch *b)
{
    size_t a = b->count, run = 0, i, start, count_at;
    const struct lock_rec *rec;
    uint64_t px;
    bool fenced;

    if (b->argv == NULL) {
        b->argv = malloc(BATCH_MAX_ARGS * (sizeof(char *) + sizeof(size_t)) +
                         EXTEND_BATCH_MAX_LOCKS * sizeof(*b->nums));
        if (b->argv == NULL)
            return NULL;
        b->lens = (size_t *)(b->argv + BATCH_MAX_ARGS);
        b->nums = (void *)(b->lens + BATCH_MAX_ARGS);
    }
    for (i = 0; i < b->count; i = start, run++) {
        px = lockrec_px_ms(b->items[i].rec, b->items[i].ttl_ms);
        fenced = b->items[i].rec->fenced;
        b->argv[a] = b->nums[run][0];
        b->lens[a] = put_decimal(b->nums[run][0], px);
        if (fenced)
            b->nums[run][0][b->lens[a]++] = 'f';
        a++;
        count_at = a++;
        for (start = i; start < b->count; start++) {
            rec = b->items[start].rec;
            if (lockrec_px_ms(rec, b->items[start].ttl_ms) != px ||
                rec->fenced != fenced)
                break;
            b->argv[start] = rec->keys[0];
            b->lens[start] = rec->key_lens[0];
            b->argv[a] = rec->token;
            b->lens[a++] = rec->token_len;
        }
        b->argv[count_at] = b->nums[run][1];
        b->lens[count_at] = put_decimal(b->nums[run][1], start - i);
    }
    return wire_new(script_get(SCRIPT_TOUCH_BATCH), (int)b->count, (int)a,
                    b->argv, b->lens);
}

void extend_batch_run(struct extend_batch *b)
{
    rl_client *c = b->client;
    struct node_reply down = {0};
    const char *why;
    struct wire *w;
    size_t i;

    if (b->count == 0) {
        b->sent = true;
        batch_over(b);
        return;
    }
    for (i = 0; i < b->count; i++)
        restore_on_restarted_nodes(c, b->items[i].rec,
                                   b->items[i].confirmed_us,
                                   b->items[i].ttl_ms);
    w = batch_wire(b);
    if (w != NULL)
        wire_sample_time(w);
    b->t0 = mono_now_us();
    b->running = true;
    for (i = 0; i < c->node_count; i++) {
        why = w == NULL ? "out of memory" : NULL;
        if (w != NULL)
            b->reqs[i] = node_send_wire(c->nodes[i], w, on_batch_reply, b,
                                        i, &why);
        if (b->reqs[i] != NULL)
            continue;
        /* Known down: a failed vote now, no waiting for a timeout. */
        down.kind = REPLY_DOWN;
        down.str = why != NULL ? why : "node is down";
        down.len = strlen(down.str);
        batch_node_done(b, i, &down);
    }
    wire_unref(w);
    b->running = false;
    b->sent = true;
    batch_maybe_over(b);
}
