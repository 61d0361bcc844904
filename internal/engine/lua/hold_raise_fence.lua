-- hold_raise_fence.lua: Redlock's fences for a shared hold, as
-- raise_fence.lua does for a lock: ARGV[2] = 0 hands out a fence on a node
-- where the caller holds, any other value stores the quorum's fence there.
--
-- KEYS     as hold_acquire.lua (KEYS[1], KEYS[2] and KEYS[5] are used)
-- ARGV[1]  the caller's name (class and token)
-- ARGV[2]  0: hand out a fence; otherwise the quorum's fence, to store
-- ARGV[3]  the holder's tag (unused: each holder's fence is its own, in
--          KEYS[5])
--
-- A hand-out is the holder's fence on this node (hold_acquire.lua stores
-- it), so a copy of the call that go-redis sent again hands out the same;
-- a store is done once, and a copy finds it done.
--
-- Returns {1, fence} when the caller holds here and KEYS[2] now holds a
-- fence at least as large; {0, 0} when it does not hold here, and then
-- nothing is written.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local score = redis.pcall('ZSCORE', KEYS[1], ARGV[1])
if type(score) ~= 'string' or tonumber(score) <= now then
  return {0, 0}
end
local fence = tonumber(ARGV[2])
local last = tonumber(redis.pcall('GET', KEYS[2]))
if fence == 0 then
  -- The holder's own fence on this node, from its acquire (or an earlier
  -- copy of this call): every copy of a call hands out the same. KEYS[2]
  -- is at least as large already.
  fence = tonumber(redis.call('HGET', KEYS[5], ARGV[1]))
end
if not fence or fence == 0 then
  fence = t[1] * 1000000 + t[2]
  if last and last >= fence then
    fence = last + 1
  end
end
redis.call('HSET', KEYS[5], ARGV[1], fence)
if not last or last < fence then
  local pttl = math.max(redis.call('PTTL', KEYS[2]), tonumber(score) - now)
  redis.call('SET', KEYS[2], string.format('%d', fence), 'PX', pttl)
end
return {1, fence}
