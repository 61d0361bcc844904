-- inspect.lua: what a lock key holds now, whoever holds it. Changes nothing,
-- unless ARGV[1] is 'watch' (WaitRelease): then a lock is marked as waited
-- for (see holder.lua), so that its release tells the caller.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the fence key (same cluster slot as KEYS[1])
-- KEYS[3]  the queue of waiters (see queue_acquire.lua)
-- KEYS[4]  the leases of the waiters
-- KEYS[5]  a shared hold's fences of its holders, and a semaphore's limit
--          (see hold_acquire.lua)
--
-- Returns {state, token, pttl, fence, waiters}:
--   state  0 no such key (or a shared hold whose holders all expired), 1 a
--          lock (a string) or a shared hold (a sorted set), 2 a key of
--          another type
--   token  the key's value when state is 1, else '' (for a lock, as stored:
--          "token:since", see holder.lua); for a shared hold,
--          the name of the holder that expires first
--   pttl   its remaining time to live in milliseconds, -1 for no expiry
--          (0 unless state is 1)
--   fence  the last fence handed out for the key, as a string, or '' when
--          the fence key is gone
--   waiters how many waiters are queued with a running lease
-- and for a shared hold also {kind, limit, holders}: kind 'semaphore' or
-- 'rwmutex', a semaphore's limit (else 0), and the holders flat, each as
-- mode ('permit', 'read' or 'write'), name, pttl and fence.
local t = redis.call('TIME')
local now_ms = t[1] * 1000 + math.floor(t[2] / 1000)
local waiters = redis.pcall('ZCOUNT', KEYS[4], '(' .. string.format('%d', now_ms), '+inf')
if type(waiters) ~= 'number' then
  waiters = 0
end
local fence = redis.pcall('GET', KEYS[2])
if type(fence) ~= 'string' then
  fence = ''
end
local state = redis.call('TYPE', KEYS[1]).ok
if state == 'zset' then
  local live = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. string.format('%d', now_ms), '+inf', 'WITHSCORES')
  if #live == 0 then
    return {0, '', 0, fence, waiters}
  end
  local modes = {s = 'permit', r = 'read', w = 'write'}
  local holders = {}
  for i = 1, #live, 2 do
    local name = live[i]
    holders[#holders + 1] = modes[string.sub(name, 1, 1)] or '?'
    holders[#holders + 1] = name
    holders[#holders + 1] = tonumber(live[i + 1]) - now_ms
    holders[#holders + 1] = tonumber(redis.pcall('HGET', KEYS[5], name)) or 0
  end
  local kind, limit = 'rwmutex', 0
  if string.sub(live[1], 1, 1) == 's' then
    kind = 'semaphore'
    limit = tonumber(redis.pcall('HGET', KEYS[5], 'limit')) or 0
  end
  return {1, live[1], holders[3], fence, waiters, kind, limit, holders}
elseif state == 'none' then
  return {0, '', 0, fence, waiters}
elseif state ~= 'string' then
  return {2, '', 0, fence, waiters}
end
local value = redis.call('GET', KEYS[1])
if ARGV[1] == 'watch' then
  mark_waited(KEYS[1], value)
end
return {1, value, redis.call('PTTL', KEYS[1]), fence, waiters}
