-- refresh.lua: set a new time to live on the lock if the caller still holds it.
--
-- KEYS[1]  the lock key
-- ARGV[1]  the caller's token
-- ARGV[2]  the new time to live, in milliseconds
--
-- Returns 1 when the lock was ours and now expires in ARGV[2] ms, 0 when it
-- was not ours (expired, taken by another holder, deleted, another type).
if redis.pcall('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
