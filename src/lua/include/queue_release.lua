-- SPDX-License-Identifier: BSD-3-Clause
-- The second half of the fair releases (r: the release's reply), once
-- the caller found a queue here: purge, remove the caller's entry
-- unless `rollback` (a split attempt keeps its place; a semaphore's
-- entry is marked a waiter again), and announce who may try now.
-- Needs queue.lua's helpers, and tok, r and rollback.
local now = server_ms()
purge(now)
local mem = member(tok)
if not rollback then drop(mem)
elseif L then sem_hold(mem, false) end
announce(mem)
settle(now)
return r
