/* scripts.h -- the Lua scripts every node runs, with their SHA1 digests
 * (their contract: docs/protocol.md). */
#ifndef REDLOCK_SCRIPTS_H
#define REDLOCK_SCRIPTS_H

#include <stdbool.h>

/* The value a fair lock's key holds while it is free and waiters queue
 * on its node (docs/fair-queue.md 2.0, "The reservation"): no token
 * looks like it (tokens start with hex digits), so a plain SET NX -- a
 * fair mutex's first attempt, or any plain client's -- is refused
 * there, and only the waiter the queue entitles takes the key over.
 * Status reports it as free. */
#define QUEUE_RESERVED "redlock:queued"

enum script_id {
    SCRIPT_ACQUIRE_MULTI, /* KEYS: k1..kn; ARGV: token, ttl_ms -> 1 | 0 */
    SCRIPT_RELEASE,       /* KEYS: k1..kn; ARGV: token -> 1 | 0 | -1 */
    SCRIPT_EXTEND,        /* KEYS: k1..kn; ARGV: token, ttl_ms -> 1 | 0 | -1 */
    SCRIPT_INSPECT,       /* KEYS: k[, intent[, fence, record]]; ->
                             {value or false, pttl, readers, fence or
                             false, record or false, intent or false,
                             readers in their lock-delay, period marker
                             (redlock:period:k) or false} */
    SCRIPT_INSPECT_SLOTS, /* KEYS: k; ARGV: limit -> one string: per slot
                             of k with a key or a fence counter, "<slot>
                             <pttl> " and value, counter and record as
                             "<len>:<bytes>" ("-1:" absent) */
    SCRIPT_ACQUIRE_FENCED,/* KEYS: k1..kn, fence, mark[, writer intent];
                             ARGV: token, ttl_ms[, intent px]
                             -> {1 | 0, counter or false, trusted} */
    SCRIPT_FENCE_WRITE,   /* KEYS: k, fence, mark; ARGV: token, value
                             -> 1 | 0 */
    SCRIPT_FORCE_RELEASE, /* KEYS: k; -> {value or false, pttl, live
                             readers, false, false, false, readers in
                             their lock-delay}, deleted */
    SCRIPT_TOUCH_BATCH,   /* KEYS: one per lock; ARGV: per run of equal
                             PX: px, n, n tokens -> "1"|"0"|"2" per lock */
    SCRIPT_READER_ACQUIRE,/* KEYS: k, writer intent; ARGV: token, px
                             -> 1 | 0 */
    SCRIPT_READER_EXTEND, /* KEYS: k; ARGV: token, px -> 1 | 0 | -1 */
    SCRIPT_READER_RELEASE,/* KEYS: k; ARGV: token -> 1 | 0 | -1 */
    SCRIPT_WRITER_ACQUIRE,/* KEYS: k, writer intent; ARGV: token, px,
                             intent px -> 1 set | 0 (intent set where
                             readers hold k) */
    SCRIPT_INTENT_CLEAR,  /* KEYS: writer intent; ARGV: token -> 1 deleted
                             (it was ours) | 0 */
    SCRIPT_PROCLAIM,      /* KEYS: k1..kn; ARGV: token, new value
                             -> 1 | 0 | -1 */
    /* Fair waiting (queue.c; docs/fair-queue.md): KEYS is the lock key K
     * alone, the scripts derive redlock:q:K, redlock:qx:K, redlock:qt:K,
     * redlock:qw:K, redlock:qm:K and the writer intent from it. Not loaded
     * at the handshake (a client that never waits fair sends what it
     * sent before): queue.c loads them before its first attempt.
     * A semaphore slot's (K = its slot key) append the base key and the
     * limit: fair-acquire(-fenced) as ARGV 7-8 (ARGV 6, the intent px,
     * ''), fair-release and fair-rollback as ARGV 2-3; queue-enter and
     * queue-leave run at the base key and append the limit (ARGV 6 after
     * the kind, ARGV 2). The queue is then
     * the base key's, "K free" means a slot is free, and a queued caller
     * is granted only with fewer queued non-holders ahead of it than
     * slots free (docs/protocol.md). */
    SCRIPT_FAIR_ACQUIRE,
    SCRIPT_PRELOADED = SCRIPT_FAIR_ACQUIRE, /* the ones before it are */  /* ARGV: token, px, entry px, score ('' = not
                             queued: fast path), ticket[, intent px: mark
                             the writer intent where readers refuse it at
                             its turn] -> {1 | 0, redlock:qt:K, rank or
                             -1, K free 1 | 0} */
    SCRIPT_FAIR_ACQUIRE_FENCED, /* KEYS: K, fence, mark, record; ARGV:
                             as fair-acquire -> {1 | 0, counter or false,
                             trusted, redlock:qt:K, rank or -1, K free} (the
                             record and trust as acquire-fenced) */
    SCRIPT_QUEUE_ENTER,   /* ARGV: token, entry px, score, ticket[, kind
                             x (default) | s (a reader)] (registration and
                             refresh) -> {rank (a reader with no
                             exclusive entry ahead: 0), K open to this
                             kind 1 | 0, redlock:qt:K, 1 added | 0} */
    SCRIPT_FAIR_RELEASE,  /* ARGV: token -> 1 | 0 | -1, as release; its
                             entry leaves the queue */
    SCRIPT_FAIR_ROLLBACK, /* ARGV: token -> as fair-release, the entry
                             stays (a split attempt keeps its place) */
    SCRIPT_QUEUE_LEAVE,   /* ARGV: token -> 1 removed | 0 */
    SCRIPT_QUEUE_INSPECT, /* ARGV: max -> {now, then token, score,
                             expiry, "<kind> <registered ms>" or '' per
                             live entry not holding, in order}; read only */
    SCRIPT_FAIR_READER_ACQUIRE, /* ARGV: as fair-acquire, no intent px:
                             reader-acquire at a reader's turn (no
                             exclusive entry ahead) -> as fair-acquire,
                             "free": readers may enter here */
    SCRIPT_FAIR_READER_RELEASE, /* ARGV: token -> as reader-release; its
                             entry leaves the queue */
    SCRIPT_FAIR_READER_ROLLBACK, /* ARGV: token -> as fair-reader-release,
                             the entry stays */
    SCRIPT_FAIR_LAST = SCRIPT_FAIR_READER_ROLLBACK, /* queue.c loads up to it */
    SCRIPT_KEEP,          /* KEYS: k1..kn; ARGV: token, px -> as extend,
                             and redlock:period:k1 = token PX px (a
                             release within an at_least_ms period; not
                             preloaded: a client sends it at most once
                             per lock) */
    SCRIPT_COUNT,
};

struct script {
    const char *name;   /* for messages */
    const char *source; /* Lua */
    char sha1[41];      /* hex digest of source, for EVALSHA */
    bool creates_keys;  /* sets lock keys, or the fence counter and its
                           record for a token that a retry reuses: never
                           resend it late (node.c) */
};

/* The script with its digest computed (thread-safe, computed once). */
const struct script *script_get(enum script_id id);

#endif
