-- SPDX-License-Identifier: BSD-3-Clause
-- ours(v, t): v is the value of the lock whose token is t -- equal, or
-- both carry an owner after the same identity (40 hex digits, then
-- "~<lock-delay>" when the lock has one, then '.': lockrec_id_len):
-- proclaim changed the owner on that node. Only a value with an owner
-- can differ, so plain tokens (redsync, node-redlock, ours without an
-- owner) compare exactly as before. touch-batch tests v == t before
-- calling it: its common case costs no call.
local function ours(v, t)
  if v == t then return true end
  local p = t:match('^%x+~%d+%.') or t:match('^%x+%.')
  if p == nil or (p:byte(41) ~= 46 and p:byte(41) ~= 126) then
    return false
  end
  return #t > #p and #v > #p and v:sub(1, #p) == p
end
