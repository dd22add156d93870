/* SPDX-License-Identifier: BSD-3-Clause */
/* clockguard.h -- is a node's clock running at our rate?
 * Pure logic over timing samples; no I/O, unit-tested without Redis. */
#ifndef REDLOCK_CLOCKGUARD_H
#define REDLOCK_CLOCKGUARD_H

#include <stdbool.h>
#include <stdint.h>

#include "clock.h"

/* TIME has whole microseconds; two readings may each be off by one. */
#define CLOCK_GRANULARITY_US 4
/* Lock-path requests carry a sample when the node's last one was asked
 * for at least this long ago, and the first CLOCK_EAGER_SAMPLES of a
 * connection always do (a fresh client sees a far-off clock at once). */
/* Rare enough that the samples are a small part of the traffic under
 * load; a step still shows within 10 ms of traffic, far below any TTL. */
#define CLOCK_SAMPLE_INTERVAL_US 10000
#define CLOCK_EAGER_SAMPLES 8

/* One reading of a server's TIME, bracketed by our boottime clock. */
struct clock_sample {
    rl_mono_us send_us;  /* before the command left (at or before) */
    rl_mono_us recv_us;  /* after its reply arrived (at or after) */
    int64_t server_us;   /* the server's TIME, µs since its epoch */
};

enum clock_event {
    CLOCK_NO_CHANGE,
    CLOCK_BECAME_SUSPECT,
    CLOCK_RECOVERED,
};

struct clockguard {
    bool have_ref;           /* ref and prev hold samples */
    bool suspect;            /* must not vote */
    struct clock_sample ref;  /* long baseline: first sample since the
                                 last inconsistency or (re)connection */
    struct clock_sample prev; /* latest sample */
    struct clock_sample first; /* first sample of the connection */
    double rate;             /* server µs per our µs since first (shown,
                                not decided on); 0 while unknown */
    uint64_t samples;
    uint64_t incidents;      /* times it became suspect */
    rl_mono_us asked_us;     /* latest TIME sent */
    uint32_t asked;          /* TIMEs sent on this connection */
};

/* True when b, taken after a on one connection, is consistent with a
 * clock running at our rate within drift: the server's elapsed time lies
 * within [(1-d)(b.send - a.recv), (1+d)(b.recv - a.send)] +- granularity. */
bool clock_consistent(const struct clock_sample *a,
                      const struct clock_sample *b, double drift);

/* Check s against the latest sample and the baseline; a node that fails
 * either becomes (or stays) suspect and starts a new baseline at s. A
 * suspect node recovers at a consistent sample whose baseline spans at
 * least behave_ms (max_ttl_ms) of our time. */
enum clock_event clockguard_add(struct clockguard *g,
                                const struct clock_sample *s, double drift,
                                uint32_t behave_ms);

/* A new connection (maybe another server process): forget the samples,
 * keep the suspect state, which needs a new baseline of behave_ms. */
void clockguard_reconnect(struct clockguard *g);

/* Should a request sent at now carry a sample? clockguard_asked records
 * that one was sent. */
bool clockguard_due(const struct clockguard *g, rl_mono_us now);
void clockguard_asked(struct clockguard *g, rl_mono_us now);

#endif
