-- SPDX-License-Identifier: BSD-3-Clause
-- extend: sets the expiry of every key, if all of them hold our lock,
-- and of the first one's fence record (a fenced lock's lives as long as
-- its key; another lock's left there lives no longer than ours). An
-- absent key is never recreated: that would hide a lapse.
-- KEYS: k1..kn, the lock's keys
-- ARGV[1]: token; ARGV[2]: ttl in ms
-- Reply: 1 extended | 0 a key is absent | -1 a key holds another lock
--@include all_ours
for _, k in ipairs(KEYS) do
  redis.call('pexpire', k, ARGV[2])
end
redis.call('pexpire', 'redlock:fencefor:' .. KEYS[1], ARGV[2])
return 1
