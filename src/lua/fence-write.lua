-- fence-write: raises the fence counter to a term (compared as decimal
-- strings, length then bytes: Lua numbers are doubles) while the key
-- holds our lock, marks it with the node's run_id and writes the record
-- "<token> <term>" in the same step.
-- KEYS: k, fence counter, fence mark, fence record
-- ARGV[1]: token; ARGV[2]: term (decimal)
-- Reply: 1 written | 0 the key is not ours; error 'no run_id'
--@creates-keys
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
local id = string.match(redis.call('info', 'server'),
                        'run_id:(%x+)')
if not id then return redis.error_reply('no run_id') end
local cur = redis.call('get', KEYS[2])
if not cur or #cur < #ARGV[2] or
   (#cur == #ARGV[2] and cur < ARGV[2]) then
  redis.call('set', KEYS[2], ARGV[2])
end
redis.call('set', KEYS[3], id)
redis.call('set', KEYS[4], ARGV[1] .. ' ' .. ARGV[2])
return 1
