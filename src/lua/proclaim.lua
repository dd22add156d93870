-- SPDX-License-Identifier: BSD-3-Clause
-- proclaim: a leader names itself: every key that still holds our lock
-- gets the same 40 digits with a new owner, keeping its expiry, and the
-- new value is published on redlock:release:<key> so observers re-read.
-- KEYS: k1..kn, the lock's keys
-- ARGV[1]: token; ARGV[2]: the new value
-- Reply: 1 set | 0 a key is absent (or expiring) | -1 a key holds
--        another lock
--@include all_ours
for _, k in ipairs(KEYS) do
  local t = redis.call('pttl', k)
  if t <= 0 then return 0 end
  redis.call('set', k, ARGV[2], 'PX', t)
  redis.call('publish', 'redlock:release:' .. k, ARGV[2])
end
return 1
