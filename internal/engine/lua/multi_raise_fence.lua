-- multi_raise_fence.lua: a Redlock quorum's fence for a multi-key holding,
-- as raise_fence.lua is for one lock: ARGV[2] = 0 has the node hand out a
-- fence larger than every fence stored on the holding's keys; another
-- value stores that fence on every key.
--
-- KEYS[1..4n]  as in multi_acquire.lua: the lock keys, their fence keys,
--              their release markers and holding keys (unused)
-- ARGV[1]      the caller's token
-- ARGV[2]      0: hand out a fence; otherwise the quorum's fence, to store
-- ARGV[3]      the holder's tag, stored with the fence as "fence:tag" (see
--              raise_fence.lua)
--
-- Returns {1, fence} when every lock is still the caller's here and every
-- fence key now holds at least fence; {0, 0} when some lock is not the
-- caller's, and then nothing is written.
--
-- Every copy of a call answers as the first did: a fence handed out is
-- stored with the holder's tag on every key, and a copy that finds it
-- there hands out the same; a stored one is stored once.
local n = #KEYS / 4
if not holds_all(n, ARGV[1]) then
  return {0, 0}
end
local fence = tonumber(ARGV[2])
local last, ours = {}, true
local highest = nil
for i = 1, n do
  local stored = redis.pcall('GET', KEYS[n + i])
  local number, tag
  if type(stored) == 'string' then
    number, tag = string.match(stored, '^(%d+):?(.*)$')
    number = tonumber(number)
  end
  last[i] = number
  if number and (not highest or number > highest) then
    highest = number
  end
  if not (number and tag == ARGV[3]) then
    ours = false
  end
end
if fence == 0 and ours then
  -- Handed out to this holder already, by an earlier copy of this call.
  return {1, highest}
end
if fence == 0 then
  local t = redis.call('TIME')
  fence = t[1] * 1000000 + t[2]
  if highest and highest >= fence then
    fence = highest + 1
  end
end
local value = string.format('%d:%s', fence, ARGV[3])
for i = 1, n do
  if not (last[i] and last[i] >= fence) then
    local pttl = redis.call('PTTL', KEYS[i])
    if pttl > 0 then
      redis.call('SET', KEYS[n + i], value, 'PX', pttl)
    else
      redis.call('SET', KEYS[n + i], value)
    end
  end
end
return {1, math.max(fence, highest or 0)}
