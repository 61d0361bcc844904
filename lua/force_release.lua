-- force_release.lua: delete a lock whoever holds it, and wake its waiters.
-- For operators clearing a lock whose holder is gone for good.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the fence key, whose name is also the lock's release channel
-- KEYS[5]  a shared hold's fences of its holders (see hold_acquire.lua);
--          the other KEYS are unused
--
-- Returns 1 when a lock, a semaphore's permits or an RW lock's holds were
-- deleted, 0 when there were none, 2 when the key holds another type (it
-- is left alone: it is no lock). The fence key stays: fences go on
-- increasing.
local state = redis.call('TYPE', KEYS[1]).ok
if state == 'none' then
  return 0
elseif state == 'zset' then
  redis.call('DEL', KEYS[5])
elseif state ~= 'string' then
  return 2
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', KEYS[2], '')
redis.pcall('PUBLISH', 'dlock:watch' .. string.sub(KEYS[2], 12), '') -- see release.lua
return 1
