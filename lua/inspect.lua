-- inspect.lua: what a lock key holds now, whoever holds it. Changes nothing.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the fence key (same cluster slot as KEYS[1])
-- KEYS[3]  the queue of waiters (see queue_acquire.lua)
-- KEYS[4]  the leases of the waiters
--
-- Returns {state, token, pttl, fence, waiters}:
--   state  0 no such key, 1 a lock (a string), 2 a key of another type
--   token  the key's value when state is 1, else ''
--   pttl   its remaining time to live in milliseconds, -1 for no expiry
--          (0 unless state is 1)
--   fence  the last fence handed out for the key, as a string, or '' when
--          the fence key is gone
--   waiters how many waiters are queued with a running lease
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
if state == 'none' then
  return {0, '', 0, fence, waiters}
elseif state ~= 'string' then
  return {2, '', 0, fence, waiters}
end
return {1, redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]), fence, waiters}
