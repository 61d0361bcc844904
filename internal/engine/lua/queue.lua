-- queue.lua: what queue_acquire.lua and hold_acquire.lua share, run before
-- either (see script.go). KEYS[3] is the queue of waiters, scored by
-- arrival; KEYS[4] their leases, scored by when each runs out.

-- join puts a waiter in the queue at its end (arrival scores strictly
-- increase), or keeps its place there, and returns its name in the queue:
-- fair_name, or barge_name for a barging waiter (barge) that is not queued
-- as a fair one. A barging waiter that a release woke (woken) and that was
-- beaten to it turns fair, keeping its place: a release hands it over from
-- then on. t is the server's TIME.
local function join(fair_name, barge_name, barge, woken, t)
  local me = fair_name
  if barge and not redis.call('ZSCORE', KEYS[3], fair_name) then
    me = barge_name
    local score = redis.call('ZSCORE', KEYS[3], barge_name)
    if score and woken then
      redis.call('ZREM', KEYS[3], barge_name)
      redis.call('ZREM', KEYS[4], barge_name)
      redis.call('ZADD', KEYS[3], score, fair_name)
      me = fair_name
    end
  end
  if not redis.call('ZSCORE', KEYS[3], me) then
    local arrival = t[1] * 1000000 + t[2]
    local tail = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
    if tail[2] and tonumber(tail[2]) >= arrival then
      arrival = tonumber(tail[2]) + 1
    end
    redis.call('ZADD', KEYS[3], string.format('%d', arrival), me)
  end
  return me
end
