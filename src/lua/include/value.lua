-- SPDX-License-Identifier: BSD-3-Clause
-- value(k): GET k, except that readers' hash at k (another lock, which
-- GET refuses with WRONGTYPE) reads as '' -- never a token, so the
-- caller sees another holder; a key of any other type is no lock and
-- still fails with GET's error. pcall costs nothing when GET succeeds.
-- A queue's reservation ('redlock:queued', QUEUE_RESERVED in scripts.h)
-- is nobody's lock: absent.
local function value(k)
  local v = redis.pcall('get', k)
  if v == 'redlock:queued' then return false end
  if type(v) ~= 'table' then return v end
  if redis.call('type', k).ok == 'hash' then return '' end
  return redis.call('get', k)
end
