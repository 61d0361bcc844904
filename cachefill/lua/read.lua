-- read: the entry of a cache key, in one round trip.
--
-- KEYS[1]: the entry, a hash with the fields
--   v  the value; or
--   nf "1": the source has no value (the load returned ErrNotFound)
--   d  how long the load that stored it took, in ms (for early refresh)
--   f  the lock token of the loader that stored it
--   g  how many times it was invalidated (absent: 0)
--   s  "1": invalidated after the loader read g, so to be loaded again
--   i  the id of the last Invalidate and its reply, "id:code", which
--      recognises a resent copy of it (see invalidate.lua)
-- Invalidate leaves a hash with only g and s where there was no entry.
-- KEYS[2]: the entry's fills, a stream of one message that each loader adds
--          when it is done (see store.lua and notify.go)
-- KEYS[3]: the entry's fill claim: the token of the caller that saw the miss
--          first, and fills it; the others wait for its fill message
-- KEYS[4]: the entry's lock, which a loader holds: the fill is claimed only
--          while it is free, so a claim's holder gets the lock (see fill.go)
-- ARGV[1]: the caller's token, which claims the fill on a miss
-- ARGV[2]: how long a claim lives unless its fill clears it, in ms
--
-- Returns one of:
--   {0, g, claimed, last}  a miss: no entry, or only a mark of Invalidate;
--                 claimed is 1 when the lock is free and the caller holds
--                 the fill claim (it took it now, or had it), else 0 (a
--                 claim it would hold while a loader has the lock is given
--                 back); last is the ID of the last fill message ("0-0"
--                 for none), after which the caller reads the message of
--                 the fill it waits for
--   {1, value, d, f, g, s, pttl}  a value
--   {2, "", d, f, g, s, pttl}     not found, remembered
--   {3}           a key of the entry holds another type
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
  local last = '0-0'
  local m = redis.pcall('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
  if type(m) == 'table' and m[1] then
    last = m[1][1]
  end
  -- SET NX GET: nil when it took the claim, else the holder's token
  local holder = redis.pcall('SET', KEYS[3], ARGV[1], 'NX', 'PX', ARGV[2], 'GET')
  if type(holder) == 'table' and holder['err'] then
    if string.find(holder['err'], 'WRONGTYPE') then
      return {3}
    end
    return redis.error_reply(holder['err'])
  end
  local claimed = 0
  if not holder or holder == ARGV[1] then
    claimed = 1
    -- Checked only by the claim's holder, so that a caller that waits
    -- runs no more commands than it did.
    if redis.call('EXISTS', KEYS[4]) == 1 then
      redis.call('DEL', KEYS[3])
      claimed = 0
    end
  end
  return {0, e[5] or '0', claimed, last}
end
return {code, e[1] or '', e[3] or '0', e[4] or '', e[5] or '0', e[6] or '0', redis.call('PTTL', KEYS[1])}
