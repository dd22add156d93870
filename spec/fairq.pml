/* fairq.pml -- the fair waiting queue proposed in docs/fair-queue.md
 * (issue 34; section 2.12 there), beside the lock key. spec/README.md
 * maps each step to the proposal's scripts.
 *
 * N = 3 nodes, NC = 3 fair clients, each acquiring once. Per node: the
 * lock key as a SET NX without time (0 free, c + 1 held by client c),
 * per client an entry (present, score) of K:q, and the ticket counter
 * K:qt. A client (2.6):
 *   attempt 1   fair-acquire without a score (the fast path) on every
 *               node: granted on a node only if its queue is empty and
 *               the key free; every reply carries K:qt. Decided at the
 *               quorum (yes >= Q, or no > N - Q); replies land in any
 *               order, interleaved with everything else.
 *   refused     fair-rollback (compare-and-delete of the key, the queue
 *               untouched) to every node that did not refuse; ticket =
 *               max K:qt over the replies counted (a quorum) + 1;
 *               queue-enter with it to every node (score = ticket, ties
 *               by client id, the token), landing in any order: adds the
 *               entry, raises K:qt to the ticket.
 *   wait        attempt only when entitled (head of the node's queue)
 *               and the key free on a quorum (what the announcements and
 *               refresh replies tell; a node's own state changes while
 *               the attempt is in flight); fair-acquire with the score:
 *               the head check and SET in one step per node; refused:
 *               fair-rollback, stay queued, wait again. A new attempt
 *               starts once the client's earlier requests landed (C
 *               drops a detached round's late replies instead: this only
 *               delays the attempt).
 *   granted     hold, then fair-release: the key and the entry go in one
 *               step per node.
 * With FAULTS also: refresh (queue-enter again, same score, where the
 * entry is absent: the refresh reply 'absent') and leave (queue-leave to
 * every node); with KILL a client may die at any step (what it sent
 * still lands; a dead holder's keys lapse). A dead client's entries
 * lapse anywhere in the queue by a step of `purge` (the purge in every
 * script: the live waiters' refreshes run it at least once per refresh
 * period); a live client's never lapse (fault-free runs).
 *
 * Properties:
 *   (1) safety, whatever the queue holds: at every grant no other client
 *       holds (assert). With FAULTS a fault process drops, adds (a
 *       duplicate, a stale entry, an entry of a client never queued
 *       there), re-scores entries and resets or raises counters on any
 *       nodes, FAULTS times.
 *   (2) ORDER (fault-free, no deaths, no leaves): reg_done when a
 *       client's queue-enter has landed on a quorum; a client's first
 *       attempt records ahead[c] = the registered clients; at its grant
 *       every client in ahead[c] was granted before (assert).
 *   (3) LIVE: every waiter is eventually granted or dead, LTL under weak
 *       fairness (pan -a -f), one client dying while registered (KILL).
 * Controls:
 *   NOHEAD     the script grants any registered waiter (breaks 2)
 *   HEADPURGE  a dead entry is purged only when it is the head and only
 *              inside fair-acquire (breaks 3: nobody entitled attempts)
 *   PERNODE    score = the node's own arrival counter, no max over a
 *              quorum (breaks 3: each waiter head on one node)
 * Options: FAULTS (0) faults, KILL one death (LIVE: only of a
 * registered waiter; else at any step), LEAVE waiters may leave. */

#ifndef FAULTS
#define FAULTS 0
#endif

#define N   3
#define NC  3
#define Q   (N / 2 + 1)
#define QL  3
#define SMAX 5             /* the largest score a fault writes */

#define OP_ACQ1 1          /* fair-acquire, score '' (the fast path) */
#define OP_ACQ  2          /* fair-acquire with the score */
#define OP_ENT  3          /* queue-enter */
#define OP_RB   4          /* fair-rollback */
#define OP_REL  5          /* fair-release */
#define OP_LV   6          /* queue-leave */

#define IX(c, n)   ((c) * N + (n))
#define BIT(c)     (1 << (c))
#define NB(m)      (((m) & 1) + (((m) >> 1) & 1) + (((m) >> 2) & 1))
#define DEAD(c)    ((deadm & BIT(c)) != 0)
#define PRES(c, n) ((ep[n] & BIT(c)) != 0)
/* c sorts before o on node n: (score, token) */
#define BEATS(c, o, n) (!PRES(o, n) || sc[IX(c, n)] < sc[IX(o, n)] || \
                        (sc[IX(c, n)] == sc[IX(o, n)] && (c) < (o)))
#ifdef NOHEAD
#define ENTITLED(c, n) PRES(c, n)
#else
#define ENTITLED(c, n) (PRES(c, n) && BEATS(c, ((c) + 1) % NC, n) && \
                        BEATS(c, ((c) + 2) % NC, n))
#endif
#define READY(c, n) ((ENTITLED(c, n) && key[n] == 0) -> 1 : 0)
#define MAYTRY(c)   (READY(c, 0) + READY(c, 1) + READY(c, 2) >= Q)
#define IDLE(c)     (empty(rq[IX(c, 0)]) && empty(rq[IX(c, 1)]) && \
                     empty(rq[IX(c, 2)]))

byte key[N];        /* the lock key: c + 1, 0 = free */
byte ep[N];         /* K:q: bit c = client c's entry is there */
byte sc[NC * N];    /* its score (0 when absent) */
byte qt[N];         /* K:qt */

chan rq[NC * N] = [QL] of { byte, byte };   /* c -> n: op, score */

byte deadm;         /* dead clients */
bool holding[NC];

/* ghosts */
bool w[NC];         /* waiting: from attempt 1 to the grant, death, leave */
byte regm;          /* clients whose queue-enter landed on a quorum */
byte servm;         /* clients granted */
byte ahead[NC];     /* regm at the client's attempt 1 */

#ifdef LIVE
ltl served { [] ((w[0] -> <> !w[0]) && (w[1] -> <> !w[1]) &&
                 (w[2] -> <> !w[2])) }
#endif

inline drop_entry(cc, n)
{
    ep[n] = ep[n] & ~BIT(cc);
    sc[IX(cc, n)] = 0
}

#ifdef HEADPURGE
/* (control) the purge of Redisson's FairLock: only expired heads, and
 * only inside the acquire script */
inline headpurge(n)
{
    for (j : 1 .. NC) {
        h = NC;
        for (k : 0 .. NC - 1) {
            if
            :: PRES(k, n) && (h == NC || sc[IX(k, n)] < sc[IX(h, n)]) -> h = k
            :: else
            fi
        }
        if
        :: h < NC && DEAD(h) -> drop_entry(h, n)
        :: else
        fi
    }
    j = 0; k = 0; h = 0
}
#endif

/* Node n runs client c's request (op, arg) in one step (its script). */
inline apply(n)
{
    ok = false;
    if
    :: op == OP_ACQ1 || op == OP_ACQ ->
#ifdef HEADPURGE
        headpurge(n);
#endif
        if
        :: key[n] == 0 &&
           ((op == OP_ACQ1 && ep[n] == 0) || (op == OP_ACQ && ENTITLED(c, n))) ->
            key[n] = c + 1; ok = true
        :: else
        fi;
        if
        :: und && ok -> yes++
        :: und && !ok -> no++; refm = refm | BIT(n)
        :: else
        fi;
        if
        :: und && qt[n] > maxq -> maxq = qt[n]
        :: else
        fi
    :: op == OP_ENT ->
        ep[n] = ep[n] | BIT(c);
#ifdef PERNODE
        /* (control) the node's own arrival order */
        qt[n]++;
        sc[IX(c, n)] = qt[n];
#else
        sc[IX(c, n)] = arg;
        if
        :: qt[n] < arg -> qt[n] = arg
        :: else
        fi;
#endif
        ack = ack | BIT(n);
        if
        :: NB(ack) >= Q -> regm = regm | BIT(c)
        :: else
        fi
    :: op == OP_RB || op == OP_REL ->
        if
        :: key[n] == c + 1 -> key[n] = 0
        :: else
        fi;
        if
        :: op == OP_REL -> drop_entry(c, n)
        :: else
        fi
    :: op == OP_LV -> drop_entry(c, n)
    fi;
    ok = false; op = 0; arg = 0
}

#define DELIVER \
    :: d_step { nempty(rq[IX(c, 0)]) -> rq[IX(c, 0)]?op, arg; apply(0) } \
    :: d_step { nempty(rq[IX(c, 1)]) -> rq[IX(c, 1)]?op, arg; apply(1) } \
    :: d_step { nempty(rq[IX(c, 2)]) -> rq[IX(c, 2)]?op, arg; apply(2) }

inline send_all(o, s)
{
    rq[IX(c, 0)]!o, s; rq[IX(c, 1)]!o, s; rq[IX(c, 2)]!o, s
}

/* the refused attempt's grants go, on every node that did not refuse
 * (behind the attempt where it has not landed yet) */
inline roll_back()
{
    for (i : 0 .. N - 1) {
        if
        :: (refm & BIT(i)) == 0 -> rq[IX(c, i)]!OP_RB, 0
        :: else
        fi
    }
    i = 0
}

inline assert_exclusive()
{
    assert(c == 0 || !holding[0]);
    assert(c == 1 || !holding[1]);
    assert(c == 2 || !holding[2])
}

proctype client(byte c)
{
    byte op, arg, yes, no, maxq, refm, ack, tk, i;
#ifdef HEADPURGE
    byte j, k, h;
#endif
    bool und, ok;

    {
        /* attempt 1: the fast path */
        d_step {
            w[c] = true;
            ahead[c] = regm;
            und = true;
            send_all(OP_ACQ1, 0)
        };
try:
        skip;
        do
        DELIVER
        :: d_step { und && (yes >= Q || no > N - Q) -> und = false }; break
        od;
        if
        :: yes >= Q -> goto won
        :: else
        fi;
        d_step {
            roll_back();
            if
            :: tk == 0 ->
                /* the first refusal: ticket from a quorum's K:qt */
                tk = maxq + 1;
                send_all(OP_ENT, tk)
            :: else
            fi;
            yes = 0; no = 0; refm = 0; maxq = 0
        };
end_wait:
        do
        DELIVER
        :: d_step {
               IDLE(c) && MAYTRY(c) ->
               und = true; send_all(OP_ACQ, tk)
           }; goto try
#if FAULTS > 0
        /* refresh: the reply 'absent', queue-enter there again */
        :: d_step {
               IDLE(c) && !(PRES(c, 0) && PRES(c, 1) && PRES(c, 2)) ->
               for (i : 0 .. N - 1) {
                   if
                   :: !PRES(c, i) -> rq[IX(c, i)]!OP_ENT, tk
                   :: else
                   fi
               }
               i = 0
           }
#endif
#ifdef LEAVE
        :: d_step { IDLE(c) -> w[c] = false; send_all(OP_LV, 0) }; goto done
#endif
        od;
won:
        skip;
        d_step {
            assert_exclusive();
#ifdef ORDER
            assert((ahead[c] & ~servm) == 0);
#endif
            holding[c] = true;
            servm = servm | BIT(c);
            w[c] = false;
            yes = 0; no = 0; refm = 0; maxq = 0
        };
        /* hold; release */
        d_step { holding[c] = false; send_all(OP_REL, 0) };
done:
        skip
    } unless {
        DEAD(c) -> d_step { w[c] = false; holding[c] = false; und = false }
    };
    /* what was sent still lands */
end_drain:
    do
    DELIVER
    :: IDLE(c) -> break
    od
}

#ifdef KILL
/* one client dies (or none) */
proctype killer()
{
#ifdef LIVE
#define KILLABLE(c) (w[c] && (regm & BIT(c)) != 0)
#else
#define KILLABLE(c) (!DEAD(c))
#endif
    if
    :: skip
    :: d_step { KILLABLE(0) -> deadm = deadm | BIT(0) }
    :: d_step { KILLABLE(1) -> deadm = deadm | BIT(1) }
    :: d_step { KILLABLE(2) -> deadm = deadm | BIT(2) }
    fi
}
#endif

/* A dead client's entries lapse, anywhere in the queue (HEADPURGE: not
 * here, see headpurge); a dead holder's keys lapse. */
proctype purge()
{
end:
    do
#ifndef HEADPURGE
    :: d_step { (ep[0] & deadm) != 0 -> ep[0] = ep[0] & ~deadm }
    :: d_step { (ep[1] & deadm) != 0 -> ep[1] = ep[1] & ~deadm }
    :: d_step { (ep[2] & deadm) != 0 -> ep[2] = ep[2] & ~deadm }
#endif
    :: d_step { key[0] != 0 && DEAD(key[0] - 1) -> key[0] = 0 }
    :: d_step { key[1] != 0 && DEAD(key[1] - 1) -> key[1] = 0 }
    :: d_step { key[2] != 0 && DEAD(key[2] - 1) -> key[2] = 0 }
    od
}

#if FAULTS > 0
/* the queue and the counters are anything, on any nodes */
proctype fault()
{
    byte f, n, cc, s;
end:
    do
    :: f < FAULTS ->
        select (n : 0 .. N - 1);
        select (cc : 0 .. NC - 1);
        select (s : 0 .. SMAX);
        if
        :: d_step { drop_entry(cc, n) }                     /* lost */
        :: d_step { s > 0 -> ep[n] = ep[n] | BIT(cc); sc[IX(cc, n)] = s }
                                        /* added, duplicated, re-scored */
        :: d_step { qt[n] = s }                             /* reset, raised */
        fi;
        d_step { f++; n = 0; cc = 0; s = 0 }
    od
}
#endif

init
{
    atomic {
        run client(0); run client(1); run client(2); run purge();
#ifdef KILL
        run killer();
#endif
#if FAULTS > 0
        run fault();
#endif
    }
}
