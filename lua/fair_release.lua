-- fair_release.lua: release a lock obtained in fair mode, and wake the
-- first live waiter of its queue only.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the fence key, whose name is also the lock's release channel
-- KEYS[3]  the queue (see fair_acquire.lua)
-- KEYS[4]  the leases
-- ARGV[1]  the caller's token
-- ARGV[2]  "leave": the caller is a waiter giving up; it leaves the queue,
--          releases the lock if it got it after all, and passes the turn on
--          if it was first and the lock is free
--
-- Returns 1 when the lock was the caller's and is now deleted, 0 otherwise.
--
-- The message on the channel is the token of the waiter whose turn it is,
-- or '' when nobody waits in the queue (plain waiters wake on any message).
local released = 0
if redis.pcall('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  released = 1
end
local wasHead = false
if ARGV[2] == 'leave' then
  wasHead = redis.call('ZRANGE', KEYS[3], 0, 0)[1] == ARGV[1]
  redis.call('ZREM', KEYS[3], ARGV[1])
  redis.call('ZREM', KEYS[4], ARGV[1])
end
if released == 0 and not (wasHead and redis.call('EXISTS', KEYS[1]) == 0) then
  return 0
end

local t = redis.call('TIME')
local now_ms = t[1] * 1000 + math.floor(t[2] / 1000)
for _ = 1, 100 do
  local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
  if not head then
    break
  end
  local lease = tonumber(redis.call('ZSCORE', KEYS[4], head))
  if lease and lease > now_ms then
    redis.call('PUBLISH', KEYS[2], head)
    return released
  end
  redis.call('ZREM', KEYS[3], head) -- gone: its lease ran out
  redis.call('ZREM', KEYS[4], head)
end
redis.call('PUBLISH', KEYS[2], '')
return released
