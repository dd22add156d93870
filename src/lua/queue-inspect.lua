-- SPDX-License-Identifier: BSD-3-Clause
-- queue-inspect: the waiters of a fair lock's queue, read only.
-- KEYS: K (a semaphore's: its base key)
-- ARGV[1]: max entries
-- Reply: {now, then per live entry not holding, in order: token, score,
--        expiry, "<kind> <registered ms>" or ''}
--@include member
local K = KEYS[1]
local t = redis.call('time')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
-- A holder keeps its entry a while after its grant: it holds, it does
-- not wait, so it is not listed (the writer's key, each reader in the
-- hash, a semaphore's permit holders marked 'h' in redlock:qm).
local held = {}
local function hold(t)
  held[string.sub(member(t), 1, 40)] = true
end
local ty = redis.call('type', K).ok
if ty == 'string' then hold(redis.call('get', K))
elseif ty == 'hash' then
  for _, f in ipairs(redis.call('hkeys', K)) do hold(f) end
end
local q = redis.call('zrange', 'redlock:q:' .. K, 0,
                     tonumber(ARGV[1]) - 1, 'withscores')
local out = {string.format('%.0f', now)}
for i = 1, #q, 2 do
  local e = redis.call('zscore', 'redlock:qx:' .. K, q[i])
  local m = redis.call('hget', 'redlock:qm:' .. K, q[i]) or ''
  if e and tonumber(e) > now and m:sub(1, 1) ~= 'h' and
     not held[string.sub(q[i], 1, 40)] then
    out[#out + 1] = q[i]
    out[#out + 1] = q[i + 1]
    out[#out + 1] = e
    out[#out + 1] = m
  end
end
return out
