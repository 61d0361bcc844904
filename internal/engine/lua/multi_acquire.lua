-- multi_acquire.lua: take several locks at once, all of them or none, and
-- hand out one fencing token for them all (Client.ObtainMulti).
--
-- KEYS[1..n]      the lock keys, sorted, none twice (their values are the
--                 holder's token)
-- KEYS[n+1..2n]   their fence keys, in the same order
-- KEYS[2n+1..3n]  their release markers for this holder (see
--                 multi_release.lua); unused here: every script of a
--                 multi-key holding takes the same KEYS
-- KEYS[3n+1..4n]  their holding keys, in the same order: each holds
--                 ARGV[4] while the holding lasts, for Inspect
-- ARGV[1]         the token of the caller
-- ARGV[2]         the time to live, in milliseconds
-- ARGV[3]         '1' on a node of a Redlock quorum, whose acquire hands out
--                 no fence (the quorum does, see multi_raise_fence.lua); ''
--                 otherwise
-- ARGV[4]         what the holding keys hold: the token, then each of the
--                 holding's keys (of every Cluster slot) as ':' length ':'
--                 key
--
-- All of KEYS must be in one Cluster slot (on a single server, any keys).
--
-- Returns {1, fence}     when every lock is the caller's (fence 0 with
--                        ARGV[3]).
-- Returns {0, pttl, key} when another holder has one of them: nothing was
--                        taken; key is the first such lock key, pttl the
--                        longest remaining time of those held (-1 if one
--                        has no expiry).
-- Returns {2, 0, key}    when a key is not a string, so it is no lock:
--                        nothing was taken.
--
-- The fence is max(server time in microseconds, last fence + 1 of every
-- key), written to every fence key: larger than every earlier holder's
-- fence of each key, so that a resource guarded by any one key's fence
-- refuses the earlier holders of that key. Fence keys live as long as the
-- locks (multi_refresh.lua extends them too), as in acquire.lua, and so do
-- the holding keys.
--
-- A client may send the same acquire twice (go-redis resends a command
-- whose reply was lost). A copy that finds the caller's token on the keys
-- answers as the first did, with the fence it wrote.
local n = #KEYS / 4
local blocked, pttl, mine = nil, 0, 0
for i = 1, n do
  local holder = redis.pcall('GET', KEYS[i])
  if type(holder) == 'table' then
    return {2, 0, KEYS[i]} -- GET failed: a key of another type
  elseif holder == ARGV[1] then
    mine = mine + 1
  elseif holder then
    blocked = blocked or KEYS[i]
    mark_waited(KEYS[i], holder) -- a lock's release then tells the watch channel
    local left = redis.call('PTTL', KEYS[i])
    if left < 0 or pttl < 0 then
      pttl = -1
    elseif left > pttl then
      pttl = left
    end
  end
end
if blocked then
  return {0, pttl, blocked}
end

-- the number a fence key holds: "fence", or "fence:tag" on a Redlock node
local function stored(i)
  local v = redis.pcall('GET', KEYS[n + i])
  if type(v) ~= 'string' then
    return nil
  end
  return tonumber(string.match(v, '^(%d+)'))
end

local fenceless = ARGV[3] == '1'
local fence = 0
if mine > 0 and not fenceless then
  -- Our own acquire, resent: the fence it wrote.
  for i = 1, n do
    if redis.pcall('GET', KEYS[i]) == ARGV[1] then
      fence = stored(i) or 0
      break
    end
  end
end
if fence == 0 and not fenceless then
  local t = redis.call('TIME')
  fence = t[1] * 1000000 + t[2]
  for i = 1, n do
    local last = stored(i)
    if last and last >= fence then
      fence = last + 1
    end
  end
end
for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  redis.call('SET', KEYS[3 * n + i], ARGV[4], 'PX', ARGV[2])
  if not fenceless then
    redis.call('SET', KEYS[n + i], string.format('%d', fence), 'PX', ARGV[2])
  elseif not redis.call('SET', KEYS[n + i], '', 'PX', ARGV[2], 'NX') and
      redis.call('PTTL', KEYS[n + i]) < tonumber(ARGV[2]) then
    -- an earlier holder's fence, which the next one's must exceed: kept,
    -- for at least as long as the lock
    redis.call('PEXPIRE', KEYS[n + i], ARGV[2])
  end
end
return {1, fence}
