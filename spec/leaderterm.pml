/* SPDX-License-Identifier: BSD-3-Clause */
/* leaderterm.pml -- what a reader (inspect, `status`, `leader`, an
 * observer) reports of a fenced acquire (docs/protocol.md, "What a reader
 * sees during a fenced acquire"). spec/README.md maps each step to C.
 *
 * N = 3 nodes, each with the lock key, the fence counter and its record
 * redlock:fencefor:K (none, "<token>" pending, "<token> <term>").
 * C candidates run a fenced acquire with the same token on each of ATT
 * attempts (one acquire, acquire.c `attempt`):
 *   round 1  acquire-fenced per node: where the key is absent, set it and
 *            the record "<token>" in one step; every answer carries the
 *            counter. Decided when every node answered or timed out
 *            (ROUND_ALL, as for every fenced acquire).
 *   round 2  term = max counter read + 1 (fence.c fence_candidate with a
 *            trusted quorum); fence-write per node: where the key still
 *            holds the token, counter = max(counter, term) and record
 *            "<token> <term>". A quorum of 1s = leader (decided as soon as
 *            it is certain, ROUND_EARLY).
 *   else, or the validity ran out after either round,
 *            roll back: compare-and-delete of the key on every node
 *            (after round 1: all but the refusers), then maybe retry.
 * A leader holds until it releases (compare-and-delete everywhere). Any
 * key may expire at any moment (its holder loses it); a record expires
 * with the key it names, or at any moment after that key is gone.
 * Network: FIFO per candidate-node connection, any order between them; a
 * request is applied by its node in one step, or (LOSS, default on) lost
 * before it lands, or lands with its answer lost (a timeout at the
 * client). A round counts only its own answers.
 * The reader reads the nodes one at a time, in any order, each node's
 * key, counter and record in one step (the inspect script), RD times,
 * and summarizes as src/inspect.c inspect_summarize/summarize_term:
 * value = the token most nodes hold; held when a quorum holds it (every
 * node votes: no restarts here); term set only when a quorum of the
 * nodes holding it record that token with the same term (the largest
 * such term), pending while a holding node's record names it without
 * that; a held value is reported as the leader unless its term is
 * pending (cmd_leader.c, election.c), with term 0 when no record names
 * it.
 *
 * Properties, at every report of a leader L with term T:
 *   ownterm      T is a term L's own candidate computed (and not 0)
 *   landed >= Q  that attempt's fence-write landed on a quorum: a
 *                candidate whose round 2 fell short of a quorum is never
 *                reported with a term
 * Controls:
 *   OLDRULE  the rule before redlock:fencefor: a held value is reported
 *            with the largest counter read (breaks ownterm)
 *   ONEREC   a term recorded on one holding node suffices (breaks
 *            landed >= Q)
 * Control:
 *   REUSETERM the rule before the fix: a retry computes max_read + 1 even
 *            when that is a term an earlier attempt of the same acquire
 *            (the same token) computed. With ATT = 2, a retry whose round 1
 *            missed the counter its first attempt raised computes the same
 *            term, and the records "<token> <term>" of the two attempts,
 *            each on fewer than a quorum, make a quorum together (breaks
 *            landed >= Q). C (acquire.c fence_write) takes
 *            max(max_read + 1, previous term + 1), as the model does by
 *            default.
 * Options: C candidates (3), ATT attempts per candidate (1), RD reads by
 * the reader (2), NOLOSS no lost requests or answers.
 */

#ifndef C
#define C 3
#endif
#ifndef ATT
#define ATT 1
#endif
#ifndef RD
#define RD 2
#endif
#ifndef NOLOSS
#define LOSS
#endif

#define N     3
#define Q     (N / 2 + 1)
#define ALLN  7
#define QL    4

#define OP_ACQ 1   /* acquire-fenced */
#define OP_FW  2   /* fence-write */
#define OP_REL 3   /* release script (roll back or release) */

#define IX(c, n) ((c) * N + (n))
#define AX(c, a) ((c) * ATT + (a))
#define TAG1(a)  (2 * (a) + 1)   /* round 1 of attempt a */
#define TAG2(a)  (2 * (a) + 2)   /* round 2 of attempt a */
#define ATTOF(t) (((t) - 1) / 2)

/* rl_term_state of a summary */
#define T_NONE    0
#define T_PENDING 1
#define T_SET     2

byte key[N];    /* the lock key: token c + 1, 0 = absent */
byte cnt[N];    /* the fence counter */
byte rtok[N];   /* its record: the token, 0 = no record */
byte rterm[N];  /* and the term, 0 = pending */

chan rq[C * N] = [QL] of { byte, byte, byte };  /* op, tag, term */

byte cur[C];    /* tag of the round candidate c is counting, 0 none */
byte yes[C];
byte no[C];
byte maxr[C];   /* largest counter in the round's answers */
byte refused[C];  /* nodes that refused round 1 (bit mask) */

/* ghosts */
byte term_of[C * ATT];  /* the term attempt a of c computed, 0 not yet */
byte w2[C * ATT];       /* nodes where its fence-write landed */

/* Count one answer of candidate c's current round (stale ones are
 * dropped, as quorum.c does for a detached round). */
inline answer(c, tag, ok, v)
{
    if
    :: tag == cur[c] ->
        if
        :: ok -> yes[c]++
        :: else -> no[c]++
        fi;
        if
        :: v > maxr[c] -> maxr[c] = v
        :: else
        fi
    :: else
    fi
}

inline answer_lost(c, tag)
{
    if
    :: tag == cur[c] -> no[c]++
    :: else
    fi
}

/* One step of node n on candidate c's connection. */
inline apply(c, n, op, tag, t)
{
    if
    :: op == OP_ACQ && key[n] == 0 ->
        key[n] = c + 1; rtok[n] = c + 1; rterm[n] = 0;
        ok = true
    :: op == OP_ACQ && key[n] != 0 ->
        ok = false
    :: op == OP_FW && key[n] == c + 1 ->
        if
        :: cnt[n] < t -> cnt[n] = t
        :: else
        fi;
        rtok[n] = c + 1; rterm[n] = t;
        w2[AX(c, ATTOF(tag))]++;
        ok = true
    :: op == OP_FW && key[n] != c + 1 ->
        ok = false
    :: op == OP_REL ->
        if
        :: key[n] == c + 1 -> key[n] = 0
        :: else
        fi
    fi
}

proctype link(byte c; byte n)
{
    byte op, tag, t;
    bool ok;
end:
    do
    :: atomic {
        rq[IX(c, n)]?op, tag, t;
        if
        :: true ->
            apply(c, n, op, tag, t);
            if
            :: op == OP_ACQ && !ok && tag == cur[c] ->
                refused[c] = refused[c] | (1 << n)
            :: else
            fi;
            if
            :: op == OP_ACQ -> answer(c, tag, ok, cnt[n])
            :: op == OP_FW -> answer(c, tag, ok, 0)
            :: op == OP_REL
            fi
#ifdef LOSS
        :: op != OP_REL -> answer_lost(c, tag)     /* lost before it lands */
        :: op != OP_REL ->                         /* landed, answer lost */
            apply(c, n, op, tag, t);
            answer_lost(c, tag)
        :: op == OP_REL                             /* lost: the key stays */
#endif
        fi;
        op = 0; tag = 0; t = 0; ok = false
       }
    od
}

inline send_all(c, op, tag, t)
{
    rq[IX(c, 0)]!op, tag, t;
    rq[IX(c, 1)]!op, tag, t;
    rq[IX(c, 2)]!op, tag, t
}

inline roll_back(c, except)
{
    if
    :: !(except & 1) -> rq[IX(c, 0)]!OP_REL, 0, 0
    :: else
    fi;
    if
    :: !(except & 2) -> rq[IX(c, 1)]!OP_REL, 0, 0
    :: else
    fi;
    if
    :: !(except & 4) -> rq[IX(c, 2)]!OP_REL, 0, 0
    :: else
    fi
}

proctype cand(byte c)
{
    byte a = 0, t = 0;
#ifndef REUSETERM
    byte prev = 0;
#endif
    do
    :: a < ATT ->
        atomic {
            yes[c] = 0; no[c] = 0; maxr[c] = 0; refused[c] = 0;
            cur[c] = TAG1(a);
            send_all(c, OP_ACQ, TAG1(a), 0)
        };
        if
        :: atomic { yes[c] + no[c] == N && yes[c] >= Q ->
            /* fence.c fence_candidate: max_read + 1 (trusted quorum) */
            t = maxr[c] + 1;
#ifndef REUSETERM
            /* never a term an earlier attempt of this acquire wrote */
            if
            :: t <= prev -> t = prev + 1
            :: else
            fi;
            prev = t;
#endif
            term_of[AX(c, a)] = t;
            yes[c] = 0; no[c] = 0;
            cur[c] = TAG2(a);
            send_all(c, OP_FW, TAG2(a), t)
           };
            if
            :: atomic { yes[c] >= Q -> cur[c] = 0 };
                goto lead
            :: atomic { yes[c] >= Q -> cur[c] = 0; roll_back(c, 0) }
                /* validity ran out during the rounds */
            :: atomic { no[c] > N - Q -> cur[c] = 0; roll_back(c, 0) }
            fi
        :: atomic { yes[c] + no[c] == N -> cur[c] = 0;
                    roll_back(c, refused[c]) }
            /* refused, or the validity ran out */
        fi;
        a++
    :: else -> break
    od;
    goto done;
lead:
    atomic { send_all(c, OP_REL, 0, 0) };
done:
    skip
}

/* Any key may expire at any moment; a record expires with the key of
 * the lock it names (the same PX, renewed together), or at any moment
 * once that key is gone (released: the record lives out its PX). */
inline expire(n)
{
    if
    :: rtok[n] == key[n] -> rtok[n] = 0; rterm[n] = 0
    :: else
    fi;
    key[n] = 0
}
active proctype expiry()
{
end:
    do
    :: atomic { key[0] != 0 -> expire(0) }
    :: atomic { key[1] != 0 -> expire(1) }
    :: atomic { key[2] != 0 -> expire(2) }
    :: atomic { rtok[0] != 0 && key[0] != rtok[0] -> rtok[0] = 0; rterm[0] = 0 }
    :: atomic { rtok[1] != 0 && key[1] != rtok[1] -> rtok[1] = 0; rterm[1] = 0 }
    :: atomic { rtok[2] != 0 && key[2] != rtok[2] -> rtok[2] = 0; rterm[2] = 0 }
    od
}

#ifdef OLDRULE
#define READCNT(i) hc[i] = cnt[i]
#else
#define READCNT(i) skip   /* the rule does not use the counter */
#endif

active proctype reader()
{
    byte hk[N], hc[N], ht[N], hr[N];  /* key, counter, record token, term */
    byte r = 0, m = 0, i, j, k, val, best, term, agree, fenced, state, L;
    bool ownterm;
    byte landed;

    do
    :: r < RD ->
        do
        :: m == ALLN -> break
        :: d_step { !(m & 1) -> hk[0] = key[0]; READCNT(0);
                                hr[0] = rtok[0]; ht[0] = rterm[0]; m = m | 1 }
        :: d_step { !(m & 2) -> hk[1] = key[1]; READCNT(1);
                                hr[1] = rtok[1]; ht[1] = rterm[1]; m = m | 2 }
        :: d_step { !(m & 4) -> hk[2] = key[2]; READCNT(2);
                                hr[2] = rtok[2]; ht[2] = rterm[2]; m = m | 4 }
        od;
        m = 0;  /* for the next read (and not a jump into the d_step) */
        d_step {
            /* inspect_summarize: the value the most nodes hold (the
             * first in node order on a tie) */
            best = 0; val = 0;
            for (i : 0 .. N - 1) {
                k = 0;
                for (j : 0 .. N - 1) {
                    if
                    :: hk[i] != 0 && hk[j] == hk[i] -> k++
                    :: else
                    fi
                }
                if
                :: k > best -> best = k; val = hk[i]
                :: else
                fi
            }
            term = 0; agree = 0; fenced = 0; state = T_NONE;
            if
            :: best >= Q ->          /* held */
#ifdef OLDRULE
                for (i : 0 .. N - 1) {
                    if
                    :: hc[i] > term -> term = hc[i]
                    :: else
                    fi
                }
                state = T_SET
#else
                /* summarize_term: the largest term the holding nodes
                 * record for this value, and how many record it */
                for (i : 0 .. N - 1) {
                    if
                    :: hk[i] == val && hr[i] == val ->
                        fenced++;
                        if
                        :: ht[i] > term -> term = ht[i]
                        :: else
                        fi
                    :: else
                    fi
                }
                for (i : 0 .. N - 1) {
                    if
                    :: hk[i] == val && hr[i] == val && ht[i] == term &&
                       term != 0 -> agree++
                    :: else
                    fi
                }
#ifdef ONEREC
                if
                :: agree > 0 -> agree = Q
                :: else
                fi;
#endif
                if
                :: term != 0 && agree >= Q -> state = T_SET
                :: else ->
                    term = 0;
                    if
                    :: fenced > 0 -> state = T_PENDING
                    :: else
                    fi
                fi
#endif
            :: else
            fi;
            L = 0; ownterm = false; landed = 0;
            if
            :: best >= Q && state != T_PENDING ->
                /* reported as the leader (cmd_leader.c, election.c),
                 * with term 0 if no record named it (T_NONE) */
                L = val - 1;
                for (i : 0 .. ATT - 1) {
                    if
                    :: term != 0 && term_of[AX(L, i)] == term ->
                        ownterm = true;
                        landed = w2[AX(L, i)]
                    :: else
                    fi
                }
                assert(ownterm);
                assert(landed >= Q)
            :: else
            fi;
            /* forget this read (fewer states) */
            for (i : 0 .. N - 1) {
                hk[i] = 0; hc[i] = 0; hr[i] = 0; ht[i] = 0
            }
            i = 0; j = 0; k = 0; val = 0; best = 0; term = 0; agree = 0;
            fenced = 0; state = T_NONE;
            L = 0; ownterm = false; landed = 0
        };
        r++
    :: else -> break
    od
}

init
{
    byte c, n;
    atomic {
        for (c : 0 .. C - 1) {
            for (n : 0 .. N - 1) {
                run link(c, n)
            }
        }
        for (c : 0 .. C - 1) {
            run cand(c)
        }
    }
}
