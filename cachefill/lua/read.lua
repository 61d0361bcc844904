-- read: the entry of a cache key, in one round trip.
--
-- KEYS[1]: the entry, a hash with the fields
--   v  the value; or
--   nf "1": the source has no value (the load returned ErrNotFound)
--   d  how long the load that stored it took, in ms (for early refresh)
--   f  the lock token of the loader that stored it
--   g  how many times it was invalidated (absent: 0)
--   s  "1": invalidated after the loader read g, so to be loaded again
-- Invalidate leaves a hash with only g and s where there was no entry.
-- KEYS[2]: the lock of the entry's loader
--
-- Returns one of:
--   {0, g, held}  a miss: no entry, or only a mark of Invalidate; held is 1
--                 when a loader holds the lock, else 0
--   {1, value, d, f, g, s, pttl}  a value
--   {2, "", d, f, g, s, pttl}     not found, remembered
--   {3}           the entry's key holds another type
local e = redis.pcall('HMGET', KEYS[1], 'v', 'nf', 'd', 'f', 'g', 's')
if type(e) == 'table' and e['err'] then
  if string.find(e['err'], 'WRONGTYPE') then
    return {3}
  end
  return redis.error_reply(e['err'])
end
local code = 0
if e[1] then
  code = 1
elseif e[2] == '1' then
  code = 2
end
if code == 0 then
  return {0, e[5] or '0', redis.call('EXISTS', KEYS[2])}
end
return {code, e[1] or '', e[3] or '0', e[4] or '', e[5] or '0', e[6] or '0', redis.call('PTTL', KEYS[1])}
