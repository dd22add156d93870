-- SPDX-License-Identifier: BSD-3-Clause
-- A semaphore's queue, part of queue.lua (L permits; QK is its base
-- key, the queue's, and its slots QK:slot:0..L-1 are ordinary lock keys;
-- L nil: a mutex at K).
-- slots_held(): the entries holding a slot here (a slot's value named as
-- its entry is, member()) and how many slots are taken.
-- sem_entitled(mem): mem may take a slot here -- fewer entries ahead of
-- it that hold no slot here than slots are free (so at most the first L
-- entries, and a waiter is never passed by the one behind it while the
-- holders that got their permit without queueing hold).
-- sem_announce(except): name each entitled entry (at most the free
-- slots, so at most L messages), as announce() names the mutex's head.
-- sem_hold(mem, on): mark mem's entry as a permit holder here (its kind
-- 'h' in redlock:qm) or back as a waiter (a rollback): it keeps its
-- entry a while after its grant, and queue-inspect lists waiters only.
-- free_here(kind): 1 when this kind may take the lock here now: a
-- semaphore's slot is free, else open(kind); -1 (not free) where readers
-- hold K and kind is exclusive: a writer's next attempts carry its
-- intent (queue.c fair_readers_seen).
local function slots_held()
  local held, n = {}, 0
  for i = 0, L - 1 do
    local v = redis.call('get', QK .. ':slot:' .. i)
    if v then
      held[member(v)] = true
      n = n + 1
    end
  end
  return held, n
end
local function sem_entitled(mem)
  local held, n = slots_held()
  local ahead = 0
  for _, e in ipairs(redis.call('zrange', Q, 0, L - 1)) do
    if e == mem then return ahead < L - n end
    if not held[e] then ahead = ahead + 1 end
  end
  return false
end
local function sem_announce(except)
  local held, n = slots_held()
  local free = L - n
  if free <= 0 then return end
  for _, e in ipairs(redis.call('zrange', Q, 0, L - 1)) do
    if not held[e] then
      if e ~= except then
        redis.call('publish', 'redlock:queue:' .. QK, e)
      end
      free = free - 1
      if free == 0 then return end
    end
  end
end
local function sem_hold(mem, on)
  local m = redis.call('hget', QM, mem)
  if m then
    redis.call('hset', QM, mem, (on and 'h' or 'x') .. m:sub(2))
  end
end
local function free_here(kind)
  if not L then
    if kind ~= 's' and k_state() == 'hash' then return -1 end
    return open(kind)
  end
  local _, n = slots_held()
  if n < L then return 1 end
  return 0
end
