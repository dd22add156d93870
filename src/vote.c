/* SPDX-License-Identifier: BSD-3-Clause */
/* vote.c -- may a node vote now, and why not.
 *
 * Server start: INFO's uptime_in_seconds is the difference of two
 * wall-clock whole seconds, so the real uptime is within 1 s of it either
 * way. up_since_us is the latest possible start (the quarantine never
 * trusts a node too early); vote_started_after uses the earliest
 * (start_min_us: it never mistakes an older server for one restarted
 * after a given instant). A reconnect to the same run_id keeps them.
 * While a node is clock-suspect its INFO uptime is not trusted: its latest
 * possible start becomes the handshake of the current connection (it has
 * answered on it since) and its earliest is unknown. */
#include <stdio.h>
#include <string.h>

#include "vote.h"

/* It may evict now, or may have lost keys (evicting, a replica) less
 * than max_ttl_ms (plus the longest gap between two checks: it may have
 * stopped any time before the reading that no longer showed it) ago. */
static bool lost_keys_lately(const struct config *cfg,
                             const struct vote_record *v, rl_mono_us now)
{
    bool evictions_count = !cfg->allow_evicting_nodes;
    rl_mono_us window;

    if (evictions_count && v->evicts != FACT_NO)
        return true;
    if ((!evictions_count || v->evict_seen_us == 0) &&
        v->replica_seen_us == 0)
        return false;
    window = ((rl_mono_us)cfg->max_ttl_ms + VOTE_CHECK_GAP_MS) * 1000u;
    if (evictions_count && v->evict_seen_us != 0 &&
        now - v->evict_seen_us < window)
        return true;
    return v->replica_seen_us != 0 && now - v->replica_seen_us < window;
}

enum node_bar vote_bar(const struct config *cfg, const struct vote_record *v,
                       bool connected, bool twin, rl_mono_us now)
{
    if (!connected)
        return NODE_BAR_DOWN;
    if (twin)
        return NODE_BAR_TWIN;
    if (!v->is_master)
        return NODE_BAR_ROLE;
    if (lost_keys_lately(cfg, v, now))
        return NODE_BAR_EVICTS;
    if (v->clock.suspect)
        return NODE_BAR_CLOCK;
    if (!vote_restart_trusted(cfg, v) &&
        (v->up_since_us == 0 ||
         vote_uptime_ms(v, now) < (int64_t)cfg->max_ttl_ms))
        return NODE_BAR_QUARANTINE;
    return NODE_BAR_NONE;
}

bool vote_keeps_keys(enum node_bar bar)
{
    switch (bar) {
    case NODE_BAR_TWIN:
    case NODE_BAR_ROLE:
    case NODE_BAR_EVICTS:
    case NODE_BAR_CLOCK:
        return false;
    default:
        return true;
    }
}

bool vote_restart_trusted(const struct config *cfg,
                          const struct vote_record *v)
{
    switch (cfg->restart_trust) {
    case RL_RESTART_TRUST:
        return true;
    case RL_RESTART_AUTO:
        return v->fsyncs_always;
    default:
        return false;
    }
}

int64_t vote_quarantine_left_ms(const struct config *cfg,
                                const struct vote_record *v, rl_mono_us now)
{
    int64_t left;

    if (v->up_since_us == 0)
        return -1;
    if (vote_restart_trusted(cfg, v))
        return 0;
    left = (int64_t)cfg->max_ttl_ms - vote_uptime_ms(v, now);
    return left > 0 ? left : 0;
}

int64_t vote_uptime_ms(const struct vote_record *v, rl_mono_us now)
{
    if (v->up_since_us == 0)
        return 0;
    return now > v->up_since_us ? (int64_t)((now - v->up_since_us) / 1000)
                                : 0;
}

bool vote_started_after(const struct vote_record *v, rl_mono_us t)
{
    return v->up_since_us != 0 && v->start_min_us > t;
}

/* Record which server instance answered and when it started. */
static void learn_start(struct vote_record *v, const struct node_facts *f,
                        const char *old_run_id, rl_mono_us now)
{
    unsigned long long secs;

    if (f->run_id[0] != '\0' && strcmp(f->run_id, old_run_id) == 0 &&
        v->up_since_us != 0)
        return; /* same server as before: what we knew still holds */
    v->up_since_us = 0;
    if (!f->uptime_known)
        return;
    secs = f->uptime_s;
    if (secs + 1 >= now / 1000000u) { /* cannot happen on a sane clock */
        v->up_since_us = v->start_min_us = 1;
        return;
    }
    v->start_min_us = now - (secs + 1) * 1000000u;
    v->up_since_us = secs == 0 ? now : now - (secs - 1) * 1000000u;
}

/* The uptime was counted by a clock we do not trust: the server started
 * at the latest when it answered this connection's handshake, at the
 * earliest at an unknown time. */
static void distrust_uptime(struct vote_record *v)
{
    if (v->up_since_us == 0)
        return;
    if (v->up_since_us < v->ready_us)
        v->up_since_us = v->ready_us;
    v->start_min_us = 1;
}

/* One WARN line when what the node says about eviction changes (at the
 * first reading: only when it may evict or does not say). */
static void warn_eviction(const struct config *cfg, const char *name,
                          const struct node_facts *f, enum fact before)
{
    enum fact now = facts_may_evict(f);
    const char *consequence =
        cfg->allow_evicting_nodes
            ? "it votes anyway (allow_evicting_nodes)"
            : "it does not vote (remedy: CONFIG SET maxmemory-policy "
              "noeviction, or maxmemory 0; or accept the risk with "
              "allow_evicting_nodes / --allow-evicting-nodes)";

    if (now == before)
        return;
    if (now == FACT_YES)
        config_log(cfg, RL_LOG_WARN,
                   "node %s may evict keys before their TTL (maxmemory "
                   "%llu bytes, maxmemory-policy %s), a held lock among "
                   "them: %s",
                   name, (unsigned long long)f->maxmemory, f->policy,
                   consequence);
    else if (now == FACT_UNKNOWN)
        config_log(cfg, RL_LOG_WARN,
                   "node %s does not report maxmemory and "
                   "maxmemory_policy in INFO, so it may evict keys: %s",
                   name, consequence);
    else
        config_log(cfg, RL_LOG_WARN,
                   "node %s no longer evicts (maxmemory-policy %s, "
                   "maxmemory %llu): it votes again in %u ms, once any "
                   "key it evicted would have expired",
                   name, f->policy, (unsigned long long)f->maxmemory,
                   cfg->max_ttl_ms);
}

static void warn_role(const struct config *cfg, const char *name,
                      const struct node_facts *f, const char *before)
{
    if (strcmp(before, f->role) == 0)
        return;
    if (strcmp(f->role, "master") == 0) {
        if (before[0] != '\0')
            config_log(cfg, RL_LOG_WARN, "node %s is a master again: "
                       "it votes", name);
        return;
    }
    config_log(cfg, RL_LOG_WARN,
               "node %s reports role '%s', not master: it does not vote "
               "(a replica may drop keys at a resync; list masters only)",
               name, f->role[0] != '\0' ? f->role : "unknown");
}

/* A node that may evict, or evicted keys since the last reading (its
 * counter grew: the policy may have changed there and back), or has
 * evicted keys at all when first seen, or is a replica (a resync
 * replaces its data; promoted, it lacks the keys it granted before), is
 * marked: a key it dropped may belong to a lock still held, so it votes
 * only once every such key has expired (vote_bar). */
void vote_read(struct vote_record *v, const struct config *cfg,
               const char *name, const struct node_facts *f,
               const struct node_facts *before, rl_mono_us now)
{
    bool same = before != NULL && strcmp(before->run_id, f->run_id) == 0;

    v->is_master = strcmp(f->role, "master") == 0;
    v->evicts = facts_may_evict(f);
    v->fsyncs_always = facts_fsyncs_every_write(f) == FACT_YES;
    if (!v->is_master)
        v->replica_seen_us = now;
    if (v->evicts != FACT_NO ||
        facts_evicted_since(f, same ? before : NULL)) {
        if (v->evicts == FACT_NO)
            config_log(cfg, RL_LOG_WARN,
                       "node %s has evicted keys (evicted_keys %llu) "
                       "although it does not evict now: it votes in %u "
                       "ms, once any key it evicted would have expired",
                       name, (unsigned long long)f->evicted_keys,
                       cfg->max_ttl_ms);
        v->evict_seen_us = now;
    }
    warn_eviction(cfg, name, f, before != NULL ? facts_may_evict(before)
                                               : FACT_NO);
    warn_role(cfg, name, f, before != NULL ? before->role : "master");
}

void vote_handshake(struct vote_record *v, const struct config *cfg,
                    const char *name, const struct node_facts *f,
                    const struct node_facts *before, rl_mono_us now)
{
    v->ready_us = now;
    learn_start(v, f, before != NULL ? before->run_id : "", now);
    vote_read(v, cfg, name, f, before, now);
    if (v->clock.suspect)
        distrust_uptime(v);
}

void vote_clock_sample(struct vote_record *v, const struct config *cfg,
                       const char *name, const struct clock_sample *s)
{
    switch (clockguard_add(&v->clock, s, cfg->drift_factor,
                           cfg->max_ttl_ms)) {
    case CLOCK_BECAME_SUSPECT:
        distrust_uptime(v);
        config_log(cfg, RL_LOG_WARN,
                   "node %s: clock suspect (runs at x%.3f of ours or "
                   "stepped): it does not vote until its clock behaves "
                   "for %u ms",
                   name, v->clock.rate, cfg->max_ttl_ms);
        break;
    case CLOCK_RECOVERED:
        config_log(cfg, RL_LOG_WARN,
                   "node %s: clock behaved for %u ms (x%.4f of ours): it "
                   "votes again",
                   name, cfg->max_ttl_ms, v->clock.rate);
        break;
    case CLOCK_NO_CHANGE:
        break;
    }
}

/* FNV-1a over the node's host (or socket path) and port: the same on
 * every client that names the node alike, whatever its db or user. */
static uint64_t check_phase_us(const struct node_addr *a)
{
    const char *name = a->kind == ADDR_TCP ? a->host : a->path;
    uint32_t h = 2166136261u;
    const unsigned char *p;
    char port[16];

    snprintf(port, sizeof(port), ":%d", a->kind == ADDR_TCP ? a->port : 0);
    for (p = (const unsigned char *)(name != NULL ? name : ""); *p; p++)
        h = (h ^ *p) * 16777619u;
    for (p = (const unsigned char *)port; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h % (VOTE_CHECK_INTERVAL_MS * 1000u);
}

uint64_t vote_next_check_us(const struct node_addr *a, uint64_t now_us)
{
    const uint64_t interval = VOTE_CHECK_INTERVAL_MS * 1000u;
    uint64_t from = now_us + interval / 2;
    uint64_t phase = check_phase_us(a);

    return from - from % interval + phase +
           (from % interval > phase ? interval : 0);
}
