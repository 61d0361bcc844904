-- raise_fence.lua: Redlock, after a quorum granted the lock: store the
-- quorum's fence (the largest any of its nodes handed out) on this node, so
-- that the next holder's fence, on any quorum, is larger.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the fence key
-- ARGV[1]  the caller's token
-- ARGV[2]  the quorum's fence
--
-- Returns 1 when the lock is still the caller's here and the fence key now
-- holds at least ARGV[2], 0 when the lock is not the caller's (then nothing
-- is written: a holder that lost the lock must not raise the fence of the
-- next one's node after the fact).
if redis.pcall('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local fence = tonumber(ARGV[2])
local last = tonumber(redis.pcall('GET', KEYS[2]))
if not last or last < fence then
  local pttl = redis.call('PTTL', KEYS[1])
  if pttl > 0 then
    redis.call('SET', KEYS[2], ARGV[2], 'PX', pttl)
  else
    redis.call('SET', KEYS[2], ARGV[2])
  end
end
return 1
