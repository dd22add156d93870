-- SPDX-License-Identifier: BSD-3-Clause
-- release_key(k, t): release's compare-and-delete of one key: k is
-- deleted when it holds the lock whose token is t (ours()). Returns 1
-- deleted | 0 none held | -1 another lock's (left alone).
--@include ours
--@include value
local function release_key(k, t)
  local v = value(k)
  if v and ours(v, t) then
    redis.call('del', k)
    return 1
  end
  return v and -1 or 0
end
