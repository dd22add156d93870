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
 *               max K:qt over the replies counted + 1 if they are a
 *               quorum (else attempt 1 again later: TMO below);
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
 *   granted     fair-release to every node, sent in the grant's step: the
 *               holder keeps its keys (and entries) until it lands on
 *               a node; there the key and the entry go in one step.
 * With FAULTS also: refresh (queue-enter again, same score, where the
 * entry is absent: the refresh reply 'absent'); with LEAVE a waiter may
 * leave (queue-leave to every node); with KILL a client may die at any step (what it sent
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
 *   (2) ORDER (fault-free, no deaths, no leaves): ghost regm gets c when
 *       c's queue-enter has landed on a quorum (before c is told); a
 *       client's first attempt records ahead[c] = regm; at its grant
 *       every client in ahead[c] was granted before (assert).
 *   (3) LIVE: every waiter is eventually granted or dead, LTL under weak
 *       fairness (pan -a -f), one client dying while registered (KILL).
 *       The clients attempt concurrently: partial grants of overlapping
 *       attempts (fast paths, an attempt in flight while the head
 *       changes) stay in.
 * Controls:
 *   NOHEAD     the script grants any registered waiter (breaks 2)
 *   HEADPURGE  a dead entry is purged only when it is the head and only
 *              inside fair-acquire (breaks 3: nobody entitled attempts)
 *   PERNODE    score = the node's own arrival counter, no max over a
 *              quorum (breaks 3: each waiter head on one node)
 *   TICKETANY  (with TMO) the ticket is taken from the refused round's
 *              replies however few carried K:qt (breaks 2)
 * Options: FAULTS (0) faults, KILL one death (LIVE: of a registered
 * waiter between its requests; else at any step), LEAVE waiters may
 * leave, TMO one reply is lost (the request ran on its node; the client
 * counts a failed vote without K:qt, as a per-node timeout), ROT
 * (narrowing, for the liveness runs: each client's requests
 * land on the nodes in its own rotation, c, c + 1, c + 2; the state space
 * is 20 times smaller and the search is exhaustive in seconds). */

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
/* client c's round (globals, so that a death can clear them) */
#define und  cund[c]
#define yes  cyes[c]
#define no   cno[c]
#define maxq cmaxq[c]
#define refm crefm[c]
#define ph   cph[c]
#define nrep cnrep[c]
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
/* nodes where client o holds the key */
#define HELD(o)     ((key[0] == (o) + 1) + (key[1] == (o) + 1) + \
                     (key[2] == (o) + 1))
#define IDLE(c)     (empty(rq[IX(c, 0)]) && empty(rq[IX(c, 1)]) && \
                     empty(rq[IX(c, 2)]))

byte key[N];        /* the lock key: c + 1, 0 = free */
byte ep[N];         /* K:q: bit c = client c's entry is there */
byte sc[NC * N];    /* its score (0 when absent) */
byte qt[N];         /* K:qt */

byte tk[NC];        /* client c's ticket, 0 = none yet (its score) */

chan rq[NC * N] = [QL] of { byte };   /* c -> n: the requests */

byte deadm;         /* dead clients */
bool cund[NC];      /* an attempt is being counted */
byte cyes[NC];      /* its grants */
byte cno[NC];       /* its refusals */
byte cmaxq[NC];     /* the largest K:qt in its replies */
byte crefm[NC];     /* the nodes that refused it */
byte cnrep[NC];     /* its replies that carried K:qt */
byte cph[NC];       /* TRY, WAIT, READ or DONE */
byte tmo;           /* replies lost so far (TMO: at most one) */
bool lost;          /* the reply being landed is lost (scratch) */

/* ghosts */
byte nfin;          /* clients granted, dead or gone (left) */
#ifdef ORDER
byte regm;          /* clients whose queue-enter landed on a quorum */
byte servm;         /* clients granted */
byte ahead[NC];     /* regm at the client's attempt 1 */
#endif

#ifdef LIVE
/* Every client is eventually granted or dead. A client waits from its
 * first step (enabled from the start) to its grant or death and acquires
 * once, so this is [] (waiting[c] -> <> (granted[c] || dead[c])) for
 * every c; that form's claim is larger and its search takes twice as
 * long (same verdicts, docs/proof.md). */
ltl served { <> (nfin == NC) }
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

#define TRY  0      /* an attempt in flight */
#define WAIT 1      /* queued */
#define DONE 2      /* granted (its release sent), or left */
#define READ 3      /* refused without a ticket: attempt 1 again */

/* the refused attempt's grants go, on every node that did not refuse
 * (behind the attempt where it has not landed yet) */
inline roll_back()
{
    for (i : 0 .. N - 1) {
        if
        :: (refm & BIT(i)) == 0 -> rq[IX(c, i)]!OP_RB
        :: else
        fi
    }
    i = 0
}

inline send_all(o)
{
    rq[IX(c, 0)]!o; rq[IX(c, 1)]!o; rq[IX(c, 2)]!o
}

/* at c's grant nobody else holds: a holder keeps its keys from its
 * grant until its release lands (no time here) */
inline assert_exclusive()
{
    assert(c == 0 || HELD(0) < Q);
    assert(c == 1 || HELD(1) < Q);
    assert(c == 2 || HELD(2) < Q)
}

/* The attempt is decided (at the quorum, acquire.c ROUND_EARLY), in the
 * step its deciding reply lands. */
inline decided()
{
    und = false;
    if
    :: yes >= Q ->
        /* granted; it holds until its release lands on a node */
        assert_exclusive();
#ifdef ORDER
        assert((ahead[c] & ~servm) == 0);
        servm = servm | BIT(c);
#endif
        nfin++;
        ph = DONE;
        send_all(OP_REL)
    :: else ->
        roll_back();
        ph = WAIT;
        if
#ifndef TICKETANY
        :: tk[c] == 0 && nrep < Q ->
            /* fewer than a quorum of K:qt: no ticket, read again */
            ph = READ
#endif
        :: else ->
            if
            :: tk[c] == 0 ->
                /* the first refusal: ticket from a quorum's K:qt */
                tk[c] = maxq + 1;
                send_all(OP_ENT)
            :: else
            fi
        fi
    fi;
    yes = 0; no = 0; refm = 0; maxq = 0; nrep = 0
}

/* Node n runs client c's request op in one step (its script); the
 * reply is counted in the same step (a dead client counts nothing). */
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
        :: und && !DEAD(c) && lost ->
            no++                /* a timeout: a failed vote, no K:qt */
        :: und && !DEAD(c) && !lost ->
            if
            :: ok -> yes++
            :: else -> no++; refm = refm | BIT(n)
            fi;
            nrep++;
            if
            :: qt[n] > maxq -> maxq = qt[n]
            :: else
            fi
        :: else
        fi;
        if
        :: und && !DEAD(c) ->
            if
            :: yes >= Q || no > N - Q -> decided()
            :: else
            fi
        :: else
        fi
    :: op == OP_ENT ->
        ep[n] = ep[n] | BIT(c);
#ifdef PERNODE
        /* (control) the node's own arrival order */
        qt[n]++;
        sc[IX(c, n)] = qt[n];
#else
        sc[IX(c, n)] = tk[c];
        if
        :: qt[n] < tk[c] -> qt[n] = tk[c]
        :: else
        fi;
#endif
#ifdef ORDER
        if
        :: (regm & BIT(c)) == 0 ->
            ack = ack | BIT(n);
            if
            :: NB(ack) >= Q -> regm = regm | BIT(c); ack = 0
            :: else
            fi
        :: else
        fi
#else
        skip
#endif
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
    ok = false; op = 0
}

#ifdef ROT
/* (narrowing) client c's requests land on node c first, then c + 1,
 * then c + 2 (each its own rotation; still interleaved in any way with
 * the other clients' and the environment's steps) */
#define FIRST(n) (n == c || (n == (c + 1) % N && empty(rq[IX(c, c)])) || \
                  (n == (c + 2) % N && empty(rq[IX(c, c)]) && \
                   empty(rq[IX(c, (c + 1) % N)])))
#define MAYLAND(n) FIRST(n)
#else
#define MAYLAND(n) true
#endif
#define DELIVER \
    :: d_step { nempty(rq[IX(c, 0)]) && MAYLAND(0) -> rq[IX(c, 0)]?op; apply(0) } \
    :: d_step { nempty(rq[IX(c, 1)]) && MAYLAND(1) -> rq[IX(c, 1)]?op; apply(1) } \
    :: d_step { nempty(rq[IX(c, 2)]) && MAYLAND(2) -> rq[IX(c, 2)]?op; apply(2) } \
    LOSE(0) LOSE(1) LOSE(2)
#ifdef TMO
/* the request runs on node n, its reply is lost: a per-node timeout */
#define LOSE(n) \
    :: d_step { tmo < 1 && und && nempty(rq[IX(c, n)]) -> \
                tmo++; lost = true; rq[IX(c, n)]?op; apply(n); lost = false }
#else
#define LOSE(n)
#endif

#define ACTIVE(p) (ph == (p) && !DEAD(c) && IDLE(c))

/* A client: its requests land on their nodes in any order (FIFO per
 * connection), each reply counted as it lands; after its death what it
 * sent still lands. */
proctype client(byte c)
{
    byte op, i;
#ifdef ORDER
    byte ack;
#endif
#ifdef HEADPURGE
    byte j, k, h;
#endif
    bool ok;

    /* attempt 1: the fast path */
    d_step {
#ifdef ORDER
        ahead[c] = regm;
#endif
        und = true;
        ph = TRY;
        send_all(OP_ACQ1)
    };
end_loop:
    do
    DELIVER
    :: d_step {
           /* entitled and free on a quorum: fair-acquire with the score */
           ACTIVE(WAIT) && MAYTRY(c) -> und = true; ph = TRY; send_all(OP_ACQ)
       }
    :: d_step { ACTIVE(READ) -> und = true; ph = TRY; send_all(OP_ACQ1) }
#if FAULTS > 0
    /* refresh: the reply 'absent', queue-enter there again */
    :: d_step {
           ACTIVE(WAIT) && !(PRES(c, 0) && PRES(c, 1) && PRES(c, 2)) ->
           for (i : 0 .. N - 1) {
               if
               :: !PRES(c, i) -> rq[IX(c, i)]!OP_ENT
               :: else
               fi
           }
           i = 0
       }
#endif
#ifdef LEAVE
    :: d_step { ACTIVE(WAIT) -> nfin++; ph = DONE; send_all(OP_LV) }
#endif
    :: (ph == DONE || DEAD(c)) && IDLE(c) -> break
    od
}

/* the dead clients' entries on node n lapse (their own expiry, by the
 * node's clock, wherever they are in the queue) */
inline lapse(n)
{
    for (pv : 0 .. NC - 1) {
        if
        :: DEAD(pv) -> drop_entry(pv, n)
        :: else
        fi
    }
    pv = 0
}

/* A dead client's entries lapse, anywhere in the queue, one node at a
 * time (HEADPURGE: not here, see headpurge); a dead holder's keys lapse.
 * The purge in every script: the live waiters' refreshes run it at least
 * once per refresh period, so this step is weakly fair. */
proctype purge()
{
    byte pv;
end:
    do
#ifndef HEADPURGE
    :: d_step { (ep[0] & deadm) != 0 -> lapse(0) }
    :: d_step { (ep[1] & deadm) != 0 -> lapse(1) }
    :: d_step { (ep[2] & deadm) != 0 -> lapse(2) }
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

#ifdef LIVE
/* a registered waiter, between its requests */
#define KILLABLE(v) (cph[v] == WAIT && IDLE(v) && (PRES(v, 0) -> 1 : 0) + \
                     (PRES(v, 1) -> 1 : 0) + (PRES(v, 2) -> 1 : 0) >= Q)
#else
/* anyone not done yet (a holder's release is sent in its grant's step) */
#define KILLABLE(v) (cph[v] != DONE && !DEAD(v))
#endif

/* client v dies: it does nothing more (what it sent still lands) */
inline kill(v)
{
    deadm = deadm | BIT(v);
    nfin++;
    cund[v] = false; cyes[v] = 0; cno[v] = 0; cmaxq[v] = 0; crefm[v] = 0;
    cnrep[v] = 0
}

init
{
    atomic {
        run client(0); run client(1); run client(2);
#ifdef KILL
        run purge();
#endif
#if FAULTS > 0
        run fault();
#endif
    }
#ifdef KILL
    /* one client dies (LIVE: a registered waiter), or none */
    if
    :: skip
    :: d_step { KILLABLE(0) -> kill(0) }
    :: d_step { KILLABLE(1) -> kill(1) }
    :: d_step { KILLABLE(2) -> kill(2) }
    fi
#endif
}
