/* release.c -- compare-and-delete on all nodes.
 *
 * The release script deletes each key only where it still holds our token
 * and publishes on redlock:release:<key> so waiters wake at once (notify.c).
 * It goes to every node; the outcome (release.h) tells the caller the
 * truth about the lock it held. Our own lock decides once a majority
 * deleted it (or cannot have); an adopted token waits for every node, so
 * "held by another token" is told apart from "already free" exactly (the
 * CLI's exit code). A round belongs to its caller (the holder) from
 * release_new to done or release_abort; a late reply lands on a
 * node-owned request record, never on a freed round. */
#include <stdio.h>

#include "release.h"

struct release_round {
    const struct lock_rec *rec;
    bool expired_before;        /* validity was over when we started */
    release_done_fn *done;
    void *owner;
    size_t deleted;             /* nodes: ours, deleted */
    size_t absent;              /* nodes: no key */
    size_t other;               /* nodes: another token */
    struct quorum_round round;
};

void release_abort(struct release_round *r)
{
    if (r == NULL)
        return;
    round_clear(&r->round);
    free(r);
}

static enum vote classify(void *owner, size_t slot,
                          const struct node_reply *reply)
{
    struct release_round *r = owner;

    RL_UNUSED(slot);
    if (reply->kind != REPLY_INTEGER)
        return VOTE_ERROR;
    if (reply->integer == 1) {
        r->deleted++;
        return VOTE_YES;
    }
    if (reply->integer == 0)
        r->absent++;
    else
        r->other++;
    return VOTE_NO;
}

static rl_status outcome(const struct release_round *r)
{
    const struct quorum_round *q = &r->round;
    size_t quorum = quorum_size(q->n);
    size_t answered = r->deleted + r->absent + r->other;
    const char *name = r->rec->resource;

    if (r->other >= quorum)
        return rl_fail(RL_ENOTACQUIRED,
                       "'%s' is held by another token on %zu of %zu nodes",
                       name, r->other, q->n);
    if (answered < quorum)
        return rl_fail(RL_ENOQUORUM,
                       "'%s': only %zu of %zu nodes answered the release: "
                       "%s",
                       name, answered, q->n, q->detail);
    if (!r->rec->adopted && (r->expired_before || r->deleted == 0))
        return rl_fail(RL_ELOST,
                       "'%s' was already lost before the release (%s)", name,
                       r->expired_before ? "validity had run out"
                                         : "no node still held it");
    rl_error_clear();
    return RL_OK;
}

static void decided(void *owner, enum verdict v)
{
    struct release_round *r = owner;
    release_done_fn *done = r->done;
    void *done_owner = r->owner;
    rl_status st;

    RL_UNUSED(v);
    st = outcome(r);
    release_abort(r);
    done(done_owner, st);
}

struct release_round *release_new(rl_client *c, const struct lock_rec *rec,
                                  bool expired_before, release_done_fn *done,
                                  void *owner)
{
    struct release_round *r = calloc(1, sizeof(*r));

    if (r == NULL || round_init(&r->round, c->nodes, c->node_count) !=
                         RL_OK) {
        free(r);
        rl_fail(RL_ENOMEM, "out of memory for a release");
        return NULL;
    }
    r->rec = rec;
    r->expired_before = expired_before;
    r->done = done;
    r->owner = owner;
    return r;
}

void release_run(struct release_round *r)
{
    struct lock_cmd cmd;
    enum verdict v;

    lockrec_script_cmd(r->rec, SCRIPT_RELEASE, NULL, &cmd);
    v = round_start(&r->round, r->rec->adopted ? ROUND_ALL : ROUND_EARLY,
                    &cmd.cmd, classify, decided, r);
    if (v != VERDICT_PENDING)
        decided(r, v);
}
