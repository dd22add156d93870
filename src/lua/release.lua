-- release: deletes every key that holds our lock and publishes the
-- token on redlock:release:<key> so waiters wake (notify.c).
-- KEYS: k1..kn, the lock's keys
-- ARGV[1]: token
-- Reply: 1 one was ours (deleted) | 0 none was held | -1 one holds
--        another lock (those are left alone)
--@include ours
--@include value
local r = 0
for _, k in ipairs(KEYS) do
  local v = value(k)
  if v and ours(v, ARGV[1]) then
    redis.call('del', k)
    redis.call('publish', 'redlock:release:' .. k, ARGV[1])
    if r == 0 then r = 1 end
  elseif v then
    r = -1
  end
end
return r
