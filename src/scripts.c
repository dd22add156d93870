/* scripts.c -- Lua sources and SHA1 digests; docs/protocol.md states their
 * contract.
 *
 * Arguments and replies are listed in scripts.h and specified, script by
 * script, in docs/protocol.md section 3. What the sources rely on:
 * - Every script compares the whole stored value with the caller's token
 *   and nothing else; a plain SET NX holder (redsync, node-redlock) and
 *   ours exclude each other, and single-key acquire is SET NX PX itself,
 *   not a script, so its key layout is theirs (writer-acquire, for a
 *   writer refused once, stores the same string). One allowance: release,
 *   extend, touch-batch and proclaim match our keys with ours() (below),
 *   so a value with an owner also matches the same 40 hex digits with
 *   another owner (a leader's proclaim reached that node).
 * - proclaim sets a key that still holds our lock to the same digits with
 *   a new owner, keeping its expiry, and publishes the new value on
 *   redlock:release:<key> so observers re-read.
 * - Absent keys are never recreated by extend, touch-batch or
 *   reader-extend: that would hide a lapse.
 * - Deleting releases (release, reader-release, force-release) publish
 *   the removed token on redlock:release:<key> so waiters wake
 *   (notify.c); force-release of readers publishes ''.
 * - Readers' hash at a key is another lock to release, extend and
 *   proclaim (value()); force-release removes it. A key of any other
 *   type is no lock: GET's WRONGTYPE error goes back to the caller and
 *   the key is left alone.
 * - Readers live at the key itself, a hash of token -> expiry in server
 *   ms, whose PEXPIRE is the latest reader's; so SET NX fails while they
 *   hold it. A writer refused once runs writer-acquire (or acquire-fenced
 *   with the intent), which sets <key>:wintent in the same step as a
 *   refusal by readers: marked later, it could land after they left and
 *   miss the next ones, every time. Only its own writer clears it.
 *   Waiting writers share that one key: each refusal by readers writes
 *   the refused writer's token, so a winner also clears an intent it
 *   rewrote over another writer's (the other's comes back with its next
 *   refusal by readers). Writer preference is best effort; exclusion
 *   never depends on it.
 * - Beside a fence counter, its record names the lock it was raised for:
 *   acquire-fenced writes "<token>" in the step that sets the lock key,
 *   fence-write "<token> <term>" in the step that raises the counter, so
 *   a reader (inspect) never pairs a holder with another holder's term.
 * - The reader scripts prune lapsed readers (expiry at or before the
 *   server's TIME). Release and extend also delete the key when no live
 *   reader is left, else set its expiry to the latest live reader's: a
 *   reader that never released must not keep writers out after the last
 *   live one left. A lapsed reader's own release or extend finds nothing
 *   (0), as an expired key does.
 * - Fence counters are compared as decimal strings (length, then bytes):
 *   Lua numbers are doubles. The fence scripts read the run_id from INFO
 *   server, and the reader scripts and touch-batch read TIME
 *   (nondeterministic: scripts replicate their effects, Redis 5+).
 * - touch-batch reads every key with one MGET, so each key costs one call
 *   from Lua (its PEXPIREAT). The expiry is absolute (one TIME per call,
 *   at most the PX from now): Redis rewrites every PEXPIRE into a
 *   PEXPIREAT for propagation, an allocation per key;
 *   tools/touch-floor.py compares both forms.
 * The digests are computed once with OpenSSL; node.c sends EVALSHA and
 * falls back to EVAL on NOSCRIPT. */
#include <openssl/sha.h>
#include <pthread.h>
#include <string.h>

#include "scripts.h"
#include "token.h"

/* intent-clear spells the token layout out in Lua. */
_Static_assert(TOKEN_STEM_LEN == 32 && TOKEN_HEX_LEN == 40,
               "intent-clear's attempt digits are 33..40");

/* ours(v, t): v is the value of the lock whose token is t -- equal, or
 * both carry an owner after the same identity (40 hex digits, then
 * "~<lock-delay>" when the lock has one, then '.': lockrec_id_len):
 * proclaim changed the owner on that node. Only a value with an owner
 * can differ, so plain tokens (redsync, node-redlock, ours without an
 * owner) compare exactly as before. touch-batch tests v == t before
 * calling it: its common case costs no call. */
#define OURS_LUA                                                          \
    "local function ours(v, t)\n"                                         \
    "  if v == t then return true end\n"                                  \
    "  local p = t:match('^%x+~%d+%.') or t:match('^%x+%.')\n"            \
    "  if p == nil or (p:byte(41) ~= 46 and p:byte(41) ~= 126) then\n"    \
    "    return false\n"                                                  \
    "  end\n"                                                             \
    "  return #t > #p and #v > #p and v:sub(1, #p) == p\n"               \
    "end\n"

/* value(k): GET k, except that readers' hash at k (another lock, which
 * GET refuses with WRONGTYPE) reads as '' -- never a token, so the
 * caller sees another holder; a key of any other type is no lock and
 * still fails with GET's error. pcall costs nothing when GET succeeds.
 * A queue's reservation (QUEUE_RESERVED) is nobody's lock: absent. */
#define VALUE_LUA                                                         \
    "local function value(k)\n"                                           \
    "  local v = redis.pcall('get', k)\n"                                 \
    "  if v == " LUA_STR(QUEUE_RESERVED) " then return false end\n"        \
    "  if type(v) ~= 'table' then return v end\n"                         \
    "  if redis.call('type', k).ok == 'hash' then return '' end\n"        \
    "  return redis.call('get', k)\n"                                     \
    "end\n"

/* The first half of extend and proclaim: return 0 when a key is absent,
 * -1 when one holds another lock. */
#define ALL_OURS_LUA                                                      \
    OURS_LUA                                                              \
    VALUE_LUA                                                             \
    "for _, k in ipairs(KEYS) do\n"                                       \
    "  local v = value(k)\n"                                              \
    "  if not v then return 0 end\n"                                      \
    "  if not ours(v, ARGV[1]) then return -1 end\n"                      \
    "end\n"

/* live_readers(k): the readers in the hash at k whose expiry (server
 * ms) is still ahead of the server's TIME: n of them within their own
 * validity, d in their lock-delay -- the delay their token carries
 * ("<40 hex digits>~<delay>", then nothing or '.' and an owner) is the
 * end of their expiry, after their validity. Both keep writers out. */
#define LIVE_READERS_LUA                                                  \
    "local function live_readers(k)\n"                                    \
    "  local t = redis.call('time')\n"                                    \
    "  local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"               \
    "  local pat = '^' .. string.rep('%x', 40) .. '~(%d+)(.*)$'\n"         \
    "  local n, d = 0, 0\n"                                               \
    "  local all = redis.call('hgetall', k)\n"                            \
    "  for i = 1, #all, 2 do\n"                                           \
    "    local e = tonumber(all[i + 1])\n"                                \
    "    if e > now then\n"                                               \
    "      local delay, rest = all[i]:match(pat)\n"                       \
    "      if delay and (rest == '' or rest:sub(1, 1) == '.') and\n"      \
    "         e - tonumber(delay) <= now then\n"                          \
    "        d = d + 1\n"                                                 \
    "      else\n"                                                        \
    "        n = n + 1\n"                                                 \
    "      end\n"                                                         \
    "    end\n"                                                           \
    "  end\n"                                                             \
    "  return n, d\n"                                                     \
    "end\n"

/* The reader scripts' helpers. server_ms(): the server's TIME in ms.
 * prune(k, now): removes the readers of the hash at k whose expiry is at
 * or before now; returns the latest expiry left (0: none). */
#define PRUNE_LUA                                                         \
    "local function server_ms()\n"                                        \
    "  local t = redis.call('time')\n"                                    \
    "  return t[1] * 1000 + math.floor(t[2] / 1000)\n"                    \
    "end\n"                                                               \
    "local function prune(k, now)\n"                                      \
    "  local all = redis.call('hgetall', k)\n"                            \
    "  local last = 0\n"                                                  \
    "  for i = 1, #all, 2 do\n"                                           \
    "    local e = tonumber(all[i + 1])\n"                                \
    "    if e <= now then redis.call('hdel', k, all[i])\n"                \
    "    elseif e > last then last = e end\n"                             \
    "  end\n"                                                             \
    "  return last\n"                                                     \
    "end\n"

/* settle(k, now): prunes, then deletes k when no live reader is left
 * (false) or sets its expiry to the latest reader's (true): a lapsed
 * reader must not keep blocking writers after the last live one left
 * (release and extend; acquire adds a reader, then sets the expiry). */
#define SETTLE_LUA                                                        \
    PRUNE_LUA                                                             \
    "local function settle(k, now)\n"                                     \
    "  local last = prune(k, now)\n"                                      \
    "  if last == 0 then\n"                                               \
    "    redis.call('del', k)\n"                                          \
    "    return false\n"                                                  \
    "  end\n"                                                             \
    "  redis.call('pexpire', k, string.format('%.0f', last - now))\n"     \
    "  return true\n"                                                     \
    "end\n"

/* reader_take(k, wi, tok, px): reader-acquire -- refused (0) where a
 * writer holds k or its intent wi is marked; else the reader tok joins
 * the hash at k until now + px, lapsed readers pruned, and k lives as
 * long as its latest reader (1). Needs PRUNE_LUA. */
#define READER_TAKE_LUA                                                   \
    "local function reader_take(k, wi, tok, px)\n"                        \
    "  local ty = redis.call('type', k).ok\n"                             \
    "  if ty == 'string' then return 0 end\n"                             \
    "  if redis.call('exists', wi) == 1 then return 0 end\n"              \
    "  local now = server_ms()\n"                                         \
    "  local mine = now + tonumber(px)\n"                                 \
    "  local last = mine\n"                                               \
    "  if ty == 'hash' then\n"                                            \
    "    last = math.max(last, prune(k, now))\n"                          \
    "  end\n"                                                             \
    "  redis.call('hset', k, tok, string.format('%.0f', mine))\n"         \
    "  redis.call('pexpire', k, string.format('%.0f', last - now))\n"     \
    "  return 1\n"                                                        \
    "end\n"

/* reader_release(k, tok): reader-release -- 0 nothing of tok's (absent,
 * lapsed), -1 k is no readers' hash, 1 removed; settles k and publishes
 * on redlock:release:k when k is gone or tok left. Needs SETTLE_LUA. */
#define READER_RELEASE_LUA                                                \
    "local function reader_release(k, tok)\n"                             \
    "  local ty = redis.call('type', k).ok\n"                             \
    "  if ty == 'none' then return 0 end\n"                               \
    "  if ty ~= 'hash' then return -1 end\n"                              \
    "  local now = server_ms()\n"                                         \
    "  local e = redis.call('hget', k, tok)\n"                            \
    "  local r = 0\n"                                                     \
    "  if e and tonumber(e) > now then\n"                                 \
    "    redis.call('hdel', k, tok)\n"                                    \
    "    r = 1\n"                                                         \
    "  end\n"                                                             \
    "  if not settle(k, now) or r == 1 then\n"                            \
    "    redis.call('publish', 'redlock:release:' .. k, tok)\n"           \
    "  end\n"                                                             \
    "  return r\n"                                                        \
    "end\n"

/* A C constant spelled out in a script's source. */
#define LUA_NUM_(x) #x
#define LUA_NUM(x) LUA_NUM_(x)
#define LUA_STR(s) "'" s "'"

/* member(tok): a waiter's queue entry is named by its acquisition, not
 * by one attempt: each attempt has its own token (token.h), so the entry
 * is the token with its attempt digits zeroed; a value of another shape
 * is its own name. */
#define MEMBER_LUA                                                        \
    "local function member(tok)\n"                                        \
    "  local h = string.match(tok, '^%x+')\n"                             \
    "  if not h or #h < " LUA_NUM(TOKEN_HEX_LEN) " then return tok end\n" \
    "  return string.sub(tok, 1, " LUA_NUM(TOKEN_STEM_LEN) ") ..\n"       \
    "         string.rep('0', " LUA_NUM(TOKEN_HEX_LEN) " - "              \
    LUA_NUM(TOKEN_STEM_LEN) ") ..\n"                                      \
    "         string.sub(tok, " LUA_NUM(TOKEN_HEX_LEN) " + 1)\n"          \
    "end\n"

/* At most this many readers are named by one announcement (one PUBLISH
 * each); the ones further on learn it from their refresh. */
#define QUEUE_ANNOUNCE_MAX 64

/* A semaphore's queue (L permits; QK is its base key, the queue's, and
 * its slots QK:slot:0..L-1 are ordinary lock keys; L nil: a mutex at K).
 * slots_held(): the entries holding a slot here (a slot's value named as
 * its entry is, member()) and how many slots are taken.
 * sem_entitled(mem): mem may take a slot here -- fewer entries ahead of
 * it that hold no slot here than slots are free (so at most the first L
 * entries, and a waiter is never passed by the one behind it while the
 * holders that got their permit without queueing hold).
 * sem_announce(except): name each entitled entry (at most the free
 * slots, so at most L messages), as announce() names the mutex's head.
 * sem_hold(mem, on): mark mem's entry as a permit holder here (its kind
 * 'h' in redlock:qm) or back as a waiter (a rollback): it keeps its
 * entry a while after its grant, and queue-inspect lists waiters only.
 * free_here(kind): 1 when this kind may take the lock here now: a
 * semaphore's slot is free, else open(kind). */
#define SEM_QUEUE_LUA                                                     \
    "local function slots_held()\n"                                       \
    "  local held, n = {}, 0\n"                                           \
    "  for i = 0, L - 1 do\n"                                             \
    "    local v = redis.call('get', QK .. ':slot:' .. i)\n"              \
    "    if v then\n"                                                     \
    "      held[member(v)] = true\n"                                      \
    "      n = n + 1\n"                                                   \
    "    end\n"                                                           \
    "  end\n"                                                             \
    "  return held, n\n"                                                  \
    "end\n"                                                               \
    "local function sem_entitled(mem)\n"                                  \
    "  local held, n = slots_held()\n"                                    \
    "  local ahead = 0\n"                                                 \
    "  for _, e in ipairs(redis.call('zrange', Q, 0, L - 1)) do\n"        \
    "    if e == mem then return ahead < L - n end\n"                     \
    "    if not held[e] then ahead = ahead + 1 end\n"                     \
    "  end\n"                                                             \
    "  return false\n"                                                    \
    "end\n"                                                               \
    "local function sem_announce(except)\n"                               \
    "  local held, n = slots_held()\n"                                    \
    "  local free = L - n\n"                                              \
    "  if free <= 0 then return end\n"                                    \
    "  for _, e in ipairs(redis.call('zrange', Q, 0, L - 1)) do\n"        \
    "    if not held[e] then\n"                                           \
    "      if e ~= except then\n"                                         \
    "        redis.call('publish', 'redlock:queue:' .. QK, e)\n"          \
    "      end\n"                                                         \
    "      free = free - 1\n"                                             \
    "      if free == 0 then return end\n"                                \
    "    end\n"                                                           \
    "  end\n"                                                             \
    "end\n"                                                               \
    "local function sem_hold(mem, on)\n"                                  \
    "  local m = redis.call('hget', QM, mem)\n"                           \
    "  if m then\n"                                                       \
    "    redis.call('hset', QM, mem, (on and 'h' or 'x') .. m:sub(2))\n"  \
    "  end\n"                                                             \
    "end\n"                                                               \
    "local function free_here(kind)\n"                                    \
    "  if not L then return open(kind) end\n"                             \
    "  local _, n = slots_held()\n"                                       \
    "  if n < L then return 1 end\n"                                      \
    "  return 0\n"                                                        \
    "end\n"

/* The fair queue's helpers (docs/fair-queue.md 2.5). The queue of the
 * lock at K is redlock:q:K (entry -> score, the order), redlock:qx:K
 * (entry -> expiry, the node's TIME in ms), redlock:qt:K (the largest
 * ticket entered here), redlock:qw:K (the exclusive entries -- mutex,
 * writer -- with their scores: a reader finds the first one in
 * O(log n)) and redlock:qm:K (entry -> "<kind> <registered ms>", kind
 * x exclusive or s shared, for status): in the reserved namespace, so
 * no resource name can be another lock's queue.
 * They are derived from KEYS[1] so that fair-release and fair-rollback
 * keep the release script's shape (one key, the token): the lock's
 * release path stays one call (lockrec_script_cmd). Redlock nodes are
 * standalone masters, where undeclared keys are allowed. So is the
 * writer intent, K .. ':wintent' (lockrec_intent_key).
 * QUEUE_AT_LUA(QKEY, LIMIT) names the queue's key QK and the permits L
 * (Lua expressions, usually of optional ARGV): a semaphore slot's
 * scripts run at its slot key K and use the queue of the base key QK;
 * QUEUE_LUA is the mutex's and the read-write lock's (QK = K, L nil).
 * drop(t): the entry leaves all four of its keys.
 * purge(now): entries whose expiry passed go, wherever they are in the
 * queue (at most 64 per call: the next call takes the rest).
 * reserved(): K holds QUEUE_RESERVED (a free key kept for the queue);
 * unreserve(): a caller at its turn clears it before taking K (not a
 * semaphore's slot: its queue reserves nothing); held(): K is a lock.
 * open(kind): K may take this kind here now: free (or reserved) for an
 * exclusive one; for a reader, no writer holds it and no writer intent
 * is marked.
 * where(mem, kind): the place the turn rule sees: the rank, except that
 * a reader with no exclusive entry ahead of it (score, then member: the
 * sorted set's order) is at 0 -- every such reader may try; nil absent.
 * announce(except): who may try now, never `except` (the caller, who
 * learns it from its own reply), one token per message on
 * redlock:queue:QK: a semaphore's entitled entries (sem_announce); when
 * a reader heads and readers may enter here, every reader before the
 * first exclusive entry (at most QUEUE_ANNOUNCE_MAX); else the head's
 * token when K is free here.
 * settle(now): the queue keys live as long as their latest entry;
 * an empty queue is deleted with its counter (a counter orders only
 * entries still waiting). Not a semaphore's: while entries remain, a
 * free K is reserved for them, as long as they live, so a plain SET NX
 * (a fair mutex's first attempt too) is refused where anybody queues;
 * once none remains, the reservation goes and plain waiters are told.
 * enter(..., kind): add or refresh an entry (same score on every node),
 * note its kind and registration time once, and raise the counter to
 * its ticket, which rebuilds a restarted node's counter. */
#define QUEUE_LUA QUEUE_AT_LUA("K", "nil")
#define QUEUE_AT_LUA(QKEY, LIMIT)                                         \
    "local K = KEYS[1]\n"                                                 \
    "local QK, L = " QKEY ", " LIMIT "\n"                                \
    "local Q, QX, QT = 'redlock:q:' .. QK, 'redlock:qx:' .. QK,\n"        \
    "                  'redlock:qt:' .. QK\n"                             \
    "local QW, QM = 'redlock:qw:' .. QK, 'redlock:qm:' .. QK\n"           \
    MEMBER_LUA                                                            \
    "local function server_ms()\n"                                        \
    "  local t = redis.call('time')\n"                                    \
    "  return t[1] * 1000 + math.floor(t[2] / 1000)\n"                    \
    "end\n"                                                               \
    "local function drop(t)\n"                                            \
    "  local r = redis.call('zrem', Q, t)\n"                              \
    "  redis.call('zrem', QX, t)\n"                                       \
    "  redis.call('zrem', QW, t)\n"                                       \
    "  redis.call('hdel', QM, t)\n"                                       \
    "  return r\n"                                                        \
    "end\n"                                                               \
    "local function purge(now)\n"                                         \
    "  local dead = redis.call('zrangebyscore', QX, '-inf', now,\n"       \
    "                          'limit', 0, 64)\n"                         \
    "  for _, t in ipairs(dead) do drop(t) end\n"                        \
    "  return #dead\n"                                                    \
    "end\n"                                                               \
    "local function reserved()\n"                                        \
    "  return redis.pcall('get', K) == " LUA_STR(QUEUE_RESERVED) "\n"      \
    "end\n"                                                               \
    "local function unreserve()\n"                                       \
    "  if not L and reserved() then redis.call('del', K) end\n"           \
    "end\n"                                                               \
    "local function held()\n"                                            \
    "  return redis.call('exists', K) == 1 and not reserved()\n"          \
    "end\n"                                                               \
    "local function open(kind)\n"                                         \
    "  if kind ~= 's' then return held() and 0 or 1 end\n"                \
    "  if (redis.call('type', K).ok == 'string' and not reserved()) or\n" \
    "     redis.call('exists', K .. ':wintent') == 1 then return 0 end\n" \
    "  return 1\n"                                                        \
    "end\n"                                                               \
    "local function where(mem, kind)\n"                                   \
    "  local r = redis.call('zrank', Q, mem)\n"                           \
    "  if r and kind == 's' then\n"                                       \
    "    local w = redis.call('zrange', QW, 0, 0)[1]\n"                   \
    "    if not w or (redis.call('zrank', Q, w) or r) >= r then\n"        \
    "      return 0\n"                                                    \
    "    end\n"                                                           \
    "  end\n"                                                             \
    "  return r\n"                                                        \
    "end\n"                                                               \
    "local function announce_readers(except)\n"                           \
    "  local h = redis.call('zrange', Q, 0, 0)[1]\n"                      \
    "  if not h or redis.call('zscore', QW, h) then return false end\n"   \
    "  if open('s') == 0 then return true end\n"                          \
    "  local w = redis.call('zrange', QW, 0, 0)[1]\n"                     \
    "  local n = " LUA_NUM(QUEUE_ANNOUNCE_MAX) "\n"                        \
    "  if w then n = math.min(n, redis.call('zrank', Q, w) or n) end\n"   \
    "  for _, t in ipairs(redis.call('zrange', Q, 0, n - 1)) do\n"        \
    "    if t ~= except then\n"                                           \
    "      redis.call('publish', 'redlock:queue:' .. QK, t)\n"             \
    "    end\n"                                                           \
    "  end\n"                                                             \
    "  return true\n"                                                     \
    "end\n"                                                               \
    SEM_QUEUE_LUA                                                         \
    "local function announce(except)\n"                                   \
    "  if L then return sem_announce(except) end\n"                       \
    "  if announce_readers(except) then return end\n"                     \
    "  if held() then return end\n"                                      \
    "  local h = redis.call('zrange', Q, 0, 0)[1]\n"                      \
    "  if h and h ~= except then\n"                                       \
    "    redis.call('publish', 'redlock:queue:' .. QK, h)\n"              \
    "  end\n"                                                             \
    "end\n"                                                               \
    "local function settle(now)\n"                                        \
    "  local last = redis.call('zrange', QX, -1, -1, 'withscores')[2]\n"  \
    "  if not last then\n"                                                \
    "    redis.call('del', Q, QX, QT, QW, QM)\n"                          \
    "    if not L and reserved() then\n"                                  \
    "      redis.call('del', K)\n"                                        \
    "      redis.call('publish', 'redlock:release:' .. K, '')\n"          \
    "    end\n"                                                           \
    "    return\n"                                                        \
    "  end\n"                                                             \
    "  local px = string.format('%.0f', math.max(1, tonumber(last) - now))\n" \
    "  redis.call('pexpire', Q, px)\n"                                    \
    "  redis.call('pexpire', QX, px)\n"                                   \
    "  redis.call('pexpire', QT, px)\n"                                   \
    "  redis.call('pexpire', QW, px)\n"                                   \
    "  redis.call('pexpire', QM, px)\n"                                   \
    "  if L then return end\n"                                            \
    "  if redis.call('exists', K) == 0 then\n"                            \
    "    redis.call('set', K, " LUA_STR(QUEUE_RESERVED) ", 'PX', px)\n"    \
    "  elseif reserved() then\n"                                         \
    "    redis.call('pexpire', K, px)\n"                                  \
    "  end\n"                                                             \
    "end\n"                                                               \
    "local function enter(tok, score, ticket, now, epx, kind)\n"          \
    "  local added = redis.call('zadd', Q, score, tok)\n"                 \
    "  redis.call('hsetnx', QM, tok, (kind or 'x') .. ' ' ..\n"           \
    "             string.format('%.0f', now))\n"                         \
    "  if kind ~= 's' then redis.call('zadd', QW, score, tok) end\n"      \
    "  redis.call('zadd', QX, string.format('%.0f', now + epx), tok)\n"   \
    "  if tonumber(redis.call('get', QT) or '0') < tonumber(ticket) then\n" \
    "    redis.call('set', QT, ticket)\n"                                 \
    "  end\n"                                                             \
    "  return added\n"                                                    \
    "end\n"

/* The first half of fair-acquire (and its fenced twin, and
 * fair-reader-acquire: KIND, a Lua string, 'x' or 's'): purge, then
 * ok says whether this caller may take the key here -- the fast path
 * (no score) only where nobody queues (a reader: where no exclusive
 * entry queues), a queued caller (its entry added or refreshed here,
 * with the same score) only at its turn (where() is 0: the head, or a
 * reader with no exclusive entry ahead); qt is the node's counter as the
 * caller's ticket read needs it. refused(): a first attempt refused here
 * also counts itself in the counter (qt is the value before it), so
 * first attempts that reach the nodes one after another get increasing
 * tickets even while none has registered yet (a burst of newcomers is
 * served in arrival order, not in token order); a counter with no queue
 * lives an entry lifetime. Where no queue exists a first attempt
 * is a bare SET NX (queued false); fair-acquire grants that case before
 * this (its fast path). A writer refused where readers hold at
 * its turn marks its intent (ARGV[6], the intent's PX, '' none, as
 * writer-acquire): plain readers wait behind it as behind a plain
 * writer. A semaphore's slot attempt names its queue and permits
 * (ARGV[7], ARGV[8]): a queued caller's turn is sem_entitled. */
#define FAIR_TRY_LUA(KIND)                                                \
    QUEUE_AT_LUA("ARGV[7] or K", "tonumber(ARGV[8] or '')")               \
    "local kind = " KIND "\n"                                             \
    "local tok = ARGV[1]\n"                                               \
    "local mem = member(tok)\n"                                           \
    "local now, purged, ok, rank = 0, 0, true, nil\n"                     \
    "local queued = ARGV[4] ~= '' or redis.call('exists', Q) == 1\n"      \
    "if queued then\n"                                                    \
    "  now = server_ms()\n"                                               \
    "  purged = purge(now)\n"                                             \
    "  if ARGV[4] == '' then\n"                                           \
    "    ok = redis.call('zcard', kind == 's' and QW or Q) == 0\n"        \
    "  else\n"                                                            \
    "    enter(mem, ARGV[4], ARGV[5], now, tonumber(ARGV[3]), kind)\n"    \
    "    rank = where(mem, kind)\n"                                       \
    "    if L then ok = sem_entitled(mem) else ok = rank == 0 end\n"      \
    "  end\n"                                                             \
    "end\n"                                                               \
    "local qt = queued and redis.call('get', QT) or '0'\n"                \
    "local function refused()\n"                                          \
    "  if ARGV[4] == '' then\n"                                           \
    "    qt = tostring(redis.call('incr', QT) - 1)\n"                     \
    "    if not queued then redis.call('pexpire', QT, ARGV[3]) end\n"     \
    "  end\n"                                                             \
    "  if ok and (ARGV[6] or '') ~= '' and\n"                             \
    "     redis.call('type', K).ok == 'hash' then\n"                      \
    "    redis.call('set', K .. ':wintent', tok, 'PX', ARGV[6])\n"        \
    "  end\n"                                                             \
    "  if purged > 0 then announce(mem) end\n"                            \
    "  if queued then settle(now) end\n"                                  \
    "end\n"                                                               \
    "local function granted()\n"                                          \
    "  if L and ARGV[4] ~= '' then sem_hold(mem, true) end\n"             \
    "  if queued then settle(now) end\n"                                  \
    "end\n"

/* The second half of the fair releases (r: the release's reply), once
 * the caller found a queue here: purge, remove the caller's entry
 * unless KEEP_ENTRY (a rollback: a split attempt keeps its place), and
 * announce who may try now. */
#define QUEUE_RELEASE_LUA(KEEP_ENTRY)                                     \
    "local now = server_ms()\n"                                           \
    "purge(now)\n"                                                        \
    "local mem = member(tok)\n"                                           \
    "if not " KEEP_ENTRY " then drop(mem)\n"                              \
    "elseif L then sem_hold(mem, false) end\n"                            \
    "announce(mem)\n"                                                     \
    "settle(now)\n"                                                       \
    "return r\n"

/* fair-release and fair-rollback: release's compare-and-delete. A
 * release publishes on redlock:release:K as every release does (an
 * observer, a plain waiter and the head learn it; fair waiters behind
 * the head ignore it); a rollback does not (it would wake every plain
 * waiter for nothing, docs/fair-queue.md 1.3). KEEP_ENTRY (the rollback)
 * says whether the token's entry stays; ON_DELETE runs when the key was
 * ours and is gone. With no queue on the node there is nobody to tell:
 * it returns before QUEUE_LUA's helpers are defined, and costs what
 * release costs and one EXISTS; so does a rollback that found nothing of
 * ours (the attempt was not granted here: nothing changed). */
#define FAIR_RELEASE_LUA(KEEP_ENTRY, ON_DELETE)                           \
    OURS_LUA                                                              \
    VALUE_LUA                                                             \
    "local K, tok = KEYS[1], ARGV[1]\n"                                   \
    "local v = value(K)\n"                                                \
    "local r = 0\n"                                                       \
    "if v and ours(v, tok) then\n"                                        \
    "  redis.call('del', K)\n"                                            \
    ON_DELETE                                                             \
    "  r = 1\n"                                                           \
    "elseif v then\n"                                                     \
    "  r = -1\n"                                                          \
    "end\n"                                                               \
    "if (" KEEP_ENTRY " and r ~= 1) or\n"                                \
    "   redis.call('exists', 'redlock:q:' .. (ARGV[2] or K)) == 0 then\n" \
    "  return r\n"                                                        \
    "end\n"                                                               \
    QUEUE_AT_LUA("ARGV[2] or K", "tonumber(ARGV[3] or '')")               \
    QUEUE_RELEASE_LUA(KEEP_ENTRY)

/* fair-reader-release and fair-reader-rollback: reader-release (which
 * publishes on redlock:release:K as it does for plain readers), then the
 * queue as fair-release does. The reader helpers come before QUEUE_LUA:
 * its settle(now) shadows theirs for the code after it, and
 * reader_release keeps the one it was written with. */
#define FAIR_READER_RELEASE_LUA(KEEP_ENTRY)                               \
    SETTLE_LUA                                                            \
    READER_RELEASE_LUA                                                    \
    QUEUE_LUA                                                             \
    "local tok = ARGV[1]\n"                                               \
    "local r = reader_release(K, tok)\n"                                  \
    "if redis.call('exists', Q) == 0 then return r end\n"                 \
    QUEUE_RELEASE_LUA(KEEP_ENTRY)

static struct script scripts[SCRIPT_COUNT] = {
    [SCRIPT_ACQUIRE_MULTI] = {
        "acquire-multi",
        "for _, k in ipairs(KEYS) do\n"
        "  if redis.call('exists', k) == 1 then return 0 end\n"
        "end\n"
        "for _, k in ipairs(KEYS) do\n"
        "  redis.call('set', k, ARGV[1], 'PX', ARGV[2])\n"
        "end\n"
        "return 1\n",
        "", true},
    [SCRIPT_RELEASE] = {
        "release",
        OURS_LUA
        VALUE_LUA
        "local r = 0\n"
        "for _, k in ipairs(KEYS) do\n"
        "  local v = value(k)\n"
        "  if v and ours(v, ARGV[1]) then\n"
        "    redis.call('del', k)\n"
        "    redis.call('publish', 'redlock:release:' .. k, ARGV[1])\n"
        "    if r == 0 then r = 1 end\n"
        "  elseif v then\n"
        "    r = -1\n"
        "  end\n"
        "end\n"
        "return r\n",
        ""},
    [SCRIPT_EXTEND] = {
        "extend",
        ALL_OURS_LUA
        "for _, k in ipairs(KEYS) do\n"
        "  redis.call('pexpire', k, ARGV[2])\n"
        "end\n"
        "return 1\n",
        ""},
    [SCRIPT_TOUCH_BATCH] = {
        "touch-batch",
        OURS_LUA
        "local vals = redis.call('mget', unpack(KEYS))\n"
        "local out = {}\n"
        "local t = redis.call('time')\n"
        "local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
        "local a, k = 1, 0\n"
        "while a < #ARGV do\n"
        "  local at = string.format('%.0f', now + ARGV[a])\n"
        "  local n = tonumber(ARGV[a + 1])\n"
        "  for i = 1, n do\n"
        "    local v = vals[k + i]\n"
        "    if not v or v == " LUA_STR(QUEUE_RESERVED) " then\n"
        "      out[k + i] = '0'\n"
        "    elseif v ~= ARGV[a + 1 + i] and not ours(v, ARGV[a + 1 + i])"
        " then\n"
        "      out[k + i] = '2'\n"
        "    else\n"
        "      redis.call('pexpireat', KEYS[k + i], at)\n"
        "      out[k + i] = '1'\n"
        "    end\n"
        "  end\n"
        "  a, k = a + 2 + n, k + n\n"
        "end\n"
        "return table.concat(out)\n",
        ""},
    [SCRIPT_INSPECT] = {
        "inspect",
        LIVE_READERS_LUA
        VALUE_LUA
        "local w, f, r = false, false, false\n"
        "if #KEYS > 1 then w = redis.call('get', KEYS[2]) end\n"
        "if #KEYS > 2 then\n"
        "  f = redis.call('get', KEYS[3])\n"
        "  r = redis.call('get', KEYS[4])\n"
        "end\n"
        "if redis.call('type', KEYS[1]).ok == 'hash' then\n"
        "  local n, d = live_readers(KEYS[1])\n"
        "  return {false, redis.call('pttl', KEYS[1]), n, f, r, w, d}\n"
        "end\n"
        "local v = value(KEYS[1])\n"
        "if not v then return {false, -2, 0, f, r, w, 0} end\n"
        "return {v, redis.call('pttl', KEYS[1]), 0, f, r, w, 0,\n"
        "        redis.call('get', 'redlock:period:' .. KEYS[1])}\n",
        ""},
    /* A semaphore's slots in one step: a holder that moves between slots
     * (a retry keeps its token) shows on one of them, never two. Only the
     * slots with a key or a fence counter are answered (the others are
     * free), in one string (replies are flat arrays of scalars): per
     * slot "<i> <pttl> " then value, counter and record, each as
     * "<length>:<bytes>", "-1:" when absent. */
    [SCRIPT_INSPECT_SLOTS] = {
        "inspect-slots",
        "local function field(s)\n"
        "  if s then return #s .. ':' .. s end\n"
        "  return '-1:'\n"
        "end\n"
        "local out = {}\n"
        "for i = 0, tonumber(ARGV[1]) - 1 do\n"
        "  local k = KEYS[1] .. ':slot:' .. i\n"
        "  local v = redis.call('get', k)\n"
        "  local f = redis.call('get', 'redlock:fence:' .. k)\n"
        "  if v or f then\n"
        "    out[#out + 1] = i .. ' ' .. redis.call('pttl', k) .. ' ' ..\n"
        "      field(v) .. field(f) ..\n"
        "      field(redis.call('get', 'redlock:fencefor:' .. k))\n"
        "  end\n"
        "end\n"
        "return table.concat(out)\n",
        ""},
    [SCRIPT_ACQUIRE_FENCED] = {
        "acquire-fenced",
        "local n = #KEYS - 3\n"
        "if ARGV[3] then n = n - 1 end\n"
        "local cur = redis.call('get', KEYS[n + 1])\n"
        "local id = string.match(redis.call('info', 'server'),\n"
        "                        'run_id:(%x+)')\n"
        "local t = 0\n"
        "if cur and id and redis.call('get', KEYS[n + 2]) == id then\n"
        "  t = 1\n"
        "end\n"
        "for i = 1, n do\n"
        "  if redis.call('exists', KEYS[i]) == 1 then\n"
        "    if ARGV[3] and redis.call('type', KEYS[1]).ok == 'hash' then\n"
        "      redis.call('set', KEYS[n + 4], ARGV[1], 'PX', ARGV[3])\n"
        "    end\n"
        "    return {0, cur, t}\n"
        "  end\n"
        "end\n"
        "for i = 1, n do\n"
        "  redis.call('set', KEYS[i], ARGV[1], 'PX', ARGV[2])\n"
        "end\n"
        "redis.call('set', KEYS[n + 3], ARGV[1])\n"
        "return {1, cur, t}\n",
        "", true},
    [SCRIPT_FENCE_WRITE] = {
        "fence-write",
        "if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end\n"
        "local id = string.match(redis.call('info', 'server'),\n"
        "                        'run_id:(%x+)')\n"
        "if not id then return redis.error_reply('no run_id') end\n"
        "local cur = redis.call('get', KEYS[2])\n"
        "if not cur or #cur < #ARGV[2] or\n"
        "   (#cur == #ARGV[2] and cur < ARGV[2]) then\n"
        "  redis.call('set', KEYS[2], ARGV[2])\n"
        "end\n"
        "redis.call('set', KEYS[3], id)\n"
        "redis.call('set', KEYS[4], ARGV[1] .. ' ' .. ARGV[2])\n"
        "return 1\n",
        "", true},
    [SCRIPT_FORCE_RELEASE] = {
        "force-release",
        LIVE_READERS_LUA
        VALUE_LUA
        "local ty = redis.call('type', KEYS[1]).ok\n"
        "if ty == 'none' then return {false, -2, 0} end\n"
        "local v, n, d = false, 0, 0\n"
        "if ty == 'hash' then n, d = live_readers(KEYS[1])\n"
        "else\n"
        "  v = value(KEYS[1])\n"
        "  if not v then return {false, -2, 0} end\n"
        "end\n"
        "local t = redis.call('pttl', KEYS[1])\n"
        "redis.call('del', KEYS[1])\n"
        "redis.call('publish', 'redlock:release:' .. KEYS[1], v or '')\n"
        "return {v, t, n, false, false, false, d}\n",
        ""},
    [SCRIPT_READER_ACQUIRE] = {
        "reader-acquire",
        PRUNE_LUA
        READER_TAKE_LUA
        "return reader_take(KEYS[1], KEYS[2], ARGV[1], ARGV[2])\n",
        "", true},
    [SCRIPT_READER_EXTEND] = {
        "reader-extend",
        SETTLE_LUA
        "local ty = redis.call('type', KEYS[1]).ok\n"
        "if ty == 'none' then return 0 end\n"
        "if ty ~= 'hash' then return -1 end\n"
        "local now = server_ms()\n"
        "local e = redis.call('hget', KEYS[1], ARGV[1])\n"
        "local r = 0\n"
        "if e and tonumber(e) > now then\n"
        "  redis.call('hset', KEYS[1], ARGV[1],\n"
        "             string.format('%.0f', now + tonumber(ARGV[2])))\n"
        "  r = 1\n"
        "end\n"
        "if not settle(KEYS[1], now) then\n"
        "  redis.call('publish', 'redlock:release:' .. KEYS[1], ARGV[1])\n"
        "end\n"
        "return r\n",
        ""},
    [SCRIPT_READER_RELEASE] = {
        "reader-release",
        SETTLE_LUA
        READER_RELEASE_LUA
        "return reader_release(KEYS[1], ARGV[1])\n",
        ""},
    [SCRIPT_WRITER_ACQUIRE] = {
        "writer-acquire",
        "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
        "  return 1\n"
        "end\n"
        "if redis.call('type', KEYS[1]).ok == 'hash' then\n"
        "  redis.call('set', KEYS[2], ARGV[1], 'PX', ARGV[3])\n"
        "end\n"
        "return 0\n",
        "", true},
    [SCRIPT_PROCLAIM] = {
        "proclaim",
        ALL_OURS_LUA
        "for _, k in ipairs(KEYS) do\n"
        "  local t = redis.call('pttl', k)\n"
        "  if t <= 0 then return 0 end\n"
        "  redis.call('set', k, ARGV[2], 'PX', t)\n"
        "  redis.call('publish', 'redlock:release:' .. k, ARGV[2])\n"
        "end\n"
        "return 1\n",
        ""},
    [SCRIPT_FAIR_ACQUIRE] = {
        "fair-acquire",
        /* The uncontended case first, before QUEUE_LUA's helpers exist
         * (defining them costs more than the SET): a first attempt
         * where no queue exists (a semaphore's: at its base key, ARGV
         * 7) is a bare SET NX, granted with the integer 1, which stands
         * for {1, '0', 0, 0}. Refused, it goes on below, where the
         * refusal counts itself in the counter (FAIR_TRY_LUA). */
        "if ARGV[4] == '' and\n"
        "   redis.call('exists', 'redlock:q:' .. (ARGV[7] or KEYS[1])) == 0\n"
        "   and redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
        "  return 1\n"
        "end\n"
        FAIR_TRY_LUA("'x'")
        "if ok then unreserve() end\n"
        "if ok and redis.call('set', K, tok, 'NX', 'PX', ARGV[2]) then\n"
        "  granted()\n"
        "  return {1, qt, 0, 0}\n"
        "end\n"
        "refused()\n"
        "return {0, qt, rank or -1, free_here(kind)}\n",
        "", true},
    [SCRIPT_FAIR_ACQUIRE_FENCED] = {
        "fair-acquire-fenced",
        FAIR_TRY_LUA("'x'")
        "local cur = redis.call('get', KEYS[2])\n"
        "local id = string.match(redis.call('info', 'server'),\n"
        "                        'run_id:(%x+)')\n"
        "local t = 0\n"
        "if cur and id and redis.call('get', KEYS[3]) == id then\n"
        "  t = 1\n"
        "end\n"
        "if ok then unreserve() end\n"
        "if ok and redis.call('set', K, tok, 'NX', 'PX', ARGV[2]) then\n"
        "  redis.call('set', KEYS[4], tok)\n"
        "  granted()\n"
        "  return {1, cur, t, qt, 0, 0}\n"
        "end\n"
        "refused()\n"
        "return {0, cur, t, qt, rank or -1, free_here(kind)}\n",
        "", true},
    [SCRIPT_QUEUE_ENTER] = {
        "queue-enter",
        QUEUE_AT_LUA("K", "tonumber(ARGV[6] or '')")
        "local now = server_ms()\n"
        "local purged = purge(now)\n"
        "local mem = member(ARGV[1])\n"
        "local kind = ARGV[5] or 'x'\n"
        "local added = enter(mem, ARGV[3], ARGV[4], now, tonumber(ARGV[2]),\n"
        "                    kind)\n"
        "if purged > 0 then announce(mem) end\n"
        "settle(now)\n"
        "return {where(mem, kind), free_here(kind),\n"
        "        redis.call('get', QT) or '0', added}\n",
        "", true},
    [SCRIPT_FAIR_RELEASE] = {
        "fair-release",
        FAIR_RELEASE_LUA("false", "  redis.call('publish', "
                                  "'redlock:release:' .. K, tok)\n"),
        ""},
    [SCRIPT_FAIR_ROLLBACK] = {
        "fair-rollback", FAIR_RELEASE_LUA("true", ""), ""},
    [SCRIPT_QUEUE_LEAVE] = {
        "queue-leave",
        QUEUE_AT_LUA("K", "tonumber(ARGV[2] or '')")
        "if redis.call('exists', Q) == 0 then return 0 end\n"
        "local now = server_ms()\n"
        "purge(now)\n"
        "local mem = member(ARGV[1])\n"
        "local r = drop(mem)\n"
        "announce(mem)\n"
        "settle(now)\n"
        "return r\n",
        ""},
    [SCRIPT_FAIR_READER_ACQUIRE] = {
        "fair-reader-acquire",
        PRUNE_LUA
        READER_TAKE_LUA
        FAIR_TRY_LUA("'s'")
        "if ok then unreserve() end\n"
        "if ok and reader_take(K, K .. ':wintent', tok, ARGV[2]) == 1 then\n"
        "  if queued then settle(now) end\n"
        "  return {1, qt, 0, 0}\n"
        "end\n"
        "refused()\n"
        "return {0, qt, rank or -1, open(kind)}\n",
        "", true},
    [SCRIPT_FAIR_READER_RELEASE] = {
        "fair-reader-release", FAIR_READER_RELEASE_LUA("false"), ""},
    [SCRIPT_FAIR_READER_ROLLBACK] = {
        "fair-reader-rollback", FAIR_READER_RELEASE_LUA("true"), ""},
    [SCRIPT_QUEUE_INSPECT] = {
        "queue-inspect",
        MEMBER_LUA
        "local K = KEYS[1]\n"
        "local t = redis.call('time')\n"
        "local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
        /* A holder keeps its entry a while after its grant: it holds,
         * it does not wait, so it is not listed (the writer's key, each
         * reader in the hash, a semaphore's permit holders marked 'h'
         * in redlock:qm). */
        "local held = {}\n"
        "local function hold(t)\n"
        "  held[string.sub(member(t), 1, " LUA_NUM(TOKEN_HEX_LEN) ")] = true\n"
        "end\n"
        "local ty = redis.call('type', K).ok\n"
        "if ty == 'string' then hold(redis.call('get', K))\n"
        "elseif ty == 'hash' then\n"
        "  for _, f in ipairs(redis.call('hkeys', K)) do hold(f) end\n"
        "end\n"
        "local q = redis.call('zrange', 'redlock:q:' .. K, 0,\n"
        "                     tonumber(ARGV[1]) - 1, 'withscores')\n"
        "local out = {string.format('%.0f', now)}\n"
        "for i = 1, #q, 2 do\n"
        "  local e = redis.call('zscore', 'redlock:qx:' .. K, q[i])\n"
        "  local m = redis.call('hget', 'redlock:qm:' .. K, q[i]) or ''\n"
        "  if e and tonumber(e) > now and m:sub(1, 1) ~= 'h' and\n"
        "     not held[string.sub(q[i], 1, " LUA_NUM(TOKEN_HEX_LEN) ")] then\n"
        "    out[#out + 1] = q[i]\n"
        "    out[#out + 1] = q[i + 1]\n"
        "    out[#out + 1] = e\n"
        "    out[#out + 1] = m\n"
        "  end\n"
        "end\n"
        "return out\n",
        ""},
    [SCRIPT_INTENT_CLEAR] = {
        "intent-clear",
        /* Ours if set by any attempt of this acquisition: the same token
         * but for the attempt digits 33..40 (token.h TOKEN_STEM_LEN). */
        "local v = redis.call('get', KEYS[1])\n"
        "local t = ARGV[1]\n"
        "if v ~= t and not (v and #v == #t and #t >= 40 and\n"
        "    v:sub(1, 32) == t:sub(1, 32) and v:sub(41) == t:sub(41)) then\n"
        "  return 0\n"
        "end\n"
        "return redis.call('del', KEYS[1])\n",
        ""},
    /* A release within an at_least_ms period: extend, and the marker
     * that tells inspection the key is kept for its period (its holder
     * is done), with the same value and expiry. */
    [SCRIPT_KEEP] = {
        "keep",
        ALL_OURS_LUA
        "for _, k in ipairs(KEYS) do\n"
        "  redis.call('pexpire', k, ARGV[2])\n"
        "end\n"
        "redis.call('set', 'redlock:period:' .. KEYS[1], ARGV[1], 'px',\n"
        "           ARGV[2])\n"
        "return 1\n",
        ""},
};

static pthread_once_t digests_once = PTHREAD_ONCE_INIT;

static void compute_digests(void)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[SHA_DIGEST_LENGTH];
    size_t i, j;

    for (i = 0; i < SCRIPT_COUNT; i++) {
        SHA1((const unsigned char *)scripts[i].source,
             strlen(scripts[i].source), md);
        for (j = 0; j < SHA_DIGEST_LENGTH; j++) {
            scripts[i].sha1[2 * j] = hex[md[j] >> 4];
            scripts[i].sha1[2 * j + 1] = hex[md[j] & 0xf];
        }
        scripts[i].sha1[40] = '\0';
    }
}

const struct script *script_get(enum script_id id)
{
    pthread_once(&digests_once, compute_digests);
    return &scripts[id];
}
