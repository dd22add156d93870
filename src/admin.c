/* admin.c -- rl_resource_force_unlock: delete a resource's key on every
 * node whatever token it holds (issue 14 §3, DESIGN §7 "release --force").
 *
 * One ROUND_ALL round of the force-release script (scripts.c) on every
 * node, voting or quarantined alike: a key on a quarantined node blocks
 * others as much as any, so it goes too. Each node answers with the token
 * and PTTL it held just before the delete; they are copied into the
 * caller's array on the loop thread while the caller is blocked waiting
 * for them (the inspect.c pattern). The outcome is counted here, not by
 * the quorum rule: what matters is how many nodes answered (a quorum of
 * answers means no holder can keep a majority) and on how many a key was
 * removed (a majority: the resource was locked). The script publishes the
 * removed token on redlock:release:<key>, as a release does, so waiters
 * wake; the holder finds out at its next renewal (§5.4: an absent key is
 * never recreated, so a majority of "gone" makes it LOST).
 * Only the lock key itself is ever named: prefix + resource may not fall
 * in the reserved namespace, so fence counters (redlock:fence:...) are
 * out of reach. */
#include <stdio.h>
#include <string.h>

#include "blocking.h"
#include "quorum.h"

struct admin_op {
    struct op base;
    struct waiter *waiter;
    rl_holder_info *holders;    /* one per node, the caller's copy */
    char *key;                  /* prefix + resource */
    size_t answered;            /* nodes that ran the script */
    size_t removed;             /* ... and had a key, now deleted */
    struct quorum_round round;
};

static void finish(struct admin_op *op, rl_status st)
{
    struct waiter *w = op->waiter;

    round_clear(&op->round);
    client_op_finished(op->base.client, &op->base);
    free(op->key);
    free(op);
    waiter_done(w, st);
}

static void cancel(struct op *base)
{
    rl_fail(RL_ECANCELED, "the client is being freed");
    finish((struct admin_op *)base, RL_ECANCELED);
}

static enum vote classify(void *owner, size_t slot,
                          const struct node_reply *r)
{
    struct admin_op *op = owner;
    rl_holder_info *h = &op->holders[slot];
    const struct node_reply *v;

    if (r->kind != REPLY_ARRAY || r->elements != 2 ||
        r->element[1].kind != REPLY_INTEGER) {
        if (r->kind == REPLY_ERROR)
            snprintf(h->error, sizeof(h->error), "%s: %.*s",
                     node_name(op->round.nodes[slot]), (int)r->len, r->str);
        else if (r->kind == REPLY_ARRAY)
            snprintf(h->error, sizeof(h->error), "unexpected reply");
        else
            snprintf(h->error, sizeof(h->error), "%.*s", (int)r->len,
                     r->str != NULL ? r->str : "");
        return VOTE_ERROR;
    }
    v = &r->element[0];
    h->reachable = true;
    h->voting = node_voting(op->round.nodes[slot]);
    h->pttl_ms = r->element[1].integer;
    op->answered++;
    if (v->kind == REPLY_STRING) {
        snprintf(h->token, sizeof(h->token), "%.*s", (int)v->len, v->str);
        op->removed++;
    }
    return VOTE_YES;
}

static void decided(void *owner, enum verdict v)
{
    struct admin_op *op = owner;
    size_t n = op->round.n;
    size_t quorum = quorum_size(n);

    RL_UNUSED(v); /* counted here: quarantined nodes answer too */
    if (op->answered >= quorum) {
        rl_error_clear();
        finish(op, RL_OK);
        return;
    }
    rl_fail(RL_ENOQUORUM,
            "force unlock of '%s': only %zu of %zu nodes answered (need "
            "%zu); removed on %zu%s%s",
            op->key, op->answered, n, quorum, op->removed,
            op->round.detail[0] ? ": " : "", op->round.detail);
    finish(op, RL_ENOQUORUM);
}

static void start(struct op *base)
{
    struct admin_op *op = (struct admin_op *)base;
    const char *argv[1] = {op->key};
    size_t lens[1] = {strlen(op->key)};
    struct round_cmd cmd = {script_get(SCRIPT_FORCE_RELEASE), 1, 1, argv,
                            lens};
    enum verdict v;

    v = round_start(&op->round, ROUND_ALL, &cmd, classify, decided, op);
    if (v != VERDICT_PENDING)
        decided(op, v);
}

/* Check the arguments; *key is prefix + resource (caller frees). */
static rl_status check_args(rl_client *c, const char *resource,
                            const rl_holder_info *out, size_t cap,
                            const size_t *count, char **key)
{
    const char *fn = "rl_resource_force_unlock";
    rl_status st;

    if (c == NULL)
        return rl_fail(RL_EINVAL, "%s: client is NULL", fn);
    if (out == NULL || count == NULL)
        return rl_fail(RL_EINVAL, "%s: out and count must not be NULL", fn);
    if (cap == 0)
        return rl_fail(RL_EINVAL, "%s: cap must be at least 1", fn);
    st = waiter_check(c, fn);
    if (st == RL_OK)
        st = config_check_resource(resource, "resource");
    if (st != RL_OK)
        return st;
    *key = malloc(c->cfg.prefix_len + strlen(resource) + 1);
    if (*key == NULL)
        return rl_fail(RL_ENOMEM, "out of memory");
    sprintf(*key, "%s%s", c->cfg.prefix, resource);
    /* The prefix alone cannot be reserved (config.c), but prefix
     * "red" + resource "lock:fence:x" would name a fence counter. */
    if (strncmp(*key, RL_RESERVED_PREFIX, strlen(RL_RESERVED_PREFIX)) == 0) {
        free(*key);
        *key = NULL;
        return rl_fail(RL_EINVAL,
                       "%s: prefix + resource '%s%s' is in the reserved "
                       "namespace '%s'",
                       fn, c->cfg.prefix, resource, RL_RESERVED_PREFIX);
    }
    return RL_OK;
}

rl_status rl_resource_force_unlock(rl_client *c, const char *resource,
                                   rl_holder_info *out, size_t cap,
                                   size_t *count, size_t *removed)
{
    struct admin_op *op;
    rl_holder_info *all;
    struct waiter w;
    char *key = NULL;
    rl_status st;
    size_t i;

    if (removed != NULL)
        *removed = 0;
    st = check_args(c, resource, out, cap, count, &key);
    if (st != RL_OK)
        return st;
    op = calloc(1, sizeof(*op));
    all = calloc(c->node_count, sizeof(*all));
    if (op == NULL || all == NULL) {
        st = rl_fail(RL_ENOMEM, "out of memory");
        goto fail;
    }
    for (i = 0; i < c->node_count; i++) {
        snprintf(all[i].name, sizeof(all[i].name), "%s",
                 c->cfg.addrs[i].display);
        all[i].pttl_ms = -2;
    }
    st = round_init(&op->round, c->nodes, c->node_count);
    if (st != RL_OK)
        goto fail;
    op->base.client = c;
    op->base.start = start;
    op->base.cancel = cancel;
    op->holders = all;
    op->key = key;
    waiter_init(&w);
    op->waiter = &w;
    st = client_submit(c, &op->base);
    if (st != RL_OK) {
        waiter_discard(&w);
        round_clear(&op->round);
        goto fail;
    }
    st = waiter_wait(&w); /* op is freed by now */
    *count = c->node_count;
    memcpy(out, all, (cap < c->node_count ? cap : c->node_count) *
                         sizeof(*all));
    for (i = 0; removed != NULL && i < c->node_count; i++) {
        if (all[i].reachable && all[i].pttl_ms != -2)
            (*removed)++;
    }
    free(all);
    return st;

fail:
    free(all);
    free(op);
    free(key);
    return st;
}
