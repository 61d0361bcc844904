-- multi_store_fence.lua: store the fence of a multi-key holding whose keys
-- are in several Cluster slots, on the keys of one slot (see
-- multi_slots.go): each slot's acquire handed out a fence larger than the
-- earlier holders' of its own keys; the holding's fence is the largest of
-- them, and every key must record it, so that the next holder of any key
-- gets a larger one.
--
-- KEYS[1..4n]  as in multi_acquire.lua: the lock keys of one slot, their
--              fence keys, their release markers and holding keys (unused)
-- ARGV[1]      the caller's token
-- ARGV[2]      the holding's fence
--
-- Returns {1, fence} when every lock is still the caller's and every fence
-- key now holds at least the fence; {0, 0} when some lock is not the
-- caller's, and then nothing is written.
--
-- A copy of the call finds the fence stored, and writes nothing again.
local n = #KEYS / 4
if not holds_all(n, ARGV[1]) then
  return {0, 0}
end
local fence = tonumber(ARGV[2])
for i = 1, n do
  local last = tonumber(redis.pcall('GET', KEYS[n + i]))
  if not (last and last >= fence) then
    local pttl = redis.call('PTTL', KEYS[i])
    if pttl > 0 then
      redis.call('SET', KEYS[n + i], ARGV[2], 'PX', pttl)
    else
      redis.call('SET', KEYS[n + i], ARGV[2])
    end
  end
end
return {1, fence}
