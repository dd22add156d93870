-- SPDX-License-Identifier: BSD-3-Clause
-- fair-reader-release: reader-release, and the token's entry leaves the
-- queue (see include/fair_reader_release.lua).
-- KEYS: K
-- ARGV[1]: token
-- Reply: as reader-release
local rollback = false
--@include fair_reader_release
