/* SPDX-License-Identifier: BSD-3-Clause */
/* nodeshare.c -- the node's shared check (node.c checks a node at every
 * instant of its grid; this module lets its long-lived clients share one
 * check). A node's wake-up for every check of every idle client, and the
 * write of each reply, were most of what idle clients cost it; one
 * reading a second serves them all. A client that has checked a node
 * FOLLOW_AFTER_CHECKS times (a short-lived process never does) follows its
 * readings: it subscribes to redlock:facts there (notify.c). A follower
 * that heard no other client's reading in its last VOTE_SHARE_EVERY
 * instants checks the node itself at every instant and publishes there
 * (PUBLISH, facts_share_format) each reading that differs from the last it
 * published, and at least every VOTE_SHARE_EVERY-th; the others take a
 * reading as their own check's (facts_share_parse: only one read from the
 * server their connection's handshake saw) and skip their own checks while
 * readings keep coming. So a change is heard within about an interval, and
 * the node writes each follower a message every VOTE_SHARE_EVERY intervals
 * while nothing changes (the messages, one write per follower, are most of
 * what the shared check costs the node). Of several publishers the one with
 * the smallest check_id keeps publishing, the others stop when they hear
 * it; when it goes, the others check (and publish) again after
 * VOTE_SHARE_EVERY silent instants: two readings are at most
 * VOTE_SHARE_EVERY + 1 instants (and a takeover's two delays) apart
 * (VOTE_CHECK_GAP_MS). The followers fall silent together, so a takeover
 * (enum takeover) waits VOTE_TAKEOVER_SPREAD_MS scaled by the follower's
 * check_id before its check: the smallest id checks and publishes first
 * and the others take its reading, where they all checked at once and
 * many published, each publication written to every follower (with a
 * thousand followers, a million writes because one check came back
 * late). A node that stalls lets every follower whose delay ran out in
 * the stall check, and their replies come back together: a takeover's
 * check that took longer than TAKEOVER_STALLED_MS waits the delay again
 * before it publishes. A reading is published only when its check came
 * back within SHARE_FRESH_MS, so a slow round trip is not passed on as
 * news. Each follower still checks itself at every 60th instant (node.c's
 * FULL_CHECK_EVERY), so a forged publication (whoever may
 * PUBLISH there may as well delete the locks) misleads it for a minute at
 * most. docs/idle-cost.md has the measurements. */
#include <ev.h>
#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "nodeimpl.h"
#include "notify.h"
#include "token.h"

#define SHARE_FRESH_MS 1000
/* A takeover's check that took longer met a stalled node, where other
 * followers' delays ran out too: its publication waits a delay again. */
#define TAKEOVER_STALLED_MS (VOTE_TAKEOVER_SPREAD_MS / 10)
#define SHARE_CHANNEL "redlock:facts"

/* Our reading published for the node's other clients (the shared
 * check), fire and forget: its reply only says whether we may. */
static void share_reading(struct node *n)
{
    char msg[FACTS_SHARE_MAX];
    const char *argv[3] = {"PUBLISH", SHARE_CHANNEL, msg};

    if (!n->publishing)
        return;
    n->unshared++;
    if (!n->reading_fresh ||
        facts_share_format(&n->facts, n->check_id, msg) == 0 ||
        (n->unshared < VOTE_SHARE_EVERY &&
         strcmp(msg, n->shared_line) == 0))
        return;
    if (request_internal(n, REQ_SHARE, 3, argv)) {
        n->stats.checks_shared++;
        n->unshared = 0;
        memcpy(n->shared_line, msg, sizeof(msg));
    }
}

/* A PUBLISH refused (an ACL): this client checks for itself only. */
void share_reply(struct node *n, const redisReply *reply)
{
    if (reply->type != REDIS_REPLY_ERROR || n->share_refused)
        return;
    n->share_refused = true;
    n->publishing = false;
    config_log(n->cfg, RL_LOG_DEBUG,
               "node %s: cannot share its checks (%.*s): every client "
               "checks it on its own", n->addr->display, (int)reply->len,
               reply->str);
}

/* Our delay in a takeover: VOTE_TAKEOVER_SPREAD_MS scaled by our id, so
 * the smallest id of the followers goes first. */
static double takeover_delay_s(const struct node *n)
{
    return (double)(n->check_id >> 32) / 4294967296.0 *
           VOTE_TAKEOVER_SPREAD_MS / 1000.0;
}

/* The takeover goes on to step after our delay. */
static void takeover_wait(struct node *n, enum takeover step)
{
    n->takeover = step;
    ev_timer_set(&n->takeover_timer, takeover_delay_s(n), 0.0);
    ev_timer_start(n->loop, &n->takeover_timer);
}

/* Nobody else published since we fell silent: we do, from now on. */
static void takeover_publish(struct node *n)
{
    n->takeover = TAKEOVER_NONE;
    n->publishing = true;
    n->unshared = VOTE_SHARE_EVERY; /* publish this one */
    share_reading(n);
}

/* No takeover (another's reading came, the connection went, our check
 * failed); the next silent instant starts another. A full check that
 * was to be the takeover's comes at the next instant. */
void share_end(struct node *n)
{
    if (n->takeover == TAKEOVER_WAIT_CHECK && n->check_full)
        n->checks_to_full = 0;
    n->takeover = TAKEOVER_NONE;
    ev_timer_stop(n->loop, &n->takeover_timer);
}

/* Another client's reading of the node (notify.c, redlock:facts). Taken
 * as a check of ours when it was read from the server we are connected
 * to and no check of ours is on its way; a publisher that hears one
 * with a smaller id stops publishing. */
static void on_shared_reading(void *arg, const char *msg, size_t len)
{
    struct node *n = arg;
    struct node_facts reading;
    uint64_t from;

    if (n->state != NODE_READY || !n->facts_known)
        return;
    reading = n->facts;
    if (!facts_share_parse(&reading, &from, msg, len) ||
        from == n->check_id)
        return;
    if (n->publishing && from < n->check_id)
        n->publishing = false;
    n->unheard = 0;
    share_end(n);
    if (n->check_pending)
        return; /* ours is on its way */
    n->stats.checks_heard++;
    node_take_reading(n, &reading);
}

/* Whether another client's reading, heard in our last VOTE_SHARE_EVERY
 * instants, stands for our check at this instant; after VOTE_SHARE_EVERY
 * silent ones the takeover timer checks (on_takeover_timer). */
bool share_instant(struct node *n)
{
    if (!n->following) {
        /* From the next instant on: a reading published now could not
         * have reached us yet. */
        if (n->own_checks >= FOLLOW_AFTER_CHECKS) {
            n->following = true;
            n->unheard = VOTE_SHARE_EVERY; /* none yet */
            notify_follow_facts(n->notify, n->index, on_shared_reading, n);
        }
        return false;
    }
    if (n->unheard < VOTE_SHARE_EVERY + 1)
        n->unheard++;
    if (n->unheard <= VOTE_SHARE_EVERY)
        return !n->publishing;
    if (!n->publishing && !n->share_refused &&
        n->takeover == TAKEOVER_NONE)
        takeover_wait(n, TAKEOVER_WAIT_CHECK);
    return false;
}

/* A step of our takeover (enum takeover), after our delay. */
static void on_takeover_timer(struct ev_loop *loop, ev_timer *w,
                              int revents)
{
    struct node *n = w->data;

    RL_UNUSED(loop);
    RL_UNUSED(revents);
    if (n->state != NODE_READY) {
        share_end(n);
        return;
    }
    if (n->takeover == TAKEOVER_WAIT_CHECK && !n->check_pending) {
        n->takeover = TAKEOVER_CHECKING;
        node_send_check(n);
        if (!n->check_pending)
            share_end(n);
    } else if (n->takeover == TAKEOVER_WAIT_PUBLISH) {
        takeover_publish(n);
    } else {
        share_end(n);
    }
}

void share_check_done(struct node *n)
{
    n->reading_fresh = !n->check_refused &&
                       mono_now_us() - n->check_sent_us <=
                           SHARE_FRESH_MS * 1000u;
    if (n->takeover != TAKEOVER_CHECKING)
        share_reading(n);
    else if (!n->reading_fresh)
        share_end(n);
    else if (mono_now_us() - n->check_sent_us >
             TAKEOVER_STALLED_MS * 1000u)
        takeover_wait(n, TAKEOVER_WAIT_PUBLISH);
    else
        takeover_publish(n);
}

/* A random id among the node's clients (the shared check); its quality
 * only decides who publishes. */
static uint64_t new_check_id(size_t index)
{
    char t[TOKEN_HEX_LEN + 1];

    if (token_generate(t) != RL_OK)
        return mono_now_us() ^ ((uint64_t)index << 48);
    t[16] = '\0';
    return strtoull(t, NULL, 16);
}

void share_init(struct node *n)
{
    n->check_id = new_check_id(n->index);
    ev_timer_init(&n->takeover_timer, on_takeover_timer, 0.0, 0.0);
    n->takeover_timer.data = n;
}

void share_stop(struct node *n)
{
    ev_timer_stop(n->loop, &n->takeover_timer);
}
