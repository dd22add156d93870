-- SPDX-License-Identifier: BSD-3-Clause
-- member(tok): a waiter's queue entry is named by its acquisition, not
-- by one attempt: each attempt has its own token (token.h), so the entry
-- is the token with its attempt digits zeroed (TOKEN_HEX_LEN 40 digits,
-- the first TOKEN_STEM_LEN 32 name the acquisition); a value of another
-- shape is its own name.
local function member(tok)
  local h = string.match(tok, '^%x+')
  if not h or #h < 40 then return tok end
  return string.sub(tok, 1, 32) ..
         string.rep('0', 40 - 32) ..
         string.sub(tok, 40 + 1)
end
