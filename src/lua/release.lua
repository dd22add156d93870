-- SPDX-License-Identifier: BSD-3-Clause
-- release: deletes every key that holds our lock and publishes the
-- token on redlock:release:<key> so waiters wake (notify.c), followed
-- by a space and the number of clients subscribed to the channel: a
-- waiter that is the only one may attempt at once (acquire.c).
-- KEYS: k1..kn, the lock's keys
-- ARGV[1]: token
-- Reply: 1 one was ours (deleted) | 0 none was held | -1 one holds
--        another lock (those are left alone)
--@include release_keys
return release_keys(function(k)
  local subs = redis.call('pubsub', 'numsub', 'redlock:release:' .. k)[2]
  redis.call('publish', 'redlock:release:' .. k, ARGV[1] .. ' ' .. subs)
end)
