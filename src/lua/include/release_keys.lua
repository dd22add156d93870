-- SPDX-License-Identifier: BSD-3-Clause
-- release_keys(deleted): release's compare-and-delete over KEYS: every
-- key that holds the token ARGV[1] (ours()) is deleted, then
-- deleted(k) runs. Returns 1 one was ours | 0 none was held | -1 one
-- holds another lock (those are left alone).
--@include ours
--@include value
local function release_keys(deleted)
  local r = 0
  for _, k in ipairs(KEYS) do
    local v = value(k)
    if v and ours(v, ARGV[1]) then
      redis.call('del', k)
      deleted(k)
      if r == 0 then r = 1 end
    elseif v then
      r = -1
    end
  end
  return r
end
