-- SPDX-License-Identifier: BSD-3-Clause
-- The reader scripts' helpers. server_ms(): the server's TIME in ms.
-- prune(k, now): removes the readers of the hash at k whose expiry is at
-- or before now; returns the latest expiry left (0: none).
local function server_ms()
  local t = redis.call('time')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end
local function prune(k, now)
  local all = redis.call('hgetall', k)
  local last = 0
  for i = 1, #all, 2 do
    local e = tonumber(all[i + 1])
    if e <= now then redis.call('hdel', k, all[i])
    elseif e > last then last = e end
  end
  return last
end
