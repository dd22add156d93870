-- SPDX-License-Identifier: BSD-3-Clause
-- The first half of fair-release and fair-rollback: release's
-- compare-and-delete of K (r: 1 deleted, ours | 0 absent | -1 another
-- lock's). fair-release then publishes on redlock:release:K as every
-- release does (an observer, a plain waiter and the head learn it; fair
-- waiters behind the head ignore it); a rollback does not (it would
-- wake every plain waiter for nothing, docs/fair-queue.md 1.3).
--@include ours
--@include value
local K, tok = KEYS[1], ARGV[1]
local v = value(K)
local r = 0
if v and ours(v, tok) then
  redis.call('del', K)
  r = 1
elseif v then
  r = -1
end
