-- SPDX-License-Identifier: BSD-3-Clause
-- lock-batch: the plain single-key locks' acquires and releases that a
-- client had for this node in one loop iteration, in one call (the node
-- layer's batch, docs/protocol.md 3.28): each is exactly the command it
-- stands for. An acquire is SET key token NX PX px; a release is
-- release of that one key (deleted where it holds the token, ours();
-- the token published on redlock:release:<key>). Each key is compared
-- with its own token. When every key differs, no command touches
-- another's key: the releases' keys are read with one MGET and deleted
-- with one DEL (the calls from Lua are most of a script's cost); a key
-- named twice makes them run one by one, in their order.
--@creates-keys
-- KEYS: one per command, its lock's key
-- ARGV: per key, in order, two: "a<px>" (acquire for px ms) or "r"
--       (release), then its token
-- Reply: one string, a character per key: acquire "1" set | "0" not
--        set (the key exists); release "1" deleted | "0" none held |
--        "2" another lock's (release's 1, 0, -1); either: "e" it
--        failed (an error reply of its own: a key of another type)
--@include release_key
local out = {}
local function publish(k, t)
  redis.call('publish', 'redlock:release:' .. k, t)
end
-- An acquire's answer; an error (out of memory) is this key's own.
local function acquire(k, t, op)
  local r = redis.pcall('set', k, t, 'NX', 'PX', string.sub(op, 2))
  if type(r) == 'table' and r.err then return 'e' end
  return r and '1' or '0'
end
local function one_by_one()
  for i, k in ipairs(KEYS) do
    local op, t = ARGV[2 * i - 1], ARGV[2 * i]
    if op == 'r' then
      local ok, got = pcall(release_key, k, t)
      if not ok then
        out[i] = 'e'
      elseif got == 1 then
        publish(k, t)
        out[i] = '1'
      else
        out[i] = got == -1 and '2' or '0'
      end
    else
      out[i] = acquire(k, t, op)
    end
  end
end
local seen, rk, ri = {}, {}, {}
for i, k in ipairs(KEYS) do
  if seen[k] then
    one_by_one()
    return table.concat(out)
  end
  seen[k] = true
  if ARGV[2 * i - 1] == 'r' then
    rk[#rk + 1], ri[#ri + 1] = k, i
  end
end
if #rk > 0 then
  -- value() of each: MGET reads another type as nil, as it does a
  -- missing key: TYPE tells them apart.
  local vals, del = redis.call('mget', unpack(rk)), {}
  for j, i in ipairs(ri) do
    local v, t = vals[j], ARGV[2 * i]
    if not v then
      local ty = redis.call('type', rk[j]).ok
      out[i] = ty == 'none' and '0' or ty == 'hash' and '2' or 'e'
    elseif v == 'redlock:queued' then
      out[i] = '0'
    elseif ours(v, t) then
      del[#del + 1] = rk[j]
      out[i] = '1'
    else
      out[i] = '2'
    end
  end
  if #del > 0 then
    redis.call('del', unpack(del))
    for j, i in ipairs(ri) do
      if out[i] == '1' then publish(rk[j], ARGV[2 * i]) end
    end
  end
end
for i, k in ipairs(KEYS) do
  if not out[i] then out[i] = acquire(k, ARGV[2 * i], ARGV[2 * i - 1]) end
end
return table.concat(out)
