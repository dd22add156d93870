-- SPDX-License-Identifier: BSD-3-Clause
-- The first half of extend and proclaim: return 0 when a key is absent,
-- -1 when one holds another lock.
--@include ours
--@include value
for _, k in ipairs(KEYS) do
  local v = value(k)
  if not v then return 0 end
  if not ours(v, ARGV[1]) then return -1 end
end
