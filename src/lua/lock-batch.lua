-- SPDX-License-Identifier: BSD-3-Clause
-- lock-batch: the plain single-key locks' acquires and releases that a
-- client had for this node in one loop iteration, in one call (the node
-- layer's batch, docs/protocol.md 3.x), run in the order they were made:
-- each is exactly the command it stands for. An acquire is SET key
-- token NX PX px; a release is release of that one key (deleted where
-- it holds the token, ours(); the token published on
-- redlock:release:<key>). Each key is compared with its own token.
--@creates-keys
-- KEYS: one per command, its lock's key
-- ARGV: per key, in order, two: "a<px>" (acquire for px ms) or "r"
--       (release), then its token
-- Reply: one string, a character per key: acquire "1" set | "0" not
--        set (the key exists); release "1" deleted | "0" none held |
--        "2" another lock's (release's 1, 0, -1); either: "e" it
--        failed (an error reply of its own: a key of another type)
--@include release_key
local function run(op, k, t)
  if op == 'r' then
    local got = release_key(k, t)
    if got == 1 then
      redis.call('publish', 'redlock:release:' .. k, t)
    end
    return got == -1 and '2' or tostring(got)
  end
  return redis.call('set', k, t, 'NX', 'PX', string.sub(op, 2)) and '1'
    or '0'
end
local out = {}
for i, k in ipairs(KEYS) do
  local ok, c = pcall(run, ARGV[2 * i - 1], k, ARGV[2 * i])
  out[i] = ok and c or 'e'
end
return table.concat(out)
