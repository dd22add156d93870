-- SPDX-License-Identifier: BSD-3-Clause
-- fair-reader-acquire: reader-acquire at a reader's turn (no exclusive
-- entry ahead), in the queue's order.
-- KEYS: K
-- ARGV: as fair-acquire, no intent px
-- Reply: as fair-acquire, "free": readers may enter here
--@creates-keys
--@include reader_take
local kind, queued = 's', nil
--@include fair_try
if ok then unreserve() end
if ok and reader_take(K, K .. ':wintent', tok, ARGV[2]) == 1 then
  granted('hash')
  return {1, qt, 0, 0}
end
refused()
return {0, qt, rank or -1, open(kind)}
