-- SPDX-License-Identifier: BSD-3-Clause
-- The first half of fair-acquire (and its fenced twin, and
-- fair-reader-acquire). The including script defines `kind` first, a
-- Lua string: 'x' exclusive, 's' a reader, and `queued`: true when the
-- caller is queued (a score) or a queue exists here, false when not,
-- nil when it has not asked yet.
-- Purge, then ok says whether this caller may take the key here -- the
-- fast path (no score) only where nobody queues (a reader: where no
-- exclusive entry queues), a queued caller (its entry added or
-- refreshed here, with the same score) only at its turn (where() is 0:
-- the head, or a reader with no exclusive entry ahead); qt is the
-- node's counter as the caller's ticket read needs it; rank is the
-- queued caller's place, or for a first attempt -1 - the entries it
-- would queue behind here (those entries counted: a newcomer's place
-- when it registers, from which it sets its registration's life; -1
-- where none queue).
-- refused(): a first attempt refused here also counts itself in the
-- counter (qt is the value before it), so first attempts that reach the
-- nodes one after another get increasing tickets even while none has
-- registered yet (a burst of newcomers is served in arrival order, not
-- in token order); a counter with no queue lives an entry lifetime.
-- Where no queue exists a first attempt is a bare SET NX (queued
-- false); fair-acquire grants that case before this (its fast path).
-- A writer refused where readers hold at its turn marks its intent
-- (ARGV[6], the intent's PX, '' none, as writer-acquire): plain readers
-- wait behind it as behind a plain writer. A semaphore's slot attempt
-- names its queue and permits (ARGV[7], ARGV[8]): a queued caller's turn
-- is sem_entitled.
-- granted(st): a semaphore's queued caller marks its entry a holder; the
-- queue's keys live on; st is what the grant left at K ('string' a
-- lock, 'hash' readers).
-- qt is read where the attempt did not already (a first attempt granted
-- where a queue exists).
local K = KEYS[1]
local QK, L = ARGV[7] or K, tonumber(ARGV[8] or '')
--@include queue
local tok = ARGV[1]
local mem = member(tok)
local now, purged, ok, rank, qt = 0, 0, true, nil, nil
if queued == nil then
  queued = ARGV[4] ~= '' or redis.call('exists', Q) == 1
end
if queued then
  now = server_ms()
  purged = purge(now)
  if ARGV[4] == '' then
    local n = redis.call('zcard', kind == 's' and QW or Q)
    ok = n == 0
    rank = -1 - n
  else
    local _
    _, qt = enter(mem, ARGV[4], ARGV[5], now, tonumber(ARGV[3]), kind)
    rank = where(mem, kind)
    if L then ok = sem_entitled(mem) else ok = rank == 0 end
  end
end
local function refused()
  if ARGV[4] == '' then
    local n = redis.call('incr', QT)
    qt = tostring(n - 1)
    if not queued then redis.call('pexpire', QT, ARGV[3])
    elseif n == 1 then made[QT] = true end
  end
  if ok and (ARGV[6] or '') ~= '' and k_state() == 'hash' then
    redis.call('set', K .. ':wintent', tok, 'PX', ARGV[6])
  end
  if purged > 0 then announce(mem) end
  if queued then settle(now) end
end
local function granted(st)
  k_known = st
  qt = qt or (queued and redis.call('get', QT)) or '0'
  if L and ARGV[4] ~= '' then sem_hold(mem, true) end
  if queued then settle(now) end
end
