-- SPDX-License-Identifier: BSD-3-Clause
-- The fair queue's helpers (docs/fair-queue.md 2.5). The queue of the
-- lock at K is redlock:q:K (entry -> score, the order), redlock:qx:K
-- (entry -> expiry, the node's TIME in ms), redlock:qt:K (the largest
-- ticket entered here), redlock:qw:K (the exclusive entries -- mutex,
-- writer -- with their scores: a reader finds the first one in
-- O(log n)) and redlock:qm:K (entry -> "<kind> <registered ms>", kind
-- x exclusive or s shared, for status): in the reserved namespace, so
-- no resource name can be another lock's queue.
-- They are derived from KEYS[1] so that fair-release and fair-rollback
-- keep the release script's shape (one key, the token): the lock's
-- release path stays one call (lockrec_script_cmd). Redlock nodes are
-- standalone masters, where undeclared keys are allowed. So is the
-- writer intent, K .. ':wintent' (lockrec_intent_key).
--
-- The including script defines first, in this order:
--   local K = KEYS[1]
--   local QK, L = <the queue's key>, <the permits>
-- QK and L are Lua expressions, usually of optional ARGV: a semaphore
-- slot's scripts run at its slot key K and use the queue of the base
-- key QK with L permits; the mutex's and the read-write lock's queue is
-- at K itself (QK = K, L nil).
--
-- drop(t): the entry leaves all four of its keys.
-- purge(now): entries whose expiry passed go, wherever they are in the
-- queue (at most 64 per call: the next call takes the rest).
-- reserved(): K holds the reservation 'redlock:queued' (QUEUE_RESERVED
-- in scripts.h: a free key kept for the queue); unreserve(): a reader
-- at its turn clears it before joining K (not a semaphore's slot: its
-- queue reserves nothing); take(tok, px): a caller at its turn sets K
-- over a free or reserved key; held(): K is a lock. They read K once
-- per call (k_state); a script that writes K afterwards sets k_known to
-- what it left there (fair_try's granted()).
-- open(kind): K may take this kind here now: free (or reserved) for an
-- exclusive one; for a reader, no writer holds it and no writer intent
-- is marked.
-- where(mem, kind): the place the turn rule sees: the rank, except that
-- a reader with no exclusive entry ahead of it (score, then member: the
-- sorted set's order) is at 0 -- every such reader may try; nil absent.
-- announce(except): who may try now, never `except` (the caller, who
-- learns it from its own reply), one token per message on
-- redlock:queue:QK: a semaphore's entitled entries (sem_announce); when
-- a reader heads and readers may enter here, every reader before the
-- first exclusive entry (at most 64, one PUBLISH each: the ones further
-- on learn it from their refresh); else the head's token when K is free
-- here.
-- settle(now): the queue keys live as long as their latest entry (up
-- to a second longer; set again only where they would lapse sooner or
-- this call made one of them);
-- an empty queue is deleted with its counter (a counter orders only
-- entries still waiting). Not a semaphore's: while entries remain, a
-- free K is reserved for them, as long as they live, so a plain SET NX
-- (a fair mutex's first attempt too) is refused where anybody queues;
-- once none remains, the reservation goes and plain waiters are told.
-- enter(..., kind): add or refresh an entry (same score on every node),
-- note its kind and registration time once (when it is added), and
-- raise the counter to its ticket, which rebuilds a restarted node's
-- counter; returns 1 added | 0, and the counter after it.
local Q, QX, QT = 'redlock:q:' .. QK, 'redlock:qx:' .. QK,
                  'redlock:qt:' .. QK
local QW, QM = 'redlock:qw:' .. QK, 'redlock:qm:' .. QK
--@include member
local function server_ms()
  local t = redis.call('time')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end
local removed = false
local function drop(t)
  removed = true
  local r = redis.call('zrem', Q, t)
  redis.call('zrem', QX, t)
  redis.call('zrem', QW, t)
  redis.call('hdel', QM, t)
  return r
end
local function purge(now)
  local dead = redis.call('zrangebyscore', QX, '-inf', now,
                          'limit', 0, 64)
  for _, t in ipairs(dead) do drop(t) end
  return #dead
end
-- k_known: what K holds, read once: 'none', 'reserved', 'string' (a
-- lock) or 'hash' (readers); nil not read yet.
local k_known = nil
local function k_state()
  if k_known == nil then
    local v = redis.pcall('get', K)
    if not v then k_known = 'none'
    elseif v == 'redlock:queued' then k_known = 'reserved'
    elseif type(v) == 'table' then k_known = redis.call('type', K).ok
    else k_known = 'string' end
  end
  return k_known
end
local function reserved()
  return k_state() == 'reserved'
end
local function unreserve()
  if not L and reserved() then
    redis.call('del', K)
    k_known = 'none'
  end
end
local function held()
  local st = k_state()
  return st ~= 'none' and st ~= 'reserved'
end
-- take(tok, px): a caller at its turn sets K to tok where it is free, or
-- reserved for the queue (not a semaphore's slot: nothing reserves it),
-- by what this call read (no script step writes K in between): one SET,
-- not DEL and SET NX; false where K is held.
local function take(tok, px)
  local st = k_state()
  if st == 'reserved' and not L then
    redis.call('set', K, tok, 'PX', px)
  elseif st ~= 'none' or
         not redis.call('set', K, tok, 'NX', 'PX', px) then
    return false
  end
  k_known = 'string'
  return true
end
local function open(kind)
  if kind ~= 's' then return held() and 0 or 1 end
  if k_state() == 'string' or
     redis.call('exists', K .. ':wintent') == 1 then return 0 end
  return 1
end
local function where(mem, kind)
  local r = redis.call('zrank', Q, mem)
  if r and kind == 's' then
    local w = redis.call('zrange', QW, 0, 0)[1]
    if not w or (redis.call('zrank', Q, w) or r) >= r then
      return 0
    end
  end
  return r
end
local function announce_readers(except)
  if open('s') == 0 then return end
  local w = redis.call('zrange', QW, 0, 0)[1]
  local n = 64
  if w then n = math.min(n, redis.call('zrank', Q, w) or n) end
  for _, t in ipairs(redis.call('zrange', Q, 0, n - 1)) do
    if t ~= except then
      redis.call('publish', 'redlock:queue:' .. QK, t)
    end
  end
end
--@include queue_semaphore
local function announce(except)
  if L then return sem_announce(except) end
  local h = redis.call('zrange', Q, 0, 0)[1]
  if not h then return end
  if not redis.call('zscore', QW, h) then return announce_readers(except) end
  if h ~= except and not held() then
    redis.call('publish', 'redlock:queue:' .. QK, h)
  end
end
-- The queue's keys get their latest entry's life and KEYS_SLACK_MS
-- more, set again only when Q is new (no expiry) or would lapse sooner:
-- the five are set together, so Q's expiry is theirs, and most settles
-- read one expiry instead of setting five -- none in a call that added
-- nothing and moved no entry's expiry later (`extended`: only enter()
-- does; a purge or a removal only brings the latest nearer). QX and QM
-- come and go with Q; a key this call may have made while Q lived on
-- (`made`: QW's first exclusive entry, the counter, a record or an
-- expiry whose Q member was there already) gets Q's expiry. enter()
-- raises the counter by INCRBY, which keeps its expiry. Keys that
-- outlive their entries are the purge's to clear; the reservation keeps
-- its exact life (its SET is NX: K is never taken from a lock here).
local KEYS_SLACK_MS = 1000
local made, extended = {}, false
local function settle(now)
  -- No entry added, moved later or removed (a refused first attempt
  -- that purged nothing): the queue is as the last settle left it, its
  -- keys' and the reservation's expiries hold; only a free K needs
  -- reserving.
  if not (next(made) or extended or removed) and
     (L or k_state() ~= 'none') then
    return
  end
  local last = redis.call('zrange', QX, -1, -1, 'withscores')[2]
  if not last then
    redis.call('del', Q, QX, QT, QW, QM)
    if not L and reserved() then
      redis.call('del', K)
      k_known = 'none'
      redis.call('publish', 'redlock:release:' .. K, '')
    end
    return
  end
  local ms = math.max(1, tonumber(last) - now)
  local px = string.format('%.0f', ms)
  if next(made) or extended then
    local t = redis.call('pttl', Q)
    if t < ms then
      local kx = string.format('%.0f', ms + KEYS_SLACK_MS)
      redis.call('pexpire', Q, kx)
      redis.call('pexpire', QX, kx)
      redis.call('pexpire', QT, kx)
      redis.call('pexpire', QW, kx)
      redis.call('pexpire', QM, kx)
    else
      for k in pairs(made) do redis.call('pexpire', k, t) end
    end
    made = {}
  end
  if L then return end
  local st = k_state()
  if st == 'none' then
    redis.call('set', K, 'redlock:queued', 'PX', px, 'NX')
    k_known = 'reserved'
  elseif st == 'reserved' then
    redis.call('pexpire', K, px)
  end
end
local function enter(tok, score, ticket, now, epx, kind)
  local added = redis.call('zadd', Q, score, tok)
  if added == 1 and redis.call('hsetnx', QM, tok, (kind or 'x') .. ' ' ..
                              string.format('%.0f', now)) == 1 then
    made[QM] = true
  end
  if kind ~= 's' and redis.call('zadd', QW, score, tok) == 1 then
    made[QW] = true
  end
  if redis.call('zadd', QX, string.format('%.0f', now + epx), tok) == 1
     and added == 0 then
    made[QX] = true
  end
  extended = true
  local qt = redis.call('get', QT)
  if not qt then made[QT] = true end
  qt = qt or '0'
  if tonumber(qt) < tonumber(ticket) then
    redis.call('incrby', QT,
               string.format('%.0f', tonumber(ticket) - tonumber(qt)))
    qt = ticket
  end
  return added, qt
end
