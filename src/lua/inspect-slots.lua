-- SPDX-License-Identifier: BSD-3-Clause
-- inspect-slots: a semaphore's slots in one step: a holder that moves
-- between slots (a retry keeps its token) shows on one of them, never
-- two. Only the slots with a key or a fence record are answered (the
-- others are free), in one string (replies are flat arrays of scalars).
-- KEYS: k, the semaphore's base key (its slots are k:slot:0..limit-1);
--       the node's fence counter
-- ARGV[1]: limit
-- Reply: one string: the node's counter, then per slot "<slot> <pttl> "
--        and the slot's value and record; each of counter, value and
--        record as "<length>:<bytes>", "-1:" when absent
local function field(s)
  if s then return #s .. ':' .. s end
  return '-1:'
end
local out = {field(redis.call('get', KEYS[2]))}
for i = 0, tonumber(ARGV[1]) - 1 do
  local k = KEYS[1] .. ':slot:' .. i
  local v = redis.call('get', k)
  local r = redis.call('get', 'redlock:fencefor:' .. k)
  if v or r then
    out[#out + 1] = i .. ' ' .. redis.call('pttl', k) .. ' ' ..
      field(v) .. field(r)
  end
end
return table.concat(out)
