-- SPDX-License-Identifier: BSD-3-Clause
-- settle(k, now): prunes, then deletes k when no live reader is left
-- (false) or sets its expiry to the latest reader's (true): a lapsed
-- reader must not keep blocking writers after the last live one left
-- (release and extend; acquire adds a reader, then sets the expiry).
--@include prune
local function settle(k, now)
  local last = prune(k, now)
  if last == 0 then
    redis.call('del', k)
    return false
  end
  redis.call('pexpire', k, string.format('%.0f', last - now))
  return true
end
