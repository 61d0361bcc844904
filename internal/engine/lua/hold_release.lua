-- hold_release.lua: end the caller's shared hold (a semaphore's permit, a
-- read or write hold of an RW lock) if it still has it, and pass on what is
-- free to the queue of waiters (see hold_acquire.lua); a waiter giving up
-- also leaves the queue with it.
--
-- KEYS     as hold_acquire.lua, then (the last) the holding's release marker
-- ARGV[1]  the caller's name (class and token)
-- ARGV[2]  '' to release; 'quiet' to release and tell nobody (a Redlock
--          attempt taken back); 'leave': the caller is a waiter giving up
-- ARGV[3]  with 'leave': the caller's ttl, which names it in the queue
-- ARGV[4]  the longest a holding handed over is set for, in milliseconds;
--          also how long a woken waiter keeps its place if it does not try
-- ARGV[5]  with 'leave': the caller's channel, '' if none
-- ARGV[6]  '1' when PUBLISH counts every Client listening (not in a Cluster)
-- ARGV[7]  the call's number among the releases of this holding ('0' for
--          the take-back of an acquire), which the release marker records
-- ARGV[8]  how long the release marker lives, in milliseconds
-- ARGV[9]  a semaphore's limit, for the permits it passes on
--
-- Returns 1 when the holding was the caller's and is now ended (by this
-- call, or by an earlier copy of it), 2 when another release of the same
-- holding ended it (nothing was done), 0 otherwise. As release.lua, a
-- release leaves a marker, dlock:freed<the fence key's rest>:<name>
-- (the last of KEYS), that a copy of the same call sent again finds, and
-- answers as the first did.
--
-- What is free goes to the queue in order, as release.lua does for a lock:
-- a fair waiter gets it handed over ("name:fence" on its channel), a
-- barging one is woken ("name") to try. A semaphore passes on as many
-- permits as are free; an RW lock with no writer in it hands read holds to
-- the readers at the head of the queue, up to the first writer, or, with
-- nothing held, the write hold to a writer at the head. Without waiters, a
-- message on the release channel tells whoever listens there (a Redlock's
-- waiters), and one on the watch channel those that watch.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local name = ARGV[1]
local watch = watch_channel()

local freed = KEYS[#KEYS]
local released = 0
local score = redis.pcall('ZSCORE', KEYS[1], name)
if type(score) == 'string' then
  redis.call('ZREM', KEYS[1], name)
  redis.call('HDEL', KEYS[5], name)
  if tonumber(score) > now then
    released = 1
    redis.call('SET', freed, ARGV[7], 'PX', ARGV[8])
  end
else
  -- Released already? By this call (a copy that ran first, and passed on
  -- what it freed), or by another release of this holding.
  local reply
  reply, released = marked(freed, ARGV[7], ARGV[2] == 'leave')
  if reply then
    return reply
  end
end
if ARGV[2] == 'leave' then
  local me = name .. ':' .. ARGV[3]
  if ARGV[5] and ARGV[5] ~= '' then
    me = me .. ':' .. ARGV[5]
  end
  redis.call('ZREM', KEYS[3], me, '*' .. me)
  redis.call('ZREM', KEYS[4], me, '*' .. me)
  redis.call('ZREM', KEYS[6], name)
elseif released == 0 then
  return 0
elseif ARGV[2] == 'quiet' then
  return 1
end

local holders = redis.pcall('ZCARD', KEYS[1])
if type(holders) ~= 'number' then
  return released -- a key of another type: no shared hold
end
if holders > 0 then
  local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 1000)
  for _, h in ipairs(gone) do
    redis.call('ZREM', KEYS[1], h)
    redis.call('HDEL', KEYS[5], h)
  end
  holders = holders - #gone
end
local queued = redis.call('EXISTS', KEYS[3]) == 1
if holders == 0 then
  redis.call('DEL', KEYS[5]) -- a semaphore's limit counts while permits are held
end
if not queued then
  redis.pcall('PUBLISH', KEYS[2], '')
  redis.pcall('PUBLISH', watch, '') -- an ACL may forbid it: WaitRelease then waits for the ttl
  return released
end

local class = string.sub(name, 1, 1)
local first = nil
if holders > 0 then
  first = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
end
local writer_holds = first and string.sub(first, 1, 1) == 'w'
local free = 0
if class == 's' then
  free = ARGV[9] and tonumber(ARGV[9]) or 1
  free = free - holders
elseif not writer_holds then
  free = 100 -- readers: as many as queue up to the first writer
end

local cap = tonumber(ARGV[4])
local counted = ARGV[6] == '1'
local served = 0
local fence_base = t[1] * 1000000 + t[2]

local function next_fence()
  local fence = fence_base
  local last = tonumber(redis.pcall('GET', KEYS[2]))
  if last and last >= fence then
    fence = last + 1
  end
  return fence
end

-- hand: give the waiter named head (its name, ttl and channel parsed) its
-- turn; returns false when nobody hears it (gone).
local function hand(head, holder, ttl, channel, barging)
  local message = holder
  local fence
  if not barging then
    fence = next_fence()
    message = holder .. ':' .. string.format('%d', fence)
  end
  local heard = tell(channel, message)
  if counted and heard == 0 then
    return false
  end
  if barging then
    redis.call('ZADD', KEYS[4], 'LT', now + cap, head)
    return true
  end
  ttl = math.min(tonumber(ttl), cap)
  redis.call('ZADD', KEYS[1], now + ttl, holder)
  redis.call('HSET', KEYS[5], holder, fence)
  local pttl = redis.call('PTTL', KEYS[2])
  redis.call('SET', KEYS[2], string.format('%d', fence), 'PX', math.max(pttl, ttl))
  for _, k in ipairs({KEYS[1], KEYS[5]}) do
    local p = redis.call('PTTL', k)
    if p == -1 or (p >= 0 and p < ttl) then
      redis.call('PEXPIRE', k, ttl)
    end
  end
  redis.call('ZREM', KEYS[3], head)
  redis.call('ZREM', KEYS[4], head)
  redis.call('ZREM', KEYS[6], holder)
  return true
end

local queue = redis.call('ZRANGE', KEYS[3], 0, 99)
for _, head in ipairs(queue) do
  if free <= 0 then
    break
  end
  local lease = tonumber(redis.call('ZSCORE', KEYS[4], head))
  local barging = string.sub(head, 1, 1) == '*'
  local holder, ttl, channel = string.match(head, '^%*?([^:]*):(%d+):?(.*)$')
  local alive = holder and lease and lease > now
  if alive and class ~= 's' then
    local wants = string.sub(holder, 1, 1)
    if wants == 'w' and (served > 0 or holders > 0) then
      break -- a writer waits for the readers to finish
    end
    if wants == 'w' then
      free = 1
    end
  end
  if alive and hand(head, holder, ttl, channel, barging) then
    served = served + 1
    free = free - 1
  else -- gone: its lease ran out, or nobody hears its channel
    redis.call('ZREM', KEYS[3], head)
    redis.call('ZREM', KEYS[4], head)
    if holder then
      redis.call('ZREM', KEYS[6], holder)
    end
  end
end
if served == 0 and redis.call('EXISTS', KEYS[3]) == 0 then
  redis.pcall('PUBLISH', KEYS[2], '') -- nobody is left in the queue: tell whoever listens
end
redis.pcall('PUBLISH', watch, '') -- an ACL may forbid it: WaitRelease then waits for the ttl
return released
