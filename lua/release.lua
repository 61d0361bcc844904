-- release.lua: delete the lock if, and only if, the caller still holds it,
-- then tell waiters on the lock's channel that it is free.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the fence key, whose name is also the lock's release channel
-- ARGV[1]  the caller's token
-- ARGV[2]  'quiet': publish nothing (a Redlock attempt that failed takes
--          back the nodes that granted it: nobody waits for those alone)
--
-- Returns 1 when the lock was ours and is now deleted, 0 when it was not ours
-- (expired, taken by another holder, deleted, or replaced by another type).
if redis.pcall('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[2] ~= 'quiet' then
    redis.call('PUBLISH', KEYS[2], '')
  end
  return 1
end
return 0
