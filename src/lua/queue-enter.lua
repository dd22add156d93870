-- SPDX-License-Identifier: BSD-3-Clause
-- queue-enter: a fair waiter registers in the queue, or refreshes its
-- entry (same score on every node).
-- KEYS: K, the lock key (a semaphore's: its base key)
-- ARGV[1]: token; ARGV[2]: entry px; ARGV[3]: score; ARGV[4]: ticket[;
--   ARGV[5]: kind, x (default) | s (a reader)][; ARGV[6]: a semaphore's
--   limit]
-- Reply: {rank (a reader with no exclusive entry ahead: 0), K open to
--        this kind 1 | 0, redlock:qt:K, 1 added | 0}
--@creates-keys
local K = KEYS[1]
local QK, L = K, tonumber(ARGV[6] or '')
--@include queue
local now = server_ms()
local purged = purge(now)
local mem = member(ARGV[1])
local kind = ARGV[5] or 'x'
local added, qt = enter(mem, ARGV[3], ARGV[4], now, tonumber(ARGV[2]),
                        kind)
if purged > 0 then announce(mem) end
settle(now)
return {where(mem, kind), free_here(kind), qt, added}
