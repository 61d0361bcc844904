-- invalidate: mark the entry of a cache key as to be loaded again.
--
-- KEYS[1]: the entry (see read.lua)
-- ARGV[1]: how long a mark left where there is no entry lives, in ms: as
--          long as a load that started before it may still store
-- ARGV[2]: the call's id, random: a copy of the same call finds it in the
--          field i, which store.lua keeps
--
-- It keeps the value, so readers get it while one of them loads again, and
-- counts g up, so a load that read g before the mark stores its value
-- marked stale (see store.lua).
--
-- One mark per call, whatever the client resends: go-redis sends a command
-- whose reply did not come in time again, on another connection, and every
-- copy runs. A copy that finds its call's id in i changes nothing and
-- answers what the first did; a second count would mark stale the value of
-- a load that started after the first, and read the source after the change.
--
-- Returns 1 marked an entry, 0 left a mark (or renewed one) where there was
-- none, 3 the key holds another type: nothing changed.
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'none' and kind ~= 'hash' then
  return 3
end
if kind == 'hash' then
  local done = redis.call('HGET', KEYS[1], 'i')
  if done and string.sub(done, 1, #ARGV[2] + 1) == ARGV[2] .. ':' then
    return tonumber(string.sub(done, #ARGV[2] + 2))
  end
end
local entry = kind == 'hash' and
  (redis.call('HEXISTS', KEYS[1], 'v') == 1 or redis.call('HEXISTS', KEYS[1], 'nf') == 1)
local code = 0
if entry then
  code = 1
end
redis.call('HINCRBY', KEYS[1], 'g', 1)
redis.call('HSET', KEYS[1], 's', '1', 'i', ARGV[2] .. ':' .. code)
if not entry then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return code
