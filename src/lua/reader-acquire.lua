-- SPDX-License-Identifier: BSD-3-Clause
-- reader-acquire: a reader joins the readers' hash at k (token -> expiry
-- in server ms), refused where a writer holds k or its intent is marked.
-- KEYS: k, writer intent
-- ARGV[1]: token; ARGV[2]: px
-- Reply: 1 joined | 0 refused
--@creates-keys
--@include reader_take
return reader_take(KEYS[1], KEYS[2], ARGV[1], ARGV[2])
