-- multi_release.lua: release the locks of a multi-key holding that are
-- still the caller's, and tell whoever waits for any of them.
--
-- KEYS[1..n]      the lock keys (see multi_acquire.lua)
-- KEYS[n+1..2n]   their fence keys, whose names are also the locks' release
--                 channels
-- KEYS[2n+1..3n]  their release markers for this holder:
--                 dlock:freed<the fence key's rest>:<token>
-- KEYS[3n+1..4n]  their holding keys (see multi_acquire.lua)
-- ARGV[1]         the caller's token
-- ARGV[2]         '' to release; 'quiet' to release and tell nobody (a
--                 Redlock attempt that failed takes back its nodes)
-- ARGV[3..6]      unused (release.lua's ARGV, which every release gets)
-- ARGV[7]         the call's number among the releases of this holding
--                 ('0' for the take-back of an acquire), which the markers
--                 record
-- ARGV[8]         how long the markers live, in milliseconds: longer than
--                 the Redis client goes on sending copies of one command
--
-- Returns 1 when every lock was the caller's and is now deleted (by this
-- call, or by an earlier copy of it), 2 when another release of the same
-- holding deleted them (nothing was done), 0 when some or all of them were
-- not the caller's any more: those that were are deleted all the same.
--
-- Every copy of a call answers as the first did: the release leaves a
-- marker on every key, holding ARGV[7] (with ':lost' after it when some
-- lock was not the caller's), and a copy that finds none of the locks the
-- caller's reads it. A release does not hand a lock over to a fair waiter
-- of its queue: it publishes on each lock's channel and watch channel
-- (see release.lua), which wakes every waiter, and they try again.
local n = #KEYS / 4
local held = 0
for i = 1, n do
  if redis.pcall('GET', KEYS[i]) == ARGV[1] then
    held = held + 1
  end
end
if held == 0 then
  -- Released already? By this call (a copy that ran first), or by another
  -- release of this holding.
  for i = 2 * n + 1, 3 * n do
    local marker = redis.pcall('GET', KEYS[i])
    if marker == ARGV[7] then
      return 1
    elseif marker == ARGV[7] .. ':lost' then
      return 0
    elseif type(marker) == 'string' then
      return 2
    end
  end
  return 0
end
local mark, result = ARGV[7], 1
if held < n then
  mark, result = ARGV[7] .. ':lost', 0
end
for i = 1, n do
  if redis.pcall('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i], KEYS[3 * n + i])
    if ARGV[2] ~= 'quiet' then
      redis.pcall('PUBLISH', KEYS[n + i], '')
      -- an ACL may forbid it: WaitRelease then waits for the ttl
      redis.pcall('PUBLISH', 'dlock:watch' .. string.sub(KEYS[n + i], 12), '')
    end
  end
  redis.call('SET', KEYS[2 * n + i], mark, 'PX', ARGV[8])
end
return result
