-- SPDX-License-Identifier: BSD-3-Clause
-- fair-reader-rollback: as fair-reader-release, but the entry stays.
-- KEYS: K
-- ARGV[1]: token
-- Reply: as fair-reader-release
local rollback = true
--@include fair_reader_release
