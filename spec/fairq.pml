/* SPDX-License-Identifier: BSD-3-Clause */
/* fairq.pml -- the fair waiting queue of docs/fair-queue.md (issue 34;
 * 2.0 and 2.12 there), beside the lock key: as built for the mutex, the
 * semaphore (LIMIT=2) and the read-write lock (RW).
 * spec/README.md maps each step to the scripts.
 *
 * N = 3 nodes, NC = 3 fair clients, each acquiring once. Per node: the
 * lock key as a SET NX without time (0 free, c + 1 held by client c,
 * RESV "redlock:queued": free but reserved for the queue), per client
 * an entry (present, score) of K:q, and the ticket counter K:qt. The
 * reservation (mutex, read-write): the fast path of a fair mutex is a
 * plain SET NX, which must not take the key from the queue, so every
 * script step that touches a node's queue ends with settle: the queue
 * non-empty and the key free -> RES; RES and the queue empty -> free.
 * A dead holder's key lapses to free (no settle until the next queue
 * step there). A client (2.6):
 *   attempt 1   (mutex, writer) a bare SET NX on every node: granted on
 *               a node only if the key is free (RES is taken); no K:qt.
 *               Decided at the quorum (yes >= Q, or no > N - Q); replies
 *               land in any order, interleaved with everything else.
 *               Refused: fair-rollback where granted, then attempt 1'.
 *   attempt 1'  (the first attempt of a semaphore and of a reader)
 *               fair-acquire without a score on every node: granted on
 *               a node only if its queue is empty and the key free or
 *               RES; every reply carries K:qt. Decided as above.
 *   refused     fair-rollback (compare-and-delete of the key, then
 *               settle) to every node that did not refuse; ticket =
 *               max K:qt over the replies counted + 1 if they are a
 *               quorum (else attempt 1' again later: TMO below);
 *               queue-enter with it to every node (score = ticket, ties
 *               by client id, the token), landing in any order: adds the
 *               entry, raises K:qt to the ticket.
 *   wait        attempt only when entitled (head of the node's queue)
 *               and the key free on a quorum (what the announcements and
 *               refresh replies tell; a node's own state changes while
 *               the attempt is in flight); fair-acquire with the score:
 *               the head check and SET (over free or RES) in one step
 *               per node; refused:
 *               fair-rollback, stay queued, wait again. A new attempt
 *               starts once the client's earlier requests landed (C
 *               drops a detached round's late replies instead: this only
 *               delays the attempt).
 *   granted     fair-release to every node, sent in the grant's step: the
 *               holder keeps its keys (and entries) until it lands on
 *               a node; there the key and the entry go in one step
 *               (then settle: RES if others queue there).
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
 *       nodes, and sets RES where the key is free or clears it,
 *       FAULTS times.
 *   (2) ORDER (fault-free, no deaths, no leaves): ghost regm gets c when
 *       c's queue-enter has landed on a quorum (before c is told); a
 *       client's first request (attempt 1) records ahead[c] = regm;
 *       at its grant every client in ahead[c] was granted before
 *       (assert).
 *   (3) LIVE: every waiter is eventually granted or dead, and then no
 *       node keeps RES, LTL under weak fairness (pan -a -f), one client
 *       dying while registered (KILL); the mutex only.
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
 *   NORESERVE  attempt 1 is the bare SET but settle never sets RES
 *              (breaks 2: a newcomer's SET takes the key between a
 *              release and the head's fair-acquire)
 * Kinds (compile time; the mutex without either):
 *   LIMIT=2    a semaphore with 2 permits: 2 slot keys per node, each a
 *              mutex key; an attempt is for one slot (attempt 1: any;
 *              later: one free with the client entitled on a quorum).
 *              Entitled on node n: the clients holding a slot there and
 *              the entries ahead of it there, counted once each (a
 *              client in both once), are fewer than LIMIT. RANKONLY: the
 *              entries ahead only (2.5 there: rank < limit), so a
 *              holder with no entry there (attempt 1's grant, a lapsed
 *              entry) is not counted. Attempt 1 is fair-acquire '' (no
 *              bare SET, no reservation), granted only where the queue
 *              is empty.
 *   RW         a read-write lock: clients 0 .. NW - 1 (NW 1) write, the
 *              others read; per node a writer key and a reader set (a
 *              reader granted where no writer key, a writer where
 *              neither; the writer intent is left out: the queue does
 *              its work). Entitled: a writer at the head, a reader with
 *              no writer entry ahead. Attempt 1: a writer's the bare
 *              SET (no writer key, no readers, not RES), then 1' where
 *              the queue is empty; a reader's 1' where no writer entry
 *              is. RES (in the writer key) is set where the queue is
 *              non-empty and neither a writer nor a reader holds; a
 *              reader that may take the node takes RES (clears it,
 *              joins the readers): it blocks only the bare SET.
 *   With either a holder's entry may lapse while it holds (HLAPSE; C
 *   gives it entry_px from the grant); released, it goes.
 *   Safety: at most LIMIT clients hold on a quorum at a grant; RW: no
 *   writer holds on a quorum beside anyone else. ORDER: RW: at c's
 *   grant every client of ahead[c] it conflicts with (a writer: all; a
 *   reader: the writers) was granted before; LIMIT=2: c's permit leaves
 *   one for each client of ahead[c] still waiting (the clients holding
 *   on a quorum, c included, plus those waiting, at most LIMIT). REGALL:
 *   ahead[c] holds the registrations that landed on every node, not on
 *   a quorum (the semaphore's order needs it: docs/proof.md).
 *   Controls: NORANK (LIMIT) entitled = registered; RANKONLY (above);
 *   RIGNORE (RW) readers ignore the queued writers.
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
#ifndef LIMIT
#define LIMIT 1            /* permits: 1 = the mutex, 2 = a semaphore */
#endif
/* ORDER: a registration counts (regm) once it landed on REGN nodes: a
 * quorum, or with REGALL every node */
#ifdef REGALL
#define REGN N
#else
#define REGN Q
#endif
#if LIMIT > 2
#error "fairq.pml: LIMIT is 1 or 2 (HSLOTS, MAYTRY)"
#endif
#if defined(RW) && LIMIT > 1
#error "fairq.pml: RW is a kind of its own (limit 1)"
#endif
#ifndef NW
#define NW 1               /* RW: clients 0 .. NW - 1 are writers */
#endif
#if LIMIT > 1 || defined(RW)
#define HLAPSE             /* a holder's entry may lapse while it holds */
#endif

#define N   3
#define NC  3
#define Q   (N / 2 + 1)
#define QL  3
#define SMAX 5             /* the largest score a fault writes */

#define OP_ACQ1 1          /* fair-acquire, score '' (attempt 1') */
#define OP_ACQ  2          /* fair-acquire with the score */
#define OP_ENT  3          /* queue-enter */
#define OP_RB   4          /* fair-rollback */
#define OP_REL  5          /* fair-release */
#define OP_LV   6          /* queue-leave */
#define OP_SET  7          /* a bare SET NX (the mutex's, a writer's attempt 1) */

/* "redlock:queued" in the lock key (the mutex's, the writer key of the
 * read-write lock): free, but reserved for the queue; never c + 1 */
#define RESV (NC + 1)

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
#define ALLC       ((1 << NC) - 1)
#define NB(m)      (((m) & 1) + (((m) >> 1) & 1) + (((m) >> 2) & 1))
#define DEAD(c)    ((deadm & BIT(c)) != 0)
#define PRES(c, n) ((ep[n] & BIT(c)) != 0)
/* c sorts before o on node n: (score, token) */
#define BEATS(c, o, n) (!PRES(o, n) || sc[IX(c, n)] < sc[IX(o, n)] || \
                        (sc[IX(c, n)] == sc[IX(o, n)] && (c) < (o)))
/* o is queued ahead of c on node n (both present) */
#define BEFORE(o, c, n) (PRES(o, n) && !BEATS(c, o, n))
#define O1(c)  (((c) + 1) % NC)
#define O2(c)  (((c) + 2) % NC)
#define B01(e) ((e) -> 1 : 0)

/* The kind: what client o holds on node n, whether c's key is free
 * there, taking it, giving it back (compare-and-delete). */
#if LIMIT > 1
/* a semaphore: LIMIT slot keys per node, each an ordinary mutex key;
 * client c's attempt is for slot cs[c] (its keys are all on that slot:
 * an attempt starts once the earlier rollbacks landed) */
#define SLOTK(n, s)  key[(n) * LIMIT + (s)]
#define KEYOF(c, n)  SLOTK(n, cs[c])
#define HOLDN(o, n)  (KEYOF(o, n) == (o) + 1)
#define KFREE(c, n)  (KEYOF(c, n) == 0)
#define TAKE(c, n)   KEYOF(c, n) = (c) + 1
#define GIVE(c, n)   if :: HOLDN(c, n) -> KEYOF(c, n) = 0 :: else fi
/* slots held on node n */
#define HSLOTS(n)    (B01(SLOTK(n, 0) != 0) + B01(SLOTK(n, 1) != 0))
/* entries ahead of c on node n: all of them (2.5 of docs/fair-queue.md,
 * RANKONLY), or only those whose client holds no slot there (default:
 * the holders are counted once, by their slot keys) */
#ifdef RANKONLY
#define AHEADN(c, n) (B01(BEFORE(O1(c), c, n)) + B01(BEFORE(O2(c), c, n)))
#define TAKEN(n)     0
#else
#define AHEADN(c, n) (B01(BEFORE(O1(c), c, n) && !HOLDN(O1(c), n)) + \
                      B01(BEFORE(O2(c), c, n) && !HOLDN(O2(c), n)))
#define TAKEN(n)     HSLOTS(n)
#endif
#ifdef NORANK
#define ENTITLED(c, n) PRES(c, n)
#else
#define ENTITLED(c, n) (PRES(c, n) && TAKEN(n) + AHEADN(c, n) < LIMIT)
#endif
#define FASTOK(c, n)   (ep[n] == 0)
#define SETOK(c, n)    0   /* no bare SET: attempt 1 is fair-acquire '' */
#define OP1(c)         OP_ACQ1
#define READYS(c, n, s) B01(ENTITLED(c, n) && SLOTK(n, s) == 0)
#define MAYSLOT(c, s)  (READYS(c, 0, s) + READYS(c, 1, s) + READYS(c, 2, s) >= Q)
#elif defined(RW)
/* read-write: per node the writer key wk (c + 1) and the reader set rs
 * (bit c); clients 0 .. NW - 1 write, the others read */
#define WMASK        ((1 << NW) - 1)
#define ISW(c)       ((c) < NW)
#define HOLDN(o, n)  (wk[n] == (o) + 1 || (rs[n] & BIT(o)) != 0)
/* fair-acquire: the writer key free or RES (no writer holds), and for a
 * writer no readers; a reader takes RES (clears it, joins the readers):
 * RES blocks nothing the queue allows */
#define KFREE(c, n)  ((wk[n] == 0 || wk[n] == RESV) && (!ISW(c) || rs[n] == 0))
#define TAKE(c, n)   if :: ISW(c) -> wk[n] = (c) + 1 \
                        :: else -> rs[n] = rs[n] | BIT(c); \
                           if :: wk[n] == RESV -> wk[n] = 0 :: else fi fi
/* a writer's attempt 1, a bare SET NX: no writer key, no readers, not
 * RES; a reader's attempt 1 is fair-acquire '' */
#define SETOK(c, n)  (wk[n] == 0 && rs[n] == 0)
#define OP1(c)       (ISW(c) -> OP_SET : OP_ACQ1)
#define KSLOT(n)     wk[n]
#define KIDLE(n)     (wk[n] == 0 && rs[n] == 0)
#define GIVE(c, n)   if :: wk[n] == (c) + 1 -> wk[n] = 0 :: else fi; \
                     rs[n] = rs[n] & ~BIT(c)
/* a reader: no writer entry ahead of it (RIGNORE: the queue ignored);
 * a writer: the head */
#define WAHEAD(o, c, n) (ISW(o) && BEFORE(o, c, n))
#ifdef RIGNORE
#define RENT(c, n)   PRES(c, n)
#define RFAST(n)     1
#else
#define RENT(c, n)   (PRES(c, n) && !WAHEAD(O1(c), c, n) && !WAHEAD(O2(c), c, n))
#define RFAST(n)     ((ep[n] & WMASK) == 0)
#endif
#define ENTITLED(c, n) (ISW(c) -> (PRES(c, n) && BEATS(c, O1(c), n) && \
                        BEATS(c, O2(c), n)) : RENT(c, n))
#define FASTOK(c, n)   (ISW(c) -> ep[n] == 0 : RFAST(n))
#else
/* the mutex: the lock key; fair-acquire takes it free or RES, attempt
 * 1 (a bare SET NX) only free */
#define HOLDN(o, n)  (key[n] == (o) + 1)
#define KFREE(c, n)  (key[n] == 0 || key[n] == RESV)
#define SETOK(c, n)  (key[n] == 0)
#define OP1(c)       OP_SET
#define KSLOT(n)     key[n]
#define KIDLE(n)     (key[n] == 0)
#define TAKE(c, n)   key[n] = (c) + 1
#define GIVE(c, n)   if :: key[n] == (c) + 1 -> key[n] = 0 :: else fi
#ifdef NOHEAD
#define ENTITLED(c, n) PRES(c, n)
#else
#define ENTITLED(c, n) (PRES(c, n) && BEATS(c, ((c) + 1) % NC, n) && \
                        BEATS(c, ((c) + 2) % NC, n))
#endif
#define FASTOK(c, n)   (ep[n] == 0)
#endif
#if LIMIT == 1
#define READY(c, n) ((ENTITLED(c, n) && KFREE(c, n)) -> 1 : 0)
#define MAYTRY(c)   (READY(c, 0) + READY(c, 1) + READY(c, 2) >= Q)
#endif
/* nodes where client o holds (a key, a slot, a writer key or a reader
 * bit) */
#define HELD(o)     (B01(HOLDN(o, 0)) + B01(HOLDN(o, 1)) + B01(HOLDN(o, 2)))
/* clients holding on a quorum (the permits in use) */
#define HOLDQ       (B01(HELD(0) >= Q) + B01(HELD(1) >= Q) + B01(HELD(2) >= Q))
#define IDLE(c)     (empty(rq[IX(c, 0)]) && empty(rq[IX(c, 1)]) && \
                     empty(rq[IX(c, 2)]))

#if LIMIT > 1
byte key[N * LIMIT]; /* the slot keys: c + 1, 0 = free */
byte cs[NC];        /* client c's slot (its current attempt's) */
byte inuse;         /* (scratch) HOLDQ at a grant */
#elif defined(RW)
byte wk[N];         /* the writer key: c + 1, 0 = free */
byte rs[N];         /* the reader set: bit c */
#else
byte key[N];        /* the lock key: c + 1, 0 = free */
#endif
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
/* Every client is eventually granted or dead, and then no node keeps
 * RES (the dead waiter's entries purged, the queue gone: a bare SET NX
 * passes again). A client waits from its first step (enabled from the
 * start) to its grant or death and acquires once, so this is
 * [] (waiting[c] -> <> (granted[c] || dead[c])) for every c; that
 * form's claim is larger and its search takes twice as long (same
 * verdicts, docs/proof.md). The liveness runs are the mutex's. */
#if LIMIT > 1 || defined(RW)
#error "fairq.pml: LIVE is the mutex's"
#endif
#define NORES (key[0] != RESV && key[1] != RESV && key[2] != RESV)
ltl served { <> (nfin == NC && NORES) }
#endif

inline drop_entry(cc, n)
{
    ep[n] = ep[n] & ~BIT(cc);
    sc[IX(cc, n)] = 0
}

/* settle: the end of every script step that touches node n's queue
 * (fair-acquire granted or refused, queue-enter, fair-release and
 * -rollback, queue-leave, the purge): while the queue is non-empty the
 * lock key is not left free (RES: a bare SET NX cannot take it), and
 * RES goes with the queue. A semaphore has no reservation. NORESERVE
 * (control): RES is never set. */
#if LIMIT == 1
inline settle(n)
{
    if
#ifndef NORESERVE
    :: ep[n] != 0 && KIDLE(n) -> KSLOT(n) = RESV
#endif
    :: ep[n] == 0 && KSLOT(n) == RESV -> KSLOT(n) = 0
    :: else
    fi
}
#else
#define settle(n) skip
#endif

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
#define READ 3      /* refused without a ticket: attempt 1' next */

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

/* at c's grant nobody else holds (a semaphore: at most LIMIT hold,
 * c included; read-write: no writer beside anyone, no reader beside a
 * writer): a holder keeps its keys from its grant until its release
 * lands (no time here) */
#if LIMIT > 1
inline assert_exclusive()
{
    assert(inuse <= LIMIT)
}
#else
#ifdef RW
#define EXCL(o) (c == (o) || !(ISW(c) || ISW(o)) || HELD(o) < Q)
#else
#define EXCL(o) (c == (o) || HELD(o) < Q)
#endif
inline assert_exclusive()
{
    assert(EXCL(0));
    assert(EXCL(1));
    assert(EXCL(2))
}
#endif

#ifdef ORDER
/* at c's grant the clients registered before its attempt 1 (ahead[c])
 * that it conflicts with were granted before it; a semaphore: c's
 * permit leaves one for each of them still waiting (the permits in use,
 * c's included, plus those waiting, at most LIMIT) */
#if LIMIT > 1
#define ORDERED (inuse + NB(ahead[c] & ~servm) <= LIMIT)
#elif defined(RW)
#define ORDERED ((ahead[c] & ~servm & (ISW(c) -> ALLC : WMASK)) == 0)
#else
#define ORDERED ((ahead[c] & ~servm) == 0)
#endif
#endif

/* The attempt is decided (at the quorum, acquire.c ROUND_EARLY), in the
 * step its deciding reply lands. */
inline decided()
{
    und = false;
    if
    :: yes >= Q ->
        /* granted; it holds until its release lands on a node */
#if LIMIT > 1
        inuse = HOLDQ;
#endif
        assert_exclusive();
#ifdef ORDER
        assert(ORDERED);
        servm = servm | BIT(c);
#endif
#if LIMIT > 1
        inuse = 0;
#endif
        nfin++;
        ph = DONE;
        send_all(OP_REL)
    :: else ->
        roll_back();
        ph = WAIT;
        if
        :: op == OP_SET ->
            /* the bare SET refused: attempt 1' (fair-acquire '', which
             * reads K:qt) */
            ph = READ
#ifndef TICKETANY
        :: op != OP_SET && tk[c] == 0 && nrep < Q ->
            /* fewer than a quorum of K:qt: no ticket, read again */
            ph = READ
#endif
        :: else ->
            /* a fair-acquire refused (not a bare SET) */
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
 * reply is counted in the same step (a dead client counts nothing). A
 * bare SET touches neither the queue nor K:qt; every other step
 * settles. */
inline apply(n)
{
    ok = false;
    if
    :: op == OP_ACQ1 || op == OP_ACQ || op == OP_SET ->
#ifdef HEADPURGE
        if
        :: op != OP_SET -> headpurge(n)
        :: else
        fi;
#endif
        if
        :: (op == OP_SET && SETOK(c, n)) ||
           (KFREE(c, n) && ((op == OP_ACQ1 && FASTOK(c, n)) ||
                            (op == OP_ACQ && ENTITLED(c, n)))) ->
            TAKE(c, n); ok = true
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
            if
            :: op != OP_SET ->
                nrep++;
                if
                :: qt[n] > maxq -> maxq = qt[n]
                :: else
                fi
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
            :: NB(ack) >= REGN -> regm = regm | BIT(c); ack = 0
            :: else
            fi
        :: else
        fi
#else
        skip
#endif
    :: op == OP_RB || op == OP_REL ->
        GIVE(c, n);
        if
        :: op == OP_REL -> drop_entry(c, n)
        :: else
        fi
    :: op == OP_LV -> drop_entry(c, n)
    fi;
    if
    :: op != OP_SET -> settle(n)
    :: else
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
/* attempt 1's slot, any (a semaphore; a choice needs atomic, not
 * d_step) */
#if LIMIT > 1
#define PICKSLOT  if :: cs[c] = 0 :: cs[c] = 1 fi;
#define ATTEMPT1  atomic
#else
#define PICKSLOT
#define ATTEMPT1  d_step
#endif

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

    /* attempt 1, the fast path: the bare SET (the mutex, a writer), or
     * fair-acquire '' (a reader; a semaphore, for any slot: C tries them
     * in a random order, one attempt each) */
    ATTEMPT1 {
        PICKSLOT
#ifdef ORDER
        ahead[c] = regm;
#endif
        und = true;
        ph = TRY;
        send_all(OP1(c))
    };
end_loop:
    do
    DELIVER
#if LIMIT > 1
    /* entitled and a slot free on a quorum: that slot's fair-acquire
     * with the score */
    :: d_step {
           ACTIVE(WAIT) && MAYSLOT(c, 0) -> cs[c] = 0; und = true; ph = TRY;
           send_all(OP_ACQ)
       }
    :: d_step {
           ACTIVE(WAIT) && MAYSLOT(c, 1) -> cs[c] = 1; und = true; ph = TRY;
           send_all(OP_ACQ)
       }
#else
    :: d_step {
           /* entitled and free on a quorum: fair-acquire with the score */
           ACTIVE(WAIT) && MAYTRY(c) -> und = true; ph = TRY; send_all(OP_ACQ)
       }
#endif
    /* attempt 1': after a refused bare SET, or without a quorum of K:qt */
    :: ATTEMPT1 { ACTIVE(READ) -> PICKSLOT und = true; ph = TRY; send_all(OP_ACQ1) }
#ifdef HLAPSE
    /* a holder's entry lapses while it holds (it lives entry_px from
     * the grant, C: 2.0 of docs/fair-queue.md) */
    :: d_step { ph == DONE && !DEAD(c) && PRES(c, 0) -> drop_entry(c, 0) }
    :: d_step { ph == DONE && !DEAD(c) && PRES(c, 1) -> drop_entry(c, 1) }
    :: d_step { ph == DONE && !DEAD(c) && PRES(c, 2) -> drop_entry(c, 2) }
#endif
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
    pv = 0;
    settle(n)
}

/* a dead client holds on node n (a slot, a writer key, a reader bit) */
#define DEADHOLD(n) ((DEAD(0) && HOLDN(0, n)) || (DEAD(1) && HOLDN(1, n)) || \
                     (DEAD(2) && HOLDN(2, n)))
/* the dead clients' keys on node n lapse */
inline give_dead(n)
{
    for (pv : 0 .. NC - 1) {
        if
        :: DEAD(pv) -> GIVE(pv, n)
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
#if LIMIT == 1 && !defined(RW)
    /* (RESV - 1 is no client: RES does not lapse) */
    :: d_step { key[0] != 0 && DEAD(key[0] - 1) -> key[0] = 0 }
    :: d_step { key[1] != 0 && DEAD(key[1] - 1) -> key[1] = 0 }
    :: d_step { key[2] != 0 && DEAD(key[2] - 1) -> key[2] = 0 }
#else
    :: d_step { DEADHOLD(0) -> give_dead(0) }
    :: d_step { DEADHOLD(1) -> give_dead(1) }
    :: d_step { DEADHOLD(2) -> give_dead(2) }
#endif
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
#if LIMIT == 1
        :: d_step { KIDLE(n) || KSLOT(n) == RESV -> KSLOT(n) = RESV - KSLOT(n) }
                                        /* RES set where free, or cleared */
#endif
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
