-- fair-acquire-fenced: fair-acquire with the fence counter, its trust
-- and its record as acquire-fenced (no fast path).
-- KEYS: K, fence counter, fence mark, fence record
-- ARGV: as fair-acquire
-- Reply: {1 | 0, counter or false, trusted 1 | 0, redlock:qt:K, rank or
--        -1, K free 1 | 0}
--@creates-keys
local kind = 'x'
--@include fair_try
local cur = redis.call('get', KEYS[2])
local id = string.match(redis.call('info', 'server'),
                        'run_id:(%x+)')
local t = 0
if cur and id and redis.call('get', KEYS[3]) == id then
  t = 1
end
if ok then unreserve() end
if ok and redis.call('set', K, tok, 'NX', 'PX', ARGV[2]) then
  redis.call('set', KEYS[4], tok)
  granted()
  return {1, cur, t, qt, 0, 0}
end
refused()
return {0, cur, t, qt, rank or -1, free_here(kind)}
