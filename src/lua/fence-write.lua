-- SPDX-License-Identifier: BSD-3-Clause
-- fence-write: while the key holds our lock, raises the node's fence
-- counter to a term (never lowers it), marks it trusted with this
-- server's run_id only where the caller allows that run_id, and writes
-- the record "<token> <term>", expiring with the key, in the same step.
-- The caller allows the run_ids of its nodes that were out of their
-- restart quarantine when the acquire began: a counter this server
-- reloaded stale or lost in a restart is vouched for again only by a
-- term read after every lock it may have missed was over
-- (docs/fencing.md). Drops k's per-resource counter and mark of earlier
-- versions: the node's counter is above them now.
-- KEYS: k, the node's fence counter, its mark, k's fence record
-- ARGV[1]: token; ARGV[2]: term (decimal); ARGV[3..]: run_ids that may
--          be marked
-- Reply: 1 written | 0 the key is not ours; error 'no run_id'
--@creates-keys
--@include fence_counter
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
local id = string.match(redis.call('info', 'server'), 'run_id:(%x+)')
if not id then return redis.error_reply('no run_id') end
if above(ARGV[2], redis.call('get', KEYS[2])) then
  redis.call('set', KEYS[2], ARGV[2])
end
for i = 3, #ARGV do
  if ARGV[i] == id then
    redis.call('set', KEYS[3], id)
    break
  end
end
local px = redis.call('pttl', KEYS[1])
if px > 0 then
  redis.call('set', KEYS[4], ARGV[1] .. ' ' .. ARGV[2], 'PX', px)
else
  redis.call('set', KEYS[4], ARGV[1] .. ' ' .. ARGV[2])
end
redis.call('del', 'redlock:fence:' .. KEYS[1],
           'redlock:fencerun:' .. KEYS[1])
return 1
