-- SPDX-License-Identifier: BSD-3-Clause
-- queue-leave: a fair waiter gives up: its entry leaves the queue, and
-- who may try now is told.
-- KEYS: K (a semaphore's: its base key)
-- ARGV[1]: token[; ARGV[2]: a semaphore's limit]
-- Reply: 1 removed | 0
local K = KEYS[1]
local QK, L = K, tonumber(ARGV[2] or '')
--@include queue
if redis.call('exists', Q) == 0 then return 0 end
local now = server_ms()
purge(now)
local mem = member(ARGV[1])
local r = drop(mem)
announce(mem)
settle(now)
return r
