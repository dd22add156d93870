-- SPDX-License-Identifier: BSD-3-Clause
-- The second half of fair-release and fair-rollback (the including
-- script defines `rollback`; K, tok and r come from
-- fair_release_key.lua). With no queue on the node there is nobody to
-- tell: it returns before queue.lua's helpers are defined, and costs
-- what release costs and one EXISTS; so does a rollback that found
-- nothing of ours (the attempt was not granted here: nothing changed).
-- A semaphore's slot (K) names its base key and permits as ARGV[2],
-- ARGV[3].
if (rollback and r ~= 1) or
   redis.call('exists', 'redlock:q:' .. (ARGV[2] or K)) == 0 then
  return r
end
local QK, L = ARGV[2] or K, tonumber(ARGV[3] or '')
--@include queue
if r == 1 then k_known = 'none' end -- deleted above: no need to read it
--@include queue_release
