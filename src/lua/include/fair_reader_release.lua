-- SPDX-License-Identifier: BSD-3-Clause
-- fair-reader-release and fair-reader-rollback (the including script
-- defines `rollback`): reader-release (which publishes on
-- redlock:release:K as it does for plain readers), then the queue as
-- fair_release_queue.lua does. The reader helpers come before queue.lua's:
-- its settle(now) shadows theirs for the code after it, and
-- reader_release keeps the one it was written with.
--@include reader_release
local K = KEYS[1]
local QK, L = K, nil
--@include queue
local tok = ARGV[1]
local r = reader_release(K, tok)
if redis.call('exists', Q) == 0 then return r end
--@include queue_release
