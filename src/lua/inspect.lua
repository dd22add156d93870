-- SPDX-License-Identifier: BSD-3-Clause
-- inspect: what a node holds for a lock, read only.
-- KEYS: k[, writer intent[, fence counter, fence record]]
-- Reply: {value or false, pttl, live readers, fence counter or false,
--         record or false, writer intent or false, readers in their
--         lock-delay, period marker (redlock:period:k, the value of a
--         lock kept for its at_least_ms period) or false}
--@include live_readers
--@include value
local w, f, r = false, false, false
if #KEYS > 1 then w = redis.call('get', KEYS[2]) end
if #KEYS > 2 then
  f = redis.call('get', KEYS[3])
  r = redis.call('get', KEYS[4])
end
if redis.call('type', KEYS[1]).ok == 'hash' then
  local n, d = live_readers(KEYS[1])
  return {false, redis.call('pttl', KEYS[1]), n, f, r, w, d}
end
local v = value(KEYS[1])
if not v then return {false, -2, 0, f, r, w, 0} end
return {v, redis.call('pttl', KEYS[1]), 0, f, r, w, 0,
        redis.call('get', 'redlock:period:' .. KEYS[1])}
