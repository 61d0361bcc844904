-- hold_acquire.lua: take a shared hold (a semaphore's permit, or a read or
-- write hold of an RW lock), or wait for it in the queue of waiters.
--
-- KEYS[1]  the holders: a sorted set of holder names, scored by the time
--          (server milliseconds) their holding expires
-- KEYS[2]  the fence key: the last fence handed out (a string); its name is
--          also the release channel
-- KEYS[3]  the queue of waiters, scored by arrival (as queue_acquire.lua)
-- KEYS[4]  the waiters' leases, scored by the time they count as gone
-- KEYS[5]  a hash: each holder's fence, and a semaphore's 'limit'
-- KEYS[6]  the writers that wait for an RW lock, scored by their lease
-- ARGV[1]  the caller's name: 's' (a permit), 'r' (read) or 'w' (write),
--          then its token
-- ARGV[2]  the time to live of the holding, in milliseconds
-- ARGV[3]  the caller's lease as a waiter, in milliseconds; 0: do not wait
-- ARGV[4]  the caller's own channel, '' for none (as queue_acquire.lua)
-- ARGV[5]  'barge' for a barging waiter, '' for a fair one
-- ARGV[6]  '1' when a barging waiter tries because a release woke it
-- ARGV[7]  a semaphore's limit
--
-- Returns {1, fence}      when the holding is the caller's: fence is
--                         max(last fence + 1, server time in microseconds).
-- Returns {0, pttl, head} when it is not (yet): pttl is the time until the
--                         first holding expires, -2 when nothing is held but
--                         others go first; head is 1 when the caller is first
--                         in the queue.
-- Returns {2, 0}          when the key holds another type, or another kind of
--                         hold (a semaphore is no RW lock).
-- Returns {3, limit}      when a semaphore's permits were taken with another
--                         limit.
--
-- Who may take it: a permit while fewer than limit are held (and, for a fair
-- waiter, no earlier waiter takes the free ones first); a write hold when
-- nothing is held; a read hold when no writer holds and none waits, so that
-- a stream of readers cannot starve a writer. Expired holders and waiters
-- are dropped here: no process sweeps them.
local name = ARGV[1]
local class = string.sub(name, 1, 1)
local ttl = tonumber(ARGV[2])
local lease = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)

local held_now = redis.pcall('ZCARD', KEYS[1])
if type(held_now) ~= 'number' then
  return {2, 0} -- a key of another type
end
local fresh = held_now == 0 -- nothing held: nothing to drop or check

local first = nil
local limit = tonumber(ARGV[7])
if not fresh then
  local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 1000)
  for _, h in ipairs(gone) do
    redis.call('ZREM', KEYS[1], h)
    redis.call('HDEL', KEYS[5], h)
  end
  first = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
  if first and ((class == 's') ~= (string.sub(first, 1, 1) == 's')) then
    return {2, 0}
  end
  if first and class == 's' then
    local stored = tonumber(redis.call('HGET', KEYS[5], 'limit'))
    if stored and stored ~= limit then
      return {3, stored}
    end
  end
end

local fair_name = name .. ':' .. ARGV[2]
if ARGV[4] and ARGV[4] ~= '' then
  fair_name = fair_name .. ':' .. ARGV[4]
end
local barge = ARGV[5] == 'barge'
local barge_name = '*' .. fair_name

local queued = redis.call('EXISTS', KEYS[3]) == 1
if queued then
  local stale = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now, 'LIMIT', 0, 100)
  for _, w in ipairs(stale) do
    redis.call('ZREM', KEYS[3], w)
    redis.call('ZREM', KEYS[4], w)
  end
end
if class ~= 's' then
  redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', now)
end

-- keep: make key live at least ms milliseconds
local function keep(key, ms)
  local pttl = redis.call('PTTL', key)
  if pttl == -1 or (pttl >= 0 and pttl < ms) then
    redis.call('PEXPIRE', key, ms)
  end
end

local function leave()
  if queued then
    redis.call('ZREM', KEYS[3], fair_name, barge_name)
    redis.call('ZREM', KEYS[4], fair_name, barge_name)
  end
  if class == 'w' then
    redis.call('ZREM', KEYS[6], name)
  end
end

local function hold(fence)
  redis.call('ZADD', KEYS[1], now + ttl, name)
  if class == 's' then
    redis.call('HSET', KEYS[5], name, fence, 'limit', limit)
  else
    redis.call('HSET', KEYS[5], name, fence)
  end
  if fresh then
    redis.call('PEXPIRE', KEYS[1], ttl)
    redis.call('PEXPIRE', KEYS[5], ttl)
  else
    keep(KEYS[1], ttl)
    keep(KEYS[5], ttl)
  end
  leave()
  return {1, fence}
end

if not fresh then
  local mine = redis.call('HGET', KEYS[5], name)
  if mine and redis.call('ZSCORE', KEYS[1], name) then
    -- Ours already: handed over by a release, or our own acquire resent
    -- after a lost reply. The caller counts from this call: ttl from now.
    keep(KEYS[2], ttl)
    return hold(tonumber(mine))
  end
end

-- How many live waiters are ahead of the caller in the queue, counting at
-- most up to n (a fair waiter only takes a free permit none of them is
-- owed).
local function ahead(n)
  if not queued then
    return 0
  end
  local count = 0
  local queue = redis.call('ZRANGE', KEYS[3], 0, n)
  for _, w in ipairs(queue) do
    if w == fair_name or w == barge_name then
      return count
    end
    count = count + 1
  end
  return count
end

local holders = 0
if not fresh then
  holders = redis.call('ZCARD', KEYS[1])
end
local may = false
if class == 's' then
  local free = limit - holders
  may = free > 0 and (barge or ahead(free) < free)
elseif class == 'w' then
  may = holders == 0 and (lease <= 0 or ahead(0) == 0 or barge)
else
  may = not (first and string.sub(first, 1, 1) == 'w') and redis.call('ZCARD', KEYS[6]) == 0
end
if may then
  local fence = t[1] * 1000000 + t[2]
  local last = tonumber(redis.pcall('GET', KEYS[2]))
  if last and last >= fence then
    fence = last + 1
  end
  -- The fence key lives as long as the longest holding, so Scan finds it.
  local pttl = ttl
  if not fresh then
    pttl = math.max(ttl, redis.call('PTTL', KEYS[2]))
  end
  redis.call('SET', KEYS[2], string.format('%d', fence), 'PX', pttl)
  return hold(fence)
end

local pttl = -2
if first then
  pttl = math.max(tonumber(redis.call('ZSCORE', KEYS[1], first)) - now, 0)
end
if lease <= 0 then
  return {0, pttl, 0}
end

-- Wait: join the queue at its end, or keep our place, and renew the lease.
local me = join(fair_name, barge_name, barge, ARGV[6] == '1', t)
redis.call('ZADD', KEYS[4], string.format('%d', now + lease), me)
if class == 'w' then
  redis.call('ZADD', KEYS[6], now + lease, name)
end
for _, i in ipairs({3, 4, 6}) do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    if redis.call('PTTL', KEYS[i]) == -1 then
      redis.call('PEXPIRE', KEYS[i], lease)
    else
      keep(KEYS[i], lease)
    end
  end
end
if redis.call('ZRANGE', KEYS[3], 0, 0)[1] == me then
  return {0, pttl, 1}
end
return {0, pttl, 0}
