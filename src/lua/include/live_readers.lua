-- SPDX-License-Identifier: BSD-3-Clause
-- live_readers(k): the readers in the hash at k whose expiry (server
-- ms) is still ahead of the server's TIME: n of them within their own
-- validity, d in their lock-delay -- the delay their token carries
-- ("<40 hex digits>~<delay>", then nothing or '.' and an owner) is the
-- end of their expiry, after their validity. Both keep writers out.
local function live_readers(k)
  local t = redis.call('time')
  local now = t[1] * 1000 + math.floor(t[2] / 1000)
  local pat = '^' .. string.rep('%x', 40) .. '~(%d+)(.*)$'
  local n, d = 0, 0
  local all = redis.call('hgetall', k)
  for i = 1, #all, 2 do
    local e = tonumber(all[i + 1])
    if e > now then
      local delay, rest = all[i]:match(pat)
      if delay and (rest == '' or rest:sub(1, 1) == '.') and
         e - tonumber(delay) <= now then
        d = d + 1
      else
        n = n + 1
      end
    end
  end
  return n, d
end
