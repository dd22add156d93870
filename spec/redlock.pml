/* SPDX-License-Identifier: BSD-3-Clause */
/* redlock.pml -- the Redlock protocol as libredlock implements it
 * (src/acquire.c, extend.c, release.c, watchdog.c, quorum.c, node.c,
 * fence.c, src/lua), with an adversarial environment. spec/README.md maps
 * every process and step to the C function that implements it.
 *
 * Configuration: compile-time macros, set by tools/model-check.sh with
 * spin -D...:
 *   N        nodes (3 or 5)            K       clients (2 or 3)
 *   ATT      acquire attempts per client (each has its own token, as in
 *            C: token.h attempt digits; SAMETOKEN is the control)
 *   TMAX     time horizon in ticks     RST     node restarts allowed
 *   PAUSES   client pauses allowed (a paused client does nothing while
 *            the clock runs: GC, SIGSTOP, swap)
 *   FENCE    fenced acquires           WATCH   every holder runs a watchdog
 *   PERSIST  a restarted node keeps its data (appendfsync always)
 * Negative controls and variants (each off by default = today's C code):
 *   NOQUAR   restarted nodes vote at once (no restart quarantine, §5.7)
 *   RESURRECT the extend script SETs an absent key (instead of touch-only)
 *   NODRIFT  validity = ttl - elapsed, without the drift term
 *   NOWALL   fence candidate max_read + 1, without the wall-clock term
 *   FENCEFIX the fencing rule of fence.c: each counter carries the
 *            run_id (epoch) of the server that wrote it; a counter is
 *            trusted while the node has not restarted since; every reply
 *            (refusals too) carries its counter, max_read is taken over
 *            all; the fenced acquire round waits for every node; token =
 *            max_read + 1 when a quorum of the GRANTING (voting) nodes'
 *            counters is trusted, else the wall-clock fallback max(max_read + 1, clk).
 *            With NOWALL there is no fallback: such an attempt fails, and
 *            every node starts with counter 1, trusted (a resource fenced
 *            before), so the trusted-quorum rule is checked on its own
 *   TRUSTREFUSED (control, with FENCEFIX NOWALL) refusals' counters count
 *            as trusted too, and an answer from every node replaces the
 *            trusted quorum
 *   FWONE    (control, with FENCEFIX) the write round succeeds at one node
 *   REV      (with FENCEFIX) the counter and its marker are the node's
 *            own, shared by every resource (src/fence.c): `other`, a
 *            second resource's fenced acquire, reads and raises them at
 *            any moment. A fence-write sets the marker (repairs a
 *            counter it finds untrusted) only where the node's current
 *            run was out of its restart quarantine at its round's start:
 *            REVMARK
 *   EAGERMARK (control, with REV) every fence-write sets the marker, as
 *            the per-resource rule did: another resource's stale token
 *            repairs a restarted node
 *   REVSTALE (environment, with REV, NOWALL, N = 3) the other
 *            resource's round started at tick 0 and read nodes 1 and 2
 *            (counter 1, trusted) before token 3 was granted on nodes 0
 *            and 1; then both restarted empty at tick 0 (its key is left
 *            on node 2)
 *   SAMETOKEN (control) the retries of one acquisition reuse its token
 *            (a new one only after a release), as C did before the fix
 *            of docs/proof.md finding 8; an attempt's SET clears the
 *            token's ghost `dead` bit on its node (a new lock)
 *   LATEROLLBACK (environment) a rollback may reach a node at any later
 *            time, after requests sent later on the same or another
 *            connection: resent as EVAL after a NOSCRIPT, kept while the
 *            node was down, or left on a connection abandoned while the
 *            server was paused (a ghost process queues it at any later
 *            time). With SAMETOKEN it can delete a retry's key; with a
 *            token per attempt it cannot
 *   BATCH    (issue 44) a node may run the releases and extends at the
 *            heads of two clients' connections as one batch call: each
 *            entry compared with its own token and answered on its own,
 *            in either order; or the call fails (before it ran, or its
 *            reply lost after): an error for each extend in it (a failed
 *            node request), each release left undone or done unseen
 *   SWAPTOKEN (control, with BATCH) each entry of a batch is compared
 *            with the other entry's token (the per-key rule broken: an
 *            index off by one)
 * Environment narrowing (used to make a control's trail reachable within
 * its budget; the positive model runs in the same narrowed environment
 * too, so the comparison is fair):
 *   LATE     clients other than 0 start only after every restart
 *   RSTNODE  only node 0 restarts
 *   SOLO     clients other than 0 never start
 *   SHORTKEYS every key lives TTL - D (the shortest the drift allows)
 *   NOTIMEOUT a client waits for every reply (no per-node timeouts; a
 *            request dropped by a restart leaves its client blocked,
 *            which such runs do not report: pan -E)
 *   RESTOREONCE extend restores a restarted node once per restart
 *   FASTNODE node 0's clock runs outside the drift bound (issue 15)
 *   GUARD    the clock guard: a clock-suspect node does not vote
 *
 * Abstractions (see spec/README.md for the argument behind each):
 *   - Time is a global tick counter `clk` (the client's CLOCK_BOOTTIME,
 *     in units of the drift allowance). All clients measure it exactly;
 *     the whole relative clock error is put on the nodes: a node keeps a
 *     key for between TTL - D and TTL ticks of client time (D = drift,
 *     one tick), chosen nondeterministically per SET/PEXPIRE.
 *   - A request is applied atomically by its node (Redis runs one
 *     command or script at a time). Each client-node connection is FIFO
 *     (TCP); requests on different connections are reordered freely;
 *     a node may drop the request at the head of a connection (loss); a
 *     reply may be read at any later time or never (delay, loss); the
 *     client may time out any node that has not answered, at any moment.
 *   - A restart loses the node's data (unless PERSIST) and every request
 *     queued to it (the connections break).
 *   - The wall clock (fence candidate) is `clk`: client clocks agree. */

#ifndef N
#define N 3
#endif
#ifndef K
#define K 2
#endif
#ifndef ATT
#define ATT 2
#endif
#ifndef TMAX
#define TMAX 9
#endif
#ifndef RST
#define RST 1
#endif
#ifndef PAUSES
#define PAUSES 0
#endif

#define Q     (N / 2 + 1)   /* quorum_size() */
#define TTL   4             /* lock TTL, ticks */
#define D     1             /* drift = ttl * drift_factor + 2 ms, ticks */
#define MARGIN 1            /* watchdog margin min(ttl/10, 1 s), >= 1 tick */
#define INTERVAL 1          /* watchdog renewal interval ttl/3, ticks */
#define QUAR  (TTL - D)     /* quarantine: uptime >= max_ttl, as measured
                             * by a node clock that may run fast */
#ifdef FASTNODE
#define FAST  2             /* node 0 loses keys up to this much earlier */
#else
#define FAST  0
#endif
#ifdef NODRIFT
#define DRIFT 0
#else
#define DRIFT D
#endif

#define QL 3                /* requests queued per connection */

/* request ops */
#define OP_ACQ  1   /* SET NX PX ttl / acquire-fenced script */
#define OP_REL  2   /* release script (compare and delete) */
#define OP_EXT  3   /* extend script (touch only) */
#define OP_RST  4   /* SET NX PX from restore_on_restarted_nodes */
#define OP_FW   5   /* fence-write script */

/* replies */
#define R_NONE 0
#define R_YES  1
#define R_NO   2
#define R_ERR  3            /* the batch call failed: counted as a failed vote */

#define IX(c, n) ((c) * N + (n))
#define BIT(t)   (1 << (t))

/* ---- Node state (one Redis master each) ---- */
byte key[N];        /* lock key's token, 0 = absent */
byte kexp[N];       /* tick at which the key expires */
byte fence[N];      /* fence counter, 0 = absent */
byte fmark[N];      /* FENCEFIX: epoch (up + 1) of the run that wrote the
                     * counter's run_id marker, 0 = absent */
byte up[N];         /* 0 = never restarted, else restart tick + 1 */
#ifdef REV
byte ct0[K];        /* each client's current round-1 start (its t0) */
bool okey[N];       /* the other resource's key (nobody contends for it) */
#endif
byte rst_left = RST;

/* ---- Network ---- */
chan rq[K * N] = [QL] of { byte, byte, byte, byte }; /* op, token, value,
                                                      * round */
byte rtag[K * N];   /* round the latest reply belongs to (0 = none) */
byte rres[K * N];   /* R_YES / R_NO */
byte rval[K * N];   /* fence counter carried by the reply */
bool rtr[K * N];    /* FENCEFIX: the counter's marker is the node's run */

#ifdef LATEROLLBACK
byte resend[K * N]; /* a rollback's token waiting to be queued again */
byte nresend;       /* how many resend[] are set */
#endif

/* ---- Clock ---- */
byte clk = 0;

/* ---- Client state visible to the clock and the properties ---- */
byte rnd[K];        /* current round id per client (late replies differ) */
bool holding[K];    /* granted and not released */
bool lost[K];       /* told LOST (watchdog / ELOST) */
bool paused[K];
bool inflight[K];   /* an extend round is running */
byte dl[K];         /* validity deadline (lock->deadline_us) */
byte nren[K];       /* next renewal tick (watchdog) */
byte pauses_left = PAUSES;

/* ---- Ghost state for the properties ---- */
short dead[N];      /* tokens whose key lapsed on a node (expiry/delete),
                     * cleared by a restart */
byte lastfence = 0; /* last token granted */
#ifdef FASTNODE
bool suspect[N];    /* the clock guard's verdict (GUARD): set at start for
                     * node 0, i.e. its rate is known from the samples taken
                     * before the first acquire (connect handshake) */
#endif

/* node_voting(): ready, not quarantined (§5.7), not clock-suspect (§5.8) */
#ifdef NOQUAR
#define QUARANTINED_AT(n, t) false
#else
#define QUARANTINED_AT(n, t) (up[n] != 0 && (t) + 1 < up[n] + QUAR)
#endif
#define QUARANTINED(n) QUARANTINED_AT(n, clk)
#if defined(FASTNODE) && defined(GUARD)
#define VOTING(n) (!QUARANTINED(n) && !suspect[n])
#else
#define VOTING(n) (!QUARANTINED(n))
#endif

/* ---- Properties ---- */

/* Mutual exclusion while validity lasts: checked whenever a validity
 * starts or grows (grant, successful extend); ticks only shorten it. */
#define VALID(x) (holding[x] && clk < dl[x])
inline assert_exclusive(me)
{
    assert(me == 0 || !VALID(0));
    assert(me == 1 || !VALID(1));
#if K > 2
    assert(me == 2 || !VALID(2));
#endif
}

/* The key of token t is set on node n: it must not have lapsed there
 * (an extend never recreates an absent key). */
inline set_key(n, t)
{
    assert((dead[n] & BIT(t)) == 0);
    key[n] = t;
    if
#ifndef SHORTKEYS
    :: kexp[n] = clk + TTL
#endif
    :: kexp[n] = clk + TTL - D
    :: (FAST > 0 && n == 0) -> kexp[n] = clk + TTL - D - FAST
    fi
}

inline drop_key(n)
{
    dead[n] = dead[n] | BIT(key[n]);
    key[n] = 0;
    kexp[n] = 0
}

/* ---- Nodes ---- */

#ifdef REV
/* fence-write's marker (REV): set only where the node's current run was
 * out of its restart quarantine at the round's start t (a run that
 * started after t is too: the client lists the run_ids of the nodes that
 * were, acquire.c fence_markable); elsewhere the counter is raised and
 * its marker left as it was. With NOQUAR (PERSIST: restart trusted) a
 * restarted node's counter is whole: it may be marked at once. */
#ifdef EAGERMARK
#define REVMARK(n, t) true
#else
#define REVMARK(n, t) (!QUARANTINED_AT(n, t))
#endif
inline fence_mark(n, t)
{
    if
    :: REVMARK(n, t) -> fmark[n] = up[n] + 1
    :: else -> skip
    fi
}
#endif

/* Apply one request from client c at node n (one Redis command/script),
 * and store the reply tagged with the round it answers. */
inline apply(c, n, op, t, v, tag)
{
    if
    :: op == OP_ACQ ->          /* SET NX PX / acquire-fenced */
        rtag[IX(c, n)] = tag;
#ifdef FENCE
        rval[IX(c, n)] = fence[n];
#ifdef FENCEFIX
        rtr[IX(c, n)] = (fence[n] > 0 && fmark[n] == up[n] + 1);
#endif
#endif
        if
        :: key[n] == 0 ->
#ifdef SAMETOKEN
            dead[n] = dead[n] & ~BIT(t);
#endif
            set_key(n, t); rres[IX(c, n)] = R_YES
        :: else -> rres[IX(c, n)] = R_NO
        fi
    :: op == OP_REL ->          /* release: delete where it holds t */
        if
        :: key[n] == t -> drop_key(n)
        :: else -> skip
        fi
    :: op == OP_EXT ->          /* extend: PEXPIRE only where it holds t */
        rtag[IX(c, n)] = tag;
        rval[IX(c, n)] = 0;
        if
        :: key[n] == t -> set_key(n, t); rres[IX(c, n)] = R_YES
#ifdef RESURRECT
        :: key[n] == 0 -> set_key(n, t); rres[IX(c, n)] = R_YES
        :: key[n] != 0 && key[n] != t -> rres[IX(c, n)] = R_NO
#else
        :: else -> rres[IX(c, n)] = R_NO
#endif
        fi
    :: op == OP_RST ->          /* restore: SET NX PX */
        if
        :: key[n] == 0 -> set_key(n, t)
        :: else -> skip
        fi
    :: op == OP_FW ->           /* fence-write: raise where it holds t */
        rtag[IX(c, n)] = tag;
        rval[IX(c, n)] = 0;
        if
        :: key[n] == t ->
            if
            :: fence[n] < v -> fence[n] = v
            :: else -> skip
            fi;
#if defined(REV)
            fence_mark(n, ct0[c]);
#elif defined(FENCEFIX)
            fmark[n] = up[n] + 1;
#endif
            rres[IX(c, n)] = R_YES
        :: else -> rres[IX(c, n)] = R_NO
        fi
    fi
}

/* A restart: the data is lost (unless PERSIST), so are the requests
 * queued to the node (the connections break). */
inline restart(n)
{
    rst_left--;
    up[n] = clk + 1;
#ifndef PERSIST
    key[n] = 0;
    fence[n] = 0;
    fmark[n] = 0;
    dead[n] = 0;
#ifdef REV
    okey[n] = false;
#endif
#endif
    for (j : 0 .. K - 1) {
        do
        :: nempty(rq[IX(j, n)]) -> rq[IX(j, n)]?_, _, _, _
        :: empty(rq[IX(j, n)]) -> break
        od
    }
}

/* One step of a node: serve the head of one connection (apply it or,
 * as a loss, drop it), or restart. */
inline serve(c)
{
    rq[IX(c, n)]?op, t, v, tag;
    if
    :: apply(c, n, op, t, v, tag)
#ifdef LOSS
    :: skip                     /* lost */
#endif
    fi
}

#ifdef BATCH
/* A batch call's entries, both releases or extends (R_ERR: the call
 * failed; an extend's round counts it as a failed node request, which
 * the release's fire-and-forget does not read). */
#define BATCHABLE(c) (rq[IX(c, n)]?[OP_REL, _, _, _] || rq[IX(c, n)]?[OP_EXT, _, _, _])
inline batch_error(c, op, tag)
{
    if
    :: op == OP_EXT -> rtag[IX(c, n)] = tag; rres[IX(c, n)] = R_ERR; rval[IX(c, n)] = 0
    :: else -> skip
    fi
}

inline serve_batch()
{
    rq[IX(0, n)]?op, t, v, tag;
    rq[IX(1, n)]?op2, t2, v2, tag2;
#ifdef SWAPTOKEN
    j = t; t = t2; t2 = j; j = 0;
#endif
    if
    :: true -> apply(0, n, op, t, v, tag); apply(1, n, op2, t2, v2, tag2)
    :: true -> apply(1, n, op2, t2, v2, tag2); apply(0, n, op, t, v, tag)
    :: true -> batch_error(0, op, tag); batch_error(1, op2, tag2)
    fi;
    if
    :: skip
    :: batch_error(0, op, tag); batch_error(1, op2, tag2)
    fi;
    op2 = 0; t2 = 0; v2 = 0; tag2 = 0
}
#endif

proctype node(byte n)
{
    byte op, t, v, tag, j;
#ifdef BATCH
    byte op2, t2, v2, tag2;
#endif
end:
    do
#ifdef BATCH
    :: atomic { BATCHABLE(0) && BATCHABLE(1) -> serve_batch(); op = 0; t = 0; v = 0; tag = 0 }
#endif
    :: atomic { nempty(rq[IX(0, n)]) -> serve(0); op = 0; t = 0; v = 0; tag = 0 }
    :: atomic { nempty(rq[IX(1, n)]) -> serve(1); op = 0; t = 0; v = 0; tag = 0 }
#if K > 2
    :: atomic { nempty(rq[IX(2, n)]) -> serve(2); op = 0; t = 0; v = 0; tag = 0 }
#endif
#ifdef RSTNODE
    :: atomic { rst_left > 0 && n == 0 -> restart(n); j = 0 }
#else
    :: atomic { rst_left > 0 -> restart(n); j = 0 }
#endif
    od
}

/* ---- Clock ---- */

/* The watchdog's timer is due: the margin before the validity ends, or
 * the next renewal when none is running (watchdog.c schedule()). */
#define WATCHED(x) (holding[x] && !lost[x] && !paused[x])
#ifdef WATCH
#define DUE(x) (WATCHED(x) && \
                (clk + MARGIN >= dl[x] || (!inflight[x] && clk >= nren[x])))
#else
#define DUE(x) false
#endif

proctype clock()
{
    byte n;
end:
    do
    :: atomic {
        /* Timing assumption: a running (not paused) client's timer fires
         * on time: the clock does not pass a due instant unserved. */
        clk < TMAX && !DUE(0) && !DUE(1) && !DUE(K - 1) ->
        clk++;
        for (n : 0 .. N - 1) {
            if
            :: key[n] != 0 && kexp[n] <= clk -> drop_key(n)
            :: else -> skip
            fi
        }
        /* A holder whose lock is gone is told before its validity ends:
         * a watched holder never reaches the end of its validity without
         * a LOST signal. */
#ifdef WATCH
        assert(!WATCHED(0) || clk < dl[0]);
        assert(!WATCHED(1) || clk < dl[1]);
        assert(!WATCHED(K - 1) || clk < dl[K - 1]);
#endif
        n = 0
    }
    od
}

/* ---- Clients ---- */

#define PEND(x) ((mask & (1 << (x))) == 0)
#define GOT(x)  (PEND(x) && rtag[IX(c, x)] == rnd[c])

/* Send a request; a full connection loses it. */
inline send(x, op, v)
{
    if
    :: nfull(rq[IX(c, x)]) -> rq[IX(c, x)]!op, tok, v, rnd[c]
    :: full(rq[IX(c, x)]) -> skip
    fi
}

/* round_start(): a new round id makes every older reply a late one,
 * which the client ignores (node.c drops replies of detached requests). */
inline new_round()
{
    rnd[c]++;
    mask = 0; yes = 0; no = 0; refm = 0; ref = 0; ans = 0; pres = 0;
    maxr = 0
}

/* Pick one node whose vote is still open: its reply if one is there
 * (any order: replies are reordered), or a per-node timeout while no
 * reply is there (the request or reply is lost, or late: the node may
 * still apply it afterwards). The slot is cleared once read. */
inline pick()
{
    if
    :: GOT(0) -> i = 0; got = true
    :: GOT(1) -> i = 1; got = true
    :: GOT(2) -> i = 2; got = true
#if N > 3
    :: GOT(3) -> i = 3; got = true
    :: GOT(4) -> i = 4; got = true
#endif
#ifndef NOTIMEOUT
    :: PEND(0) && !GOT(0) -> i = 0; got = false
    :: PEND(1) && !GOT(1) -> i = 1; got = false
    :: PEND(2) && !GOT(2) -> i = 2; got = false
#if N > 3
    :: PEND(3) && !GOT(3) -> i = 3; got = false
    :: PEND(4) && !GOT(4) -> i = 4; got = false
#endif
#endif
    fi
}

/* count_vote() and classify(): a YES from a node that is not voting
 * counts as a NO. Fenced acquire: the counter comes with each granting
 * reply (FENCEFIX: with every reply, max over all; trusted ones counted
 * among the granting voting nodes, fence.c fence_read_reply). */
inline count(ph)
{
    mask = mask | (1 << i);
    if
    :: got && rres[IX(c, i)] == R_YES && VOTING(i) -> yes++
    :: else -> no++
    fi;
    if
    :: got && rres[IX(c, i)] == R_NO -> refm = refm | (1 << i); ref++
    :: else -> skip
    fi;
    if
    :: got -> ans++
    :: else -> skip
    fi;
#ifdef FENCEFIX
    if
    :: ph == 0 && got ->
        if
#ifdef TRUSTREFUSED
        :: rtr[IX(c, i)] -> pres++
#else
        :: rtr[IX(c, i)] && rres[IX(c, i)] == R_YES && VOTING(i) -> pres++
#endif
        :: else -> skip
        fi;
        if
        :: rval[IX(c, i)] > maxr -> maxr = rval[IX(c, i)]
        :: else -> skip
        fi
    :: else -> skip
    fi;
#else
    if
    :: ph == 0 && got && rres[IX(c, i)] == R_YES && rval[IX(c, i)] > maxr ->
        maxr = rval[IX(c, i)]
    :: else -> skip
    fi;
#endif
    if
    :: got -> rtag[IX(c, i)] = 0; rres[IX(c, i)] = 0; rval[IX(c, i)] = 0;
        rtr[IX(c, i)] = false
    :: else -> skip
    fi;
    got = false;
    i = 0
}

#define ALLN ((1 << N) - 1)
/* quorum_verdict(); FENCEFIX: the fenced acquire round waits for every
 * node (ROUND_ALL); with NOWALL (no fallback) it also needs a quorum of
 * trusted counters among the granting nodes (TRUSTREFUSED: among all
 * replies, or an answer from every node). FWONE: the write round succeeds
 * at one node (control). */
#if defined(NOWALL) && defined(TRUSTREFUSED)
#define READOK (pres >= Q || ans == N)
#elif defined(NOWALL)
#define READOK (pres >= Q)
#else
#define READOK true
#endif
#if defined(FENCE) && defined(FENCEFIX)
#ifdef FWONE
#define SUCCESS(ph) (ph == 0 && mask == ALLN && yes >= Q && READOK || \
                     ph == 1 && yes >= 1 || ph == 2 && yes >= Q)
#else
#define SUCCESS(ph) (ph == 0 && mask == ALLN && yes >= Q && READOK || \
                     ph != 0 && yes >= Q)
#endif
#define FAILURE(ph) (ph == 0 && mask == ALLN && !SUCCESS(ph) || \
                     ph != 0 && no > N - Q)
#else
#define SUCCESS(ph) (yes >= Q)
#define FAILURE(ph) (no > N - Q)
#endif

/* roll_back(): release on every node that may hold the token (all but
 * the refusers; all after the fence round), queued behind the attempt.
 * LATEROLLBACK: handed to the resender instead, which queues it at any
 * later time (one waiting per client and node: another is dropped, as a
 * full connection drops it; a key left behind only lapses). */
#ifdef LATEROLLBACK
#define SEND_ROLLBACK(x) \
    if \
    :: resend[IX(c, x)] == 0 -> resend[IX(c, x)] = tok; nresend++ \
    :: else -> skip /* the same token's rollback is waiting already */ \
    fi
#else
#define SEND_ROLLBACK(x) send(x, OP_REL, 0)
#endif
inline roll_back(all)
{
    for (i : 0 .. N - 1) {
        if
        :: all || (refm & (1 << i)) == 0 -> SEND_ROLLBACK(i)
        :: else -> skip
        fi
    }
    i = 0
}

inline release_all()
{
    for (i : 0 .. N - 1) {
        send(i, OP_REL, 0)
    }
    i = 0
}

/* acquired(), watchdog_attach(): in the same step as the decision (a
 * later step would let time pass between the validity check and the
 * grant, which the C code does not do). */
inline grant()
{
    dl[c] = t0 + TTL - DRIFT;
#ifdef SANITY
    assert(c == 0);
#endif
    assert_exclusive(c);
    holding[c] = true;
    lost[c] = false;
    inflight[c] = false;
    nren[c] = clk + INTERVAL;
#ifdef RESTOREONCE
    for (i : 0 .. N - 1) {
        rsd[i] = 0
    }
    i = 0;
#endif
    mask = 0; yes = 0; no = 0; refm = 0; ref = 0; ans = 0; pres = 0;
    maxr = 0; fv = 0
}

proctype client(byte c)
{
    byte a = 0;         /* attempts made */
    byte tok;           /* this attempt's token (unique per attempt;
                         * SAMETOKEN: per acquisition, 0 = none yet) */
    byte t0;            /* start of the winning SET round */
    byte t0e;           /* start of the extend round */
    byte i, mask, yes, no, refm, ref, ans, pres, maxr, fv;
    bool got;
#ifdef RESTOREONCE
    byte rsd[N];        /* restart (up) already restored for */
#endif

end_next:
    /* attempt(): SET NX PX (acquire-fenced) on every node at once */
    atomic {
#if defined(SOLO)
        a < ATT && c == 0 ->
#elif defined(LATE)
        a < ATT && (c == 0 || rst_left == 0) ->
#else
        a < ATT ->
#endif
        a++;
#ifdef SAMETOKEN
        if
        :: tok == 0 -> tok = c * ATT + a
        :: else -> skip
        fi;
#else
        tok = c * ATT + a;
#endif
        new_round();
        t0 = clk;
#ifdef REV
        ct0[c] = clk;
#endif
        for (i : 0 .. N - 1) {
            send(i, OP_ACQ, 0)
        }
        i = 0
    };
acq_round:
    do
    :: atomic {
        pick(); count(0);
        if
        :: SUCCESS(0) -> goto acq_decided
        :: FAILURE(0) -> roll_back(false); goto end_next
        :: else -> skip
        fi
    }
    od;
acq_decided:
    /* acquire_decided(): enough_validity(), then fence_write() */
    atomic {
        if
        :: clk >= t0 + TTL - DRIFT -> roll_back(false); goto end_next
        :: else -> skip
        fi;
#ifdef FENCE
#if defined(FENCEFIX)
        /* fence_candidate(): a trusted quorum needs no wall clock */
#ifdef NOWALL
        fv = maxr + 1;
#else
        fv = (pres >= Q || maxr + 1 > clk -> maxr + 1 : clk);
#endif
#elif defined(NOWALL)
        fv = maxr + 1;
#else
        fv = (maxr + 1 > clk -> maxr + 1 : clk);
#endif
        new_round();
        for (i : 0 .. N - 1) {
            send(i, OP_FW, fv)
        }
        i = 0
    };
fence_round:
    do
    :: atomic {
        pick(); count(1);
        if
        :: SUCCESS(1) ->
            /* fence_decided(): the token is issued here, in the same
             * step as the decision (grant order = decision order) */
            if
            :: clk >= t0 + TTL - DRIFT -> roll_back(true); goto end_next
            :: else ->
                /* fence tokens strictly increase in grant order */
                assert(fv > lastfence);
                lastfence = fv;
                grant();
                goto hold
            fi
        :: FAILURE(1) -> roll_back(true); goto end_next
        :: else -> skip
        fi
    }
    od;
#else
        grant()
    };
#endif
hold:
    do
    /* the holder stops using the resource, then rl_release() */
    :: atomic { !paused[c] -> holding[c] = false; release_all(); goto released }
#if PAUSES > 0
    :: atomic { !paused[c] && pauses_left > 0 -> pauses_left--; paused[c] = true }
    :: atomic { paused[c] -> paused[c] = false }
#endif
#ifdef WATCH
    /* watchdog tick(): the margin is reached without a renewal */
    :: atomic { WATCHED(c) && clk + MARGIN >= dl[c] -> lost[c] = true }
    /* watchdog tick(): renewal due -> rl_extend_async() -> start() */
    :: atomic {
        WATCHED(c) && !inflight[c] && clk >= nren[c] && clk + MARGIN < dl[c] ->
        inflight[c] = true;
        new_round();
        t0e = clk;
        /* restore_on_restarted_nodes(): SET NX where the node started
         * after we acquired */
        for (i : 0 .. N - 1) {
            if
#ifdef RESTOREONCE
            :: up[i] != 0 && up[i] > t0 && rsd[i] != up[i] ->
                rsd[i] = up[i]; send(i, OP_RST, 0)
#else
            :: up[i] != 0 && up[i] > t0 -> send(i, OP_RST, 0)
#endif
            :: else -> skip
            fi
        }
        for (i : 0 .. N - 1) {
            send(i, OP_EXT, 0)
        }
        i = 0
    };
    do
    :: atomic { WATCHED(c) && clk + MARGIN >= dl[c] ->
        lost[c] = true; inflight[c] = false; goto hold }
    :: atomic {
        !paused[c] ->
        pick(); count(2);
        if
        :: SUCCESS(2) ->
            /* extend.c decided(): new validity from the round's start */
            if
            :: t0e >= dl[c] || t0e + TTL - DRIFT <= clk -> lost[c] = true
            :: else ->
                dl[c] = t0e + TTL - DRIFT;
                assert_exclusive(c);
                nren[c] = clk + INTERVAL
            fi;
            inflight[c] = false; goto hold
        :: FAILURE(2) ->
            /* a majority refused: RL_ELOST; else RL_ENOQUORUM, and the
             * watchdog retries after a short pause */
            if
            :: ref > N - Q -> lost[c] = true
            :: else -> nren[c] = clk + 1
            fi;
            inflight[c] = false; goto hold
        :: else -> skip
        fi
    }
    od;
#endif
    od;
released:
    atomic {
        holding[c] = false;
        lost[c] = false;
#ifdef SAMETOKEN
        tok = 0;
#endif
        goto end_next
    }
}

#ifdef REV
/* Another resource's fenced acquire (one attempt, uncontended), against
 * the same node-wide counters: round 1 reads each node at its own moment
 * after the round's start (acquire-fenced sets its key there), round 2
 * writes its token, at any later moment, where its key still is (a
 * restart loses it). Its own tokens are not checked: only what it does
 * to the counters of the resource the clients contend for. */
proctype other()
{
    byte i, t0, rd, maxr, pres, v;

#ifdef REVSTALE
    atomic { t0 = 0; rd = BIT(1) | BIT(2); maxr = 1; pres = 2 }
#else
    atomic { t0 = clk }
#endif
    do
    :: atomic {
        rd != ALLN ->
        select(i : 0 .. N - 1);
        if
        :: (rd & BIT(i)) == 0 ->
            rd = rd | BIT(i);
            okey[i] = true;
            if
            :: fence[i] > maxr -> maxr = fence[i]
            :: else -> skip
            fi;
            if
            :: fence[i] > 0 && fmark[i] == up[i] + 1 && VOTING(i) -> pres++
            :: else -> skip
            fi
        :: else -> skip
        fi;
        i = 0
    }
    :: atomic { rd == ALLN -> break }
    od;
#ifdef NOWALL
    if
    :: pres >= Q -> v = maxr + 1
    :: else -> goto done
    fi;
#else
    v = (pres >= Q || maxr + 1 > clk -> maxr + 1 : clk);
#endif
end:
    do
    :: atomic {
        select(i : 0 .. N - 1);
        if
        :: okey[i] ->
            okey[i] = false;
            if
            :: fence[i] < v -> fence[i] = v
            :: else -> skip
            fi;
            fence_mark(i, t0)
        :: else -> skip
        fi;
        i = 0
    }
    od;
done:
    skip
}
#endif

#ifdef LATEROLLBACK
/* A late rollback (node.c: a NOSCRIPT resend at the back of the queue, a
 * rollback kept for a down node, a copy left on an abandoned connection)
 * is queued whenever, behind anything (a full connection loses it, as
 * send() does). */
proctype resender()
{
    byte x;
end:
    do
    :: atomic {
        nresend > 0 ->
        select(x : 0 .. K * N - 1);
        if
        :: resend[x] != 0 ->
            if
            :: nfull(rq[x]) -> rq[x]!OP_REL, resend[x], 0, 0
            :: full(rq[x]) -> skip
            fi;
            resend[x] = 0;
            nresend--
        :: else -> skip
        fi;
        x = 0
    }
    od
}
#endif

init
{
    byte x;
    atomic {
#if defined(FASTNODE) && defined(GUARD)
        suspect[0] = true;
#endif
#if defined(FENCEFIX) && defined(NOWALL)
        /* no wall-clock fallback: start from a resource fenced before */
        for (x : 0 .. N - 1) {
            fence[x] = 1;
            fmark[x] = 1
        }
        lastfence = 1;
#endif
#ifdef REVSTALE
        for (x : 0 .. 1) {
            fence[x] = 0;
            fmark[x] = 0;
            up[x] = 1
        }
        lastfence = 3;
        okey[2] = true;
#endif
        run clock();
#ifdef REV
        run other();
#endif
#ifdef LATEROLLBACK
        run resender();
#endif
        for (x : 0 .. N - 1) {
            run node(x)
        }
        for (x : 0 .. K - 1) {
            run client(x)
        }
        x = 0
    }
}
