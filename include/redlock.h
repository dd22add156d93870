/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * redlock.h -- distributed locks on a majority of N independent Redis masters
 * (the Redlock algorithm). This header is the library's manual.
 *
 * ---- Read this first ------------------------------------------------------
 *
 *   rl_config cfg;
 *   rl_config_init(&cfg);
 *   const char *nodes[] = {"127.0.0.1:7001", "127.0.0.1:7002",
 *                          "127.0.0.1:7003"};
 *   cfg.nodes = nodes;
 *   cfg.node_count = 3;
 *   rl_status st;
 *   rl_client *c = rl_client_new(&cfg, &st);
 *   if (c == NULL) { fprintf(stderr, "%s\n", rl_last_error()); ... }
 *
 *   rl_acquire_opts o = {0};          (zero means "default" everywhere)
 *   o.ttl_ms = 10000;
 *   rl_lock *l;
 *   if (rl_acquire(c, "jobs:nightly", &o, &l) == RL_OK) {
 *       ... work, checking rl_lock_validity_ms(l) > 0 ...
 *       rl_release(l);                (frees l)
 *   }
 *   rl_client_free(c);
 *
 * - A lock is held while its validity lasts: rl_lock_validity_ms() counts it
 *   down on CLOCK_BOOTTIME. Stop touching the protected resource before it
 *   reaches zero, or extend the lock first.
 * - Every function returns an rl_status (RL_OK == 0, errors negative) and
 *   leaves a one-line detail in rl_last_error() (per thread): which node,
 *   which option, what Redis replied. Passwords never appear in it. Each
 *   function's paragraph ends with the codes it returns ("Returns:").
 * - By default the client runs its own event loop on a private thread and
 *   every function is thread-safe. With cfg.loop set, the client uses the
 *   caller's libev loop instead, starts no thread, and only the *_async
 *   functions may be used, from the loop's thread.
 * - Ownership: inputs are copied before a call returns; privdata is never
 *   touched; callback arguments are borrowed unless said otherwise.
 * - Resource names must not start with "redlock:" (reserved for fence
 *   counters and release channels).
 * - ABI: every struct below ends with a reserved tail (reserved_) that
 *   must stay zero (rl_config_init and "= {0}" do that). A later version
 *   carves new fields out of it, so sizeof never changes within a
 *   SOVERSION and a program built against an older header keeps working;
 *   a struct you pass in whose reserved bytes (reserved_, reserved32_)
 *   are not all zero (built against a newer header, or not initialised)
 *   is refused with RL_EINVAL by every call that takes it.
 * - Calls on a lock may race rl_client_free of its client: they then end
 *   with RL_ECANCELED (rl_lock_free still frees the handle).
 *
 * Guarantees and assumptions: see README.md ("Guarantees"); the keys,
 * values and scripts on the nodes: docs/protocol.md.
 */
#ifndef REDLOCK_H
#define REDLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(RL_BUILDING_LIBRARY) && defined(__GNUC__)
#define RL_API __attribute__((visibility("default")))
#else
#define RL_API
#endif

#define RL_VERSION_MAJOR 0
#define RL_VERSION_MINOR 2
#define RL_VERSION_PATCH 0
#define RL_VERSION_STRING "0.2.0"

/* ---- Status codes ---------------------------------------------------------
 * One table generates the enum, rl_strerror() and rl_status_name().
 * Values are stable and append-only. */
#define RL_STATUS_MAP(X)                                                      \
    X(RL_OK, 0, "success")                                                    \
    X(RL_ENOTACQUIRED, -1, "resource is held by another client")             \
    X(RL_ENOQUORUM, -2, "too few nodes answered to form a quorum")          \
    X(RL_ELOST, -3, "lock is no longer held")                                \
    X(RL_EINVAL, -4, "invalid argument")                                      \
    X(RL_ENOMEM, -5, "out of memory")                                         \
    X(RL_ETIMEOUT, -6, "operation timed out")                                 \
    X(RL_EMISUSE, -7, "API misuse")                                           \
    X(RL_ECANCELED, -8, "operation canceled: the client is being freed")     \
    X(RL_ERANDOM, -9, "random number generator failed")                       \
    X(RL_ESYSTEM, -10, "system call failed")                                  \
    X(RL_EOVERLOAD, -11,                                                     \
      "the watchdog is behind: the nodes cannot renew more locks")           \
    X(RL_EABORTED, -12, "acquire abandoned: its rl_cancel token was fired")

typedef enum rl_status {
#define RL_STATUS_ENUM_(name, value, text) name = value,
    RL_STATUS_MAP(RL_STATUS_ENUM_)
#undef RL_STATUS_ENUM_
} rl_status;

/* A static, human-readable message for st; never NULL ("unknown error"). */
RL_API const char *rl_strerror(rl_status st);
/* The enum name ("RL_ENOQUORUM"); "RL_UNKNOWN" for an unknown code. */
RL_API const char *rl_status_name(rl_status st);
/* Detail text of the last failed call made by *this thread* (in a callback:
 * of the operation being reported). Empty string when there is none. The
 * pointer stays valid until this thread's next library call. */
RL_API const char *rl_last_error(void);
/* "0.2.0" */
RL_API const char *rl_version(void);

/* ---- Node URIs (the forms listed above rl_config.nodes) ------------------
 * The library's one URI parser, for tools that show or reach the nodes
 * themselves. A password may hold any byte: the user info ends at the LAST
 * '@' (so raw '/', '?', '#', ':' and '@' belong to it), the user name ends
 * at its first ':', and both are percent-decoded ('%' itself is %25). */

/* Write a printable description of uri into buf: the URI as written with
 * every part that may be a password replaced by "***" -- the password (or,
 * without a scheme or a ':', the whole user info), text after a host's ':'
 * that is not a port (a URI missing its "@host", or split at a comma in a
 * password) and query parameters other than db=N -- and control characters
 * replaced by '?'. Works on any string, valid URI or not, so an error about
 * a bad URI can name it. Writes at most len bytes, always NUL-terminated
 * when len > 0 (a cut never reveals a masked byte); buf may be NULL when
 * len is 0. uri NULL describes "". Returns the length of the whole
 * description, as snprintf does. Thread-safe, never fails, never blocks. */
RL_API size_t rl_uri_describe(const char *uri, char *buf, size_t len);

/* A parsed node URI; opaque, read with the getters below. */
typedef struct rl_uri rl_uri;

/* Parse uri (no DNS lookup) into *out; free it with rl_uri_free.
 * Thread-safe, never blocks.
 * Returns:
 *   RL_OK      *out is set.
 *   RL_EINVAL  not a node URI: rl_last_error() names the problem and
 *              quotes the URI as rl_uri_describe shows it.
 *   RL_ENOMEM */
RL_API rl_status rl_uri_parse(const char *uri, rl_uri **out);
/* Free u, wiping the password. NULL is a no-op. */
RL_API void rl_uri_free(rl_uri *u);
/* The getters take a parsed URI (NULL gives NULL or 0) and return strings
 * owned by u, valid until rl_uri_free(u).
 * rl_uri_name: the node's name in messages and in rl_node_info.name,
 *   "host:port", "[v6]:port" or "unix:/path", then "/db" unless db is 0;
 *   never holds the user or password.
 * rl_uri_host: TCP host as written, IPv6 without [], not resolved; NULL
 *   for a unix socket. rl_uri_port: 1..65535 (6379 by default); 0 for a
 *   unix socket. rl_uri_path: the socket path, NULL for TCP.
 * rl_uri_db: the database number (0 by default).
 * rl_uri_user: the decoded ACL user name, or NULL.
 * rl_uri_password: the decoded password, or NULL when the URI has none
 *   (rl_config.password is not applied here). A secret: never print it. */
RL_API const char *rl_uri_name(const rl_uri *u);
RL_API const char *rl_uri_host(const rl_uri *u);
RL_API int rl_uri_port(const rl_uri *u);
RL_API const char *rl_uri_path(const rl_uri *u);
RL_API int rl_uri_db(const rl_uri *u);
/* True for a rediss:// URI (TLS for this node). */
RL_API bool rl_uri_tls(const rl_uri *u);
RL_API const char *rl_uri_user(const rl_uri *u);
RL_API const char *rl_uri_password(const rl_uri *u);

/* ---- Handles --------------------------------------------------------------*/
typedef struct rl_client rl_client;
typedef struct rl_lock rl_lock;

/* ---- Cancellation -----------------------------------------------------------
 * A cancel token ends waiting acquires early: put it in
 * rl_acquire_opts.cancel (of any number of acquires, on any clients) and
 * call rl_cancel_fire from any thread -- a signal handler's thread, a
 * watchdog, a loop callback. Every acquire that carries it and has not
 * delivered its outcome yet ends with RL_EABORTED without waiting for the
 * nodes (its callback runs on the loop's next iteration; a blocking
 * rl_acquire returns), and leaves no key behind: the token it may hold is
 * released on every node, also where its SET is still in flight (the
 * release follows it on the same connection). An acquire that had already
 * won keeps its lock (rl_acquire returns RL_OK: release it). A token stays
 * fired; an acquire started with a fired token returns RL_EABORTED at
 * once, sending nothing (an async one never calls back). */
typedef struct rl_cancel rl_cancel;

/* A new, unfired token; free it with rl_cancel_free. NULL on OOM
 * (rl_last_error says so). Any thread. */
RL_API rl_cancel *rl_cancel_new(void);
/* Fire t: idempotent, thread-safe, never blocks on the nodes (it queues
 * the cancellations to each client's loop).
 * Returns:
 *   RL_OK
 *   RL_EINVAL  t is NULL. */
RL_API rl_status rl_cancel_fire(rl_cancel *t);
/* True once t was fired (false for NULL). Any thread. */
RL_API bool rl_cancel_fired(const rl_cancel *t);
/* Drop the caller's handle, once the calls given t have returned (an
 * async acquire still waiting keeps its own reference). NULL is a no-op.
 * Any thread. */
RL_API void rl_cancel_free(rl_cancel *t);

/* ---- Client configuration -------------------------------------------------*/
enum rl_log_level { RL_LOG_ERROR = 0, RL_LOG_WARN = 1, RL_LOG_INFO = 2,
                    RL_LOG_DEBUG = 3 };
/* Log sink. Called from the loop thread (or the caller's thread during
 * rl_client_new). msg is borrowed and never holds a password. It may not
 * call rl_client_free. */
typedef void (*rl_log_fn)(int level, const char *msg, void *privdata);

struct ev_loop;

/* Fill it with rl_config_init(), then set nodes. Fields are taken as they
 * are (no "zero means default" here, so call rl_config_init first);
 * rl_client_new() validates every field and names the bad one. */
typedef struct rl_config {
    /* Node addresses, 1..64 of them, all distinct:
     *   redis://[[user]:password@]host[:port][/db]   (port 6379, db 0)
     *   rediss://[[user]:password@]host[:port][/db]  (the same, over TLS)
     *   unix:///path/to/redis.sock[?db=N]
     *   host:port                                     (host may be [v6])
     * Host names are resolved inside rl_client_new, and again, off the
     * loop thread, whenever a node's connection fails: a node whose name
     * moved is reached at its new address (a new server there is
     * quarantined as any restarted one, see restart_trust). A name that
     * does not resolve (a stopped container's) is a node that is down,
     * not a configuration error: it does not vote, is looked up again at
     * each reconnect delay and is used once it resolves; rl_client_ping
     * shows the lookup's message as its error. A malformed URI is
     * RL_EINVAL. */
    const char *const *nodes;
    size_t node_count;
    const char *password;        /* for nodes whose URI has none; or NULL */
    const char *prefix;          /* prepended to every resource; or NULL */
    uint32_t connect_timeout_ms; /* 1..60000, default 200; for the TCP (+
                                    TLS) connect, then again for the
                                    server handshake (AUTH, SELECT, INFO,
                                    script loads) */
    uint32_t op_timeout_ms;      /* per node and request, 1..60000, def. 50 */
    double drift_factor;         /* clock rate error, [0, 0.1], def. 0.01 */
    uint32_t retry_count;        /* retries after the first attempt, def. 3 */
    uint32_t retry_delay_ms;     /* 1..3600000, default 200 */
    uint32_t retry_jitter_ms;    /* +-, <= retry_delay_ms, default 100 */
    uint32_t max_ttl_ms;         /* largest TTL accepted, 1..2^31-1,
                                    default 60000; also the restart
                                    quarantine (see restart_trust) */
    bool trust_restarted_nodes;  /* true: restart_trust RL_RESTART_TRUST
                                    (kept for older callers). def. false */
    rl_log_fn log;               /* or NULL */
    void *log_privdata;
    int log_level;               /* enum rl_log_level, default RL_LOG_WARN */
    struct ev_loop *loop;        /* external libev loop, or NULL (own thread) */
    /* TLS. A node uses TLS when its URI is rediss:// or tls is
     * true (then for every TCP node; unix sockets stay plaintext). TLS 1.2
     * at least; the server certificate is verified against the system
     * trust store (or tls_ca_file / tls_ca_dir) and the node's host name
     * or IP address (or tls_server_name). Every file is read and checked
     * inside rl_client_new: a missing or unreadable file, a certificate
     * without its key or a key that does not match its certificate is
     * RL_EINVAL naming the file (never key material). The strings are
     * copied. A failed handshake (unknown CA, host-name mismatch, expired
     * certificate, a plaintext port...) makes that node fail like an
     * unreachable one, with the node and the reason in the message. */
    const char *tls_ca_file;     /* PEM CA bundle, or NULL */
    const char *tls_ca_dir;      /* hashed CA directory (c_rehash), or NULL */
    const char *tls_cert_file;   /* client certificate (PEM) for mutual TLS,
                                    or NULL; needs tls_key_file */
    const char *tls_key_file;    /* its unencrypted PEM private key, or NULL */
    const char *tls_server_name; /* SNI and the name verified instead of each
                                    node's host, or NULL */
    bool tls;                    /* TLS for every TCP node. def. false */
    bool tls_insecure;           /* no certificate verification at all (the
                                    traffic is encrypted but anybody can
                                    pose as the server). def. false */
    /* Clock guard, on by default: lock-path requests take the
     * node's TIME along (pipelined, no extra round trip); a node whose
     * clock runs outside 1 +- drift_factor of ours or steps does not vote
     * until it has behaved for max_ttl_ms, and its uptime is not trusted
     * meanwhile. Turn it off only for servers that refuse TIME. */
    bool no_clock_guard;         /* def. false (the guard is on) */
    /* Watchdog: renewals that fall due within this percentage
     * of their renewal interval (at most 100 ms) go out together, that
     * much early, never late; fewer wake-ups and script calls at the cost
     * of renewing a little sooner. 0..24 (below the retry pause), default
     * 12; 0: only renewals already due are coalesced (rl_stats counts
     * the early ones: renewals_early). */
    uint8_t renew_window_pct;
    /* Node preconditions. Each node's INFO (and CONFIG GET appendfsync,
     * where allowed) is read at its handshake, and what can change its
     * vote (CONFIG GET, INFO replication and stats: docs/protocol.md
     * section 5) about once a second after that. A node votes only while
     * it is a master, is not the same server (run_id) or replication
     * stream as a node listed before it, and cannot evict keys before
     * their TTL: maxmemory 0, or maxmemory-policy noeviction. A fact the
     * node does not report counts against it. rl_client_new refuses a
     * node list in which two entries are one server. See rl_node_info
     * for what is read. */
    uint8_t restart_trust;       /* enum rl_restart_trust, default AUTO */
    bool allow_evicting_nodes;   /* true: nodes that may evict keys vote
                                    anyway (a held lock may then be
                                    evicted and taken by another client).
                                    def. false */
    uint64_t reserved_[18];      /* zero (see "ABI" above) */
} rl_config;

/* When a node restarted less than max_ttl_ms ago votes. A restarted node
 * that lost keys it had granted (no persistence, or a write not yet on
 * disk) could grant the same lock twice; quarantine waits until every key
 * it could have held has expired. */
enum rl_restart_trust {
    RL_RESTART_AUTO = 0,       /* trust a node that reports appendonly yes
                                  with appendfsync always (it lost nothing
                                  it acknowledged, assuming it ran with at
                                  least that before the restart);
                                  quarantine any other, or one whose
                                  settings cannot be read (default) */
    RL_RESTART_QUARANTINE = 1, /* quarantine every restarted node */
    RL_RESTART_TRUST = 2,      /* trust every node: only for nodes that
                                  fsync every write */
};

/* Fill *cfg with the defaults above (no nodes). NULL is ignored. */
RL_API void rl_config_init(rl_config *cfg);

/* Create a client: validates and copies cfg, resolves host names, starts the
 * connections (and, without cfg->loop, the loop thread), and waits up to
 * connect_timeout_ms for the nodes to answer. Unreachable nodes (and nodes
 * whose host name does not resolve) do not make it fail: they are retried
 * in the background with backoff. Blocks; call
 * from any thread but the client's loop thread.
 * Returns the client, or NULL with *st (if st is not NULL) set to:
 *   RL_EINVAL   bad configuration: rl_last_error() names the field or URI.
 *   RL_ENOMEM
 *   RL_ESYSTEM  a thread, descriptor or loop could not be made. */
RL_API rl_client *rl_client_new(const rl_config *cfg, rl_status *st);

/* Free the client. Operations still in flight end with RL_ECANCELED (their
 * callbacks run, on the loop thread, before this returns; with an external
 * loop, right here). Locks still held are not released in Redis (they
 * expire) and stop being renewed; their handles must still be freed with
 * rl_lock_free() (or rl_release(), which then returns RL_ECANCELED). NULL
 * is a no-op. Blocks while the loop thread stops. Refused from inside any
 * callback of the library (acquire, extend, release, lost, log): it then
 * returns at once, frees nothing and rl_last_error() says so (RL_EMISUSE);
 * free the client after the callback has returned. */
RL_API void rl_client_free(rl_client *c);

/* ---- Acquire options ------------------------------------------------------*/
#define RL_WAIT_FOREVER INT64_C(-1)
#define RL_DEFAULT_TTL_MS 30000u

/* Lost-lock callback: runs on the loop thread, once, before the validity
 * ends. l is borrowed; async calls on it (rl_release_async, rl_lock_free)
 * are allowed and take effect after the callback returns. */
typedef void (*rl_lost_cb)(rl_lock *l, void *privdata);

/* All fields: zero means the default, so rl_acquire_opts o = {0} is valid. */
typedef struct rl_acquire_opts {
    uint32_t ttl_ms;          /* 1..cfg.max_ttl_ms, default 30000 */
    int64_t wait_ms;          /* 0: cfg's retry policy; >0 keep trying for
                                 this long; RL_WAIT_FOREVER: until acquired */
    uint32_t min_validity_ms; /* fail the attempt if less validity remains */
    bool fencing;             /* issue a fencing token (rl_lock_fence) */
    bool reentrant;           /* same thread + resource + client: same lock,
                                 counted; Redis touched on first acquire and
                                 last release only */
    bool auto_extend;         /* start the watchdog (rl_watchdog_start) */
    uint32_t extend_interval_ms; /* watchdog period, default ttl/3 */
    rl_lost_cb lost_cb;       /* watchdog: called once when lost, or NULL */
    void *lost_privdata;
    uint32_t max_renewals;    /* watchdog cap: 0 = no cap */
    uint64_t max_hold_ms;     /* watchdog cap on total hold time: 0 or
                                 UINT64_MAX = none; else at most a century */
    /* Lock kinds (README "Lock kinds"). */
    uint32_t lock_delay_ms;   /* lock-delay: keys live ttl + this after each
                                 acquire and extend (validity still counts
                                 ttl only), so a crashed or paused holder
                                 is not succeeded before its writes drain;
                                 rl_release deletes at once. ttl + delay
                                 <= cfg.max_ttl_ms. default 0 */
    uint32_t limit;           /* semaphore with this many permits
                                 (1..RL_MAX_LIMIT): the lock is one of the
                                 slots "<resource>:slot:<i>", each an
                                 ordinary mutex (rl_lock_slot). 0: a mutex */
    uint32_t mode;            /* enum rl_mode; RL_MODE_SHARED: a reader of
                                 the read-write lock on resource (one
                                 resource, no fencing, no limit) */
    uint32_t reserved32_;     /* zero (see "ABI" above) */
    union {                   /* one 64-bit slot whatever the pointer size */
        rl_cancel *cancel;    /* fire it to abandon this acquire while it
                                 waits (see "Cancellation"), or NULL.
                                 Borrowed for the call; an async acquire
                                 keeps its own reference until it ends */
        uint64_t cancel_slot_;
    };
    union {                   /* one 64-bit slot whatever the pointer size */
        const char *owner;    /* who holds the lock, for anybody to read
                                 (rl_resource_inspect): 1..RL_OWNER_MAX
                                 visible ASCII characters (0x21..0x7e,
                                 no spaces), e.g. "host:pid", or NULL /
                                 "" for none. Stored in the value with
                                 the token (see rl_lock_token), so it
                                 costs no request and no key; copied */
        uint64_t owner_slot_;
    };
    /* Fair waiting (README "Fair waiting"; docs/fair-queue.md): carved
     * out of the reserved tail, so 0 keeps today's behaviour and cost. */
    uint32_t fair;            /* 1: wait in the resource's queue, served
                                 first come, first served among fair
                                 waiters (one resource: a mutex, a
                                 semaphore, whose permits go in queue
                                 order, a writer or a reader). Readers:
                                 a fair reader waits behind every fair
                                 writer queued before it and shares with
                                 the readers next to it; a fair writer
                                 waits for the readers queued before it
                                 and goes before those queued after it.
                                 0: race as before, except that where
                                 fair waiters queue the free key is
                                 kept for them (refused as if held) */
    uint32_t priority;        /* 0..RL_MAX_PRIORITY, implies fair: a
                                 higher class is served first, FIFO
                                 within a class. default 0 */
    uint64_t at_least_ms;     /* once per period: rl_release before
                                 at_least_ms after the grant does not
                                 delete the keys but keeps them, with
                                 the same value, until then (PEXPIRE to
                                 what is left), so others find the lock
                                 held for the rest of the period
                                 (rl_resource_info.for_period); after
                                 it, rl_release deletes them as usual.
                                 1..cfg.max_ttl_ms (the restart
                                 quarantine's bound), exclusive locks
                                 and semaphores only, not fair, no
                                 lock-delay. 0: none (default).
                                 rl_lock_free keeps nothing: the keys
                                 expire with their TTL */
    uint64_t reserved_[2];    /* zero (see "ABI" above) */
} rl_acquire_opts;

/* Largest rl_acquire_opts.priority. */
#define RL_MAX_PRIORITY 255u

/* Longest rl_acquire_opts.owner, in bytes. */
#define RL_OWNER_MAX 64

/* Read-write locks: a writer is an ordinary exclusive lock; readers share
 * the resource with each other and exclude writers (ours, and any plain
 * SET NX holder such as redsync or node-redlock). A waiting writer blocks
 * new readers (writer preference), so writers do not starve. */
enum rl_mode {
    RL_MODE_EXCLUSIVE = 0,    /* a mutex, or the writer (default) */
    RL_MODE_SHARED = 1,       /* a reader */
};

/* Largest rl_acquire_opts.limit. */
#define RL_MAX_LIMIT 1024u

/* ---- Blocking API (thread-safe; not with cfg.loop; not in callbacks) ------*/

/* Acquire resource (1..512 bytes, no "redlock:" prefix) on a majority of
 * the nodes, retrying as o says. Blocks.
 * Returns:
 *   RL_OK            *out is a lock the caller owns (free it with
 *                    rl_release or rl_lock_free).
 *   RL_ENOTACQUIRED  held by another client; the retries and the wait ran
 *                    out.
 *   RL_ENOQUORUM     too few nodes answered.
 *   RL_ETIMEOUT      a quorum granted, but with less validity than asked.
 *   RL_EOVERLOAD     with auto_extend: the client's watchdog is behind (a
 *                    renewal waiting for the nodes is late by half the
 *                    time from its due moment to its safety margin), so no
 *                    watched lock is taken until it has caught up; nothing
 *                    was sent.
 *   RL_EABORTED      o->cancel was fired first; nothing of it is left on
 *                    the nodes.
 *   RL_EINVAL        bad argument or option (rl_last_error() names it).
 *   RL_EMISUSE       external loop, or called from a callback.
 *   RL_ENOMEM
 *   RL_ERANDOM       no random token could be made.
 *   RL_ECANCELED     the client is being freed. */
RL_API rl_status rl_acquire(rl_client *c, const char *resource,
                            const rl_acquire_opts *o, rl_lock **out);

/* Acquire several resources at once: on each node all of them or none
 * (one script call per node). count 1..64. Otherwise as rl_acquire.
 * Returns: the codes of rl_acquire. */
RL_API rl_status rl_acquire_multi(rl_client *c, const char *const *resources,
                                  size_t count, const rl_acquire_opts *o,
                                  rl_lock **out);

/* Extend the lock to ttl_ms (1..max_ttl_ms; 0 = the TTL it was acquired
 * with) by re-quorum: on each node the key's expiry is reset only where it
 * still holds this lock's token; an absent key is never recreated. On a
 * watched lock it waits for the watchdog's renewal in flight, then runs.
 * Blocks.
 * Returns:
 *   RL_OK         validity renewed from the round's start.
 *   RL_ELOST      a majority says the lock is gone or taken, or the
 *                 validity ran out first, or the lock was already lost
 *                 (once lost, always lost).
 *   RL_ENOQUORUM  too few answers; the validity is unchanged (you may
 *                 retry).
 *   RL_EMISUSE    another extend of this lock is in flight, the client was
 *                 freed, or the call comes from a callback.
 *   RL_ECANCELED  the lock was released or its client freed meanwhile.
 *   RL_EINVAL
 *   RL_ENOMEM */
RL_API rl_status rl_extend(rl_lock *l, uint32_t ttl_ms);

/* Release the lock on all nodes and free l (consumes l: the pointer is dead
 * after the call, whatever the result -- except RL_EINVAL and RL_EMISUSE,
 * which leave l untouched). A reentrant lock held n > 1 times only drops
 * one hold (RL_OK, l stays valid, Redis untouched). A renewal in flight is
 * dropped first. Keys are deleted wherever they still hold l's token
 * (acquired with at_least_ms, before the period's end: kept instead,
 * until at_least_ms after the grant; the results are the same). The
 * result is decided from what the nodes hold, never from which answers
 * first: it blocks until a quorum deleted the key, or, when some node
 * no longer had it, until the nodes left cannot change the result (at
 * most op_timeout_ms after the last send). Table: docs/protocol.md
 * "Release".
 * Returns:
 *   RL_OK            a quorum of voting nodes still held the key and
 *                    deleted it: held up to the release (for an adopted
 *                    token: released, or already free on a quorum).
 *   RL_ELOST         the validity had already run out before the release,
 *                    or fewer than a quorum still held the key, counting
 *                    the nodes that did not answer as holders: it may
 *                    have been taken meanwhile.
 *   RL_ENOTACQUIRED  a majority holds another token.
 *   RL_ENOQUORUM     too few nodes answered to tell held from lost (or,
 *                    adopted, free from taken); the keys left expire by
 *                    themselves.
 *   RL_ECANCELED     the client was freed first (l is freed).
 *   RL_ENOMEM
 *   RL_EINVAL        l is NULL.
 *   RL_EMISUSE       called from a callback. */
RL_API rl_status rl_release(rl_lock *l);

/* Free the handle without touching Redis (the keys expire); its watchdog
 * and any renewal in flight stop first (a pending rl_extend_async ends
 * with RL_ECANCELED). No lost callback of l starts after this returns (one
 * running on the loop thread is waited for). NULL is a no-op. Any thread,
 * also from a callback, also while rl_client_free runs. Use after
 * rl_client_free or when giving up a lost lock. */
RL_API void rl_lock_free(rl_lock *l);

/* Make a handle for a lock known only by its token (e.g. from another
 * process or the CLI), so it can be extended or released. Its validity is
 * unknown (0) until a successful rl_extend. Does not touch Redis.
 * Returns:
 *   RL_OK      *out is a handle the caller owns.
 *   RL_EINVAL  NULL client or out, bad resource, or a token that is empty
 *              or longer than 128 bytes.
 *   RL_ENOMEM */
RL_API rl_status rl_lock_adopt(rl_client *c, const char *resource,
                               const char *token, rl_lock **out);
/* rl_lock_adopt for a lock of another kind: o->mode RL_MODE_SHARED adopts
 * a reader (released and extended as one), o->lock_delay_ms is the delay
 * it was taken with (kept by rl_extend). A semaphore slot is adopted by
 * its slot's name ("<resource>:slot:<i>"): o->limit must be 0. o may be
 * NULL (rl_lock_adopt); its other fields are ignored.
 * Returns:
 *   RL_OK
 *   RL_EINVAL  as rl_lock_adopt, or a bad mode, a limit, a lock-delay not
 *              below max_ttl_ms, reserved bytes not zero.
 *   RL_ENOMEM */
RL_API rl_status rl_lock_adopt_opts(rl_client *c, const char *resource,
                                    const char *token,
                                    const rl_acquire_opts *o,
                                    rl_lock **out);

/* ---- Lock getters (any thread, never block) --------------------------------*/
/* Milliseconds of validity left (<= 0 once it has run out), measured on
 * CLOCK_BOOTTIME from just before the winning round was sent. */
RL_API int64_t rl_lock_validity_ms(const rl_lock *l);
/* The token stored in Redis: 40 hex digits, then, when the lock was
 * acquired with an owner, '.' and the owner. The winning attempt's: each
 * attempt of an acquisition has its own (32 random digits drawn per
 * acquisition, 8 counting its attempts; docs/protocol.md). The whole of
 * it is what release and extend compare. Borrowed. */
RL_API const char *rl_lock_token(const rl_lock *l);
/* The first resource name (without prefix). Borrowed. */
RL_API const char *rl_lock_resource(const rl_lock *l);
/* Voting nodes that had granted when the winning round was decided (the
 * round decides at the quorum, so usually exactly the quorum; the other
 * nodes still get the command). */
RL_API unsigned rl_lock_nodes_ok(const rl_lock *l);
/* True once the lock is known lost (extend said so, or validity ran out
 * while a renewal was expected). */
RL_API bool rl_lock_lost(const rl_lock *l);
/* A file descriptor that becomes readable once the lock is LOST (for
 * poll/select/epoll; do not read or close it). Stays readable. Owned by
 * the handle; -1 if l is NULL or no descriptor could be made. */
RL_API int rl_lock_lost_fd(const rl_lock *l);
/* The fencing token of this acquisition (strictly greater than every
 * earlier holder's for the same resource), or 0 without opts.fencing. */
RL_API uint64_t rl_lock_fence(const rl_lock *l);
/* The semaphore slot this lock holds (0..limit-1; the key is
 * "<resource>:slot:<i>"), or -1 when it was not acquired with limit. */
RL_API int rl_lock_slot(const rl_lock *l);
/* enum rl_mode of the lock (RL_MODE_SHARED for a reader); NULL gives
 * RL_MODE_EXCLUSIVE. */
RL_API int rl_lock_mode(const rl_lock *l);

/* ---- Watchdog ---------------------------------------------------------------
 * Renews the lock by re-quorum every o->extend_interval_ms (0: ttl/3;
 * o may be NULL for all defaults) while the caller works (an interval of
 * 8 s or more ends at the wall clock's last whole second before it, up to
 * 1 s early, so the nodes serve a fleet's renewals of one second
 * together); a failed round is retried quickly while validity remains.
 * When a majority says the lock is gone, or the remaining validity falls
 * below the safety margin (min(ttl/10, 1 s)) without a successful renewal,
 * the lock is LOST: rl_lock_lost() turns true, rl_lock_lost_fd() becomes
 * readable and o->lost_cb (if not NULL) runs once on the loop thread -- all
 * before the validity ends. o->max_renewals / o->max_hold_ms stop the
 * renewals of a runaway holder; the lock then expires normally (reported
 * as lost when the margin is reached). While the client's watchdog is
 * behind, new watched acquires fail with RL_EOVERLOAD (see rl_acquire);
 * starting it on a lock already held is not refused. Any thread; with
 * cfg.loop only from the loop's thread. Never blocks.
 * Returns:
 *   RL_OK
 *   RL_EINVAL   NULL lock, or bad options (also a reserved byte not
 *               zero).
 *   RL_EMISUSE  already running, or the client was freed.
 *   RL_ENOMEM */
RL_API rl_status rl_watchdog_start(rl_lock *l, const rl_acquire_opts *o);
/* Stop renewing (the lock stays held until its validity ends). A renewal
 * in flight completes but is not followed by another; no lost callback
 * starts after this returns. NULL or not running: no-op. */
RL_API void rl_watchdog_stop(rl_lock *l);

/* Critical section: acquire resource (opts as rl_acquire; the watchdog is
 * always on), run fn(lock, arg) on the calling thread while the lock is
 * held and renewed, then release -- also when fn fails. fn should poll
 * rl_lock_lost() (or the fd) and stop early when the lock is lost. fn's
 * own return value is stored in *fn_result when fn_result is not NULL.
 * Blocks.
 * Returns:
 *   RL_OK        fn ran with the lock held throughout, then it was
 *                released (a quorum still held the key at the release:
 *                rl_release's RL_OK).
 *   RL_ELOST     the lock was lost while fn ran (seen by the watchdog,
 *                or by the release: rl_release's RL_ELOST).
 *   RL_EINVAL    fn is NULL, or as rl_acquire.
 *   other codes  rl_acquire's (fn did not run), or, after fn, rl_release's
 *                (e.g. RL_ENOQUORUM: the keys expire by themselves). */
RL_API rl_status rl_with_lock(rl_client *c, const char *resource,
                              const rl_acquire_opts *o,
                              int (*fn)(rl_lock *l, void *arg), void *arg,
                              int *fn_result);

/* ---- Async API --------------------------------------------------------------
 * Callable from any thread (with cfg.loop: only from the loop's thread).
 * A call that returns an error never runs its callback; a call that returns
 * RL_OK runs its callback exactly once, on the loop thread, also when the
 * client is freed meanwhile (status RL_ECANCELED). Within a callback any
 * async call is allowed, blocking calls return RL_EMISUSE, and
 * rl_last_error() describes the reported failure. */

/* On RL_OK, ownership of lock passes to you; otherwise lock is NULL. */
typedef void (*rl_acquire_cb)(rl_client *c, rl_status st, rl_lock *lock,
                              void *privdata);
/* l is borrowed (still yours) and valid during the callback. */
typedef void (*rl_extend_cb)(rl_lock *l, rl_status st, void *privdata);
/* The lock is already freed when this runs. */
typedef void (*rl_release_cb)(rl_client *c, rl_status st, void *privdata);

/* rl_acquire without blocking: cb gets rl_acquire's outcome (RL_EABORTED
 * when o->cancel fires first). rl_acquire_multi_async is the same for
 * rl_acquire_multi.
 * Returns (an error return never calls back):
 *   RL_OK         cb runs once.
 *   RL_EINVAL
 *   RL_EMISUSE
 *   RL_ENOMEM
 *   RL_ECANCELED  the client is being freed.
 *   RL_EABORTED   o->cancel was already fired. */
RL_API rl_status rl_acquire_async(rl_client *c, const char *resource,
                                  const rl_acquire_opts *o, rl_acquire_cb cb,
                                  void *privdata);
RL_API rl_status rl_acquire_multi_async(rl_client *c,
                                        const char *const *resources,
                                        size_t count,
                                        const rl_acquire_opts *o,
                                        rl_acquire_cb cb, void *privdata);
/* rl_extend without blocking. At most one extend of yours may be in
 * flight per lock; on a watched lock it runs after the watchdog's renewal
 * in flight. cb gets RL_OK, RL_ELOST, RL_ENOQUORUM, RL_ENOMEM, or
 * RL_ECANCELED (released, freed, or client freed meanwhile).
 * Returns (an error return never calls back):
 *   RL_OK         cb runs once.
 *   RL_EMISUSE    another extend of yours is in flight.
 *   RL_ECANCELED  the lock's client was freed.
 *   RL_EINVAL     NULL lock or cb, or a bad ttl_ms.
 *   RL_ENOMEM */
RL_API rl_status rl_extend_async(rl_lock *l, uint32_t ttl_ms, rl_extend_cb cb,
                                 void *privdata);
/* rl_release without blocking. cb may be NULL (fire and forget) and gets
 * the codes of rl_release. An extend in flight is reported as RL_ECANCELED
 * first. No lost callback of l starts after this returns (one running is
 * waited for).
 * Returns (an error return never calls back and leaves l untouched):
 *   RL_OK         l is consumed; cb runs once.
 *   RL_ECANCELED  its client was freed: free l with rl_lock_free.
 *   RL_EINVAL
 *   RL_ENOMEM */
RL_API rl_status rl_release_async(rl_lock *l, rl_release_cb cb,
                                  void *privdata);

/* ---- Leader election --------------------------------------------------------
 * A leader of NAME is the holder of the lock on NAME, taken with fencing
 * and kept by the watchdog: its term is rl_lock_fence(lock), strictly
 * greater than every earlier leader's; its published value is
 * o->owner, changed with rl_proclaim. Resign with rl_release (or lose
 * it: rl_lock_lost, the lost fd, o->lost_cb); anybody reads the current
 * leader with rl_resource_inspect (owner, term = fence, validity) or
 * follows it with rl_observe (below rl_resource_inspect). A leader that
 * dies is replaced once its TTL has run out. */

/* Wait until leader of name, then hold it renewed: rl_acquire with o's
 * fields (o may be NULL) and wait_ms RL_WAIT_FOREVER unless o->wait_ms
 * is set, fencing and auto_extend on. o->cancel abandons the campaign
 * (RL_EABORTED). Blocks.
 * Returns: rl_acquire's codes, and
 *   RL_EINVAL  also for limit, RL_MODE_SHARED or reentrant. */
RL_API rl_status rl_campaign(rl_client *c, const char *name,
                             const rl_acquire_opts *o, rl_lock **out);
/* The same through rl_acquire_async: cb gets the lock once leader.
 * Returns: rl_acquire_async's codes, and RL_EINVAL as rl_campaign. */
RL_API rl_status rl_campaign_async(rl_client *c, const char *name,
                                   const rl_acquire_opts *o,
                                   rl_acquire_cb cb, void *privdata);

/* Publish owner as the leader's value (what rl_resource_inspect and
 * observers report as its owner) without giving the leadership up. l must
 * have been acquired with an owner (rl_acquire_opts.owner; a campaign of
 * `redlock-cli elect` always has one), not adopted, not shared. One round
 * over the nodes: each node where l's key still holds l's token (with any
 * owner) gets the same token with the new owner, keeping its expiry, and
 * announces it on the release channel (a waiting acquire retries once).
 * It succeeds when a quorum changed it while l was valid; then a node
 * restarted later gets the new value back with l's next renewal. Nodes
 * that did not change it keep the old value: extend, release and the
 * watchdog work on either (they match the token's 40 digits), and
 * rl_resource_inspect reports the value most nodes hold. Not while a
 * release of l is in flight; l must outlive the call (async: until cb).
 * rl_lock_token keeps the acquired value. Returns (rl_proclaim; the
 * async form calls back with the same codes, or returns the first four):
 *   - RL_OK: a quorum publishes owner;
 *   - RL_EINVAL: l NULL, owner NULL, empty or invalid (see
 *     rl_acquire_opts.owner), cb NULL, or l has no owner to change;
 *   - RL_ECANCELED: l's client was freed (or is being freed);
 *   - RL_EMISUSE: rl_proclaim on an external loop or the loop thread;
 *   - RL_ENOMEM;
 *   - RL_ELOST: l is no longer held (lost, validity over, or a majority
 *     holds no key of l's);
 *   - RL_ENOQUORUM: fewer than a quorum answered yes in time; l is still
 *     held. The outcome is unknown, not "not published": the nodes that
 *     answered yes publish owner, and those that did not answer (a lost
 *     or late reply) may have changed it all the same, so a majority may
 *     hold owner and rl_resource_inspect and observers may report it,
 *     while l's own value (what its renewals put back on a restarted
 *     node) stays the previous owner. Call again to settle it: with
 *     owner, or with the previous owner to go back. */
typedef void (*rl_proclaim_cb)(rl_lock *l, rl_status st, void *privdata);
RL_API rl_status rl_proclaim(rl_lock *l, const char *owner);
RL_API rl_status rl_proclaim_async(rl_lock *l, const char *owner,
                                   rl_proclaim_cb cb, void *privdata);

/* ---- Inspection (blocking, thread-safe; not with cfg.loop) ---------------*/

#define RL_NAME_LEN 128
#define RL_ERROR_LEN 256

/* A node's clock as the clock guard sees it (see
 * rl_config.no_clock_guard). */
typedef enum rl_clock_state {
    RL_CLOCK_OFF = 0,     /* the guard is off, or the node is unknown */
    RL_CLOCK_UNKNOWN = 1, /* fewer than two samples of its TIME so far */
    RL_CLOCK_OK = 2,      /* runs at our rate within drift_factor */
    RL_CLOCK_SUSPECT = 3, /* ran fast or slow or stepped: it does not vote
                             until it has behaved for max_ttl_ms */
} rl_clock_state;

/* One node, as rl_client_ping sees it. */
typedef struct rl_node_info {
    char name[RL_NAME_LEN];   /* "host:port" or "unix:/path"; no password */
    bool reachable;           /* answered PING */
    bool voting;              /* its vote counts (not quarantined after a
                                 restart, nor clock-suspect) */
    int64_t latency_us;       /* PING round trip; -1 when unreachable */
    int64_t uptime_ms;        /* server uptime; -1 when unknown */
    char version[32];         /* redis_version; "" when unknown */
    char error[RL_ERROR_LEN]; /* why unreachable; "" otherwise */
    char tls[16];             /* negotiated TLS protocol ("TLSv1.3"); ""
                                 for a plaintext or unconnected node */
    double clock_rate;        /* its clock's rate measured against ours
                                 (1.0: the same); 0 while unknown */
    int32_t clock_state;      /* rl_clock_state */
    /* What the node says of itself (INFO, CONFIG GET appendfsync) at its
     * handshake and latest check, about once a second. */
    int16_t twin_of;          /* index of the node listed before this one
                                 that is the same server or replication
                                 stream; -1 none */
    int8_t may_evict;         /* rl_fact: maxmemory with a policy other
                                 than noeviction */
    int8_t fsync_always;      /* rl_fact: appendonly yes and appendfsync
                                 always (a restart loses nothing) */
    int8_t aof_enabled;       /* rl_fact */
    int8_t cluster_enabled;   /* rl_fact */
    uint8_t vote_bar;         /* rl_vote_bar: why it does not vote */
    char role[13];            /* "master", "slave"; "" unknown */
    char maxmemory_policy[24]; /* "noeviction", "volatile-lru"...; "" */
    char appendfsync[12];     /* "always", "everysec", "no"; "" unknown
                                 (CONFIG refused) */
    uint64_t maxmemory;       /* bytes; 0 no limit */
    uint64_t reserved_[4];    /* zeroed (see "ABI" above) */
} rl_node_info;

/* A fact a node may not report. */
typedef enum rl_fact {
    RL_FACT_UNKNOWN = -1,
    RL_FACT_NO = 0,
    RL_FACT_YES = 1,
} rl_fact;

/* Why a node's vote does not count (the first reason that applies). */
typedef enum rl_vote_bar {
    RL_VOTES = 0,           /* it votes */
    RL_BAR_DOWN = 1,        /* not connected */
    RL_BAR_TWIN = 2,        /* the same server as an earlier node */
    RL_BAR_ROLE = 3,        /* not a master */
    RL_BAR_EVICTS = 4,      /* may evict keys, or lost keys less than
                               max_ttl_ms ago (it evicted some, or was a
                               replica); see allow_evicting_nodes */
    RL_BAR_CLOCK = 5,       /* clock-suspect */
    RL_BAR_QUARANTINE = 6,  /* restarted less than max_ttl_ms ago */
} rl_vote_bar;

/* PING every node at once and describe each (out[i] for node i, up to cap;
 * *count = number of nodes). Blocks up to about op_timeout_ms
 * (connect_timeout_ms while connecting).
 * Returns:
 *   RL_OK         a quorum of nodes is reachable and voting.
 *   RL_ENOQUORUM  fewer are (out is filled all the same).
 *   RL_EINVAL     NULL client, out or count, or cap 0.
 *   RL_EMISUSE    external loop, or called from a callback.
 *   RL_ENOMEM */
RL_API rl_status rl_client_ping(rl_client *c, rl_node_info *out, size_t cap,
                                size_t *count);

/* One node's view of a resource. */
typedef struct rl_holder_info {
    char name[RL_NAME_LEN];   /* node */
    bool reachable;
    char token[132];          /* holder's token, "" when free */
    int64_t pttl_ms;          /* remaining TTL; -2 when free, -1 no expiry */
    char error[RL_ERROR_LEN];
    bool voting;              /* its vote counts (not quarantined after a
                                 restart, nor clock-suspect) */
    uint32_t readers;         /* live readers of a read-write lock (token
                                 is then ""), within their validity;
                                 else 0 */
    uint32_t term_state;      /* rl_term_state of token on this node:
                                 RL_TERM_NONE (not taken with fencing, or
                                 free), RL_TERM_PENDING (taken with
                                 fencing, its term not written here yet)
                                 or RL_TERM_SET; rl_resource_inspect
                                 only */
    uint64_t fence;           /* the node's fencing counter, one for
                                 every resource (the latest token issued
                                 through the node), 0 when none;
                                 rl_resource_inspect only */
    uint64_t term;            /* RL_TERM_SET: token's own fencing token
                                 as this node recorded it, else 0 */
    uint32_t writer_waiting;  /* 1: a waiting writer's intent refuses new
                                 readers on this node (a read-write
                                 lock), else 0; status and inspect */
    uint32_t lock_delay_ms;   /* the lock-delay token carries
                                 (rl_acquire_opts.lock_delay_ms: its key
                                 lives pttl_ms, its holder's validity
                                 ends lock_delay_ms before), 0 when none
                                 (or another client's token) */
    uint32_t readers_in_delay; /* readers whose validity is over but whose
                                 lock-delay is not: they still keep
                                 writers out (not in readers) */
    uint32_t period;          /* 1: token's key is kept for its
                                 at_least_ms period (its holder released
                                 it before the period's end), else 0 */
    uint64_t reserved_[3];    /* zeroed (see "ABI" above) */
} rl_holder_info;

/* Read the resource's key on every node (out[i] for node i, up to cap;
 * *count = number of nodes). Blocks.
 * Returns:
 *   RL_OK         a quorum answered.
 *   RL_ENOQUORUM  fewer did (out is filled all the same).
 *   RL_EINVAL     NULL client, out or count, cap 0, or bad resource.
 *   RL_EMISUSE    external loop, or called from a callback.
 *   RL_ENOMEM */
RL_API rl_status rl_resource_status(rl_client *c, const char *resource,
                                    rl_holder_info *out, size_t cap,
                                    size_t *count);

/* One waiter of a resource's fair queue (rl_acquire_opts.fair), as a
 * quorum of the nodes holds it. */
typedef struct rl_queue_entry {
    char token[132];          /* the waiter's token (with its owner) */
    char owner[RL_OWNER_MAX + 1]; /* the token's owner, "" when none */
    uint32_t priority;        /* 0..RL_MAX_PRIORITY */
    uint64_t ticket;          /* its ticket: order within the priority */
    uint32_t nodes;           /* nodes that hold it with that place */
    int64_t expires_in_ms;    /* until its entry lapses on the quorum
                                 that holds it longest, unless refreshed */
    uint32_t mode;            /* RL_MODE_SHARED: a reader; else
                                 RL_MODE_EXCLUSIVE (a mutex or a writer) */
    uint32_t reserved32_;     /* zeroed (see "ABI" above) */
    int64_t waited_ms;        /* since it registered: the median over the
                                 nodes that hold it of each node's now
                                 minus its registration time (both by
                                 that node's clock); -1 unknown (an entry
                                 of an older version) */
    uint64_t reserved_[2];    /* zeroed (see "ABI" above) */
} rl_queue_entry;

/* Largest queue rl_resource_queue reads from each node. */
#define RL_QUEUE_READ_MAX 64

/* Read the fair queue of resource on every node: out[0..*count) are
 * the entries that a quorum of the nodes holds with the same place, in
 * queue order (the first is the next to be served), up to cap;
 * *minority (may be NULL) counts the entries held by fewer. Reads at most
 * RL_QUEUE_READ_MAX entries per node, changes nothing. What it shows
 * at each step of a fair wait (registration, the head's attempt, the
 * grant, the release): docs/protocol.md section 4, "Fair queue". Blocks.
 * Returns:
 *   RL_OK         a quorum answered.
 *   RL_ENOQUORUM  fewer did (*count is 0).
 *   RL_EINVAL     NULL client or count, out NULL with cap > 0, or bad
 *                 resource.
 *   RL_EMISUSE    external loop, or called from a callback.
 *   RL_ENOMEM */
RL_API rl_status rl_resource_queue(rl_client *c, const char *resource,
                                   rl_queue_entry *out, size_t cap,
                                   size_t *count, size_t *minority);

/* Where a fenced holder's term stands (rl_resource_info.term_state). A
 * fenced acquire takes the key in one round and writes its fencing token
 * in a second: in between, the holder is known but its term is not. */
typedef enum rl_term_state {
    RL_TERM_NONE = 0,    /* no holder, or one taken without fencing */
    RL_TERM_PENDING = 1, /* a fenced acquire between its rounds (or one
                            being rolled back): its term is not on a
                            quorum yet -- an election in progress, not a
                            leader */
    RL_TERM_SET = 2,     /* term is the holder's own fencing token */
} rl_term_state;

/* Who holds a resource, as a quorum of the nodes says. */
typedef struct rl_resource_info {
    bool held;                /* a quorum of voting nodes (node_count / 2
                                 + 1) hold token's lock */
    char token[132];          /* the value the most nodes hold (the
                                 holder's token; of the lock most nodes
                                 hold, its value most of them hold: a
                                 proclaim may leave two owners; ties go
                                 to the bytewise smallest value, not to
                                 node order), "" when no node holds one
                                 (free, or only readers) */
    char owner[RL_OWNER_MAX + 1]; /* its owner (rl_acquire_opts.owner);
                                 "" when unknown: taken without an owner,
                                 or by another client (redsync, ...) */
    uint32_t nodes_holding;   /* nodes whose key holds token's lock
                                 (after a proclaim, with either owner) */
    uint32_t node_count;
    int64_t validity_ms;      /* held: how long the holder's own
                                 validity still lasts on a quorum: the
                                 smallest PTTL among the quorum of nodes
                                 holding it longest, less the lock-delay
                                 (-1: no expiry); 0 once only the
                                 lock-delay is left; else 0 */
    uint64_t fence;           /* the largest fencing counter the nodes
                                 report: one per node for every
                                 resource, so the latest token issued
                                 through them, for this resource or
                                 another (the next fenced acquire of it
                                 gets more; compare term); 0 when none.
                                 A lock on several resources is fenced
                                 by its first resource only: read as a
                                 later one, it has no term here */
    uint64_t term;            /* held and term_state RL_TERM_SET: the
                                 holder's own fencing token (a quorum of
                                 the voting nodes holding it recorded it
                                 for this very lock); else 0 */
    uint32_t term_state;      /* rl_term_state; RL_TERM_NONE when not
                                 held */
    uint32_t writers_waiting; /* nodes where a waiting writer's intent
                                 refuses new readers (a read-write lock;
                                 it lapses soon after the writer gives
                                 up), 0 when none */
    int64_t blocked_ms;       /* held: how long a quorum's keys still
                                 refuse others: validity_ms plus what is
                                 left of the lock-delay (-1: no expiry);
                                 validity_ms 0 and blocked_ms > 0: the
                                 holder's validity is over (it crashed or
                                 stopped renewing) and the lock is in its
                                 lock-delay; else 0 */
    uint32_t lock_delay_ms;   /* held: the lock-delay its token carries
                                 (0: none); the keys outlive the holder's
                                 validity by it */
    uint32_t for_period;      /* held: 1 when a majority's keys are kept
                                 for its at_least_ms period (the holder
                                 released it before the period's end:
                                 its job is done; validity_ms is what
                                 is left of the period), else 0 */
    uint64_t reserved_[4];    /* zeroed (see "ABI" above) */
} rl_resource_info;

/* rl_resource_status plus a summary: reads the resource's key, the
 * node's fencing counter and the resource's fence record (whom the
 * counter was raised for through it) on every node; *info says which value a quorum of voting nodes holds, its
 * owner, its remaining validity, the latest fence and the holder's own
 * term. A fenced acquire sets the key in one round and its term in a
 * second: in between, info->term_state is RL_TERM_PENDING and info->term
 * 0 -- the holder is never paired with an earlier holder's term. An
 * attempt that a quorum granted but that fails afterwards (too little
 * validity left, its fence write short of a quorum) is rolled back: a
 * read in that round trip reports it held, and, for a fenced one, with
 * RL_TERM_PENDING unless its fence write had already reached a quorum.  A node holding another
 * value does not change the holder a quorum agrees on. What it reports
 * at each step of each operation (acquire, extend, release, readers and
 * writers, semaphore, proclaim, fair queue): the tables in
 * docs/protocol.md section 4, "What others see, step by step". nodes (cap
 * entries; *count = number of nodes) may be NULL with cap 0 and count
 * NULL. Blocks about op_timeout_ms; thread-safe.
 * Returns:
 *   RL_OK         a quorum answered; info is filled (also when the
 *                 resource is free).
 *   RL_ENOQUORUM  fewer did; info is filled from the nodes that answered.
 *   RL_EINVAL     NULL client or info, nodes NULL with cap > 0, nodes
 *                 without count, or bad resource.
 *   RL_EMISUSE    external loop, or called from a callback.
 *   RL_ENOMEM */
RL_API rl_status rl_resource_inspect(rl_client *c, const char *resource,
                                     rl_resource_info *info,
                                     rl_holder_info *nodes, size_t cap,
                                     size_t *count);

/* rl_resource_inspect for the permits of a semaphore
 * (rl_acquire_opts.limit): slots 0..limit-1 of resource (limit
 * 1..RL_MAX_LIMIT), all read in one script per node, so each node's
 * answer is one snapshot of its slots (not a slot per round; a failed
 * slot attempt's rollback still landing can show one acquisition on two
 * slots for a round trip, docs/protocol.md). slots[i] (limit
 * entries) sums up slot i as rl_resource_inspect would. nodes (may be
 * NULL with cap 0 and count NULL) gets node j's view of slot i at
 * nodes[i * cap + j] (limit * cap entries; j below cap); *count = number
 * of nodes. To find the permits of a semaphore whose limit is unknown,
 * pass RL_MAX_LIMIT: only the slots present are sent back, each node
 * still reads every one (a few ms). Blocks about op_timeout_ms;
 * thread-safe.
 * Returns:
 *   RL_OK         a quorum answered; slots are filled.
 *   RL_ENOQUORUM  fewer did; slots are filled from the nodes that
 *                 answered.
 *   RL_EINVAL     NULL client or slots, limit 0 or above RL_MAX_LIMIT,
 *                 nodes NULL with cap > 0, nodes without count, or bad
 *                 resource.
 *   RL_EMISUSE    external loop, or called from a callback.
 *   RL_ENOMEM */
RL_API rl_status rl_semaphore_inspect(rl_client *c, const char *resource,
                                      uint32_t limit, rl_resource_info *slots,
                                      rl_holder_info *nodes, size_t cap,
                                      size_t *count);

/* Observe the leader of name: cb runs on the client's loop thread with
 * the leader as rl_resource_inspect reports it (info->held false: none;
 * info->owner its published value, info->term its term when
 * info->term_state is RL_TERM_SET -- 0 and RL_TERM_NONE for a holder
 * that took the name without fencing, which no campaign does;
 * info->validity_ms how long the leader's validity lasts on a
 * majority) -- once at the start and then at every change (another
 * leader, none, another owner after a proclaim, another term, the
 * leader's validity over with its lock-delay left: validity_ms 0,
 * blocked_ms not), in the order read (what a read finds at each step
 * of a campaign, a proclaim or a release: docs/protocol.md section 4,
 * "What others see, step by step"). A leader is never
 * reported before its term is on a quorum: while a campaign is between
 * its two rounds (RL_TERM_PENDING), the observer reads again after 2 ms,
 * doubling up to retry_delay_ms, and reports nothing; a candidate whose
 * second round fails is rolled back and never reported. The nodes are read again
 * when a release or proclaim is announced on the release channel (a
 * fair lock's release is not announced there: it is seen at the next
 * timed read), when
 * the validity read has run out (a leader that crashed is noticed within
 * its TTL) and then its lock-delay, and every retry_delay_ms while there is no leader (or a read
 * did not reach a quorum). When the client is freed first, cb gets
 * RL_ECANCELED once (info NULL) and nothing after; likewise RL_ENOMEM
 * if the observer could not start. info is valid during the call only.
 * Stop it with rl_observe_stop (also after those). Returns:
 *   - RL_OK: *out is the observer;
 *   - RL_EINVAL: c, cb or out NULL, or a bad name;
 *   - RL_ECANCELED: the client is being freed;
 *   - RL_ENOMEM. */
typedef struct rl_observer rl_observer;
typedef void (*rl_observe_cb)(rl_observer *o, rl_status st,
                              const rl_resource_info *info, void *privdata);
RL_API rl_status rl_observe(rl_client *c, const char *name,
                            rl_observe_cb cb, void *privdata,
                            rl_observer **out);
/* Stop and free o: no callback runs after it returns. Any thread (also
 * inside o's callback); not while its client is being freed. NULL:
 * no-op. */
RL_API void rl_observe_stop(rl_observer *o);

/* ---- Statistics (blocking, thread-safe; not with cfg.loop) ---------------*/

#define RL_STATS_MAX_NODES 64

typedef struct rl_node_stats {
    char name[RL_NAME_LEN];
    bool connected;           /* handshake done, connection up */
    bool voting;              /* connected, not quarantined, not
                                 clock-suspect */
    uint64_t requests;        /* commands sent */
    uint64_t errors;          /* error replies (WRONGTYPE, OOM, ...) */
    uint64_t timeouts;        /* requests that got no reply in time */
    uint64_t down;            /* requests failed because it was down */
    uint64_t votes_for;       /* quorum rounds it granted */
    uint64_t votes_against;   /* refused, failed or not voting */
    uint32_t latency_p50_us;  /* reply latency percentiles (about +-10%) */
    uint32_t latency_p90_us;
    uint32_t latency_p99_us;
    uint32_t latency_max_us;
    uint64_t handshakes;      /* connections that completed the handshake
                                 (the first and every reconnect) */
    uint64_t tls_resumed;     /* of those, over TLS with a resumed session
                                 (no full TLS handshake) */
    double clock_rate;        /* as in rl_node_info */
    uint64_t clock_incidents; /* times it became clock-suspect */
    int32_t clock_state;      /* rl_clock_state */
    /* What the node says of itself, as in rl_node_info. */
    int16_t twin_of;          /* index of the earlier node it duplicates;
                                 -1 none */
    int8_t may_evict;         /* rl_fact */
    int8_t fsync_always;      /* rl_fact */
    uint8_t vote_bar;         /* rl_vote_bar */
    /* Node checks (what may change its vote, read once a second): this
     * client's own, the readings of other clients of the node taken
     * instead (a long-lived client follows the node's shared check),
     * and readings of this client's published for the others. */
    uint64_t checks_own;
    uint64_t checks_heard;
    uint64_t checks_shared;
    uint64_t reserved_[7];    /* zeroed (see "ABI" above) */
} rl_node_stats;

typedef struct rl_stats {
    uint64_t acquired;        /* successful acquisitions */
    uint64_t contended;       /* attempts refused: held by someone else */
    uint64_t lost;            /* locks reported lost */
    uint64_t renewals;        /* successful extensions (incl. watchdog) */
    uint64_t fences;          /* fencing tokens issued */
    size_t node_count;
    rl_node_stats nodes[RL_STATS_MAX_NODES];
    uint64_t overload_refused; /* watched acquires refused: RL_EOVERLOAD */
    uint64_t renewals_waiting; /* now: watched locks due for renewal that
                                  wait for the nodes (the watchdog's
                                  backlog; above 0 only under load) */
    uint64_t renewals_early;  /* watchdog renewals sent before they were
                                 due, with others due within
                                 renew_window_pct (never with 0): of all
                                 renewals, the share the window brings
                                 forward */
    /* Fair waiting (rl_acquire_opts.fair; docs/fair-queue.md): a fair
     * acquire refused at its first attempt takes a ticket and registers
     * in the resource's queue; the registration then ends once, granted
     * or given up. Registrations so far (rl_totals.queue_registrations)
     * are queue_waiters + queue_wait_count + queue_leaves. */
    uint64_t queue_waiters;   /* now: fair acquires registered, not yet
                                 granted or given up */
    uint64_t queue_wait_ms_total; /* registration to grant, whole ms,
                                 summed over the granted ones: divided
                                 by queue_wait_count, the mean wait in
                                 the queue */
    uint64_t queue_wait_count; /* registrations that ended granted */
    uint64_t queue_leaves;    /* registrations that ended without the
                                 lock: timed out, cancelled, or the
                                 client freed while waiting */
    uint64_t reserved_[1];    /* zeroed (see "ABI" above) */
} rl_stats;

/* Snapshot the counters since rl_client_new: the client's totals and
 * every node, 21 kB in one copy (rl_client_totals and rl_client_node_stats
 * read the same counters in small pieces). Blocks briefly (reads them on
 * the loop thread).
 * Returns:
 *   RL_OK
 *   RL_EINVAL   NULL client or out.
 *   RL_EMISUSE  external loop, or called from a callback. */
RL_API rl_status rl_client_stats(rl_client *c, rl_stats *out);

/* The client-wide counters of rl_stats, without the node array. */
typedef struct rl_totals {
    uint64_t acquired;        /* as in rl_stats */
    uint64_t contended;
    uint64_t lost;
    uint64_t renewals;
    uint64_t fences;
    uint64_t overload_refused;
    uint64_t renewals_waiting;
    uint64_t node_count;      /* nodes of the client (cfg.node_count):
                                 rl_client_node_stats takes 0..this-1 */
    uint64_t renewals_early;  /* as in rl_stats */
    uint64_t queue_waiters;   /* as in rl_stats */
    uint64_t queue_wait_ms_total;
    uint64_t queue_wait_count;
    uint64_t queue_leaves;
    uint64_t queue_registrations; /* fair acquires that registered in a
                                 queue (rl_stats: queue_waiters +
                                 queue_wait_count + queue_leaves; read
                                 here one counter at a time, the sum
                                 may differ briefly while waits end) */
    uint64_t reserved_[2];    /* zeroed (see "ABI" above) */
} rl_totals;

/* Read the client's totals (128 bytes) without the node array: the
 * counters are atomic, so this neither blocks nor needs the loop thread.
 * Any thread, also with an external loop and from a callback.
 * Returns:
 *   RL_OK
 *   RL_EINVAL   NULL client or out. */
RL_API rl_status rl_client_totals(rl_client *c, rl_totals *out);

/* Read node i's counters (nodes[i] of rl_client_stats, in the order of
 * cfg.nodes), one node at a time without copying the others. Blocks
 * briefly (node state is read on the loop thread).
 * Returns:
 *   RL_OK
 *   RL_EINVAL   NULL client or out, or i not below the client's number
 *               of nodes (rl_totals.node_count).
 *   RL_EMISUSE  external loop, or called from a callback. */
RL_API rl_status rl_client_node_stats(rl_client *c, size_t i,
                                      rl_node_stats *out);

/* ---- Administration and metrics ------------------------------------------*/

/* Force unlock (admin; Redisson's forceUnlock): delete resource's key on
 * every node whatever token it holds, publishing a release notification
 * so waiters retry at once. Blocks up to about op_timeout_ms;
 * thread-safe.
 *
 * The current holder LOSES its lock without being asked: its next renewal
 * fails, so with the watchdog it is reported lost (callback, rl_lock_lost,
 * fd); without one it learns it from rl_extend / rl_release (RL_ELOST).
 * Use it to clear a lock left by a holder that is gone, not to take a lock
 * from a live one.
 *
 * The readers of a read-write lock are removed too. Fence counters and
 * "redlock:" keys are never touched (resource, and prefix + resource,
 * must not be in that namespace); a key of another type (neither a lock's
 * string nor readers' hash) is no lock and is left alone (error for that
 * node).
 *
 * out[i] says what node i held just before the delete (up to cap entries;
 * *count = number of nodes): token and pttl_ms of the key removed (for
 * readers: token "" and readers, their number), "" and -2 when it held
 * none, or unreachable with error. *removed (may be NULL):
 * nodes on which a key was deleted.
 * Returns:
 *   RL_OK         a quorum of nodes answered, so nobody holds the resource
 *                 now. It was locked (and its holder has lost it) when
 *                 *removed >= *count / 2 + 1; otherwise it was already
 *                 free (stale keys on a minority were removed too).
 *   RL_ENOQUORUM  too few nodes answered (keys were deleted where they
 *                 did; the others expire by themselves).
 *   RL_EINVAL     NULL client, out or count, cap 0, or bad resource.
 *   RL_EMISUSE    external loop, or called from a callback.
 *   RL_ENOMEM */
RL_API rl_status rl_resource_force_unlock(rl_client *c, const char *resource,
                                          rl_holder_info *out, size_t cap,
                                          size_t *count, size_t *removed);

/* Render s (from rl_client_stats) as Prometheus text exposition format
 * (version 0.0.4): HELP and TYPE lines, then per client
 *   redlock_acquired_total, redlock_contended_total, redlock_lost_total,
 *   redlock_renewals_total, redlock_fences_total,
 *   redlock_overload_refused_total, redlock_renewals_early_total,
 *   redlock_queue_waits_total (queue_wait_count),
 *   redlock_queue_wait_seconds_total (queue_wait_ms_total / 1000),
 *   redlock_queue_leaves_total, redlock_queue_registrations_total
 *   (queue_waiters + queue_wait_count + queue_leaves)       (counters)
 *   redlock_renewals_waiting, redlock_queue_waiters          (gauges)
 * and per node, labelled node="host:port",
 *   redlock_node_requests_total, _errors_total, _timeouts_total,
 *   _down_total, redlock_node_votes_total{vote="for"|"against"}
 *                                                            (counters)
 *   redlock_node_latency_seconds{quantile="0.5"|"0.9"|"0.99"},
 *   redlock_node_latency_max_seconds, redlock_node_connected (0/1),
 *   redlock_node_voting (0/1), redlock_node_clock_rate,
 *   redlock_node_clock_suspect (0/1), redlock_node_may_evict and
 *   redlock_node_fsync_always (1 yes, 0 no, -1 not reported),
 *   redlock_node_independent (0: the same server as an earlier node),
 *   redlock_node_vote_bar (rl_vote_bar: 0 votes)           (gauges).
 * labels: label_count name/value pairs (labels[2i] = name, labels[2i+1] =
 * value) added to every sample, e.g. {"job", "billing"}; NULL when
 * label_count is 0. Names match [a-zA-Z_][a-zA-Z0-9_]*, do not start with
 * "__" and are not node, vote or quantile; values are UTF-8 (escaped
 * here). The text is written NUL-terminated into buf (cap bytes) and
 * *needed is always set to its size including the NUL; buf NULL with cap
 * 0 asks for the size only. Any thread, never blocks, touches no client.
 * Returns:
 *   RL_OK      the text is in buf (or, with buf NULL and cap 0, only
 *              *needed is set).
 *   RL_EINVAL  NULL s or needed, buf NULL with cap > 0, bad label,
 *              s->node_count above RL_STATS_MAX_NODES, a reserved byte
 *              of s or of a listed node not zero (see "ABI"), or cap
 *              below *needed ("buffer too small": buf then holds ""). */
RL_API rl_status rl_stats_format_prometheus(const rl_stats *s,
                                            const char *const *labels,
                                            size_t label_count, char *buf,
                                            size_t cap, size_t *needed);

#ifdef __cplusplus
}
#endif

#endif /* REDLOCK_H */
