-- SPDX-License-Identifier: BSD-3-Clause
-- fair-release: release, and the token's entry leaves the queue; who
-- may try now is told on redlock:queue:K.
-- KEYS: K
-- ARGV[1]: token[; ARGV[2], ARGV[3]: a semaphore's base key and limit]
-- Reply: 1 | 0 | -1, as release
local rollback = false
--@include fair_release_key
if r == 1 then
  redis.call('publish', 'redlock:release:' .. K, tok)
end
--@include fair_release_queue
