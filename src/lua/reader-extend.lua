-- SPDX-License-Identifier: BSD-3-Clause
-- reader-extend: a live reader's expiry moves to now + px; lapsed
-- readers are pruned, and k goes when none is left (publishing the
-- token) or lives as long as its latest reader. An absent key is never
-- recreated.
-- KEYS: k
-- ARGV[1]: token; ARGV[2]: px
-- Reply: 1 extended | 0 not a live reader here | -1 k is no readers' hash
--@include settle
local ty = redis.call('type', KEYS[1]).ok
if ty == 'none' then return 0 end
if ty ~= 'hash' then return -1 end
local now = server_ms()
local e = redis.call('hget', KEYS[1], ARGV[1])
local r = 0
if e and tonumber(e) > now then
  redis.call('hset', KEYS[1], ARGV[1],
             string.format('%.0f', now + tonumber(ARGV[2])))
  r = 1
end
if not settle(KEYS[1], now) then
  redis.call('publish', 'redlock:release:' .. KEYS[1], ARGV[1])
end
return r
