-- SPDX-License-Identifier: BSD-3-Clause
-- fair-rollback: as fair-release, but the entry stays (a split attempt
-- keeps its place) and nothing is published on redlock:release:K.
-- KEYS: K
-- ARGV[1]: token[; ARGV[2], ARGV[3]: a semaphore's base key and limit]
-- Reply: as fair-release
local rollback = true
--@include fair_release_key
--@include fair_release_queue
