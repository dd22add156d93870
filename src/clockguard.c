/* SPDX-License-Identifier: BSD-3-Clause */
/* clockguard.c -- the clock-suspect rule.
 *
 * Redlock's validity assumes every node's clock runs at our rate within
 * drift_factor. Each sample brackets one reading of the server's TIME
 * between our boottime clock at send and at receipt, so for two samples
 * a before b (one connection: the server ran a first) the real time
 * between the two readings lies in [b.send - a.recv, b.recv - a.send].
 * A clock at our rate within d moved by at least (1-d) times the lower
 * and at most (1+d) times the upper end (+- the µs granularity of TIME).
 * Outside: the clock runs too fast or too slow, or it stepped.
 *
 * Each new sample is checked against the previous one (steps show at
 * once) and against the baseline, the first sample since the node last
 * became suspect or reconnected (a small rate error grows with it). A
 * clock at rate r > 1 + d is caught once the baseline spans
 *   E > (1 + d)(rtt_ref + rtt_new) / (r - 1 - d)
 * of real time (r < 1 - d: (1 - d)(rtt_ref + rtt_new) / (1 - d - r)); a
 * step of D shows at the next sample taken E later when
 * D > d * E + rtt_prev + rtt_new.
 * Invariant: a node is suspect from its first inconsistent sample until a
 * consistent sample closes a baseline of at least behave_ms that started
 * at or after that inconsistency.
 *
 * Cost: a sample is one TIME pipelined before a lock-path request. The
 * first CLOCK_EAGER_SAMPLES requests of a connection carry one, then at
 * most one per CLOCK_SAMPLE_INTERVAL_US per node: under load the extra
 * commands are a small fraction of the traffic, and a step is seen by
 * the first request at least that long after the previous sample. */
#include "clockguard.h"

#include <stddef.h>

bool clock_consistent(const struct clock_sample *a,
                      const struct clock_sample *b, double drift)
{
    double ds = (double)(b->server_us - a->server_us);
    double lo = (double)b->send_us - (double)a->recv_us;
    double hi = (double)b->recv_us - (double)a->send_us;

    if (lo < 0)
        lo = 0;
    return ds >= (1.0 - drift) * lo - CLOCK_GRANULARITY_US &&
           ds <= (1.0 + drift) * hi + CLOCK_GRANULARITY_US;
}

/* Server µs per our µs between a and b (midpoints of the brackets). */
static double measured_rate(const struct clock_sample *a,
                            const struct clock_sample *b)
{
    double ours = ((double)b->send_us + (double)b->recv_us -
                   (double)a->send_us - (double)a->recv_us) / 2.0;

    if (ours <= 0)
        return 0.0;
    return (double)(b->server_us - a->server_us) / ours;
}

/* What a pair that failed the check proves of the rate, for showing it
 * before the midpoints are accurate (a midpoint taken across a long
 * round trip can show a x5 clock as x0.8): a clock that moved ds while at
 * most hi of our time passed runs at least ds / hi, one that moved ds
 * while at least lo passed at most ds / lo. */
static double proven_rate(const struct clock_sample *a,
                          const struct clock_sample *b)
{
    double ds = (double)(b->server_us - a->server_us);
    double lo = (double)b->send_us - (double)a->recv_us;
    double hi = (double)b->recv_us - (double)a->send_us;

    if (hi > 0 && ds > hi)
        return ds / hi;
    if (lo > 0 && ds < lo)
        return ds > 0 ? ds / lo : 0.0;
    return measured_rate(a, b);
}

enum clock_event clockguard_add(struct clockguard *g,
                                const struct clock_sample *s, double drift,
                                uint32_t behave_ms)
{
    const struct clock_sample *failed = NULL;
    bool ok, accurate;

    g->samples++;
    if (!g->have_ref) {
        g->have_ref = true;
        g->ref = g->prev = g->first = *s;
        return CLOCK_NO_CHANGE;
    }
    if (!clock_consistent(&g->prev, s, drift))
        failed = &g->prev;
    else if (!clock_consistent(&g->ref, s, drift))
        failed = &g->ref;
    ok = failed == NULL;
    /* Shown, not decided on: over the whole connection once that is long
     * enough for the round trips to blur it by at most a half; before
     * that, at an inconsistency, what the failed pair proves. */
    accurate = s->send_us > g->first.recv_us &&
               s->send_us - g->first.recv_us >=
                   g->first.recv_us - g->first.send_us + s->recv_us -
                       s->send_us;
    if (accurate)
        g->rate = measured_rate(&g->first, s);
    else if (!ok)
        g->rate = proven_rate(failed, s);
    g->prev = *s;
    if (!ok) {
        g->ref = *s;
        if (g->suspect)
            return CLOCK_NO_CHANGE;
        g->suspect = true;
        g->incidents++;
        return CLOCK_BECAME_SUSPECT;
    }
    if (g->suspect &&
        s->send_us >= g->ref.recv_us + (rl_mono_us)behave_ms * 1000u) {
        g->suspect = false;
        return CLOCK_RECOVERED;
    }
    return CLOCK_NO_CHANGE;
}

void clockguard_reconnect(struct clockguard *g)
{
    g->have_ref = false;
    g->asked = 0;
    g->samples = 0; /* its rate is unknown again until two samples */
    g->rate = 0;
}

bool clockguard_due(const struct clockguard *g, rl_mono_us now)
{
    return g->asked < CLOCK_EAGER_SAMPLES ||
           now >= g->asked_us + CLOCK_SAMPLE_INTERVAL_US;
}

void clockguard_asked(struct clockguard *g, rl_mono_us now)
{
    g->asked_us = now;
    if (g->asked < CLOCK_EAGER_SAMPLES)
        g->asked++;
}
