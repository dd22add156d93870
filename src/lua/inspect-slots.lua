-- inspect-slots: a semaphore's slots in one step: a holder that moves
-- between slots (a retry keeps its token) shows on one of them, never
-- two. Only the slots with a key or a fence counter are answered (the
-- others are free), in one string (replies are flat arrays of scalars).
-- KEYS: k, the semaphore's base key (its slots are k:slot:0..limit-1)
-- ARGV[1]: limit
-- Reply: one string: per slot "<slot> <pttl> " then value, counter and
--        record, each as "<length>:<bytes>", "-1:" when absent
local function field(s)
  if s then return #s .. ':' .. s end
  return '-1:'
end
local out = {}
for i = 0, tonumber(ARGV[1]) - 1 do
  local k = KEYS[1] .. ':slot:' .. i
  local v = redis.call('get', k)
  local f = redis.call('get', 'redlock:fence:' .. k)
  if v or f then
    out[#out + 1] = i .. ' ' .. redis.call('pttl', k) .. ' ' ..
      field(v) .. field(f) ..
      field(redis.call('get', 'redlock:fencefor:' .. k))
  end
end
return table.concat(out)
