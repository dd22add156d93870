-- SPDX-License-Identifier: BSD-3-Clause
-- release_keys(deleted): release's compare-and-delete over KEYS: every
-- key that holds the token ARGV[1] (release_key()) is deleted, then
-- deleted(k) runs. Returns 1 one was ours | 0 none was held | -1 one
-- holds another lock (those are left alone).
--@include release_key
local function release_keys(deleted)
  local r = 0
  for _, k in ipairs(KEYS) do
    local got = release_key(k, ARGV[1])
    if got == 1 then
      deleted(k)
      if r == 0 then r = 1 end
    elseif got == -1 then
      r = -1
    end
  end
  return r
end
