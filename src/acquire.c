/* SPDX-License-Identifier: BSD-3-Clause */
/* acquire.c -- acquire one or several resources on a majority.
 *
 * One acquire operation owns a quorum round, a retry timer and its
 * notification wait; it borrows the holder's lock record (keys + token).
 * Each attempt has a token of its own (lockrec_next_attempt: the same
 * random stem, the next attempt number), so the rollback of one attempt
 * can never delete the key of a later one, whenever it lands.
 * Attempt: t0 just before the first send; SET key token NX PX ttl on every
 * node (or, for several resources, a script that sets all of them or none);
 * the round decides as soon as the outcome is certain. On success the
 * validity is ttl - elapsed - drift; if that is not above min_validity the
 * attempt counts as failed. After every failed attempt the token is
 * released on every node that may hold it (all but those that refused),
 * including nodes that have not answered yet: their SET may still land,
 * and the release is queued behind it on the same connection. Then we
 * wait retry_delay +- jitter -- capped by the wait deadline and by the
 * holder's remaining PTTL, and cut short by a release notification
 * -- and try again, until the retries or the wait run out.
 * Every path ends in finish(): done runs exactly once, unless the holder
 * aborts the acquisition first (client freed).
 * Lock kinds: keys are written with PX ttl + the lock-delay
 * (validity still counts ttl); a reader runs the reader-acquire script
 * over its key and the writer-intent key; an exclusive single-key acquire
 * once refused runs its later attempts as SET NX PX GET (Redis 7.0 on
 * every node: its WRONGTYPE says readers hold the key) until a node says
 * readers hold it, and from then on (or before 7.0, or fenced) as
 * writer-acquire (acquire-fenced with the intent), which marks its intent
 * where readers hold the key in the same step as the refusal, and clears
 * it once it wins or gives up (finish); a refused waiter woken by a
 * release first asks one node whether the key is free
 * (probe_then_attempt); a semaphore slot gets one attempt
 * (semaphore.c waits and retries over the slots). A fair acquire
 * (queue.c) attempts with fair-acquire (a reader: fair-reader-acquire),
 * rolls back with fair-rollback (fair-reader-rollback; its queue entry
 * stays) and, once refused, sleeps in the queue until queue.c says it is
 * its turn; a fair writer once refused, once a reply showed readers,
 * marks its intent as a plain one does, from inside fair-acquire (a
 * fair mutex that never meets readers marks and clears nothing); giving
 * up, it leaves the queue, then
 * clears its intent. A fair semaphore slot's attempt borrows
 * semaphore.c's wait (the base key's queue): it attempts and rolls back
 * fair, nothing more. */
#include <stdio.h>
#include <string.h>

#include "acquire.h"
#include "fence.h"
#include "notify.h"
#include "queue.h"
#include "retry.h"
#include "roundwhy.h"

enum acquire_phase {
    PHASE_ACQUIRE, /* SET NX on every node */
    PHASE_FENCE,   /* fencing: write the token to a quorum (fence.c) */
};

struct acquire_op {
    rl_client *client;
    acquire_done_fn *done;
    void *owner;
    struct lock_rec *lock;       /* the holder's, borrowed: each attempt
                                    sets its token (attempt) */
    uint32_t ttl_ms;
    uint32_t min_validity_ms;
    struct retry_budget budget;
    char ttl_buf[LOCKREC_PX_LEN]; /* PX: ttl + lock-delay */
    char *intent_key;            /* <key>:wintent (readers, and writers
                                    once refused), or NULL */
    char intent_px[16];          /* a writer's: the intent's PX */
    bool intent_set;             /* we may have marked a writer intent */
    bool set_get;                /* this attempt is SET NX PX GET */
    bool free_seen;              /* the probe before it found K absent */
    bool readers_seen;           /* a probe or a SET NX PX GET found
                                    readers (or an error): writer-acquire
                                    from now on */
    struct quorum_round round;
    struct loop_timer *retry_timer;
    enum acquire_phase phase;
    rl_mono_us t0;               /* start of the winning SET round */
    unsigned voters;             /* voting nodes that granted it */
    uint64_t holders;            /* which ones (bit per node) */
    uint64_t fence;              /* fencing token written, or 0 */
    char *fence_for;             /* fencing: its record (whom for), else
                                    NULL */
    struct fence_read fence_read; /* counters read by the acquire round */
    char fence_buf[24];          /* the candidate token, decimal */
    uint64_t last_term;          /* the candidate of the latest attempt */
    struct notify_waiter waiter; /* woken when the holder releases */
    struct fair_wait *fair;      /* a fair lock's wait (queue.c), made
                                    at need (fair_begin), or NULL */
    bool fair_borrowed;          /* a semaphore slot's: semaphore.c owns
                                    the wait, the grant and the leave */
    uint32_t priority;           /* a fair lock's */
    unsigned refusals;           /* attempts in a row no node granted */
    bool released_in_flight;     /* a release came while the last attempt
                                    was in flight (holder_ttl) */
    bool sleeping;               /* between attempts */
    rl_mono_us wake_us;          /* when the sleep ends, boottime */
    struct request *pttl_req;    /* asking a refusing node for the TTL */
    bool probe_first;            /* the next wake asks one node whether
                                    the key is free before attempting */
    struct request *probe_req;   /* that question, in flight */
    bool woken_while_probing;    /* a release came during it */
    bool release_woke;           /* a release message began this wake */
    unsigned lost_wakes;         /* release wakes whose probe found the
                                    key taken again */
    rl_status outcome;           /* a failure, reported once the intent's
                                    clear landed (finish) */
    char detail[RL_ERRLEN];
};

static void attempt(void *arg);

/* Release this attempt's token on the nodes that may have stored it: all,
 * or all but those that refused the SET (they certainly did not store
 * it). Nodes that are down get it when they come back, however late: a
 * SET stuck in a paused server lands when it resumes and lives a whole
 * TTL from then. It may land after a later attempt's SET (resent as EVAL
 * after a NOSCRIPT, kept while the node was down, or left on a connection
 * we abandoned while the server was paused), which it cannot touch: that
 * attempt has another token (attempt). */
static void roll_back(struct acquire_op *op, bool all)
{
    struct lock_cmd release;
    struct node *targets[RL_MAX_NODES];
    size_t i, n = 0;

    lockrec_script_cmd(op->lock,
                       op->lock->fair ? SCRIPT_FAIR_ROLLBACK
                                        : SCRIPT_ROLLBACK,
                       NULL, &release);
    for (i = 0; i < op->round.n; i++) {
        if (all || op->round.slots[i].vote != VOTE_NO)
            targets[n++] = op->round.nodes[i];
    }
    round_broadcast(targets, n, &release.cmd);
}

static void acquire_free(struct acquire_op *op)
{
    notify_unwait(op->client->notify, &op->waiter);
    if (!op->fair_borrowed)
        fair_free(op->fair);
    request_detach(op->pttl_req);
    request_detach(op->probe_req);
    round_clear(&op->round);
    loop_timer_free(op->retry_timer);
    free(op->intent_key);
    free(op->fence_for);
    free(op);
}

/* The writer-intent key of a read-write lock (made once). */
static bool make_intent_key(struct acquire_op *op)
{
    if (op->intent_key == NULL)
        op->intent_key = lockrec_intent_key(op->lock->keys[0],
                                            op->lock->key_lens[0]);
    return op->intent_key != NULL;
}

/* A writer refused (by readers, maybe): its next attempts (once a node
 * said readers hold the key: writer_sets_plainly) mark its intent where
 * readers hold the key, blocking new readers there for two retry
 * periods; every refused attempt refreshes it, and finish clears it when
 * the writer gives up. The first attempt is a plain SET NX PX: an
 * acquire that is never refused costs what it did. Out of memory: plain
 * attempts (no writer preference). */
static void writer_waits(struct acquire_op *op)
{
    rl_client *c = op->client;

    if (op->lock->shared || op->lock->nkeys != 1 || op->lock->slot >= 0 ||
        !make_intent_key(op))
        return;
    snprintf(op->intent_px, sizeof(op->intent_px), "%u",
             2 * (c->cfg.retry_delay_ms + c->cfg.retry_jitter_ms) + 100);
}

/* A writer's attempt after a refusal (one key, no fencing) is
 * writer-acquire, which marks the intent where readers refuse it in the
 * refusal's step (docs/protocol.md) -- but SET NX PX GET where the probe
 * just before it found the key absent and no probe or reply of this
 * acquisition has shown readers yet: its WRONGTYPE tells of readers that
 * came meanwhile (or that the probed node missed), and a writer-acquire
 * follows at once (attempt_failed). Before 7.0
 * (no SET with both NX and GET): always writer-acquire. */
static bool writer_sets_plainly(const struct acquire_op *op)
{
    return !op->lock->shared && op->free_seen && !op->readers_seen &&
           quorum_nodes_from_major(&op->round, 7);
}

/* intent-clear of our token (argv and lens: the caller's, 2 each):
 * another writer's intent that replaced ours stays, that one still
 * waits. */
static struct round_cmd intent_clear_cmd(const struct acquire_op *op,
                                         const char **argv, size_t *lens)
{
    argv[0] = op->intent_key;
    lens[0] = strlen(op->intent_key);
    argv[1] = op->lock->token;
    lens[1] = op->lock->token_len;
    return (struct round_cmd){script_get(SCRIPT_INTENT_CLEAR), 1, 2, argv,
                              lens};
}

/* The writer won, or was cancelled: let readers in again. A winner's key
 * is a string that refuses them meanwhile, and its release goes out
 * behind the clear on each connection, so nothing waits for it. A fair
 * writer clears only where its attempts may have marked it (a waiter
 * announced at its turn and granted marked nothing). */
static void clear_intent(struct acquire_op *op)
{
    const char *argv[2];
    size_t lens[2];
    struct round_cmd cmd = intent_clear_cmd(op, argv, lens);
    struct node *some[RL_MAX_NODES];

    if (op->fair != NULL && !op->fair_borrowed)
        round_broadcast(some,
                        fair_intent_nodes(op->fair, op->round.nodes, some),
                        &cmd);
    else
        round_broadcast(op->round.nodes, op->round.n, &cmd);
}

void acquire_abort(struct acquire_op *op)
{
    if (op != NULL)
        acquire_free(op);
}

void acquire_cancel(struct acquire_op *op)
{
    if (op == NULL)
        return;
    /* Every node: a SET still in flight lands before its release. */
    roll_back(op, true);
    if (op->intent_set)
        clear_intent(op);
    notify_pass_on(&op->waiter);
    acquire_free(op);
}

/* Tell the owner and free op. */
static void report(struct acquire_op *op, rl_status st)
{
    acquire_done_fn *done = op->done;
    void *owner = op->owner;
    struct acquire_grant g = {op->t0, op->voters, op->fence, op->holders};

    if (st == RL_OK) {
        if (op->fair != NULL && !op->fair_borrowed)
            fair_granted(op->fair);
        if (op->intent_set)
            clear_intent(op);
        client_count(op->client, STAT_ACQUIRED);
        rl_error_clear();
    } else {
        rl_error_set_text(op->detail);
        notify_pass_on(&op->waiter);
    }
    acquire_free(op);
    done(owner, st, st == RL_OK ? &g : NULL);
}

static void intent_cleared(void *owner, enum verdict v)
{
    struct acquire_op *op = owner;

    RL_UNUSED(v); /* the nodes that did not answer drop it at its PX */
    report(op, op->outcome);
}

static void finish(struct acquire_op *op, rl_status st);

/* A fair waiter that gave up left the queue on every node that answers;
 * a writer's intent goes next. */
static void left_queue(void *owner)
{
    struct acquire_op *op = owner;

    finish(op, op->outcome);
}

/* Every path ends here. A writer that gives up after marking its intent
 * (maybe) clears it first and reports once the clear has landed on a
 * majority, or cannot (the nodes left drop it at its PX): the intent
 * would refuse readers for two retry periods more, and a clear merely
 * sent could land after a reader that the caller lets in next (another
 * connection). So a reader that starts after the failure is refused by
 * our intent on a minority at most. This costs a failed writer one round
 * trip after its wait. */
static void finish(struct acquire_op *op, rl_status st)
{
    const char *argv[2];
    size_t lens[2];
    struct round_cmd cmd;

    if (st != RL_OK && op->fair != NULL && !op->fair_borrowed &&
        fair_queued(op->fair)) {
        /* As the intent below: report once the entry left every node
         * that answers, not while it may still stand first there. */
        op->outcome = st;
        fair_leave(op->fair, left_queue, op);
        return;
    }
    if (st == RL_OK || !op->intent_set) {
        report(op, st);
        return;
    }
    op->outcome = st;
    cmd = intent_clear_cmd(op, argv, lens);
    if (round_start(&op->round, ROUND_EARLY, &cmd, round_classify_landed,
                    intent_cleared, op) != VERDICT_PENDING)
        report(op, st);
}

/* queue.c: our turn to attempt, or the wait ran out while we slept in
 * the queue. */
static void fair_turn(void *arg, bool expired)
{
    struct acquire_op *op = arg;

    if (expired)
        finish(op, op->outcome);
    else
        attempt(op);
}

/* The fair wait, made at the first reply of the first attempt that is
 * not the fast path's grant (an uncontended acquire needs none): the
 * nodes that granted before it get what their grant says. False on out
 * of memory. */
static bool fair_begin(struct acquire_op *op)
{
    size_t i;

    if (op->fair != NULL)
        return true;
    op->fair = fair_new(op->client, op->lock, op->lock->keys[0],
                        op->lock->key_lens[0], 0, op->priority, fair_turn,
                        op);
    if (op->fair == NULL)
        return false;
    for (i = 0; i < op->round.n; i++) {
        if (op->round.slots[i].vote == VOTE_YES)
            fair_fast_granted(op->fair, i);
    }
    return true;
}

static void spread_wake(struct acquire_op *op);

/* The holder's key expires in r->integer ms: if that comes before the end
 * of our retry delay, wake up then instead (a crashed holder publishes no
 * release). */
static void holder_ttl(void *owner, size_t slot, const struct node_reply *r)
{
    struct acquire_op *op = owner;
    rl_mono_us now = mono_now_us();
    rl_mono_us expiry;

    RL_UNUSED(slot);
    op->pttl_req = NULL;
    if (!op->sleeping || r->kind != REPLY_INTEGER)
        return;
    if (r->integer == -2 && op->released_in_flight) {
        /* The node let go since it refused us: the release we heard of
         * had not reached it yet (what a probe would ask). */
        op->probe_first = false;
        loop_timer_arm(op->retry_timer, 0);
        return;
    }
    if (r->integer == -2) {
        /* Gone with no release heard: it expired since it refused us (a
         * crashed holder's key runs out during our attempt), or a
         * contender rolled it back. Look again as after a release: a
         * probe after a random part of the spread, so waiters split by
         * the same vote do not meet again at once. */
        spread_wake(op);
        return;
    }
    if (r->integer < 0)
        return;
    expiry = now + (rl_mono_us)r->integer * 1000u + 1000u;
    if (expiry < op->wake_us) {
        op->wake_us = expiry;
        loop_timer_arm(op->retry_timer, expiry - now);
    }
}

/* Ask node nd how long the holder's key has left. */
static void ask_ttl_of(struct acquire_op *op, struct node *nd)
{
    const char *argv[2] = {"PTTL", op->lock->keys[0]};
    size_t lens[2] = {4, op->lock->key_lens[0]};

    if (op->pttl_req == NULL)
        op->pttl_req = node_send(nd, 2, argv, lens, holder_ttl, op, 0, NULL);
}

/* Ask one node that refused us how long the holder's key has left. */
static void ask_holder_ttl(struct acquire_op *op)
{
    size_t i;

    for (i = 0; i < op->round.n; i++) {
        if (op->round.slots[i].vote == VOTE_NO) {
            ask_ttl_of(op, op->round.nodes[i]);
            return;
        }
    }
}

static void sleep_until(struct acquire_op *op, uint64_t delay_us,
                        rl_mono_us now)
{
    op->sleeping = true;
    op->wake_us = now + delay_us;
    loop_timer_arm(op->retry_timer, delay_us);
}

/* Wake after a random part of the spread (retry_spread_us), then
 * probe. */
static void spread_wake(struct acquire_op *op)
{
    rl_client *c = op->client;
    uint32_t spread_us =
        retry_spread_us(op->lost_wakes, c->cfg.retry_jitter_ms);

    op->release_woke = true;
    loop_timer_stop(op->retry_timer);
    sleep_until(op, client_random(c, spread_us + 1), mono_now_us());
}

/* The holder released (or our subscription just became active): try
 * again now rather than at the end of the retry delay -- after a short
 * random pause and a look at one node when the last attempt was refused
 * (probe_then_attempt): the same message woke every waiter of the key,
 * unless the release counted this client as the key's only subscriber
 * there (its message's listeners): then nobody else woke, and the
 * attempt goes at once, as fast as a hand-off can be. */
static void released_elsewhere(void *arg)
{
    struct acquire_op *op = arg;

    /* An exclusive waiter acts on the message whatever it is doing: an
     * attempt or a probe in flight learns of it, or one goes now; other
     * waiters of this client need not wake for it (notify.c). */
    op->waiter.claims = !op->lock->shared;
    if (!op->sleeping)
        return; /* an attempt is in flight */
    if (op->probe_req != NULL) {
        op->woken_while_probing = true; /* its answer may predate this */
        return;
    }
    if (op->probe_first && op->waiter.listeners != 1)
        spread_wake(op);
    else
        attempt(op);
}

/* The probe's answer: TYPE of the key on one node. Held there (a
 * writer's string, or the queue's reservation): someone else won, and
 * this wake counts as a refused attempt; back to sleep until the next
 * release or poll. Free, readers (a writer's attempt marks its intent
 * where they hold the key), or no answer: attempt now. It is a hint
 * only: the attempt is the quorum's, with all its rules. */
static void probed(void *owner, size_t slot, const struct node_reply *r)
{
    struct acquire_op *op = owner;
    rl_client *c = op->client;
    rl_mono_us now = mono_now_us();
    bool woken = op->woken_while_probing;
    bool by_release = op->release_woke;

    op->probe_req = NULL;
    op->woken_while_probing = false;
    op->release_woke = false;
    if (!op->sleeping)
        return;
    if (!node_reply_status_is(r, "string")) {
        op->free_seen = node_reply_status_is(r, "none");
        op->readers_seen = op->readers_seen ||
                           node_reply_status_is(r, "hash");
        attempt(op);
        return;
    }
    if (!retry_budget_take(&op->budget, now)) {
        /* Awake: finish may start a round (the intent's clear) that no
         * wake may overwrite. op->detail: the last refusal's. */
        op->sleeping = false;
        finish(op, RL_ENOTACQUIRED);
        return;
    }
    if (woken) {
        spread_wake(op);
        return;
    }
    sleep_until(op,
                retry_poll_pause_us(&op->budget, &op->refusals, true,
                                    retry_budget_pause_us(&op->budget, c,
                                                          now),
                                    now),
                now);
    if (by_release)
        op->lost_wakes++;
    /* Wake at its key's expiry (a crashed holder publishes nothing; a
     * subscription's confirmation wakes like a release), or at once if
     * it let go since the TYPE. */
    op->released_in_flight = true;
    ask_ttl_of(op, op->round.nodes[slot]);
}

/* A waiter refused last time asks one node (the first that votes: the
 * attempts' SETs go out in node order) whether the key is held before it
 * sends an attempt to every node: dozens of waiters woken by one release
 * cost the nodes one TYPE each, not one attempt each (issue 45). */
static void probe_then_attempt(struct acquire_op *op)
{
    const char *argv[2] = {"TYPE", op->lock->keys[0]};
    size_t lens[2] = {4, op->lock->key_lens[0]};
    size_t i;

    if (op->probe_req != NULL)
        return; /* its answer decides */
    for (i = 0; i < op->round.n; i++) {
        if (!node_voting(op->round.nodes[i]))
            continue;
        op->probe_req = node_send(op->round.nodes[i], 2, argv, lens, probed,
                                  op, i, NULL);
        if (op->probe_req != NULL)
            return;
    }
    attempt(op);
}

/* The retry timer: the poll, the holder's expiry, or a spread wake. */
static void retry_due(void *arg)
{
    struct acquire_op *op = arg;

    if (op->probe_first)
        probe_then_attempt(op);
    else
        attempt(op);
}

static void attempt_failed(struct acquire_op *op, rl_status st)
{
    rl_client *c = op->client;
    rl_mono_us now = mono_now_us();
    uint64_t delay_us;

    roll_back(op, op->phase == PHASE_FENCE);
    if (st == RL_ENOTACQUIRED)
        client_count(c, STAT_CONTENDED);
    if (!retry_budget_take(&op->budget, now)) {
        finish(op, st);
        return;
    }
    if (op->lock->fair) {
        if (!fair_begin(op)) {
            snprintf(op->detail, sizeof(op->detail),
                     "out of memory for a fair wait");
            finish(op, RL_ENOMEM);
            return;
        }
        op->outcome = st; /* reported if the wait runs out */
        if (st == RL_ENOTACQUIRED)
            writer_waits(op);
        fair_wait_turn(op->fair, op->t0, op->budget.deadline_us);
        return;
    }
    delay_us = retry_poll_pause_us(
        &op->budget, &op->refusals,
        st == RL_ENOTACQUIRED && op->round.yes == 0,
        retry_budget_pause_us(&op->budget, c, now), now);
    /* Held by someone else: also wake when they release (best effort;
     * the timer is the fallback). A release that came while our attempt
     * was in flight may have reached the nodes that refused us only
     * after it: holder_ttl asks one of them, and we retry at once if it
     * let go -- not when another waiter took it, or every waiter that
     * release woke would try again for nothing. */
    op->released_in_flight =
        st == RL_ENOTACQUIRED &&
        notify_wait(c->notify, &op->waiter, op->lock->keys[0],
                    op->lock->key_lens[0], op->lock->token, op->t0,
                    released_elsewhere, op);
    if (st == RL_ENOTACQUIRED)
        writer_waits(op);
    /* A reader may join readers that refuse a probe's writer: it always
     * attempts. */
    op->probe_first = st == RL_ENOTACQUIRED && !op->lock->shared;
    /* SET NX PX GET met readers that its probe had not shown: the writer
     * marks its intent now (writer-acquire), not at its next wake, which
     * may be a retry period away. Once: readers_seen stays. */
    if (st == RL_ENOTACQUIRED && op->set_get && op->readers_seen) {
        op->probe_first = false;
        delay_us = 0;
    }
    sleep_until(op, delay_us, now);
    if (st == RL_ENOTACQUIRED && delay_us > 0)
        ask_holder_ttl(op);
}

/* Validity left now for the round that started at op->t0; writes the
 * reason to op->detail and returns false when it is too little. */
static bool enough_validity(struct acquire_op *op)
{
    rl_client *c = op->client;
    rl_mono_us now = mono_now_us();
    int64_t validity_us =
        validity_compute_us(op->ttl_ms, c->cfg.drift_factor, op->t0, now);

    if (validity_us > (int64_t)op->min_validity_ms * 1000 && validity_us > 0)
        return true;
    snprintf(op->detail, sizeof(op->detail),
             "'%s': quorum reached after %llu ms, leaving %lld ms of "
             "validity (minimum %u ms)",
             op->lock->resource, (unsigned long long)((now - op->t0) / 1000),
             (long long)(validity_us / 1000), op->min_validity_ms);
    return false;
}


static void fence_decided(void *owner, enum verdict v)
{
    struct acquire_op *op = owner;
    struct quorum_round *q = &op->round;

    if (v != VERDICT_SUCCESS) {
        snprintf(op->detail, sizeof(op->detail),
                 "'%s': fencing token reached %zu of %zu nodes (need "
                 "%zu)%s%s",
                 op->lock->resource, q->yes, q->n, quorum_size(q->n),
                 q->detail[0] ? ": " : "", q->detail);
        attempt_failed(op, RL_ENOQUORUM);
        return;
    }
    if (!enough_validity(op)) {
        attempt_failed(op, RL_ETIMEOUT);
        return;
    }
    op->fence = strtoull(op->fence_buf, NULL, 10);
    client_count(op->client, STAT_FENCES);
    finish(op, RL_OK);
}

/* Round 2 of a fenced acquire: write the token (fence.c fence_candidate)
 * where the key still holds our token: raise the counter, mark it where
 * fence_markable allows, and set the record "<token> <term>". */
static void fence_write(struct acquire_op *op)
{
    uint64_t term = fence_candidate(&op->fence_read, op->round.n,
                                    wall_now_us());
    const char *argv[6 + RL_MAX_NODES];
    size_t lens[6 + RL_MAX_NODES];
    struct round_cmd cmd;
    enum verdict v;
    size_t argc;

    /* A retry never computes an earlier attempt's term again: the two
     * attempts' records, each on a minority, could add up to a quorum for
     * a term no round 2 wrote to a quorum (spec/leaderterm.pml,
     * ctl-leaderterm-reuse, where a retry kept its token; the attempts'
     * tokens now differ, the terms still never repeat). */
    if (term <= op->last_term)
        term = op->last_term + 1;
    op->last_term = term;
    snprintf(op->fence_buf, sizeof(op->fence_buf), "%llu",
             (unsigned long long)term);
    argv[0] = op->lock->keys[0];
    lens[0] = op->lock->key_lens[0];
    argv[1] = FENCE_COUNTER_KEY;
    lens[1] = strlen(FENCE_COUNTER_KEY);
    argv[2] = FENCE_MARK_KEY;
    lens[2] = strlen(FENCE_MARK_KEY);
    argv[3] = op->fence_for;
    lens[3] = strlen(op->fence_for);
    argv[4] = op->lock->token;
    lens[4] = op->lock->token_len;
    argv[5] = op->fence_buf;
    lens[5] = strlen(op->fence_buf);
    argc = 6 + fence_markable(op->round.nodes, op->round.n, op->t0, argv + 6,
                              lens + 6);
    cmd = (struct round_cmd){script_get(SCRIPT_FENCE_WRITE), 4, (int)argc,
                             argv, lens};
    op->phase = PHASE_FENCE;
    v = round_start(&op->round, ROUND_EARLY, &cmd, round_classify_one,
                    fence_decided, op);
    if (v != VERDICT_PENDING)
        fence_decided(op, v);
}

static void acquire_decided(void *owner, enum verdict v)
{
    struct acquire_op *op = owner;
    struct quorum_round *q = &op->round;
    size_t unavailable;

    op->t0 = q->t0;
    if (v == VERDICT_SUCCESS) {
        op->voters = (unsigned)q->yes;
        op->holders = quorum_voting_yes(q);
        /* A YES counted when it arrived; a node that stopped voting since
         * (a check found it evicting, a duplicate...) no longer counts. */
        if ((size_t)__builtin_popcountll(op->holders) < quorum_size(q->n)) {
            round_why_no_quorum(&op->round, op->lock->resource, op->detail,
                            sizeof(op->detail));
            attempt_failed(op, RL_ENOQUORUM);
            return;
        }
        if (!enough_validity(op))
            attempt_failed(op, RL_ETIMEOUT);
        else if (op->fence_for != NULL)
            fence_write(op);
        else
            finish(op, RL_OK);
        return;
    }
    /* Nodes that could not vote at all: failed, or quarantined. */
    unavailable = q->no - q->refused;
    if (unavailable > q->n - quorum_size(q->n) || q->refused == 0) {
        round_why_no_quorum(&op->round, op->lock->resource, op->detail,
                            sizeof(op->detail));
        attempt_failed(op, RL_ENOQUORUM);
        return;
    }
    round_why_refused(&op->round, op->lock->resource, op->detail,
                      sizeof(op->detail));
    attempt_failed(op, RL_ENOTACQUIRED);
}

static enum vote classify(void *owner, size_t slot,
                          const struct node_reply *r)
{
    struct acquire_op *op = owner;
    bool granted;

    if (op->lock->fair) {
        /* The fast path's grant needs no wait (fair_begin notes it if
         * one is made later); any other reply is noted in the wait. */
        if (op->fair == NULL && op->fence_for == NULL && fair_fast_grant(r))
            return VOTE_YES;
        /* A mutex's first SET NX refused: held, or reserved for a queue
         * -- contended. The counted attempt goes out now, not after a
         * quorum of replies: newcomers are ordered by the counter at its
         * arrival, so the shorter the step from the SET, the closer that
         * order is to theirs. Nodes yet to answer get the rollback. */
        if (r->kind == REPLY_NIL)
            op->round.abort = true;
        if (!fair_begin(op))
            return VOTE_ERROR;
        return fair_classify(op->fair, slot, r,
                             op->fence_for != NULL ? &op->fence_read : NULL,
                             node_voting(op->round.nodes[slot]));
    }
    if (op->fence_for != NULL) {
        if (!fence_read_reply(&op->fence_read, r,
                              node_voting(op->round.nodes[slot]), &granted))
            return VOTE_ERROR;
        return granted ? VOTE_YES : VOTE_NO;
    }
    if (op->set_get) {
        /* nil: set; the holder's value: refused; WRONGTYPE: readers hold
         * it; any error: writer-acquire from the next attempt on. */
        if (r->kind == REPLY_ERROR)
            op->readers_seen = true;
        if (r->kind == REPLY_NIL)
            return VOTE_YES;
        if (r->kind == REPLY_STRING ||
            (r->kind == REPLY_ERROR && r->len >= 9 &&
             memcmp(r->str, "WRONGTYPE", 9) == 0))
            return VOTE_NO;
        return VOTE_ERROR;
    }
    if (node_reply_status_is(r, "OK"))
        return VOTE_YES; /* SET NX */
    if (r->kind == REPLY_NIL)
        return VOTE_NO;
    if (r->kind == REPLY_INTEGER)
        return r->integer == 1 ? VOTE_YES : VOTE_NO; /* scripts */
    return VOTE_ERROR;
}

/* One attempt: SET NX PX on every node (a script for several keys, with
 * fencing, or for a writer once refused; a fenced round waits for every
 * node, fence.c). */
static void attempt(void *arg)
{
    struct acquire_op *op = arg;
    const struct lock_rec *l = op->lock;
    const char *argv[RL_MAX_RESOURCES + 7];
    size_t lens[RL_MAX_RESOURCES + 7];
    struct lock_cmd script;
    struct fair_cmd fair;
    struct round_cmd set;
    const struct round_cmd *cmd = &set;
    enum round_mode mode = ROUND_EARLY;
    enum verdict v;
    size_t i;
    int nkeys;
    bool plainly;
    const char *intent;

    op->sleeping = false;
    op->set_get = false;
    plainly = writer_sets_plainly(op);
    op->free_seen = false;
    /* Whatever woke us, no other wake may start a round over this one
     * (a holder_ttl may have armed the timer during a probe). */
    if (op->retry_timer != NULL)
        loop_timer_stop(op->retry_timer);
    request_detach(op->probe_req); /* its answer no longer matters */
    op->probe_req = NULL;
    op->woken_while_probing = false;
    op->release_woke = false;
    op->phase = PHASE_ACQUIRE;
    memset(&op->fence_read, 0, sizeof(op->fence_read));
    lockrec_next_attempt(op->lock);
    /* A fair lock's first attempt may be the plain SET NX PX below. */
    if (l->fair && (op->fair != NULL ||
                    !fair_first_is_set(op->client, l, op->fence_for != NULL))) {
        argv[0] = FENCE_COUNTER_KEY;
        argv[1] = FENCE_MARK_KEY;
        argv[2] = op->fence_for;
        /* A writer once refused (writer_waits), once a reply showed
         * readers, marks its intent at its turn where readers refuse it. */
        intent = op->intent_px[0] != '\0' && op->fair != NULL &&
                         fair_readers_seen(op->fair)
                     ? op->intent_px
                     : NULL;
        op->intent_set = op->intent_set || intent != NULL;
        if (op->fair != NULL)
            fair_attempt_cmd(op->fair, op->ttl_buf,
                             op->fence_for != NULL ? argv : NULL, intent,
                             &fair);
        else
            fair_first_cmd(l, op->ttl_buf,
                           op->fence_for != NULL ? argv : NULL, &fair);
        cmd = &fair.cmd;
        /* fence.c: every node's counter; queue.c: a refusal's ticket
         * from a quorum of replies. */
        mode = op->fence_for != NULL ? ROUND_ALL : ROUND_REPLIES;
    } else if (op->intent_key != NULL && op->fence_for == NULL &&
               plainly) {
        set = lockrec_set_nx_cmd(op->lock, op->ttl_buf, true, argv, lens);
        op->set_get = true;
    } else if (op->intent_key != NULL && op->fence_for == NULL) {
        /* A reader, or a writer once refused by readers (one key, no
         * fencing). */
        argv[0] = l->keys[0];
        lens[0] = l->key_lens[0];
        argv[1] = op->intent_key;
        lens[1] = strlen(op->intent_key);
        argv[2] = l->token;
        lens[2] = l->token_len;
        argv[3] = op->ttl_buf;
        lens[3] = strlen(op->ttl_buf);
        i = 4;
        if (!l->shared) {
            argv[i] = op->intent_px;
            lens[i++] = strlen(op->intent_px);
            op->intent_set = true;
        }
        set = (struct round_cmd){
            script_get(l->shared ? SCRIPT_READER_ACQUIRE
                                 : SCRIPT_WRITER_ACQUIRE),
            2, (int)i, argv, lens};
    } else if (op->fence_for != NULL) {
        for (i = 0; i < l->nkeys; i++) {
            argv[i] = l->keys[i];
            lens[i] = l->key_lens[i];
        }
        argv[i] = FENCE_COUNTER_KEY;
        lens[i++] = strlen(FENCE_COUNTER_KEY);
        argv[i] = FENCE_MARK_KEY;
        lens[i++] = strlen(FENCE_MARK_KEY);
        argv[i] = op->fence_for;
        lens[i++] = strlen(op->fence_for);
        if (op->intent_key != NULL) {
            argv[i] = op->intent_key;
            lens[i++] = strlen(op->intent_key);
        }
        nkeys = (int)i;
        argv[i] = l->token;
        lens[i++] = l->token_len;
        argv[i] = op->ttl_buf;
        lens[i++] = strlen(op->ttl_buf);
        if (op->intent_key != NULL) {
            argv[i] = op->intent_px;
            lens[i++] = strlen(op->intent_px);
            op->intent_set = true;
        }
        set = (struct round_cmd){script_get(SCRIPT_ACQUIRE_FENCED), nkeys,
                                 (int)i, argv, lens};
        mode = ROUND_ALL;
    } else if (l->nkeys == 1) {
        set = lockrec_set_nx_cmd(op->lock, op->ttl_buf, false, argv, lens);
    } else {
        lockrec_script_cmd(l, SCRIPT_ACQUIRE_MULTI, op->ttl_buf, &script);
        cmd = &script.cmd;
    }
    v = round_start(&op->round, mode, cmd, classify, acquire_decided, op);
    if (v != VERDICT_PENDING)
        acquire_decided(op, v);
}

struct acquire_op *acquire_new(rl_client *c, struct lock_rec *rec,
                               uint32_t ttl, const rl_acquire_opts *o,
                               acquire_done_fn *done, void *owner)
{
    struct acquire_op *op = calloc(1, sizeof(*op));

    if (op == NULL)
        goto out_nomem;
    op->client = c;
    op->lock = rec;
    if (round_init(&op->round, c->nodes, c->node_count) != RL_OK)
        goto out_nomem;
    if (o != NULL && o->fencing) {
        op->fence_for = fence_key(FENCE_FOR_PREFIX, rec->keys[0],
                                  rec->key_lens[0]);
        if (op->fence_for == NULL)
            goto out_nomem;
    }
    if (rec->shared && !make_intent_key(op))
        goto out_nomem;
    if (rec->fair) /* its wait: fair_begin, or a slot's is lent */
        op->priority = o->priority;
    /* A semaphore slot gets one attempt and never sleeps: no timer. */
    if (rec->slot < 0) {
        op->retry_timer = loop_timer_new(c->loop, retry_due, op);
        if (op->retry_timer == NULL)
            goto out_nomem;
    }
    op->done = done;
    op->owner = owner;
    op->ttl_ms = ttl;
    lockrec_px(rec, ttl, op->ttl_buf);
    op->min_validity_ms = o != NULL ? o->min_validity_ms : 0;
    if (rec->slot < 0)
        retry_budget_init(&op->budget, c, o);
    /* else one attempt: semaphore.c waits over all the slots */
    if (rec->fair && rec->slot < 0)
        retry_budget_fair(&op->budget, c);
    return op;
out_nomem:
    if (op != NULL)
        acquire_free(op); /* copes with a half-made op */
    rl_fail(RL_ENOMEM, "out of memory for an acquire");
    return NULL;
}

void acquire_borrow_fair(struct acquire_op *op, struct fair_wait *f)
{
    op->fair = f;
    op->fair_borrowed = true;
}

void acquire_run(struct acquire_op *op)
{
    attempt(op);
}
