-- SPDX-License-Identifier: BSD-3-Clause
-- above(a, b): counter a is larger than b (b false: absent). Counters
-- are decimal strings compared by length, then bytes: Lua numbers are
-- doubles, exact only to 2^53.
-- fence_read(ck, mk, k): the node's counter at ck (false: absent) and 1
-- when it is trusted -- its mark at mk is this server's run_id (INFO
-- server), which a restart or a failover changes -- else 0. The counter
-- is raised to k's own, where one is left by the per-resource counters
-- of earlier versions (redlock:fence:<k>), so that a token issued after
-- an upgrade goes above it.
local function above(a, b)
  return not b or #a > #b or (#a == #b and a > b)
end
local function fence_read(ck, mk, k)
  local cur = redis.call('get', ck)
  local id = string.match(redis.call('info', 'server'), 'run_id:(%x+)')
  local t = 0
  if cur and id and redis.call('get', mk) == id then t = 1 end
  local old = redis.call('get', 'redlock:fence:' .. k)
  if old and above(old, cur) then cur = old end
  return cur, t
end
