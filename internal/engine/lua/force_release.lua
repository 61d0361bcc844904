-- force_release.lua: delete the holding an operator saw on a key, whoever
-- holds it, and wake its waiters. For operators clearing a lock whose
-- holder is gone for good (Client.ForceRelease).
--
-- KEYS[1]  the lock key
-- KEYS[2]  the fence key, whose name is also the lock's release channel
-- KEYS[5]  a shared hold's fences of its holders (see hold_acquire.lua)
-- KEYS[7]  the mark this script leaves where it deleted (see below);
--          the other KEYS are unused
-- ARGV[1]  the call's id: random, the same in every copy of one call
-- ARGV[2]  what the operator saw: the SHA-1 (hex) of a lock's token (its
--          value without since, see holder.lua); for a shared hold, ARGV[2..] are the SHA-1s of the names
--          of the holders seen (the caller keeps no token)
--
-- Only what was seen is deleted: a holder that took the key since keeps
-- it. go-redis may send the call again when a reply is late, and every
-- copy runs: a copy that came after the first deleted the lock, and after
-- a new holder took it, must leave the new holder alone, and say what the
-- first did. So a call that deletes leaves a mark with its id, for a
-- minute, far longer than go-redis resends; a copy that finds it answers 1.
--
-- Returns 1 when what was seen was deleted (by this copy or an earlier
-- one), 0 when none of it was there any more, 2 when the key holds another
-- type (it is left alone: it is no lock). The fence key stays: fences go
-- on increasing.
local markTTL = 60000
if redis.call('GET', KEYS[7]) == ARGV[1] then
  return 1
end
local state = redis.call('TYPE', KEYS[1]).ok
if state == 'none' then
  return 0
elseif state == 'string' then
  if redis.sha1hex(token_of(redis.call('GET', KEYS[1]))) ~= ARGV[2] then
    return 0
  end
  redis.call('DEL', KEYS[1])
elseif state == 'zset' then
  local seen = {}
  for i = 2, #ARGV do
    seen[ARGV[i]] = true
  end
  local t = redis.call('TIME')
  local now = t[1] * 1000 + math.floor(t[2] / 1000)
  local removed = 0
  for _, name in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. string.format('%d', now), '+inf')) do
    if seen[redis.sha1hex(name)] then
      removed = removed + redis.call('ZREM', KEYS[1], name)
      redis.call('HDEL', KEYS[5], name)
    end
  end
  if removed == 0 then
    return 0
  end
  local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 1000)
  for _, name in ipairs(gone) do -- expired holdings: nobody's
    redis.call('ZREM', KEYS[1], name)
    redis.call('HDEL', KEYS[5], name)
  end
  if redis.call('ZCARD', KEYS[1]) == 0 then
    redis.call('DEL', KEYS[1], KEYS[5])
  end
else
  return 2
end
redis.call('SET', KEYS[7], ARGV[1], 'PX', markTTL)
redis.pcall('PUBLISH', KEYS[2], '')
redis.pcall('PUBLISH', 'dlock:watch' .. string.sub(KEYS[2], 12), '') -- see release.lua
return 1
