-- SPDX-License-Identifier: BSD-3-Clause
-- writer-acquire: a writer refused once tries SET NX PX again, and marks
-- its intent in the same step where readers refuse it: marked later, it
-- could land after they left and miss the next ones, every time. It
-- stores the same string as a plain acquire.
-- KEYS: k, writer intent
-- ARGV[1]: token; ARGV[2]: px; ARGV[3]: the intent's px
-- Reply: 1 set | 0 refused (the intent set where readers hold k)
--@creates-keys
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
if redis.call('type', KEYS[1]).ok == 'hash' then
  redis.call('set', KEYS[2], ARGV[1], 'PX', ARGV[3])
end
return 0
