-- SPDX-License-Identifier: BSD-3-Clause
-- touch-batch: extends many locks (one key each) in one call, the
-- watchdog's renewals. Every key is read with one MGET, so each costs
-- one call from Lua (its PEXPIREAT). The expiry is absolute (one TIME
-- per call, at most the PX from now): Redis rewrites every PEXPIRE
-- into a PEXPIREAT for propagation, an allocation per key;
-- tools/touch-floor.py compares both forms. An absent key is never
-- recreated. A fenced lock's record (redlock:fencefor:<key>) lives as
-- long as its key: a fenced run's records get the same PEXPIREAT (an
-- unfenced run costs nothing more).
-- KEYS: one per lock
-- ARGV: per run of locks with equal PX and fencing: px ("<px>f": the
--       locks are fenced), n, then their n tokens
-- Reply: one string, a character per lock: "1" extended | "0" absent |
--        "2" another lock's
--@include ours
local vals = redis.call('mget', unpack(KEYS))
local out = {}
local t = redis.call('time')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local a, k = 1, 0
while a < #ARGV do
  local px, fenced = string.match(ARGV[a], '^(%d+)(f?)$')
  local at = string.format('%.0f', now + px)
  local n = tonumber(ARGV[a + 1])
  for i = 1, n do
    local v = vals[k + i]
    if not v or v == 'redlock:queued' then
      out[k + i] = '0'
    elseif v ~= ARGV[a + 1 + i] and not ours(v, ARGV[a + 1 + i]) then
      out[k + i] = '2'
    else
      redis.call('pexpireat', KEYS[k + i], at)
      if fenced == 'f' then
        redis.call('pexpireat', 'redlock:fencefor:' .. KEYS[k + i], at)
      end
      out[k + i] = '1'
    end
  end
  a, k = a + 2 + n, k + n
end
return table.concat(out)
