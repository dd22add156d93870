/* SPDX-License-Identifier: BSD-3-Clause */
/* renewal.pml -- renewals as the watchdog runs them, and the nodes'
 * safety preconditions. Client 0 holds two locks (resources 0 and 1) and
 * renews both with one touch-batch call per node (src/lua/touch-batch.lua;
 * src/extend.c extend_batch_run, batch_node_done,
 * batch_vote): the node answers one code per lock, and each lock is
 * decided on its own answers by the single round's rule, with vote
 * withdrawal (extend.c withdraw): a node that answers that the key is
 * gone leaves the lock's holders, and a lock whose holders (with the
 * nodes that have not answered yet, not counting nodes that may lose
 * keys) fall below a quorum is LOST at once. Client 1 contends for
 * either resource with plain acquires. Environment: redlock.pml's
 * (reordering between connections, late and lost replies, per-node
 * timeouts at any moment, key lifetimes in [TTL - D, TTL]), plus
 *   - eviction: a node can run with an eviction policy, or turn to one
 *     while locks are held (a config change); such a node's keys vanish
 *     at any moment before their TTL. The rule (node.c node_voting):
 *     a node that may evict does not vote (its YES counts as failed) and
 *     does not count among a lock's holders. When a node turns evicting
 *     every holder knows it at that step (INFO's timing is outside the
 *     model) and withdraws its vote; below a quorum the lock is LOST.
 *     A node may turn back to noeviction later (EVT counts both
 *     turns); it votes again once it has not evicted for max_ttl (QUAR),
 *     as a clock-suspect node does once it behaved (this part is not in
 *     the C rule yet: docs/proof.md, finding 7).
 *   - restarts with persistence: a node with appendfsync always keeps
 *     every key it acknowledged (with its expiry), one with everysec (or
 *     none) may lose any of them. Restart trust "auto": a restarted node
 *     votes at once if it reports appendonly with appendfsync always,
 *     else it is quarantined for max_ttl (QUAR) as before. Assumption:
 *     its persistence before the restart was not weaker than it reports
 *     after.
 * Properties: mutual exclusion on each resource among holders inside
 * their validity and not told LOST (checked when a validity starts or
 * grows); a watched holder is told before its validity ends (clock);
 * a batch counts, for each lock, the code its node gave for that lock
 * (vote); a release deletes only a key that holds its token (del_key);
 * a renewal extends only a key that holds its token, never another
 * lock's nor an absent one (touch).
 *
 * Configuration (spin -D...): N 3; TMAX horizon; ATT the contender's
 * attempts; EVT nodes that turn evicting during the run; EVSTART node 0
 * evicts from the start; RST restarts (each restarted node runs
 * appendfsync always or everysec, chosen at the restart); AUTO the
 * "auto" restart trust (else every restarted node is quarantined).
 * Negative controls:
 *   WRONGLOCK   a batch's answers are counted for the other lock
 *   NOWITHDRAW  no vote withdrawal (a lock is LOST only when a quorum
 *               refuses, or at the margin); with the rules above it does
 *               not break mutual exclusion (docs/proof.md)
 *   NOEVICTRULE a node that may evict votes and counts among holders
 *   LIAR        (with AUTO) a node ran everysec before its restart (lost
 *               acknowledged keys) but reports always after: trusted
 *   NOBEHAVE    a node votes again as soon as it stops evicting (by
 *               default, like a clock-suspect node, it votes again only
 *               once it has not evicted for max_ttl: QUAR)
 *   FIRSTANSWER (with BATCH) a batch takes its first entry's answer for
 *               every entry: the answer and what it does (a release
 *               batch deletes, a touch-batch extends, every entry's key
 *               once the first was ours)
 * Batches of releases (BATCH, issue 44): the holder releases both its
 * locks, the contender its lock (and its roll-backs); a release is
 * queued for its node (the pending list of the node's connection) and
 * the loop turn (process `loop`) sends what is pending for a node as
 * one release-batch call (a lone release goes out as today's single
 * release). The node answers each entry on its own key and token
 * (deleted / absent / another lock's), in either order of the entries;
 * a batch call may fail (lost before it ran, or run with its reply
 * lost): each of its entries is then a failed request. Touch-batch
 * calls may fail the same way (an error for each lock). COVER asserts
 * that no release batch answers deleted, absent and another lock's at
 * once: a reachability witness (that run must fail).
 * Narrowing: NOTIMEOUT (pan -E), SHORTKEYS, ONELOCK (only resource 0:
 * client 0 holds one lock, the contender wants it), EVIDLE (a node turns
 * evicting only while no acquire round is open and the contender, who
 * runs no watchdog, holds nothing: only watched locks are exposed). */

#ifndef N
#define N 3
#endif
#ifndef TMAX
#define TMAX 7
#endif
#ifndef ATT
#define ATT 1
#endif
#ifndef EVT
#define EVT 0
#endif
#ifndef RST
#define RST 0
#endif

#define K      2
#define Q      (N / 2 + 1)
#define TTL    4
#define D      1
#define MARGIN 1
#define INTERVAL 1
#define QUAR   (TTL - D)
#define QL     3

#define OP_ACQ 1    /* SET NX PX */
#define OP_REL 2    /* release script */
#define OP_TB  3    /* touch-batch over both of client 0's locks */
#define OP_RB  4    /* BATCH: release-batch (on bq[n], not rq) */

#define R_YES   1   /* granted / '1' extended */
#define R_NO    2   /* refused (acquire) / '0' absent */
#define R_OTHER 3   /* '2' another token */
#define R_ERR   4   /* the batch call failed: an error for each lock */

#define IX(c, n)  ((c) * N + (n))
#define BIT(x)    (1 << (x))
#define KX(n, r)  ((n) * 2 + (r))
#define BX(n, s)  ((n) * 3 + (s))

/* tokens: client 0 holds 1 (resource 0) and 2 (resource 1); the
 * contender's attempt a has 2 + a */

/* ---- Node state ---- */
byte key[N * 2];
byte kexp[N * 2];
byte up[N];
bool evict[N];      /* may evict (maxmemory with an evicting policy) */
byte evt_left = EVT;
byte unev_left = EVT; /* ... and turn back to noeviction */
byte evoff[N];      /* tick + 1 when it last stopped evicting, 0 never */
byte acq_open;      /* acquire rounds in flight (EVIDLE) */
byte rst_left = RST;
bool always[N];     /* after its last restart the node reports
                     * appendonly yes + appendfsync always */

/* ---- Network ---- */
chan rq[K * N] = [QL] of { byte, byte, byte, byte }; /* op, res, token,
                                                       * round */
byte rtag[K * N];
byte rres[K * N];   /* acquire reply, or the batch's code for lock 0 */
byte rres1[K * N];  /* the batch's code for lock 1 */
byte gres[2 * N];   /* ghost: the code node n gave for lock s in the
                     * batch answer being counted */
#ifdef BATCH
chan bq[N] = [2] of { byte, byte, byte, byte }; /* release-batch: the
                     * tokens of slots 0, 1, 2 (0 = no entry), slot 2's
                     * resource */
byte ptok[N * 3];   /* releases pending for node n, per lock slot: token */
byte pr2[N];        /* ... slot 2's resource */
#endif

byte clk = 0;

/* ---- Locks: slot 0, 1 = client 0's on resources 0, 1; slot 2 = the
 * contender's (on resource cres) ---- */
byte rnd[K];
bool held[3];
bool lost[3];
byte dl[3];
byte hold[3];       /* holders: bit per node whose vote counts */
byte cres;          /* the contender's resource */
bool inflight;      /* client 0's batch is running */
byte nren;          /* client 0's next renewal */

#define TRUSTED_AFTER_RESTART(n) (always[n])
#ifdef AUTO
#define QUARANTINED(n) (up[n] != 0 && clk + 1 < up[n] + QUAR && \
                        !TRUSTED_AFTER_RESTART(n))
#else
#define QUARANTINED(n) (up[n] != 0 && clk + 1 < up[n] + QUAR)
#endif
#ifdef NOEVICTRULE
#define EVICTS(n) false
#elif defined(NOBEHAVE)
#define EVICTS(n) (evict[n])
#else
#define EVICTS(n) (evict[n] || evoff[n] != 0 && clk + 1 < evoff[n] + QUAR)
#endif
#define VOTING(n) (!QUARANTINED(n) && !EVICTS(n))
#define ALLN ((1 << N) - 1)
#define VMASK ((VOTING(0) -> 1 : 0) | (VOTING(1) -> 2 : 0) | (VOTING(2) -> 4 : 0))

/* holders_left(): nodes of the set that may not lose keys */
#define HB(s, n) (((s) >> (n) & 1) && !EVICTS(n))
#define LEFT(s) ((HB(s, 0) -> 1 : 0) + (HB(s, 1) -> 1 : 0) + (HB(s, 2) -> 1 : 0))

#define RES(s) ((s) < 2 -> (s) : cres)
#define VALID(s) (held[s] && !lost[s] && clk < dl[s])
/* Mutual exclusion on a resource among holders inside their validity
 * that were not told LOST. */
inline assert_exclusive(s)
{
    assert(s == 0 || RES(0) != RES(s) || !VALID(0));
    assert(s == 1 || RES(1) != RES(s) || !VALID(1));
    assert(s == 2 || RES(2) != RES(s) || !VALID(2))
}

inline set_key(x)
{
    if
#ifndef SHORTKEYS
    :: kexp[x] = clk + TTL
#endif
    :: kexp[x] = clk + TTL - D
    fi
}

/* Compare-and-delete: a release never deletes another lock's key. */
inline del_key(x, t)
{
    assert(key[x] == t);
    key[x] = 0;
    kexp[x] = 0
}

/* PEXPIRE: a renewal never touches another lock's key, nor recreates an
 * absent one. */
inline touch(x, t)
{
    assert(key[x] == t);
    set_key(x)
}

/* touch-batch's entry for resource r, token t: its code in out */
inline touch_entry(n, r, t, out)
{
    if
    :: key[KX(n, r)] == t -> touch(KX(n, r), t); out = R_YES
    :: key[KX(n, r)] == 0 -> out = R_NO
    :: else -> out = R_OTHER
    fi
}

inline touch_batch(c, n)
{
    touch_entry(n, 0, 1, rres[IX(c, n)]);
#ifdef FIRSTANSWER
    /* the first lock's answer, and what it does, for the second */
    if
    :: rres[IX(c, n)] == R_YES && key[KX(n, 1)] != 0 -> touch(KX(n, 1), 2)
    :: else -> skip
    fi;
    rres1[IX(c, n)] = rres[IX(c, n)]
#else
    touch_entry(n, 1, 2, rres1[IX(c, n)])
#endif
}

inline apply(c, n, op, r, t, tag)
{
    if
    :: op == OP_ACQ ->
        rtag[IX(c, n)] = tag;
        if
        :: key[KX(n, r)] == 0 -> key[KX(n, r)] = t; set_key(KX(n, r));
            rres[IX(c, n)] = R_YES
        :: else -> rres[IX(c, n)] = R_NO
        fi
    :: op == OP_REL ->
        if
        :: key[KX(n, r)] == t -> del_key(KX(n, r), t)
        :: else -> skip
        fi
    :: op == OP_TB ->               /* touch-batch: one code per lock */
        rtag[IX(c, n)] = tag;
#ifdef BATCH
        /* the call fails (error, timeout, disconnect): before it ran,
         * or after (its reply lost); an error for each lock */
        if
        :: true -> touch_batch(c, n)
        :: true -> touch_batch(c, n); rres[IX(c, n)] = R_ERR; rres1[IX(c, n)] = R_ERR
        :: rres[IX(c, n)] = R_ERR; rres1[IX(c, n)] = R_ERR
        fi
#else
        touch_batch(c, n)
#endif
    fi
}

#ifdef BATCH
/* One entry of a release-batch (slot s: resource r, token t, 0 = none):
 * compared with its own token, answered on its own (seen: the answers
 * of this call). FIRSTANSWER: every entry after the first gets the
 * first's answer, and is deleted if that was "deleted". */
inline rel_entry(n, s, r, t)
{
    if
    :: t == 0 -> skip
#ifdef FIRSTANSWER
    :: t != 0 && fa != 0 ->
        if
        :: fa == R_YES && key[KX(n, r)] != 0 -> del_key(KX(n, r), t)
        :: else -> skip
        fi;
        seen = seen | BIT(fa)
#endif
    :: else ->
        if
        :: key[KX(n, r)] == t -> del_key(KX(n, r), t); fa = R_YES
        :: key[KX(n, r)] == 0 -> fa = R_NO
        :: else -> fa = R_OTHER
        fi;
        seen = seen | BIT(fa)
    fi
}

/* A release-batch call: its entries in either order, or the call fails
 * before it runs (each entry a failed request: its key stays until it
 * lapses). The answers are not read by anyone here: a release's outcome
 * feeds no decision (release.c reports it); a reply lost after the call
 * ran is the call having run. */
inline release_batch(n)
{
    fa = 0; seen = 0;
    if
    :: true -> rel_entry(n, 0, 0, b0); rel_entry(n, 1, 1, b1); rel_entry(n, 2, br, b2)
    :: true -> rel_entry(n, 2, br, b2); rel_entry(n, 1, 1, b1); rel_entry(n, 0, 0, b0)
    :: skip
    fi;
#ifdef COVER
    /* reachability witness: deleted, absent and another lock's at once */
    assert(seen != (BIT(R_YES) | BIT(R_NO) | BIT(R_OTHER)));
#endif
    fa = 0; seen = 0; b0 = 0; b1 = 0; b2 = 0; br = 0
}
#endif

/* The watched holder learns that node n may evict now: its vote is
 * withdrawn from each lock (extend.c withdraw / holders_left); below a
 * quorum the lock is LOST. (The contender runs no watchdog: nothing
 * tells it; the rule that n does not vote protects its lock.) */
inline turn_evicting(n)
{
    evt_left--;
    evict[n] = true;
#ifndef NOWITHDRAW
    for (j : 0 .. 1) {
        if
        :: held[j] && !lost[j] && LEFT(hold[j]) < Q -> lost[j] = true
        :: else -> skip
        fi
    }
#endif
    j = 0
}

inline restart(n)
{
    rst_left--;
    up[n] = clk + 1;
    /* what it ran before, and what it reports now (LIAR: everysec
     * before, always after; else the same) */
    if
    :: always[n] = true
    :: always[n] = false
    fi;
#ifdef LIAR
    always[n] = true;
    if
    :: true ->
#else
    if
    :: !always[n] ->
#endif
        /* everysec: any acknowledged key may be gone */
        if
        :: key[KX(n, 0)] = 0; kexp[KX(n, 0)] = 0
        :: skip
        fi;
        if
        :: key[KX(n, 1)] = 0; kexp[KX(n, 1)] = 0
        :: skip
        fi
    :: else -> skip   /* always: every acknowledged key is kept */
    fi;
    for (j : 0 .. K - 1) {
        do
        :: nempty(rq[IX(j, n)]) -> rq[IX(j, n)]?_, _, _, _
        :: empty(rq[IX(j, n)]) -> break
        od
    }
#ifdef BATCH
    do
    :: nempty(bq[n]) -> bq[n]?_, _, _, _
    :: empty(bq[n]) -> break
    od;
#endif
    j = 0
}

inline serve(c)
{
    rq[IX(c, n)]?op, r, t, tag;
    apply(c, n, op, r, t, tag)
}

proctype node(byte n)
{
    byte op, r, t, tag, j;
#ifdef BATCH
    byte b0, b1, b2, br, fa, seen;
#endif
end:
    do
#ifdef BATCH
    :: atomic { nempty(bq[n]) -> bq[n]?b0, b1, b2, br; release_batch(n) }
#endif
    :: atomic { nempty(rq[IX(0, n)]) -> serve(0); op = 0; r = 0; t = 0; tag = 0 }
    :: atomic { nempty(rq[IX(1, n)]) -> serve(1); op = 0; r = 0; t = 0; tag = 0 }
#ifdef EVIDLE
    :: atomic { evt_left > 0 && !evict[n] && acq_open == 0 && !held[2] ->
                turn_evicting(n) }
#else
    :: atomic { evt_left > 0 && !evict[n] -> turn_evicting(n) }
#endif
    /* an evicting node drops a key before its TTL */
    :: atomic { evict[n] && key[KX(n, 0)] != 0 -> key[KX(n, 0)] = 0; kexp[KX(n, 0)] = 0 }
    :: atomic { evict[n] && key[KX(n, 1)] != 0 -> key[KX(n, 1)] = 0; kexp[KX(n, 1)] = 0 }
    /* the policy is set back to noeviction: the node votes again (the
     * keys it dropped stay dropped) */
    :: atomic { evict[n] && unev_left > 0 -> unev_left--; evict[n] = false;
                evoff[n] = clk + 1 }
    :: atomic { rst_left > 0 -> restart(n) }
    od
}

/* ---- Clock ---- */
#define WATCHED(s) (held[s] && !lost[s])
#define DUE(s) (WATCHED(s) && (clk + MARGIN >= dl[s] || (!inflight && clk >= nren)))

proctype clock()
{
    byte x;
end:
    do
    :: atomic {
        clk < TMAX && !DUE(0) && !DUE(1) ->
        clk++;
        for (x : 0 .. 2 * N - 1) {
            if
            :: key[x] != 0 && kexp[x] <= clk -> key[x] = 0; kexp[x] = 0
            :: else -> skip
            fi
        }
        x = 0;
        assert(!WATCHED(0) || clk < dl[0]);
        assert(!WATCHED(1) || clk < dl[1])
    }
    od
}

/* ---- Clients ---- */
#define PEND(x) ((mask & (1 << (x))) == 0)
#define GOT(x)  (PEND(x) && rtag[IX(c, x)] == rnd[c])

inline send(x, op, r)
{
    if
    :: nfull(rq[IX(c, x)]) -> rq[IX(c, x)]!op, r, tok, rnd[c]
    :: full(rq[IX(c, x)]) -> skip
    fi
}

/* A release of lock slot s (resource r, token t) to node x. BATCH: put
 * on the node's pending list, sent by the loop turn; one of the slot's
 * already pending there, it goes on its own (today's single release). */
inline single_rel(cc, x, r, t)
{
    if
    :: nfull(rq[IX(cc, x)]) -> rq[IX(cc, x)]!OP_REL, r, t, 0
    :: full(rq[IX(cc, x)]) -> skip
    fi
}

#ifdef BATCH
inline queue_rel(x, s, r, t)
{
    if
    :: ptok[BX(x, s)] == 0 ->
        ptok[BX(x, s)] = t;
        if
        :: s == 2 -> pr2[x] = r
        :: else -> skip
        fi
    :: else -> single_rel(c, x, r, t)
    fi
}
#else
#define queue_rel(x, s, r, t) single_rel(c, x, r, t)
#endif

inline pick()
{
    if
    :: GOT(0) -> i = 0; got = true
    :: GOT(1) -> i = 1; got = true
    :: GOT(2) -> i = 2; got = true
#ifndef NOTIMEOUT
    :: PEND(0) && !GOT(0) -> i = 0; got = false
    :: PEND(1) && !GOT(1) -> i = 1; got = false
    :: PEND(2) && !GOT(2) -> i = 2; got = false
#endif
    fi
}

/* one acquire round of resource r with token tok for slot s: success
 * (held[s], holders = the voting nodes that granted) or a roll back */
inline acquire(s, r)
{
    rnd[c]++;
    mask = 0; yes = 0; no = 0; refm = 0; hs = 0;
    t0 = clk;
    acq_open++;
    for (i : 0 .. N - 1) {
        send(i, OP_ACQ, r)
    }
    i = 0;
    do
    :: pick();
        mask = mask | (1 << i);
        if
        :: got && rres[IX(c, i)] == R_YES && VOTING(i) -> yes++; hs = hs | (1 << i)
        :: else -> no++
        fi;
        if
        :: got && rres[IX(c, i)] == R_NO -> refm = refm | (1 << i)
        :: else -> skip
        fi;
        if
        :: got -> rtag[IX(c, i)] = 0; rres[IX(c, i)] = 0
        :: else -> skip
        fi;
        got = false; i = 0;
        /* acquire_decided(): holders = the granting nodes that vote at
         * the decision (voting_yes); the verdict counted each YES when
         * it came (quorum.c count_vote) */
        hs = hs & VMASK;
        if
        :: yes >= Q && clk < t0 + TTL - D ->
            dl[s] = t0 + TTL - D;
            assert_exclusive(s);
            held[s] = true; lost[s] = false; hold[s] = hs;
            break
        :: yes >= Q && clk >= t0 + TTL - D || no > N - Q ->
            for (i : 0 .. N - 1) {
                if
                :: (refm & (1 << i)) == 0 -> queue_rel(i, s, r, tok)
                :: else -> skip
                fi
            }
            i = 0;
            break
        :: else -> skip
        fi
    od;
    acq_open--;
    mask = 0; yes = 0; no = 0; refm = 0; hs = 0
}

/* batch_vote(): node i's code v for lock s; decided[s] once its verdict
 * is known (renewed, failed, or lost) */
inline vote(s, v)
{
    /* each lock is decided on the answers given for it */
    assert(v == gres[KX(i, s)]);
    if
    :: held[s] && !lost[s] && !done[s] ->
#ifndef NOWITHDRAW
        if
        :: v == R_YES && VOTING(i) -> hold[s] = hold[s] | (1 << i)
        :: v == R_NO || v == R_OTHER -> hold[s] = hold[s] & ~(1 << i)
        :: else -> skip
        fi;
        /* unanswered: the nodes whose answer is still pending */
        if
        :: LEFT(hold[s] | (ALLN & ~mask)) < Q -> lost[s] = true; done[s] = true
        :: else -> skip
        fi;
#endif
        if
        :: !done[s] ->
            if
            :: v == R_YES && VOTING(i) -> y[s]++
            :: else -> nn[s]++;
                if
                :: v == R_NO || v == R_OTHER -> rf[s]++
                :: else -> skip
                fi
            fi;
            if
            :: y[s] >= Q ->
                done[s] = true;
                /* extend decided + holder renewed(): from the batch's t0 */
                if
                :: t0e >= dl[s] || t0e + TTL - D <= clk -> lost[s] = true
                :: else -> dl[s] = t0e + TTL - D; assert_exclusive(s)
                fi
            :: nn[s] > N - Q ->
                done[s] = true;
                if
                :: rf[s] > N - Q -> lost[s] = true
                :: else -> skip
                fi
            :: else -> skip
            fi
        :: else -> skip
        fi
    :: else -> skip
    fi
}

#ifdef BATCH
/* rl_release() of both locks (any time; a renewal in flight is
 * abandoned, its late answers dropped): each lock's release to every
 * node, where it joins what is pending for that node. */
inline release_both()
{
    for (i : 0 .. N - 1) {
        if
        :: held[0] -> queue_rel(i, 0, 0, 1)
        :: else -> skip
        fi;
        if
        :: held[1] -> queue_rel(i, 1, 1, 2)
        :: else -> skip
        fi
    }
    held[0] = false; held[1] = false; lost[0] = false; lost[1] = false;
    inflight = false; i = 0; mask = 0
}
#endif

proctype holder()
{
    byte c = 0, tok, t0, t0e, i, mask, yes, no, refm, hs, v0, v1;
    byte y[2], nn[2], rf[2];
    bool got, done[2];

    atomic { tok = 1; acquire(0, 0) };
#ifndef ONELOCK
    atomic { tok = 2; acquire(1, 1) };
#endif
    nren = clk + INTERVAL;
end_hold:
    do
    :: atomic { WATCHED(0) && clk + MARGIN >= dl[0] -> lost[0] = true }
    :: atomic { WATCHED(1) && clk + MARGIN >= dl[1] -> lost[1] = true }
#ifdef BATCH
    :: atomic { held[0] || held[1] -> release_both(); goto released }
#endif
    :: atomic {
        (WATCHED(0) || WATCHED(1)) && !inflight && clk >= nren &&
        (!WATCHED(0) || clk + MARGIN < dl[0]) &&
        (!WATCHED(1) || clk + MARGIN < dl[1]) ->
        /* extend_batch_run(): one touch-batch per node for both */
        inflight = true;
        rnd[c]++;
        mask = 0;
        y[0] = 0; y[1] = 0; nn[0] = 0; nn[1] = 0; rf[0] = 0; rf[1] = 0;
        done[0] = false; done[1] = false;
        t0e = clk;
        for (i : 0 .. N - 1) {
            send(i, OP_TB, 0)
        }
        i = 0
    };
    do
    :: atomic { WATCHED(0) && clk + MARGIN >= dl[0] -> lost[0] = true }
    :: atomic { WATCHED(1) && clk + MARGIN >= dl[1] -> lost[1] = true }
    :: atomic { !WATCHED(0) && !WATCHED(1) -> inflight = false; mask = 0; break }
#ifdef BATCH
    :: atomic { held[0] || held[1] -> release_both(); goto released }
#endif
    :: atomic {
        pick();
        mask = mask | (1 << i);
        v0 = 0; v1 = 0;
        if
        :: got -> v0 = rres[IX(c, i)]; v1 = rres1[IX(c, i)];
            gres[KX(i, 0)] = v0; gres[KX(i, 1)] = v1
        :: else -> gres[KX(i, 0)] = 0; gres[KX(i, 1)] = 0
        fi;
#ifdef WRONGLOCK
        vote(0, v1); vote(1, v0);
#else
        vote(0, v0); vote(1, v1);
#endif
        if
        :: got -> rtag[IX(c, i)] = 0; rres[IX(c, i)] = 0; rres1[IX(c, i)] = 0
        :: else -> skip
        fi;
        got = false; i = 0; v0 = 0; v1 = 0;
        if
        :: (done[0] || !WATCHED(0)) && (done[1] || !WATCHED(1)) ->
            /* every lock decided: renewed locks go on after the
             * interval, failed ones retry after a short pause */
            inflight = false; nren = clk + INTERVAL; mask = 0;
            break
        :: else -> skip
        fi
    }
    od
    od;
#ifdef BATCH
released:
    skip
#endif
}

proctype contender()
{
    byte c = 1, a = 0, tok, t0, i, mask, yes, no, refm, hs;
    bool got;
end_next:
    do
    :: atomic {
        a < ATT ->
        a++; tok = 2 + a;
        held[2] = false;
        if
        :: cres = 0
#ifndef ONELOCK
        :: cres = 1
#endif
        fi;
        acquire(2, cres)
    }
    /* release */
    :: atomic { held[2] -> held[2] = false; lost[2] = false;
        for (i : 0 .. N - 1) {
            queue_rel(i, 2, cres, tok)
        }
        i = 0 }
    od
}

#ifdef BATCH
/* The loop turn (node.c flush): what is pending for node x goes out as
 * one release-batch call, or, a lone release, as today's release. */
#define PENDS(x) ((ptok[BX(x, 0)] != 0 -> 1 : 0) + (ptok[BX(x, 1)] != 0 -> 1 : 0) + \
                  (ptok[BX(x, 2)] != 0 -> 1 : 0))
inline flush(x)
{
    if
    :: PENDS(x) == 1 ->
        if
        :: ptok[BX(x, 0)] != 0 -> single_rel(0, x, 0, ptok[BX(x, 0)])
        :: ptok[BX(x, 1)] != 0 -> single_rel(0, x, 1, ptok[BX(x, 1)])
        :: ptok[BX(x, 2)] != 0 -> single_rel(1, x, pr2[x], ptok[BX(x, 2)])
        fi
    :: else ->
        if
        :: nfull(bq[x]) -> bq[x]!ptok[BX(x, 0)], ptok[BX(x, 1)], ptok[BX(x, 2)], pr2[x]
        :: full(bq[x]) -> skip
        fi
    fi;
    ptok[BX(x, 0)] = 0; ptok[BX(x, 1)] = 0; ptok[BX(x, 2)] = 0; pr2[x] = 0
}

proctype loop()
{
end:
    do
    :: atomic { PENDS(0) > 0 -> flush(0) }
    :: atomic { PENDS(1) > 0 -> flush(1) }
    :: atomic { PENDS(2) > 0 -> flush(2) }
    od
}
#endif

init
{
    byte x;
    atomic {
#ifdef EVSTART
        evict[0] = true;
#endif
        run clock();
        for (x : 0 .. N - 1) {
            run node(x)
        }
        run holder();
        run contender();
#ifdef BATCH
        run loop();
#endif
        x = 0
    }
}
