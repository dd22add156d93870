-- SPDX-License-Identifier: BSD-3-Clause
-- reader_take(k, wi, tok, px): reader-acquire -- refused (0) where a
-- writer holds k or its intent wi is marked; else the reader tok joins
-- the hash at k until now + px, lapsed readers pruned, and k lives as
-- long as its latest reader (1).
--@include prune
local function reader_take(k, wi, tok, px)
  local ty = redis.call('type', k).ok
  if ty == 'string' then return 0 end
  if redis.call('exists', wi) == 1 then return 0 end
  local now = server_ms()
  local mine = now + tonumber(px)
  local last = mine
  if ty == 'hash' then
    last = math.max(last, prune(k, now))
  end
  redis.call('hset', k, tok, string.format('%.0f', mine))
  redis.call('pexpire', k, string.format('%.0f', last - now))
  return 1
end
