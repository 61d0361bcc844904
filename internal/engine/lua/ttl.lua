-- ttl.lua: the remaining time to live of the lock, if the caller holds it.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the fence key (unused: every script gets the same KEYS)
-- ARGV[1]  the caller's token
--
-- Returns {1, pttl} when the lock is ours (pttl in milliseconds, -1 when the
-- key has no expiry), {0, 0} when it is not ours.
if holds(redis.pcall('GET', KEYS[1]), ARGV[1]) then
  return {1, redis.call('PTTL', KEYS[1])}
end
return {0, 0}
