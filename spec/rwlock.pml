/* SPDX-License-Identifier: BSD-3-Clause */
/* rwlock.pml -- the read-write lock as libredlock implements it: readers
 * live at the lock key itself, a hash of reader token -> expiry (server
 * time) whose key expiry is the latest reader's; writers are plain SET NX
 * holders; a writer refused by readers marks an intent key that new
 * readers respect (src/lua reader-acquire, reader-extend,
 * reader-release, writer-intent, intent-clear; src/acquire.c attempt,
 * roll_back, mark_intent, clear_intent; src/extend.c for a reader's own
 * renewal round). The environment is redlock.pml's: reordering between
 * connections, late and lost replies, per-node timeouts at any moment,
 * node key lifetimes anywhere in [TTL - D, TTL] per write, restarts that
 * lose the data (with the restart quarantine), client pauses.
 * spec/README.md maps each step to its C.
 *
 * Configuration (spin -D...):
 *   N nodes (3)   K clients (3)   NW writers: clients 0 .. NW-1, the
 *   others are readers   ATT attempts per client (1)   TMAX horizon
 *   RST restarts allowed   PAUSES reader pauses allowed
 *   WATCH        readers renew with their own rounds (reader-extend)
 * Negative controls (each off = today's C code):
 *   WIGNORE      a writer's acquire ignores the readers' hash (it
 *                replaces it, as a SET without NX, or a writer that uses
 *                another key, would)
 *   RRECREATE    reader-extend re-adds a reader that is absent or
 *                expired (instead of touch-only)
 *   NOINTENT     readers ignore the writer intent (a safety run: the
 *                intent only turns a grant into a refusal, see
 *                docs/proof.md)
 *   SHARECHECK   asserts that two readers are never inside their
 *                validity at once: must FAIL (readers do share)
 * Environment narrowing for the controls (as in redlock.pml): SOLO,
 * NOTIMEOUT, SHORTKEYS. */

#ifndef N
#define N 3
#endif
#ifndef K
#define K 3
#endif
#ifndef NW
#define NW 1
#endif
#ifndef ATT
#define ATT 1
#endif
#ifndef TMAX
#define TMAX 7
#endif
#ifndef RST
#define RST 1
#endif
#ifndef PAUSES
#define PAUSES 0
#endif

#define Q      (N / 2 + 1)
#define TTL    4
#define D      1
#define MARGIN 1
#define INTERVAL 1
#define QUAR   (TTL - D)
#define NT     (K * ATT + 1)   /* tokens 1 .. K * ATT */
#define QL     3

/* request ops */
#define OP_WACQ 1   /* SET NX PX */
#define OP_WREL 2   /* release script (compare and delete) */
#define OP_INT  3   /* writer-intent script */
#define OP_ICLR 4   /* intent-clear script */
#define OP_RACQ 5   /* reader-acquire script */
#define OP_RREL 6   /* reader-release script */
#define OP_REXT 7   /* reader-extend script */

#define R_YES 1
#define R_NO  2

/* key kinds */
#define K_NONE 0
#define K_STR  1
#define K_HASH 2

#define IX(c, n)  ((c) * N + (n))
#define RX(n, t)  ((n) * NT + (t))
#define BIT(t)    (1 << (t))

/* ---- Node state ---- */
byte kind[N];       /* the lock key: none, a string (writer), a hash */
byte key[N];        /* K_STR: the writer's token */
byte kexp[N];       /* tick at which the key expires (string or hash) */
byte rex[N * NT];   /* K_HASH: reader token t's expiry tick, 0 = absent */
byte intent[N];     /* <key>:wintent: the writer's token, 0 = absent */
byte up[N];         /* 0 = never restarted, else restart tick + 1 */
byte rst_left = RST;

/* ---- Network ---- */
chan rq[K * N] = [QL] of { byte, byte, byte };  /* op, token, round */
byte rtag[K * N];
byte rres[K * N];

byte clk = 0;

/* ---- Clients ---- */
byte rnd[K];
bool holding[K];
bool lost[K];
bool paused[K];
bool inflight[K];
byte dl[K];
byte nren[K];
byte pauses_left = PAUSES;

/* ---- Ghost ---- */
#ifdef SHARECHECK
bool readers_share; /* a reader became valid while another was */
#endif
short dead[N];      /* tokens whose key or reader entry lapsed on a node
                     * (expiry, delete), cleared by a restart */

#define QUARANTINED(n) (up[n] != 0 && clk + 1 < up[n] + QUAR)
#define VOTING(n) (!QUARANTINED(n))
#define WRITER(x) ((x) < NW)
#ifdef WIGNORE
#define WFREE(n) (kind[n] != K_STR)
#else
#define WFREE(n) (kind[n] == K_NONE)
#endif

/* ---- Properties ---- */
#define VALID(x) (holding[x] && clk < dl[x])
/* A writer inside its validity excludes everybody inside theirs: checked
 * when a validity starts or grows (grant, reader extend). */
#define CONFLICT(me, x) ((x) != (me) && (WRITER(me) || WRITER(x)) && VALID(x))
inline assert_exclusive(me)
{
    assert(!CONFLICT(me, 0));
    assert(!CONFLICT(me, 1));
#if K > 2
    assert(!CONFLICT(me, 2));
#endif
#ifdef SHARECHECK
    /* not a property: readers must be able to share (this must fail) */
    readers_share = !WRITER(me) &&
        (me != 1 && !WRITER(1) && VALID(1) ||
         me != 2 && !WRITER(2) && VALID(2));
    assert(!readers_share);
#endif
}

/* A node keeps a write for between TTL - D and TTL ticks of client time. */
inline lifetime()
{
    if
#ifndef SHORTKEYS
    :: life = TTL
#endif
    :: life = TTL - D
    fi
}

/* The whole key goes (expiry, DEL): its string or its readers lapse. */
inline drop_key(n)
{
    if
    :: kind[n] == K_STR -> dead[n] = dead[n] | BIT(key[n])
    :: kind[n] == K_HASH ->
        for (e : 1 .. NT - 1) {
            if
            :: rex[RX(n, e)] != 0 -> dead[n] = dead[n] | BIT(e);
                rex[RX(n, e)] = 0
            :: else -> skip
            fi
        }
        e = 0
    :: else -> skip
    fi;
    kind[n] = K_NONE;
    key[n] = 0;
    kexp[n] = 0
}

/* One reader entry t is set to expire at clk + life: it must not have
 * lapsed on this node before (no recreated reader). */
inline set_reader(n, t)
{
    assert((dead[n] & BIT(t)) == 0);
    rex[RX(n, t)] = clk + life
}

inline apply(c, n, op, t, tag)
{
    life = 0;
    if
    :: op == OP_WACQ ->                 /* SET key token NX PX ttl */
        rtag[IX(c, n)] = tag;
        if
        :: WFREE(n) ->
            drop_key(n);
            lifetime();
            kind[n] = K_STR; key[n] = t; kexp[n] = clk + life;
            rres[IX(c, n)] = R_YES
        :: else -> rres[IX(c, n)] = R_NO
        fi
    :: op == OP_WREL ->                 /* compare and delete */
        if
        :: kind[n] == K_STR && key[n] == t -> drop_key(n)
        :: else -> skip
        fi
    :: op == OP_INT ->                  /* writer-intent: where readers are */
        if
        :: kind[n] == K_HASH -> intent[n] = t
        :: else -> skip
        fi
    :: op == OP_ICLR ->                 /* intent-clear: only our own */
        if
        :: intent[n] == t -> intent[n] = 0
        :: else -> skip
        fi
    :: op == OP_RACQ ->                 /* reader-acquire */
        rtag[IX(c, n)] = tag;
        if
        :: kind[n] == K_STR -> rres[IX(c, n)] = R_NO
#ifndef NOINTENT
        :: kind[n] != K_STR && intent[n] != 0 -> rres[IX(c, n)] = R_NO
        :: kind[n] != K_STR && intent[n] == 0 ->
#else
        :: kind[n] != K_STR ->
#endif
            lifetime();
            /* prune expired readers; the key lives as long as the
             * latest reader left */
            m = clk + life;
            for (e : 1 .. NT - 1) {
                if
                :: rex[RX(n, e)] != 0 && rex[RX(n, e)] <= clk ->
                    rex[RX(n, e)] = 0
                :: rex[RX(n, e)] > m -> m = rex[RX(n, e)]
                :: else -> skip
                fi
            }
            e = 0;
            kind[n] = K_HASH;
            set_reader(n, t);
            kexp[n] = m;
            m = 0;
            rres[IX(c, n)] = R_YES
        fi
    :: op == OP_RREL ->                 /* reader-release */
        if
        :: kind[n] == K_HASH && rex[RX(n, t)] != 0 ->
            dead[n] = dead[n] | BIT(t);
            rex[RX(n, t)] = 0;
            m = 0;
            for (e : 1 .. NT - 1) {
                if
                :: rex[RX(n, e)] != 0 -> m = 1
                :: else -> skip
                fi
            }
            e = 0;
            if
            :: m == 0 -> drop_key(n)
            :: else -> skip
            fi;
            m = 0
        :: else -> skip
        fi
    :: op == OP_REXT ->                 /* reader-extend: touch only */
        rtag[IX(c, n)] = tag;
        if
        :: kind[n] == K_HASH && rex[RX(n, t)] > clk ->
            lifetime(); set_reader(n, t);
            if
            :: kexp[n] < clk + life -> kexp[n] = clk + life
            :: else -> skip
            fi;
            rres[IX(c, n)] = R_YES
#ifdef RRECREATE
        :: kind[n] != K_STR && !(kind[n] == K_HASH && rex[RX(n, t)] > clk) ->
            lifetime();
            rex[RX(n, t)] = 0;
            set_reader(n, t);
            if
            :: kind[n] == K_NONE || kexp[n] < clk + life -> kexp[n] = clk + life
            :: else -> skip
            fi;
            kind[n] = K_HASH;
            rres[IX(c, n)] = R_YES
        :: kind[n] == K_STR -> rres[IX(c, n)] = R_NO
#else
        :: else -> rres[IX(c, n)] = R_NO
#endif
        fi
    fi;
    life = 0
}

inline restart(n)
{
    rst_left--;
    up[n] = clk + 1;
    kind[n] = K_NONE; key[n] = 0; kexp[n] = 0; intent[n] = 0;
    for (e : 1 .. NT - 1) {
        rex[RX(n, e)] = 0
    }
    e = 0;
    dead[n] = 0;
    for (j : 0 .. K - 1) {
        do
        :: nempty(rq[IX(j, n)]) -> rq[IX(j, n)]?_, _, _
        :: empty(rq[IX(j, n)]) -> break
        od
    }
    j = 0
}

inline serve(c)
{
    rq[IX(c, n)]?op, t, tag;
    apply(c, n, op, t, tag)
}

proctype node(byte n)
{
    byte op, t, tag, j, e, m, life;
end:
    do
    :: atomic { nempty(rq[IX(0, n)]) -> serve(0); op = 0; t = 0; tag = 0 }
    :: atomic { nempty(rq[IX(1, n)]) -> serve(1); op = 0; t = 0; tag = 0 }
#if K > 2
    :: atomic { nempty(rq[IX(2, n)]) -> serve(2); op = 0; t = 0; tag = 0 }
#endif
    /* the intent's own TTL (two retry periods) runs out: at any time */
    :: atomic { intent[n] != 0 -> intent[n] = 0 }
    :: atomic { rst_left > 0 -> restart(n) }
    od
}

/* ---- Clock ---- */
#define WATCHED(x) (holding[x] && !lost[x] && !paused[x] && !WRITER(x))
#ifdef WATCH
#define DUE(x) (WATCHED(x) && \
                (clk + MARGIN >= dl[x] || (!inflight[x] && clk >= nren[x])))
#else
#define DUE(x) false
#endif

proctype clock()
{
    byte n, e;
end:
    do
    :: atomic {
        clk < TMAX && !DUE(0) && !DUE(1) && !DUE(K - 1) ->
        clk++;
        for (n : 0 .. N - 1) {
            if
            :: kind[n] != K_NONE && kexp[n] <= clk -> drop_key(n)
            :: kind[n] == K_HASH && kexp[n] > clk ->
                /* a reader's own expiry: it lapses, its field stays
                 * until pruned */
                for (e : 1 .. NT - 1) {
                    if
                    :: rex[RX(n, e)] != 0 && rex[RX(n, e)] <= clk ->
                        dead[n] = dead[n] | BIT(e)
                    :: else -> skip
                    fi
                }
                e = 0
            :: else -> skip
            fi
        }
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

inline send(x, op)
{
    if
    :: nfull(rq[IX(c, x)]) -> rq[IX(c, x)]!op, tok, rnd[c]
    :: full(rq[IX(c, x)]) -> skip
    fi
}

inline new_round()
{
    rnd[c]++;
    mask = 0; yes = 0; no = 0; refm = 0; ref = 0
}

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

inline count()
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
    :: got -> rtag[IX(c, i)] = 0; rres[IX(c, i)] = 0
    :: else -> skip
    fi;
    got = false;
    i = 0
}

#define SUCCESS (yes >= Q)
#define FAILURE (no > N - Q)

/* roll_back(): the release (reader-release for a reader) on every node
 * but the refusers */
inline roll_back(op)
{
    for (i : 0 .. N - 1) {
        if
        :: (refm & (1 << i)) == 0 -> send(i, op)
        :: else -> skip
        fi
    }
    i = 0
}

inline send_all(op)
{
    for (i : 0 .. N - 1) {
        send(i, op)
    }
    i = 0
}

inline grant()
{
    dl[c] = t0 + TTL - D;
    assert_exclusive(c);
    holding[c] = true;
    lost[c] = false;
    inflight[c] = false;
    nren[c] = clk + INTERVAL;
    mask = 0; yes = 0; no = 0; refm = 0; ref = 0
}

proctype writer(byte c)
{
    byte a = 0, tok, t0, i, mask, yes, no, refm, ref;
    bool got, intent_set = false;

end_next:
    atomic {
#ifdef SOLO
        a < ATT && c == 0 ->
#else
        a < ATT ->
#endif
        a++;
        tok = c * ATT + a;
        new_round();
        t0 = clk;
        send_all(OP_WACQ)
    };
    do
    :: atomic {
        pick(); count();
        if
        :: SUCCESS ->
            if
            :: clk >= t0 + TTL - D -> roll_back(OP_WREL); goto end_next
            :: else -> skip
            fi;
            /* finish(): a winner clears its own intent */
            if
            :: intent_set -> send_all(OP_ICLR); intent_set = false
            :: else -> skip
            fi;
            grant();
            goto hold
        :: FAILURE ->
            roll_back(OP_WREL);
            /* attempt_failed(): RL_ENOTACQUIRED marks the intent on
             * the refusers (only where readers are: the script) */
            if
            :: ref > 0 && no - ref <= N - Q ->
                for (i : 0 .. N - 1) {
                    if
                    :: (refm & (1 << i)) != 0 -> send(i, OP_INT)
                    :: else -> skip
                    fi
                }
                i = 0;
                intent_set = true
            :: else -> skip
            fi;
            goto end_next
        :: else -> skip
        fi
    }
    od;
hold:
    atomic { holding[c] = false; send_all(OP_WREL); goto end_next }
}

proctype reader(byte c)
{
    byte a = 0, tok, t0, t0e, i, mask, yes, no, refm, ref;
    bool got;

end_next:
    atomic {
#ifdef SOLO
        a < ATT && c == NW ->
#else
        a < ATT ->
#endif
        a++;
        tok = c * ATT + a;
        new_round();
        t0 = clk;
        send_all(OP_RACQ)
    };
    do
    :: atomic {
        pick(); count();
        if
        :: SUCCESS ->
            if
            :: clk >= t0 + TTL - D -> roll_back(OP_RREL); goto end_next
            :: else -> skip
            fi;
            grant();
            goto hold
        :: FAILURE -> roll_back(OP_RREL); goto end_next
        :: else -> skip
        fi
    }
    od;
hold:
    do
    :: atomic { !paused[c] -> holding[c] = false; send_all(OP_RREL);
                lost[c] = false; goto end_next }
#if PAUSES > 0
    :: atomic { !paused[c] && pauses_left > 0 -> pauses_left--; paused[c] = true }
    :: atomic { paused[c] -> paused[c] = false }
#endif
#ifdef WATCH
    :: atomic { WATCHED(c) && clk + MARGIN >= dl[c] -> lost[c] = true }
    :: atomic {
        WATCHED(c) && !inflight[c] && clk >= nren[c] && clk + MARGIN < dl[c] ->
        inflight[c] = true;
        new_round();
        t0e = clk;
        /* a reader is never put back on a restarted node */
        send_all(OP_REXT)
    };
    do
    :: atomic { WATCHED(c) && clk + MARGIN >= dl[c] ->
        lost[c] = true; inflight[c] = false; goto hold }
    :: atomic {
        !paused[c] ->
        pick(); count();
        if
        :: SUCCESS ->
            if
            :: t0e >= dl[c] || t0e + TTL - D <= clk -> lost[c] = true
            :: else ->
                dl[c] = t0e + TTL - D;
                assert_exclusive(c);
                nren[c] = clk + INTERVAL
            fi;
            inflight[c] = false; goto hold
        :: FAILURE ->
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
    od
}

init
{
    byte x;
    atomic {
        run clock();
        for (x : 0 .. N - 1) {
            run node(x)
        }
        for (x : 0 .. K - 1) {
            if
            :: x < NW -> run writer(x)
            :: else -> run reader(x)
            fi
        }
        x = 0
    }
}
