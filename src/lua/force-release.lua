-- SPDX-License-Identifier: BSD-3-Clause
-- force-release: deletes the lock at k whoever holds it (an operator's
-- command) and publishes the removed value on redlock:release:<key>
-- ('' for readers).
-- KEYS: k
-- Reply: as inspect, before the delete: {value or false, pttl, live
--        readers, false, false, false, readers in their lock-delay};
--        {false, -2, 0} when nothing was there
--@include live_readers
--@include value
local ty = redis.call('type', KEYS[1]).ok
if ty == 'none' then return {false, -2, 0} end
local v, n, d = false, 0, 0
if ty == 'hash' then n, d = live_readers(KEYS[1])
else
  v = value(KEYS[1])
  if not v then return {false, -2, 0} end
end
local t = redis.call('pttl', KEYS[1])
redis.call('del', KEYS[1])
redis.call('publish', 'redlock:release:' .. KEYS[1], v or '')
return {v, t, n, false, false, false, d}
