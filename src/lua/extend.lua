-- extend: sets the expiry of every key, if all of them hold our lock.
-- An absent key is never recreated: that would hide a lapse.
-- KEYS: k1..kn, the lock's keys
-- ARGV[1]: token; ARGV[2]: ttl in ms
-- Reply: 1 extended | 0 a key is absent | -1 a key holds another lock
--@include all_ours
for _, k in ipairs(KEYS) do
  redis.call('pexpire', k, ARGV[2])
end
return 1
