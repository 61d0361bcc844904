-- hold_refresh.lua: set a new time to live on the caller's shared hold, if
-- it still has it.
--
-- KEYS     as hold_acquire.lua (KEYS[1], KEYS[2] and KEYS[5] are used),
--          then (the last) the release marker of the holding (see
--          hold_release.lua)
-- ARGV[1]  the caller's name (class and token)
-- ARGV[2]  the new time to live, in milliseconds
-- ARGV[3]  optional (Lock.ReleaseAfter): the call's number among the
--          releases of this holding, recorded in the release marker
-- ARGV[4]  with ARGV[3]: how long the release marker lives, in milliseconds
--
-- Returns 1 when the holding was ours and now expires in ARGV[2] ms (with
-- ARGV[3]: by this call, or by an earlier copy of it), 2 when a release of
-- this holding ended it (see hold_release.lua's marker), 0 when it was not
-- (expired, released, force-released, another type). The keys live at least
-- as long as the holding. Copies of one call sent again answer as the first
-- did, as in refresh.lua.
local freed = KEYS[#KEYS]
if ARGV[3] and redis.pcall('GET', freed) == ARGV[3] then
  return 1
end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local score = redis.pcall('ZSCORE', KEYS[1], ARGV[1])
if type(score) ~= 'string' or tonumber(score) <= now then
  if type(redis.pcall('GET', freed)) == 'string' then
    return 2
  end
  return 0
end
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], 'XX', now + ttl, ARGV[1])
for _, k in ipairs({KEYS[1], KEYS[2], KEYS[5]}) do
  local pttl = redis.call('PTTL', k)
  if pttl >= 0 and pttl < ttl then
    redis.call('PEXPIRE', k, ttl)
  end
end
if ARGV[3] then
  redis.call('SET', freed, ARGV[3], 'PX', ARGV[4])
end
return 1
