-- multi_ttl.lua: the least remaining time to live of the locks of a
-- multi-key holding, if the caller holds them all.
--
-- KEYS[1..4n]  as in multi_acquire.lua (only the lock keys are read)
-- ARGV[1]      the caller's token
--
-- Returns {1, pttl} when every lock is ours (pttl in milliseconds, the
-- least of them; -1 when none has an expiry), {0, 0} otherwise.
local n = #KEYS / 4
local least = -1
for i = 1, n do
  if redis.pcall('GET', KEYS[i]) ~= ARGV[1] then
    return {0, 0}
  end
  local left = redis.call('PTTL', KEYS[i])
  if left >= 0 and (least < 0 or left < least) then
    least = left
  end
end
return {1, least}
