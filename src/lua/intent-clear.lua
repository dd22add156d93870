-- SPDX-License-Identifier: BSD-3-Clause
-- intent-clear: a writer clears the writer intent if it is its own:
-- set by any attempt of this acquisition, the same token but for the
-- attempt digits 33..40 (token.h TOKEN_STEM_LEN 32, TOKEN_HEX_LEN 40).
-- KEYS: writer intent
-- ARGV[1]: token
-- Reply: 1 deleted (it was ours) | 0
local v = redis.call('get', KEYS[1])
local t = ARGV[1]
if v ~= t and not (v and #v == #t and #t >= 40 and
    v:sub(1, 32) == t:sub(1, 32) and v:sub(41) == t:sub(41)) then
  return 0
end
return redis.call('del', KEYS[1])
