-- SPDX-License-Identifier: BSD-3-Clause
-- acquire-multi: a lock on several keys takes all of them in one step,
-- or none (a single key's acquire is SET NX PX itself, not a script).
-- KEYS: k1..kn, the lock's keys
-- ARGV[1]: token; ARGV[2]: ttl in ms
-- Reply: 1 all set | 0 one exists, nothing set
--@creates-keys
for _, k in ipairs(KEYS) do
  if redis.call('exists', k) == 1 then return 0 end
end
for _, k in ipairs(KEYS) do
  redis.call('set', k, ARGV[1], 'PX', ARGV[2])
end
return 1
