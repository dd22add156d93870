-- SPDX-License-Identifier: BSD-3-Clause
-- fair-acquire: a fair mutex's (or writer's, or semaphore slot's)
-- attempt, in the queue's order (docs/fair-queue.md; the queue's keys:
-- include/queue.lua).
-- KEYS: K, the lock key (a semaphore's: its slot key)
-- ARGV[1]: token; ARGV[2]: px; ARGV[3]: entry px; ARGV[4]: score (''
--   = not queued: the fast path); ARGV[5]: ticket[; ARGV[6]: intent px,
--   '' none: mark the writer intent where readers refuse it at its
--   turn][; ARGV[7], ARGV[8]: a semaphore's base key and limit, with
--   ARGV[6] '']
-- Reply: {1 set | 0, redlock:qt:K, rank or -1, K free 1 | 0}; the fast
--   path's grant is the integer 1, which stands for {1, '0', 0, 0}
--@creates-keys
-- The uncontended case first, before queue.lua's helpers exist
-- (defining them costs more than the SET): a first attempt where no
-- queue exists (a semaphore's: at its base key, ARGV[7]) is a bare SET
-- NX. Refused, it goes on below, where the refusal counts itself in the
-- counter (include/fair_try.lua).
local queued = ARGV[4] ~= '' or
  redis.call('exists', 'redlock:q:' .. (ARGV[7] or KEYS[1])) == 1
if not queued and
   redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
local kind = 'x'
--@include fair_try
if ok and take(tok, ARGV[2]) then
  granted('string')
  return {1, qt, 0, 0}
end
refused()
return {0, qt, rank or -1, free_here(kind)}
