/* extend.c -- one re-quorum extension round (DESIGN §5.4).
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
 * restarted nodes are trusted to keep their keys (trust_restarted_nodes),
 * where an absent key is a real lapse.
 * A round is owned by its caller (the holder) and lives on the loop
 * thread from extend_new to done or extend_abort. */
#include <stdio.h>
#include <string.h>

#include "extend.h"

struct extend_round {
    rl_client *client;
    const struct lock_rec *rec;
    uint32_t ttl_ms;
    rl_mono_us acquired_us;
    extend_done_fn *done;
    void *owner;
    char ttl_buf[16];
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

static void decided(void *owner, enum verdict v)
{
    struct extend_round *e = owner;
    struct quorum_round *q = &e->round;
    extend_done_fn *done = e->done;
    void *done_owner = e->owner;
    rl_mono_us t0 = q->t0;
    unsigned voters = (unsigned)q->yes;
    rl_status st;

    if (v == VERDICT_SUCCESS) {
        rl_error_clear();
        st = RL_OK;
    } else if (q->refused > q->n - quorum_size(q->n)) {
        st = rl_fail(RL_ELOST,
                     "'%s' is no longer held: %zu of %zu nodes hold no key "
                     "with this token",
                     e->rec->resource, q->refused, q->n);
    } else {
        st = rl_fail(RL_ENOQUORUM,
                     "'%s': extension reached %zu of %zu nodes (need %zu): "
                     "%s",
                     e->rec->resource, q->yes, q->n, quorum_size(q->n),
                     q->detail);
    }
    extend_free(e);
    done(done_owner, st, t0, voters);
}

/* A node that started after we acquired has lost our key: put it back
 * with SET NX (never overwriting anybody) so the node blocks others
 * again. It only votes once it is older than max_ttl_ms (§5.7); the
 * extend round that follows counts it like any other node. */
static void restore_on_restarted_nodes(struct extend_round *e)
{
    const struct lock_rec *r = e->rec;
    rl_client *c = e->client;
    const char *argv[6] = {"SET", NULL, r->token, "NX", "PX", e->ttl_buf};
    size_t lens[6];
    size_t i, k;
    int j;

    if (e->acquired_us == 0 || c->cfg.trust_restarted_nodes)
        return;
    for (i = 0; i < c->node_count; i++) {
        if (!node_started_after(c->nodes[i], e->acquired_us))
            continue;
        for (k = 0; k < r->nkeys; k++) {
            argv[1] = r->keys[k];
            for (j = 0; j < 6; j++)
                lens[j] = strlen(argv[j]);
            node_send(c->nodes[i], 6, argv, lens, NULL, NULL, 0, NULL);
        }
    }
}

struct extend_round *extend_new(rl_client *c, const struct lock_rec *rec,
                                uint32_t ttl_ms, rl_mono_us acquired_us,
                                extend_done_fn *done, void *owner)
{
    struct extend_round *e = calloc(1, sizeof(*e));

    if (e == NULL || round_init(&e->round, c->nodes, c->node_count) !=
                         RL_OK) {
        free(e);
        rl_fail(RL_ENOMEM, "out of memory for an extension");
        return NULL;
    }
    e->client = c;
    e->rec = rec;
    e->ttl_ms = ttl_ms;
    e->acquired_us = acquired_us;
    e->done = done;
    e->owner = owner;
    snprintf(e->ttl_buf, sizeof(e->ttl_buf), "%u", ttl_ms);
    return e;
}

void extend_run(struct extend_round *e)
{
    struct lock_cmd cmd;
    enum verdict v;

    restore_on_restarted_nodes(e);
    lockrec_script_cmd(e->rec, SCRIPT_EXTEND, e->ttl_buf, &cmd);
    v = round_start(&e->round, ROUND_EARLY, &cmd.cmd, round_classify_one,
                    decided, e);
    if (v != VERDICT_PENDING)
        decided(e, v);
}
