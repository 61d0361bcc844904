-- raise_fence.lua: a lock's fence, handed out at the first Lock.Fence: an
-- acquire hands out none. On one deployment the fence handed out here
-- (ARGV[2] = 0) is the lock's. On a Redlock, the first Lock.Fence has each
-- node that holds the lock hand one out, takes the largest, and stores that
-- on the nodes that handed out less (ARGV[2] = that fence), so that it is on
-- a quorum and the next holder's fence, on any quorum, is larger.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the fence key
-- ARGV[1]  the caller's token
-- ARGV[2]  0: hand out a fence; otherwise the quorum's fence, to store
-- ARGV[4]  optional, on one deployment: the lock's ttl in milliseconds, for
--          which the fence key is set
-- ARGV[3]  the holder's tag (the start of its token), stored with the
--          fence as "fence:tag": Inspect counts a fence as the holder's
--          only once a quorum stores it with the holder's tag
--
-- Returns {1, fence} when the lock is still the caller's here and the fence
-- key now holds fence: a new one is max(last fence + 1, server time in
-- microseconds), as in acquire.lua; a stored one is at least ARGV[2].
-- Returns {0, 0} when the lock is not the caller's; then nothing is written:
-- a holder that lost the lock must not raise the fence of the next one's
-- node after the fact.
--
-- Every copy of a call answers as the first did (go-redis sends a command
-- again when its reply is late): a fence handed out is stored with the
-- holder's tag, and a copy that finds it hands out the same; a stored one
-- is stored once, and a copy finds it there.
--
-- The fence key lives as long as the lock: refresh.lua extends it too.
local held = redis.pcall('GET', KEYS[1])
if not holds(held, ARGV[1]) then
  return {0, 0}
end
local fence = tonumber(ARGV[2])
local since = since_of(held)
if fence == 0 and since and ARGV[4] then
  -- One deployment: the fence is max(last fence + 1, since), stored with
  -- the holder's tag for ARGV[4] ms, and the last read back, in one SET.
  -- Every earlier holder's fence was handed out before this lock was
  -- taken, at since, so it is below since or stored in the fence key.
  local prev = redis.pcall('SET', KEYS[2], string.format('%d:%s', since, ARGV[3]), 'PX', ARGV[4], 'GET')
  local last, tag
  if type(prev) == 'string' then
    last, tag = string.match(prev, '^(%d+):?(.*)$')
    last = tonumber(last)
  end
  fence = since
  if last and tag == ARGV[3] then
    fence = last -- a copy of this call, which go-redis sent again: the same fence
  elseif last and last >= fence then
    fence = last + 1
  end
  if fence ~= since then
    redis.call('SET', KEYS[2], string.format('%d:%s', fence, ARGV[3]), 'PX', ARGV[4])
  end
  return {1, fence}
end
local stored = redis.pcall('GET', KEYS[2])
local last, tag
if type(stored) == 'string' then
  last, tag = string.match(stored, '^(%d+):?(.*)$')
  last = tonumber(last)
end
if fence == 0 and last and tag == ARGV[3] then
  -- Handed out to this holder already: by an earlier copy of this call,
  -- which go-redis sent again. The same fence, not a new one.
  return {1, last}
end
if fence == 0 then
  local t = redis.call('TIME')
  fence = t[1] * 1000000 + t[2]
  if last and last >= fence then
    fence = last + 1
  end
elseif last and last >= fence then
  return {1, last}
end
local value = string.format('%d:%s', fence, ARGV[3])
local pttl = redis.call('PTTL', KEYS[1])
if pttl > 0 then
  redis.call('SET', KEYS[2], value, 'PX', pttl)
else
  redis.call('SET', KEYS[2], value)
end
return {1, fence}
