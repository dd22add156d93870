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
 *   acquire-fenced: like acquire-multi over all keys but the last, which
 *     is the fence counter; returns {1, counter} or {0} (fence.c).
 *   fence-write: raise the counter to ARGV[2] if the lock key still holds
 *     our token (1), else 0. Compared as decimal strings (length, then
 *     bytes): Lua numbers are doubles.
 *   force-release (admin, issue 14): whatever token the key holds, return
 *     {value, pttl} and delete it, publishing the removed token on
 *     redlock:release:<key> as a release does; {false, -2} when absent.
 *     GET fails on a key that is not a string: such a key is no lock and
 *     is left alone.
 *   touch-batch (issue 16): the extend script for many locks in one call.
 *     ARGV holds three entries per lock: token, key count, ttl_ms; KEYS
 *     holds each lock's keys in the same order. Returns a string with one
 *     code per lock, with extend's meaning: '1' extended, '0' some key
 *     absent (or not a string), '2' some key holds another token (nothing
 *     changed for that lock). Each lock's fate is its own; absent keys are
 *     never recreated. One MGET reads every key: a call from Lua costs
 *     about as much as the work of a PEXPIRE, so each key costs one call.
 * Single-key acquire does not use a script: plain SET NX PX keeps the key
 * layout identical to redsync and node-redlock (§6).
 * Timed twins (clock guard, issue 15): acquire-multi, release, extend and
 *   touch-batch also exist as a twin that runs the same body and returns
 *   {result, TIME seconds, TIME microseconds}; node.c takes the server
 *   time off and hands the owner the result, so classifiers never see the
 *   difference. What they store is unchanged. Redis 5+ replicates a
 *   script's effects, so TIME in a writing script is allowed.
 * The digests are computed once with OpenSSL; node.c sends EVALSHA and
 * falls back to EVAL on NOSCRIPT. */
#include <openssl/sha.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
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
        "local k = 0\n"
        "for i = 1, #ARGV, 3 do\n"
        "  local tok, n, code = ARGV[i], tonumber(ARGV[i + 1]), '1'\n"
        "  for j = k + 1, k + n do\n"
        "    local v = vals[j]\n"
        "    if not v then code = '0' break end\n"
        "    if v ~= tok then code = '2' break end\n"
        "  end\n"
        "  if code == '1' then\n"
        "    for j = k + 1, k + n do\n"
        "      redis.call('pexpire', KEYS[j], ARGV[i + 2])\n"
        "    end\n"
        "  end\n"
        "  out[#out + 1] = code\n"
        "  k = k + n\n"
        "end\n"
        "return table.concat(out)\n",
        ""},
    [SCRIPT_INSPECT] = {
        "inspect",
        "return {redis.call('get', KEYS[1]), redis.call('pttl', KEYS[1])}\n",
        ""},
    [SCRIPT_ACQUIRE_FENCED] = {
        "acquire-fenced",
        "local n = #KEYS - 1\n"
        "for i = 1, n do\n"
        "  if redis.call('exists', KEYS[i]) == 1 then return {0} end\n"
        "end\n"
        "for i = 1, n do\n"
        "  redis.call('set', KEYS[i], ARGV[1], 'PX', ARGV[2])\n"
        "end\n"
        "return {1, redis.call('get', KEYS[#KEYS])}\n",
        "", true},
    [SCRIPT_FENCE_WRITE] = {
        "fence-write",
        "if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end\n"
        "local cur = redis.call('get', KEYS[2])\n"
        "if not cur or #cur < #ARGV[2] or\n"
        "   (#cur == #ARGV[2] and cur < ARGV[2]) then\n"
        "  redis.call('set', KEYS[2], ARGV[2])\n"
        "end\n"
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
};

/* The scripts with a timed twin, and the twins (built from the bodies
 * once, with their digests; never freed). */
static const enum script_id timeable[] = {
    SCRIPT_ACQUIRE_MULTI, SCRIPT_RELEASE, SCRIPT_EXTEND, SCRIPT_TOUCH_BATCH};
static struct script timed[SCRIPT_COUNT];

static pthread_once_t digests_once = PTHREAD_ONCE_INIT;

static void digest(struct script *s)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[SHA_DIGEST_LENGTH];
    size_t j;

    SHA1((const unsigned char *)s->source, strlen(s->source), md);
    for (j = 0; j < SHA_DIGEST_LENGTH; j++) {
        s->sha1[2 * j] = hex[md[j] >> 4];
        s->sha1[2 * j + 1] = hex[md[j] & 0xf];
    }
    s->sha1[40] = '\0';
}

static void make_timed(enum script_id id)
{
    static const char head[] = "local function body()\n";
    static const char tail[] = "end\n"
                               "local r = body()\n"
                               "local t = redis.call('time')\n"
                               "return {r, t[1], t[2]}\n";
    size_t len = strlen(scripts[id].source);
    char *src = malloc(sizeof(head) + len + sizeof(tail));

    if (src == NULL)
        return; /* no twin: the plain script is used */
    memcpy(src, head, sizeof(head) - 1);
    memcpy(src + sizeof(head) - 1, scripts[id].source, len);
    memcpy(src + sizeof(head) - 1 + len, tail, sizeof(tail));
    timed[id] = scripts[id];
    timed[id].source = src;
    timed[id].timed = true;
    digest(&timed[id]);
}

static void compute_digests(void)
{
    size_t i;

    for (i = 0; i < SCRIPT_COUNT; i++)
        digest(&scripts[i]);
    for (i = 0; i < ARRAY_SIZE(timeable); i++)
        make_timed(timeable[i]);
}

const struct script *script_get(enum script_id id)
{
    pthread_once(&digests_once, compute_digests);
    return &scripts[id];
}

const struct script *script_timed(const struct script *s)
{
    enum script_id id;

    if (s == NULL || s->timed)
        return s;
    pthread_once(&digests_once, compute_digests);
    id = (enum script_id)(s - scripts);
    return timed[id].source != NULL ? &timed[id] : s;
}
