/* SPDX-License-Identifier: BSD-3-Clause */
/* semaphore.pml -- a semaphore of LIMIT permits as libredlock builds it
 * (src/semaphore.c): permit i is an ordinary Redlock mutex on the slot key
 * <key>:slot:<i>; a round tries the slots one at a time in any order,
 * one acquire attempt each (acquire.c: SET NX PX, decided at the quorum,
 * rolled back on every node but the refusers), and stops at the first
 * slot won; one token serves every slot of the round. Environment as in
 * redlock.pml: reordering between connections, late and lost replies,
 * per-node timeouts at any moment, key lifetimes in [TTL - D, TTL],
 * restarts losing the data (restart quarantine).
 *
 *   N nodes (3)   K clients (3)   LIMIT permits (2)   RST restarts
 *   TMAX horizon   ROUNDS semaphore rounds per client (1)
 *   EXTRASLOT (control) the clients take one slot more than LIMIT
 *   NOTIMEOUT (narrowing for the control and its twin) a client waits
 *             for every answer (pan -E)
 * Property: at most LIMIT holders inside their validity at once (checked
 * at every grant). */

#ifndef N
#define N 3
#endif
#ifndef K
#define K 3
#endif
#ifndef LIMIT
#define LIMIT 2
#endif
#ifndef TMAX
#define TMAX 7
#endif
#ifndef RST
#define RST 1
#endif
#ifndef ROUNDS
#define ROUNDS 1
#endif
#ifdef EXTRASLOT
#define SLOTS (LIMIT + 1)
#else
#define SLOTS LIMIT
#endif

#define Q     (N / 2 + 1)
#define TTL   4
#define D     1
#define QUAR  (TTL - D)
#define QL    3

#define OP_ACQ 1
#define OP_REL 2
#define R_YES  1
#define R_NO   2

#define IX(c, n)  ((c) * N + (n))
#define SX(n, s)  ((n) * SLOTS + (s))

byte key[N * SLOTS];    /* slot s's key on node n: token, 0 = absent */
byte kexp[N * SLOTS];
byte up[N];
byte rst_left = RST;

chan rq[K * N] = [QL] of { byte, byte, byte, byte }; /* op, slot, token,
                                                       * round */
byte rtag[K * N];
byte rres[K * N];

byte clk = 0;
byte rnd[K];
bool holding[K];
byte dl[K];

#define QUARANTINED(n) (up[n] != 0 && clk + 1 < up[n] + QUAR)
#define VOTING(n) (!QUARANTINED(n))
#define VALID(x) (holding[x] && clk < dl[x])

/* At most LIMIT holders inside their validity: checked at each grant. */
inline assert_limit()
{
    assert((VALID(0) -> 1 : 0) + (VALID(1) -> 1 : 0) +
           (VALID(2) -> 1 : 0) <= LIMIT)
}

inline apply(c, n, op, s, t, tag)
{
    if
    :: op == OP_ACQ ->
        rtag[IX(c, n)] = tag;
        if
        :: key[SX(n, s)] == 0 ->
            key[SX(n, s)] = t;
            if
            :: kexp[SX(n, s)] = clk + TTL
            :: kexp[SX(n, s)] = clk + TTL - D
            fi;
            rres[IX(c, n)] = R_YES
        :: else -> rres[IX(c, n)] = R_NO
        fi
    :: op == OP_REL ->
        if
        :: key[SX(n, s)] == t -> key[SX(n, s)] = 0; kexp[SX(n, s)] = 0
        :: else -> skip
        fi
    fi
}

inline restart(n)
{
    rst_left--;
    up[n] = clk + 1;
    for (j : 0 .. SLOTS - 1) {
        key[SX(n, j)] = 0; kexp[SX(n, j)] = 0
    }
    for (j : 0 .. K - 1) {
        do
        :: nempty(rq[IX(j, n)]) -> rq[IX(j, n)]?_, _, _, _
        :: empty(rq[IX(j, n)]) -> break
        od
    }
    j = 0
}

inline serve(c)
{
    rq[IX(c, n)]?op, s, t, tag;
    apply(c, n, op, s, t, tag)
}

proctype node(byte n)
{
    byte op, s, t, tag, j;
end:
    do
    :: atomic { nempty(rq[IX(0, n)]) -> serve(0); op = 0; s = 0; t = 0; tag = 0 }
    :: atomic { nempty(rq[IX(1, n)]) -> serve(1); op = 0; s = 0; t = 0; tag = 0 }
    :: atomic { nempty(rq[IX(2, n)]) -> serve(2); op = 0; s = 0; t = 0; tag = 0 }
    :: atomic { rst_left > 0 -> restart(n) }
    od
}

proctype clock()
{
    byte x;
end:
    do
    :: atomic {
        clk < TMAX ->
        clk++;
        for (x : 0 .. N * SLOTS - 1) {
            if
            :: key[x] != 0 && kexp[x] <= clk -> key[x] = 0; kexp[x] = 0
            :: else -> skip
            fi
        }
        x = 0
    }
    od
}

#define PEND(x) ((mask & (1 << (x))) == 0)
#define GOT(x)  (PEND(x) && rtag[IX(c, x)] == rnd[c])

inline send(x, op)
{
    if
    :: nfull(rq[IX(c, x)]) -> rq[IX(c, x)]!op, slot, tok, rnd[c]
    :: full(rq[IX(c, x)]) -> skip
    fi
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
    :: got && rres[IX(c, i)] == R_NO -> refm = refm | (1 << i)
    :: else -> skip
    fi;
    if
    :: got -> rtag[IX(c, i)] = 0; rres[IX(c, i)] = 0
    :: else -> skip
    fi;
    got = false;
    i = 0
}

inline roll_back()
{
    for (i : 0 .. N - 1) {
        if
        :: (refm & (1 << i)) == 0 -> send(i, OP_REL)
        :: else -> skip
        fi
    }
    i = 0
}

proctype client(byte c)
{
    byte r = 0, tok, slot, tried, t0, i, mask, yes, no, refm;
    bool got;

end_next:
    /* a semaphore round: one token for every slot tried */
    atomic { r < ROUNDS -> r++; tok = c * ROUNDS + r; tried = 0 };
try_slot:
    /* the next slot, in any order not tried yet this round */
    atomic {
        if
        :: (tried & 1) == 0 -> slot = 0
        :: (tried & 2) == 0 -> slot = 1
#if SLOTS > 2
        :: (tried & 4) == 0 -> slot = 2
#endif
        :: tried == (1 << SLOTS) - 1 -> goto end_next
        fi;
        tried = tried | (1 << slot);
        rnd[c]++;
        mask = 0; yes = 0; no = 0; refm = 0;
        t0 = clk;
        for (i : 0 .. N - 1) {
            send(i, OP_ACQ)
        }
        i = 0
    };
    do
    :: atomic {
        pick(); count();
        if
        :: yes >= Q ->
            if
            :: clk >= t0 + TTL - D -> roll_back(); goto try_slot
            :: else ->
                dl[c] = t0 + TTL - D;
                holding[c] = true;
                assert_limit();
                mask = 0; yes = 0; no = 0; refm = 0;
                goto hold
            fi
        :: no > N - Q -> roll_back(); goto try_slot
        :: else -> skip
        fi
    }
    od;
hold:
    atomic {
        holding[c] = false;
        for (i : 0 .. N - 1) {
            send(i, OP_REL)
        }
        i = 0;
        goto end_next
    }
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
            run client(x)
        }
        x = 0
    }
}
