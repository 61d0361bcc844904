-- fair_release.lua: release a lock obtained in fair mode, and hand it over
-- to the first live waiter of its queue.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the fence key, whose name is also the lock's release channel
-- KEYS[3]  the queue (see fair_acquire.lua)
-- KEYS[4]  the leases
-- ARGV[1]  the caller's token
-- ARGV[2]  "leave": the caller is a waiter giving up; it leaves the queue,
--          releases the lock if it got it after all, and passes the turn on
--          if the lock is free
-- ARGV[3]  with "leave": the caller's ttl, which names it in the queue
-- ARGV[4]  the waiters' lease, in milliseconds
-- ARGV[5]  with "leave": the caller's channel, which also names it in the
--          queue (see fair_acquire.lua); '' or absent if it gave none
--
-- Returns 1 when the lock was the caller's and is now deleted, 0 otherwise.
--
-- The first waiter whose lease still runs gets the lock at once, with the
-- next fence, for its own ttl but no longer than a lease (a waiter that died
-- since it last renewed its lease holds the others up no longer than that),
-- and the message "token:fence" tells it so: on the waiter's own channel
-- if it gave one, so that no other waiter wakes for nothing, else on the
-- lock's. A waiter whose ttl is no longer than the lease needs no further
-- round trip; the others extend the lock to their ttl with
-- fair_acquire.lua, which finds it theirs. When nobody waits in the queue,
-- the message is '' on the lock's channel (plain waiters wake on any
-- message).
local released = 0
if redis.pcall('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  released = 1
end
if ARGV[2] == 'leave' then
  local me = ARGV[1] .. ':' .. ARGV[3]
  if ARGV[5] and ARGV[5] ~= '' then
    me = me .. ':' .. ARGV[5]
  end
  redis.call('ZREM', KEYS[3], me)
  redis.call('ZREM', KEYS[4], me)
  if redis.call('EXISTS', KEYS[1]) == 1 then
    return released -- held by another: its release passes the turn on
  end
elseif released == 0 then
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
  redis.call('ZREM', KEYS[3], head)
  redis.call('ZREM', KEYS[4], head)
  local token, ttl, channel = string.match(head, '^([^:]*):(%d+):?(.*)$')
  if token and lease and lease > now_ms then
    ttl = math.min(tonumber(ttl), tonumber(ARGV[4]))
    redis.call('SET', KEYS[1], token, 'PX', ttl)
    local fence = t[1] * 1000000 + t[2]
    local last = tonumber(redis.pcall('GET', KEYS[2]))
    if last and last >= fence then
      fence = last + 1
    end
    fence = string.format('%d', fence)
    redis.call('SET', KEYS[2], fence, 'PX', ttl)
    local sent = false
    if channel ~= '' then
      -- pcall: an ACL may let this caller publish on the lock's channel only
      sent = type(redis.pcall('PUBLISH', channel, token .. ':' .. fence)) == 'number'
    end
    if not sent then
      redis.call('PUBLISH', KEYS[2], token .. ':' .. fence)
    end
    return released
  end
  -- gone: its lease ran out
end
redis.call('PUBLISH', KEYS[2], '')
return released
