-- acquire-fenced: acquire with the fence counter read in the same step,
-- and whether it can be trusted: the node's run_id (INFO server) still
-- is the one the mark saw raise it. Writes the record "<token>" beside
-- the counter in the step that sets the lock key. A writer refused by
-- readers marks its intent here (as writer-acquire).
-- KEYS: k1..kn, fence counter, fence mark (run_id), fence record[,
--       writer intent]
-- ARGV[1]: token; ARGV[2]: ttl in ms[; ARGV[3]: the intent's px]
-- Reply: {1 set | 0 refused, counter or false, trusted 1 | 0}
--@creates-keys
local n = #KEYS - 3
if ARGV[3] then n = n - 1 end
local cur = redis.call('get', KEYS[n + 1])
local id = string.match(redis.call('info', 'server'),
                        'run_id:(%x+)')
local t = 0
if cur and id and redis.call('get', KEYS[n + 2]) == id then
  t = 1
end
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
redis.call('set', KEYS[n + 3], ARGV[1])
return {1, cur, t}
