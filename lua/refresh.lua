-- refresh.lua: set a new time to live on the lock if the caller still holds it.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the fence key (same cluster slot as KEYS[1])
-- ARGV[1]  the caller's token
-- ARGV[2]  the new time to live, in milliseconds
--
-- Returns 1 when the lock was ours and now expires in ARGV[2] ms, 0 when it
-- was not ours (expired, taken by another holder, deleted, another type).
--
-- The fence key gets the same expiry, so it lives as long as the lock: it
-- marks the key as a dlock lock for Client.Scan.
if redis.pcall('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  return 1
end
return 0
