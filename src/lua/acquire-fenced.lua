-- SPDX-License-Identifier: BSD-3-Clause
-- acquire-fenced: acquire with the node's fence counter read in the same
-- step, and whether it can be trusted (fence_read). Writes the record
-- "<token>" of k1 in the step that sets the lock keys, expiring with
-- them. A writer refused by readers marks its intent here (as
-- writer-acquire).
-- KEYS: k1..kn, the node's fence counter, its mark (run_id), k1's fence
--       record[, writer intent]
-- ARGV[1]: token; ARGV[2]: ttl in ms[; ARGV[3]: the intent's px]
-- Reply: {1 set | 0 refused, counter or false, trusted 1 | 0}
--@creates-keys
--@include fence_counter
local n = #KEYS - 3
if ARGV[3] then n = n - 1 end
local cur, t = fence_read(KEYS[n + 1], KEYS[n + 2], KEYS[1])
for i = 1, n do
  if redis.call('exists', KEYS[i]) == 1 then
    if ARGV[3] and redis.call('type', KEYS[1]).ok == 'hash' then
      redis.call('set', KEYS[n + 4], ARGV[1], 'PX', ARGV[3])
    end
    return {0, cur, t}
  end
end
for i = 1, n do
  redis.call('set', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
redis.call('set', KEYS[n + 3], ARGV[1], 'PX', ARGV[2])
return {1, cur, t}
