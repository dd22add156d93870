-- SPDX-License-Identifier: BSD-3-Clause
-- reader-release: a reader leaves the readers' hash at k (see
-- include/reader_release.lua).
-- KEYS: k
-- ARGV[1]: token
-- Reply: 1 removed | 0 nothing of ours (absent, lapsed) | -1 k is no
--        readers' hash
--@include reader_release
return reader_release(KEYS[1], ARGV[1])
