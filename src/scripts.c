/* scripts.c -- Lua sources and SHA1 digests (DESIGN §5.1, §5.3, §5.4).
 *
 * Node replies, per script:
 *   acquire-multi: 1 = every key set to our token, 0 = some key exists (none
 *     set: all-or-nothing on each node).
 *   release: 1 = every key held our token and was deleted, 0 = absent
 *     (nothing of ours left), -1 = some key holds another token. Each
 *     delete publishes on redlock:release:<key> so waiters wake (§5.5).
 *   extend: 1 = every key holds our token and got the new expiry, 0 = some
 *     key is absent, -1 = some key holds another token. It never recreates
 *     an absent key: that would hide a lapse (§5.4).
 *   acquire-fenced: like acquire-multi over all keys but the last two,
 *     the fence counter and its run_id marker; returns {granted (1 or 0),
 *     counter or nil, trusted (1 when the marker is this server's run_id)}
 *     on refusals too (fence.c). With ARGV[3] a writer that waits: the
 *     last key is its writer intent, set PX ARGV[3] where readers hold
 *     KEYS[1], as writer-acquire does.
 *   fence-write: if the lock key still holds our token, raise the counter
 *     to ARGV[2] and set the marker to this server's run_id (1), else 0.
 *     Compared as decimal strings (length, then bytes): Lua numbers are
 *     doubles. Both fence scripts read the run_id from INFO server (a
 *     nondeterministic command: scripts replicate their effects, Redis 5+).
 *   force-release (admin, issue 14): whatever token the key holds, return
 *     {value, pttl} and delete it, publishing the removed token on
 *     redlock:release:<key> as a release does; {false, -2} when absent.
 *     GET fails on a key that is not a string: such a key is no lock and
 *     is left alone.
 *   inspect: {value or false, pttl}; for a read-write lock's readers
 *     (a hash, issue 13) {false, pttl, live readers}.
 *   touch-batch (issue 16): the extend script for many one-key locks in
 *     one call. KEYS holds one key per lock; ARGV holds, for each run of
 *     locks with the same PX, the PX, how many locks, then their tokens
 *     in KEYS' order (a batch of equal TTLs is one run: two arguments per
 *     lock, not four). Returns a string with one code per lock, with
 *     extend's meaning: '1' extended, '0' absent (or not a string), '2'
 *     holds another token (nothing changed for that lock). Each lock's
 *     fate is its own; absent keys are never recreated. One MGET reads
 *     every key: a call from Lua costs about as much as the work of a
 *     PEXPIRE, so each key costs one call. The expiry is absolute
 *     (PEXPIREAT from one TIME per call, at most the PX from now): Redis
 *     rewrites every PEXPIRE into a PEXPIREAT for propagation, an
 *     allocation per key; tools/touch-floor.py measures both forms.
 *   reader-acquire, reader-extend, reader-release (issue 13): a
 *     read-write lock's readers live at the key itself, a hash of reader
 *     token -> expiry (server time, ms), whose PEXPIRE is the latest
 *     reader's expiry; so a plain SET NX (ours, redsync, node-redlock)
 *     fails while readers hold it, and a reader is refused (0) while a
 *     string (an exclusive holder) or a writer's intent key exists.
 *     Expired readers are pruned on acquire; extend never re-adds an
 *     absent or expired reader (0; -1 when an exclusive holder has the
 *     key); release removes ours (1; 0 absent, -1 exclusive holder),
 *     deletes the key when it was the last, and publishes as release
 *     does so waiting writers wake.
 *   writer-acquire: SET NX PX as a single-key acquire, for a writer
 *     refused before; refused where readers hold the key, it marks that
 *     it waits with <key>:wintent PX ARGV[3] in the same step (1 set, 0
 *     refused): new readers are refused until it expires or its writer
 *     wins (writer preference). Marked in a later step, the intent could
 *     land after the refusing readers left and miss the ones that came
 *     next, every time.
 *   intent-clear (issue 13): the writer that wins deletes the intent only
 *     if it is its own; another writer's (it refreshed the intent last)
 *     keeps refusing readers while that writer waits.
 * Single-key acquire does not use a script: plain SET NX PX keeps the key
 * layout identical to redsync and node-redlock (§6); writer-acquire
 * stores the same string, so both exclude each other as before.
 * The digests are computed once with OpenSSL; node.c sends EVALSHA and
 * falls back to EVAL on NOSCRIPT. */
#include <openssl/sha.h>
#include <pthread.h>
#include <string.h>

#include "scripts.h"

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
        "local r = 0\n"
        "for _, k in ipairs(KEYS) do\n"
        "  local v = redis.call('get', k)\n"
        "  if v == ARGV[1] then\n"
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
        "for _, k in ipairs(KEYS) do\n"
        "  local v = redis.call('get', k)\n"
        "  if not v then return 0 end\n"
        "  if v ~= ARGV[1] then return -1 end\n"
        "end\n"
        "for _, k in ipairs(KEYS) do\n"
        "  redis.call('pexpire', k, ARGV[2])\n"
        "end\n"
        "return 1\n",
        ""},
    [SCRIPT_TOUCH_BATCH] = {
        "touch-batch",
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
        "    if not v then out[k + i] = '0'\n"
        "    elseif v ~= ARGV[a + 1 + i] then out[k + i] = '2'\n"
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
        "local f = false\n"
        "if #KEYS > 1 then f = redis.call('get', KEYS[2]) end\n"
        "if redis.call('type', KEYS[1]).ok == 'hash' then\n"
        "  local t = redis.call('time')\n"
        "  local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
        "  local n = 0\n"
        "  for _, e in ipairs(redis.call('hvals', KEYS[1])) do\n"
        "    if tonumber(e) > now then n = n + 1 end\n"
        "  end\n"
        "  return {false, redis.call('pttl', KEYS[1]), n, f}\n"
        "end\n"
        "return {redis.call('get', KEYS[1]), redis.call('pttl', KEYS[1]), 0, "
        "f}\n",
        ""},
    [SCRIPT_ACQUIRE_FENCED] = {
        "acquire-fenced",
        "local n = #KEYS - 2\n"
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
        "      redis.call('set', KEYS[n + 3], ARGV[1], 'PX', ARGV[3])\n"
        "    end\n"
        "    return {0, cur, t}\n"
        "  end\n"
        "end\n"
        "for i = 1, n do\n"
        "  redis.call('set', KEYS[i], ARGV[1], 'PX', ARGV[2])\n"
        "end\n"
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
        "return 1\n",
        ""},
    [SCRIPT_FORCE_RELEASE] = {
        "force-release",
        "local v = redis.call('get', KEYS[1])\n"
        "if not v then return {false, -2} end\n"
        "local t = redis.call('pttl', KEYS[1])\n"
        "redis.call('del', KEYS[1])\n"
        "redis.call('publish', 'redlock:release:' .. KEYS[1], v)\n"
        "return {v, t}\n",
        ""},
    [SCRIPT_READER_ACQUIRE] = {
        "reader-acquire",
        "local ty = redis.call('type', KEYS[1]).ok\n"
        "if ty == 'string' then return 0 end\n"
        "if redis.call('exists', KEYS[2]) == 1 then return 0 end\n"
        "local t = redis.call('time')\n"
        "local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
        "local mine = now + tonumber(ARGV[2])\n"
        "local last = mine\n"
        "if ty == 'hash' then\n"
        "  local all = redis.call('hgetall', KEYS[1])\n"
        "  for i = 1, #all, 2 do\n"
        "    local e = tonumber(all[i + 1])\n"
        "    if e <= now then redis.call('hdel', KEYS[1], all[i])\n"
        "    elseif e > last then last = e end\n"
        "  end\n"
        "end\n"
        "redis.call('hset', KEYS[1], ARGV[1], string.format('%.0f', mine))\n"
        "redis.call('pexpire', KEYS[1], string.format('%.0f', last - now))\n"
        "return 1\n",
        "", true},
    [SCRIPT_READER_EXTEND] = {
        "reader-extend",
        "local ty = redis.call('type', KEYS[1]).ok\n"
        "if ty == 'none' then return 0 end\n"
        "if ty ~= 'hash' then return -1 end\n"
        "local e = redis.call('hget', KEYS[1], ARGV[1])\n"
        "local t = redis.call('time')\n"
        "local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
        "if not e or tonumber(e) <= now then return 0 end\n"
        "local px = tonumber(ARGV[2])\n"
        "redis.call('hset', KEYS[1], ARGV[1],\n"
        "           string.format('%.0f', now + px))\n"
        "if redis.call('pttl', KEYS[1]) < px then\n"
        "  redis.call('pexpire', KEYS[1], ARGV[2])\n"
        "end\n"
        "return 1\n",
        ""},
    [SCRIPT_READER_RELEASE] = {
        "reader-release",
        "local ty = redis.call('type', KEYS[1]).ok\n"
        "if ty == 'none' then return 0 end\n"
        "if ty ~= 'hash' then return -1 end\n"
        "if redis.call('hdel', KEYS[1], ARGV[1]) == 0 then return 0 end\n"
        "if redis.call('hlen', KEYS[1]) == 0 then\n"
        "  redis.call('del', KEYS[1])\n"
        "end\n"
        "redis.call('publish', 'redlock:release:' .. KEYS[1], ARGV[1])\n"
        "return 1\n",
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
    [SCRIPT_INTENT_CLEAR] = {
        "intent-clear",
        "if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end\n"
        "return redis.call('del', KEYS[1])\n",
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
