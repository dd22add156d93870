/* SPDX-License-Identifier: BSD-3-Clause */
/* rwlive.pml -- liveness of the read-write lock: is a writer starved by
 * a stream of readers? (docs/guide/lock-kinds.md: writer preference through
 * the writer intent.) An LTL property, <> the writer wins, under weak
 * fairness (pan -a -f), searched exhaustively.
 *
 * rwlock.pml's key protocol without time and without faults (liveness is
 * claimed only then). Two readers acquire, hold and release forever
 * (each holds for a finite time: weak fairness on its release step); one
 * writer retries until it wins. Each attempt is one step: its request
 * lands on every node in any order, the verdict is taken at the quorum
 * as acquire.c does (ROUND_EARLY; with LATEINTENT the refusers counted
 * by then are the ones the intent is sent to), the later answers land
 * too, and a failed attempt's grants are undone in the same step. So
 * attempts never overlap in flight: contention between partial attempts,
 * which can make any two Redlock contenders refuse each other forever
 * under weak fairness alone (only the randomised retry delays break it),
 * is left out on purpose; what is checked is starvation by readers that
 * hold.
 * What lands later, in any order and interleaved with everything else:
 * a reader's release on each node (and, with LATEINTENT, the writer
 * intent sent after a refused attempt). The writer's first attempt is a
 * plain SET NX PX; once refused, its attempts are the writer-acquire
 * script: SET NX PX, or where readers hold the key, set the intent, in
 * the same step. The intent's TTL (two retry periods): `age` counts the
 * writer's attempts since the node's intent was last refreshed; it may
 * lapse from the second attempt on (a writer attempts at least once per
 * retry period).
 *
 *   (default)      as in C: a refused writer's next attempts mark the
 *                  intent in the same step as their refusal
 *   LATEINTENT     (control) as C was before: the intent is sent after
 *                  each refused attempt (the writer-intent script, which
 *                  sets it only where readers still are)
 *   NOINTENT       (control) readers ignore the intent */

#define N   3
#define Q   (N / 2 + 1)
#define NC  3               /* client 0 writes, 1 and 2 read */

#define OP_REL 2            /* release, or reader-release */
#define OP_INT 3            /* writer-intent */

#define IX(c, n) ((c) * N + (n))

bool wkey[N];        /* the writer's string at the key */
byte readers[N];     /* the readers' hash: bit c for reader c */
bool intent[N];      /* <key>:wintent */
byte age[N];         /* writer attempts since it was refreshed (max 2) */
byte q[NC * N];      /* connection c -> n: the request in flight, 0 none */

bool won = false;    /* the writer acquired */
bool wref = false;   /* the writer was refused once: writer-acquire */

ltl writer_wins { <> won }

/* the acquire request of client c lands on node n; ok = granted */
inline land(n)
{
    ok = false;
    if
    :: c == 0 ->                            /* SET NX PX */
        if
        :: !wkey[n] && readers[n] == 0 -> wkey[n] = true; ok = true
#ifndef LATEINTENT
        :: readers[n] != 0 && wref -> intent[n] = true; age[n] = 0
#endif
        :: else -> skip
        fi
    :: c != 0 ->                            /* reader-acquire */
        if
#ifdef NOINTENT
        :: !wkey[n] ->
#else
        :: !wkey[n] && !intent[n] ->
#endif
            readers[n] = readers[n] | (1 << c); ok = true
        :: else -> skip
        fi
    fi;
    if
    :: und && ok -> yes++
    :: und && !ok -> no++; refm = refm | (1 << n)
    :: else -> skip
    fi;
    if
    :: und && (yes >= Q || no > N - Q) -> und = false
    :: else -> skip
    fi
}

/* The order is chosen before the step (n0, n1, then the third): a
 * d_step has no choices, and a plain atomic sequence would let SPIN's
 * fairness count the other processes as blocked inside it. */
inline choose_order()
{
    if
    :: n0 = 0; n1 = 1
    :: n0 = 0; n1 = 2
    :: n0 = 1; n1 = 0
    :: n0 = 1; n1 = 2
    :: n0 = 2; n1 = 0
    :: n0 = 2; n1 = 1
    fi
}

inline attempt()
{
    und = true; yes = 0; no = 0; refm = 0;
    land(n0); land(n1); land(3 - n0 - n1);
    ok = false;
    if
    :: yes < Q ->                           /* refused: roll back */
        for (i : 0 .. N - 1) {
            if
            :: c == 0 -> wkey[i] = false
            :: else -> readers[i] = readers[i] & ~(1 << c)
            fi
        }
        i = 0
    :: else -> skip
    fi
}

/* a request queued behind the attempt lands later (one per connection) */
inline deliver(n)
{
    if
    :: q[IX(c, n)] == OP_REL && c != 0 -> readers[n] = readers[n] & ~(1 << c)
    :: q[IX(c, n)] == OP_INT ->
        if
        :: readers[n] != 0 -> intent[n] = true; age[n] = 0
        :: else -> skip
        fi
    :: else -> skip
    fi;
    q[IX(c, n)] = 0
}

#define IDLE(c) (q[IX(c, 0)] == 0 && q[IX(c, 1)] == 0 && q[IX(c, 2)] == 0)

proctype writer()
{
    byte c = 0, i, yes, no, refm, n0, n1;
    bool ok, und;
try:
    do
    :: d_step { q[IX(c, 0)] != 0 -> deliver(0) }
    :: d_step { q[IX(c, 1)] != 0 -> deliver(1) }
    :: d_step { q[IX(c, 2)] != 0 -> deliver(2) }
    :: IDLE(c) -> choose_order();
        d_step {
            /* a new attempt: one more retry period for every intent */
            for (i : 0 .. N - 1) {
                if
                :: intent[i] && age[i] < 2 -> age[i]++
                :: else -> skip
                fi
            }
            i = 0;
            attempt();
            n0 = 0; n1 = 0;
            if
            :: yes >= Q -> won = true
            :: else ->
                wref = true;
#ifdef LATEINTENT
                /* C before: mark_intent() on the nodes that refused */
                for (i : 0 .. N - 1) {
                    if
                    :: (refm & (1 << i)) != 0 -> q[IX(c, i)] = OP_INT
                    :: else -> skip
                    fi
                }
                i = 0
#else
                skip
#endif
            fi;
            yes = 0; no = 0; refm = 0
        };
        if
        :: won -> break
        :: else -> skip
        fi
    od;
end_done:
    skip
}

proctype reader(byte c)
{
    byte i, yes, no, refm, n0, n1;
    bool ok, und, in;
end_try:
    do
    :: d_step { q[IX(c, 0)] != 0 -> deliver(0) }
    :: d_step { q[IX(c, 1)] != 0 -> deliver(1) }
    :: d_step { q[IX(c, 2)] != 0 -> deliver(2) }
    :: IDLE(c) -> choose_order();
        d_step {
            attempt();
            n0 = 0; n1 = 0;
            in = yes >= Q;
            yes = 0; no = 0; refm = 0
        };
        if
        :: in ->
            /* held; the release: reader-release on every node, each
             * landing on its own */
            d_step {
                in = false;
                for (i : 0 .. N - 1) {
                    q[IX(c, i)] = OP_REL
                }
                i = 0
            }
        :: else -> skip
        fi
    od
}

/* the intent's TTL runs out (allowed from its second unrefreshed
 * attempt on) */
proctype lapse()
{
end:
    do
    :: d_step { intent[0] && age[0] >= 2 -> intent[0] = false; age[0] = 0 }
    :: d_step { intent[1] && age[1] >= 2 -> intent[1] = false; age[1] = 0 }
    :: d_step { intent[2] && age[2] >= 2 -> intent[2] = false; age[2] = 0 }
    od
}

init
{
    atomic {
        run writer(); run reader(1); run reader(2); run lapse()
    }
}
