-- SPDX-License-Identifier: BSD-3-Clause
-- reader_release(k, tok): reader-release -- 0 nothing of tok's (absent,
-- lapsed), -1 k is no readers' hash, 1 removed; settles k and publishes
-- on redlock:release:k when k is gone or tok left.
--@include settle
local function reader_release(k, tok)
  local ty = redis.call('type', k).ok
  if ty == 'none' then return 0 end
  if ty ~= 'hash' then return -1 end
  local now = server_ms()
  local e = redis.call('hget', k, tok)
  local r = 0
  if e and tonumber(e) > now then
    redis.call('hdel', k, tok)
    r = 1
  end
  if not settle(k, now) or r == 1 then
    redis.call('publish', 'redlock:release:' .. k, tok)
  end
  return r
end
