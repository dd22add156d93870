-- SPDX-License-Identifier: BSD-3-Clause
-- release: deletes every key that holds our lock and publishes the
-- token on redlock:release:<key> so waiters wake (notify.c).
-- KEYS: k1..kn, the lock's keys
-- ARGV[1]: token
-- Reply: 1 one was ours (deleted) | 0 none was held | -1 one holds
--        another lock (those are left alone)
--@include release_keys
return release_keys(function(k)
  redis.call('publish', 'redlock:release:' .. k, ARGV[1])
end)
