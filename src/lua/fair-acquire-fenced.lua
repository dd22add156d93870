-- SPDX-License-Identifier: BSD-3-Clause
-- fair-acquire-fenced: fair-acquire with the node's fence counter, its
-- trust and K's record as acquire-fenced (no fast path).
-- KEYS: K, the node's fence counter, its mark, K's fence record
-- ARGV: as fair-acquire
-- Reply: {1 | 0, counter or false, trusted 1 | 0, redlock:qt:K, rank or
--        -1, K free 1 | 0}
--@creates-keys
local kind, queued = 'x', nil
--@include fair_try
--@include fence_counter
local cur, t = fence_read(KEYS[2], KEYS[3], K)
if ok and take(tok, ARGV[2]) then
  redis.call('set', KEYS[4], tok, 'PX', ARGV[2])
  granted('string')
  return {1, cur, t, qt, 0, 0}
end
refused()
return {0, cur, t, qt, rank or -1, free_here(kind)}
