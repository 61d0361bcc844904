-- invalidate: mark the entry of a cache key as to be loaded again.
--
-- KEYS[1]: the entry (see read.lua)
-- ARGV[1]: how long a mark left where there is no entry lives, in ms: as
--          long as a load that started before it may still store
--
-- It keeps the value, so readers get it while one of them loads again, and
-- counts g up, so a load that read g before the mark stores its value
-- marked stale (see store.lua).
--
-- Returns 1 marked an entry, 0 left a mark (or renewed one) where there was
-- none, 3 the key holds another type: nothing changed.
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'none' and kind ~= 'hash' then
  return 3
end
local entry = kind == 'hash' and
  (redis.call('HEXISTS', KEYS[1], 'v') == 1 or redis.call('HEXISTS', KEYS[1], 'nf') == 1)
redis.call('HINCRBY', KEYS[1], 'g', 1)
redis.call('HSET', KEYS[1], 's', '1')
if not entry then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return 0
end
return 1
