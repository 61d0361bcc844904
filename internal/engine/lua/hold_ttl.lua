-- hold_ttl.lua: the remaining time to live of the caller's shared hold.
--
-- KEYS[1]  the holders (see hold_acquire.lua); the other KEYS are unused
-- ARGV[1]  the caller's name (class and token)
--
-- Returns {1, pttl} when the holding is ours (pttl in milliseconds), {0, 0}
-- when it is not.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local score = redis.pcall('ZSCORE', KEYS[1], ARGV[1])
if type(score) ~= 'string' or tonumber(score) <= now then
  return {0, 0}
end
return {1, tonumber(score) - now}
