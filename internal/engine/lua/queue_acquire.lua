-- queue_acquire.lua: take the lock, or wait for it in the lock's queue of
-- waiters. Fair waiters (WithFair) take turns; the others, "barging"
-- waiters, take the lock whenever they find it free, and the queue only
-- decides which of them a release wakes.
--
-- KEYS[1]  the lock key (its value is "token:since", see holder.lua)
-- KEYS[2]  the fence key; its name is also the lock's release channel
-- KEYS[3]  the queue: a sorted set of waiters, scored by arrival
-- KEYS[4]  the leases: a sorted set of waiters, scored by the time (server
--          milliseconds) after which a waiter counts as gone
-- KEYS[5]  optional: the guard key (WithGuard), as in acquire.lua
-- ARGV[1]  the token of the caller
-- ARGV[2]  the time to live of the lock, in milliseconds
-- ARGV[3]  the caller's lease as a waiter, in milliseconds; 0 to not wait:
--          the caller takes the lock if it may, and does not join the queue
-- ARGV[4]  the channel on which the caller hears that the lock was handed
--          over to it, or that it is its turn to try (its Client's own); ''
--          or absent: the lock's channel
-- ARGV[5]  'barge' for a barging waiter; '' or absent for a fair one
-- ARGV[6]  '1' when a barging waiter tries because a release woke it
--
-- A fair waiter is the member "token:ttl" or "token:ttl:channel" of both
-- sets; a barging one is the same with a '*' before it. A release
-- (release.lua) hands the lock over to a fair waiter at the head of the
-- queue; it only wakes a barging one, which then tries. A barging waiter
-- that was woken and still finds the lock taken (another barged in first)
-- becomes a fair one, keeping its place at the head: the next release hands
-- the lock over to it, so no waiter loses every race.
--
-- Returns {1, since}       when the lock is the caller's (since as in acquire.lua).
-- Returns {0, pttl, head}  when the caller waits in the queue: pttl is the
--                          holder's remaining time (-1: no expiry; -2: the lock
--                          is free but an earlier waiter goes first), head is 1
--                          when the caller is first in the queue.
-- Returns {2, 0}           when the key exists but is not a string.
-- Returns {4, value}       when the guard key exists (see acquire.lua).
--
-- A caller that waits marks the holder's value (holder.lua), so that its
-- release passes the lock on; a caller that takes the lock while others
-- wait marks its own.
--
-- Waiters whose lease ran out (they died, or gave up without saying so) are
-- dropped here. A waiter keeps its place by calling again before its lease
-- runs out. Callers of plain acquire.lua ignore the queue: they take a free
-- lock before any waiter (see the WithFair documentation).
if KEYS[5] then
  -- WithGuard: the work is done when the guard key exists
  local done = redis.pcall('GET', KEYS[5])
  if type(done) == 'string' then
    return {4, done}
  elseif type(done) == 'table' and done.err then
    return {4, ''}
  end
end
local t = redis.call('TIME')
local now_ms = t[1] * 1000 + math.floor(t[2] / 1000)
local fair_name = ARGV[1] .. ':' .. ARGV[2]
if ARGV[4] and ARGV[4] ~= '' then
  fair_name = fair_name .. ':' .. ARGV[4]
end
local barge = ARGV[5] == 'barge'
local barge_name = '*' .. fair_name

local stale = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now_ms, 'LIMIT', 0, 100)
for _, w in ipairs(stale) do
  redis.call('ZREM', KEYS[3], w)
  redis.call('ZREM', KEYS[4], w)
end

local holder = redis.pcall('GET', KEYS[1])
if type(holder) == 'table' then
  return {2, 0} -- GET failed: a key of another type
end

local function leave()
  redis.call('ZREM', KEYS[3], fair_name, barge_name)
  redis.call('ZREM', KEYS[4], fair_name, barge_name)
end

if holds(holder, ARGV[1]) then
  -- Ours already: handed over by a release, or our own acquire resent after
  -- a lost reply. The caller counts the lock's time from this call, so the
  -- time to live starts again now.
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  leave()
  return {1, since_of(holder) or (t[1] * 1000000 + t[2])}
end

local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
if holder == false and (barge or head == nil or head == fair_name) then
  local since = t[1] * 1000000 + t[2]
  local value = ARGV[1] .. ':' .. string.format('%d', since)
  leave()
  if redis.call('EXISTS', KEYS[3]) == 1 then
    value = value .. ':w' -- others wait: the release passes the lock on
  end
  redis.call('SET', KEYS[1], value, 'PX', ARGV[2])
  return {1, since}
end

local lease = tonumber(ARGV[3])
local pttl = -2
if holder then
  pttl = redis.call('PTTL', KEYS[1])
end
if lease <= 0 then
  return {0, pttl, 0}
end

-- Wait: join the queue at its end (arrival scores strictly increase), or
-- keep our place, and renew our lease; and have the release tell us.
mark_waited(KEYS[1], holder)
local me = join(fair_name, barge_name, barge, ARGV[6] == '1', t)
redis.call('ZADD', KEYS[4], string.format('%d', now_ms + lease), me)
-- The queue lives as long as its longest lease, so nothing is left behind.
for i = 3, 4 do
  if redis.call('PTTL', KEYS[i]) < lease then
    redis.call('PEXPIRE', KEYS[i], lease)
  end
end

if redis.call('ZRANGE', KEYS[3], 0, 0)[1] == me then
  return {0, pttl, 1}
end
return {0, pttl, 0}
