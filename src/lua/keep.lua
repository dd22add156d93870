-- SPDX-License-Identifier: BSD-3-Clause
-- keep: a release within an at_least_ms period. Instead of deleting the
-- keys, sets their expiry to what is left of the period, and writes the
-- marker that tells inspection the key is kept for its period (its
-- holder is done), with the same value and expiry. A fenced lock's
-- record (k1's) lives as long: the kept lock still reads with its term.
-- Publishes nothing: no waiter can take the lock before the period
-- ends.
-- KEYS: k1..kn, the lock's keys (the marker is written for k1)
-- ARGV[1]: token; ARGV[2]: what is left of the period, in ms
-- Reply: 1 kept | 0 a key is absent | -1 a key holds another lock
--@include all_ours
for _, k in ipairs(KEYS) do
  redis.call('pexpire', k, ARGV[2])
end
redis.call('set', 'redlock:period:' .. KEYS[1], ARGV[1], 'px', ARGV[2])
redis.call('pexpire', 'redlock:fencefor:' .. KEYS[1], ARGV[2])
return 1
