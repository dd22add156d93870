/* SPDX-License-Identifier: BSD-3-Clause */
/* release.c -- compare-and-delete on all nodes.
 *
 * The release script deletes each key only where it still holds our token
 * and publishes on redlock:release:<key> so waiters wake at once (notify.c).
 * It goes to every node; the outcome (release.h) tells the caller the
 * truth about the lock it held, and only what the answers prove: it is a
 * function of what each node said (release_verdict), never of which node
 * said it first. The round waits for every node (ROUND_ALL, each bounded
 * by op_timeout) but ends as soon as the nodes still to answer cannot
 * change the outcome (release_settled): at the quorum-th delete when the
 * lock was held, so only a release that finds keys missing waits for
 * the slower nodes.
 * RL_OK for our own lock means a quorum of voting nodes still had our key
 * when the release reached them. A key that vanished is never recreated
 * (extend.c puts one back only on a node that lost it in a restart and
 * does not vote for max_ttl_ms after it), so those nodes held it since
 * the acquire and nobody else can have held the lock meanwhile:
 * rl_with_lock's "held throughout" rests on this. (A multi-lock's node
 * counts as a holder when it still had one of the keys: the release
 * script's 1.) Fewer holders than a quorum, with the unknown nodes
 * counted as holders, is RL_ELOST; in between nobody can tell
 * (RL_ENOQUORUM).
 * Within an at_least_ms period (keep_ms) the round sends the keep
 * script instead: PEXPIRE to the period's end where the key is still
 * ours, and the period marker inspection reads; its replies mean what
 * release's do, so the outcome is the same.
 * A round belongs to its caller (the holder) from release_new to done or
 * release_abort; a late reply lands on a node-owned request record, never
 * on a freed round. */
#include <stdio.h>

#include "release.h"

struct release_round {
    const struct lock_rec *rec;
    bool expired_before;        /* validity was over when we started */
    char keep_px[16];           /* keep the keys this long (ms), or "" */
    release_done_fn *done;
    void *owner;
    struct release_facts facts;
    struct quorum_round round;
};

rl_status release_verdict(const struct release_facts *f, bool adopted,
                          bool expired_before)
{
    size_t quorum = quorum_size(f->n);

    if (f->other >= quorum)
        return RL_ENOTACQUIRED;
    if (adopted)
        return f->held + f->gone >= quorum ? RL_OK : RL_ENOQUORUM;
    if (expired_before)
        return RL_ELOST;
    if (f->held >= quorum)
        return RL_OK;
    if (f->held + f->unknown < quorum)
        return RL_ELOST;
    return RL_ENOQUORUM;
}

/* Each outcome of release_verdict is a set of bounds on counts (held,
 * other, held + gone, held + unknown) that only grow as nodes answer, so
 * the four extremes -- every node still to answer says the same -- bound
 * every mix of answers: when they agree, so does any mix
 * (test_release_decision checks this against every mix). */
bool release_settled(const struct release_facts *f, bool adopted,
                     bool expired_before)
{
    size_t pending = f->n - f->held - f->gone - f->other - f->unknown;
    struct release_facts c[4] = {*f, *f, *f, *f};
    rl_status st;
    size_t i;

    if (pending == 0)
        return true;
    c[0].held += pending;
    c[1].gone += pending;
    c[2].other += pending;
    c[3].unknown += pending;
    st = release_verdict(&c[0], adopted, expired_before);
    for (i = 1; i < 4; i++) {
        if (release_verdict(&c[i], adopted, expired_before) != st)
            return false;
    }
    return true;
}

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
    struct release_facts *f = &r->facts;
    enum vote v = VOTE_NO;

    if (reply->kind != REPLY_INTEGER) {
        f->unknown++;
        v = VOTE_ERROR;
    } else if (reply->integer == 1) {
        if (node_voting(r->round.nodes[slot]))
            f->held++;
        else
            f->gone++;
        v = VOTE_YES;
    } else if (reply->integer == 0) {
        f->gone++;
    } else {
        f->other++;
    }
    /* The round's own verdict (a FAILURE here) is not used: decided()
     * reads the facts. */
    if (release_settled(f, r->rec->adopted, r->expired_before))
        r->round.abort = true;
    return v;
}

static rl_status outcome(const struct release_round *r)
{
    const struct release_facts *f = &r->facts;
    size_t quorum = quorum_size(f->n);
    const char *name = r->rec->resource;
    const char *detail = r->round.detail;
    const char *sep = detail[0] != '\0' ? ": " : "";

    switch (release_verdict(f, r->rec->adopted, r->expired_before)) {
    case RL_OK:
        rl_error_clear();
        return RL_OK;
    case RL_ENOTACQUIRED:
        return rl_fail(RL_ENOTACQUIRED,
                       "'%s' is held by another token on %zu of %zu nodes",
                       name, f->other, f->n);
    case RL_ELOST:
        if (r->expired_before)
            return rl_fail(RL_ELOST,
                           "'%s' was already lost before the release "
                           "(validity had run out)",
                           name);
        return rl_fail(RL_ELOST,
                       "'%s' was lost before the release: at most %zu of "
                       "%zu nodes still held it (need %zu)",
                       name, f->held + f->unknown, f->n, quorum);
    default:
        break;
    }
    if (r->rec->adopted)
        return rl_fail(RL_ENOQUORUM,
                       "'%s': neither free nor another's on a quorum: "
                       "%zu of %zu nodes free, %zu another's (need %zu)%s%s",
                       name, f->held + f->gone, f->n, f->other, quorum, sep,
                       detail);
    return rl_fail(RL_ENOQUORUM,
                   "'%s': %zu of %zu nodes still held it (need %zu) and "
                   "%zu did not answer: it may or may not have been held up "
                   "to the release%s%s",
                   name, f->held, f->n, quorum, f->unknown, sep, detail);
}

static void decided(void *owner, enum verdict v)
{
    struct release_round *r = owner;
    release_done_fn *done = r->done;
    void *done_owner = r->owner;
    rl_status st;

    RL_UNUSED(v);
    /* Settled without them: the nodes not waited for count as unknown
     * (any answer of theirs gives the same outcome). */
    r->facts.unknown =
        r->facts.n - r->facts.held - r->facts.gone - r->facts.other;
    st = outcome(r);
    release_abort(r);
    done(done_owner, st);
}

struct release_round *release_new(rl_client *c, const struct lock_rec *rec,
                                  bool expired_before, uint32_t keep_ms,
                                  release_done_fn *done, void *owner)
{
    struct release_round *r =
        ROUND_OWNER_NEW(struct release_round, c, "a release");

    if (r == NULL)
        return NULL;
    r->rec = rec;
    r->facts.n = c->node_count;
    r->expired_before = expired_before;
    if (keep_ms != 0)
        snprintf(r->keep_px, sizeof(r->keep_px), "%u", keep_ms);
    r->done = done;
    r->owner = owner;
    return r;
}

void release_run(struct release_round *r)
{
    struct lock_cmd cmd;
    enum verdict v;

    /* keep answers as release does: 1 ours (kept), 0 absent, -1 another
     * value; it publishes nothing, so no waiter wakes for a kept key. */
    if (r->keep_px[0] != '\0')
        lockrec_script_cmd(r->rec, SCRIPT_KEEP, r->keep_px, &cmd);
    else
        lockrec_script_cmd(r->rec, SCRIPT_RELEASE, NULL, &cmd);
    v = round_start(&r->round, ROUND_ALL, &cmd.cmd, classify, decided, r);
    if (v != VERDICT_PENDING)
        decided(r, v);
}
