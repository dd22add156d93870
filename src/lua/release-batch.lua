-- SPDX-License-Identifier: BSD-3-Clause
-- release-batch: the releases of plain single-key locks that a client
-- made for this node in one loop iteration, in one call (the node
-- layer's batch, docs/protocol.md 3, release-batch): each is release of
-- its one key with its own token -- deleted where it holds the token
-- (ours()), the token published on redlock:release:<key>. The keys are
-- read with one MGET and deleted with one DEL (the calls from Lua are
-- most of a script's cost), so the keys must differ: a client never
-- names one twice in a call.
-- KEYS: one per release, its lock's key, all different
-- ARGV: their tokens, in KEYS' order
-- Reply: one string, a character per key: "1" deleted | "0" none held
--        | "2" another lock's (release's 1, 0, -1) | "e" it failed (a
--        key of another type: an error reply of its own)
--@include ours
--@include publish_released
local vals, del, done, out = redis.call('mget', unpack(KEYS)), {}, {}, {}
for i = 1, #KEYS do
  local v = vals[i]
  if not v then
    -- value(): MGET reads another type as nil, as it does a missing key
    local ty = redis.call('type', KEYS[i]).ok
    out[i] = ty == 'none' and '0' or ty == 'hash' and '2' or 'e'
  elseif v == 'redlock:queued' then
    out[i] = '0'
  elseif v == ARGV[i] or ours(v, ARGV[i]) then
    del[#del + 1] = KEYS[i]
    done[#done + 1] = i
    out[i] = '1'
  else
    out[i] = '2'
  end
end
if #del > 0 then
  redis.call('del', unpack(del))
  publish_released(done)
end
return table.concat(out)
