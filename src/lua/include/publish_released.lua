-- SPDX-License-Identifier: BSD-3-Clause
-- publish_released(done): publishes ARGV[i] on redlock:release:KEYS[i]
-- for each i in done (the keys a batch deleted), followed by a space and
-- the channel's number of subscribers as release does, but only on
-- channels that have a listener. A PUBLISH from Lua costs about what
-- the rest of a key's release does, and a channel nobody listens on
-- delivers nothing: ask once how many listen on each (pattern
-- listeners: any at all means every channel has one), publish on those.
-- Same delivery as publishing on each: the answer and the publishes are
-- one atomic step.
local function publish_released(done)
  local chans = {}
  for j, i in ipairs(done) do chans[j] = 'redlock:release:' .. KEYS[i] end
  local patterns = redis.call('pubsub', 'numpat') > 0
  local subs = redis.call('pubsub', 'numsub', unpack(chans))
  for j, i in ipairs(done) do
    if patterns or subs[2 * j] ~= 0 then
      redis.call('publish', chans[j], ARGV[i] .. ' ' .. subs[2 * j])
    end
  end
end
