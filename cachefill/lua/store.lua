-- store: the entry of a cache key, if the loader still holds its lock, and
-- a message to the callers that wait for it.
--
-- KEYS[1]: the entry (see read.lua)
-- KEYS[2]: the loader's lock: a string that starts with the holder's token
--          (then a colon and the time it was taken, see dlock.Lock.Token)
-- KEYS[3]: the entry's fills (see read.lua)
-- KEYS[4]: the entry's fill claim (see read.lua), which it clears
-- ARGV[1]: the loader's token
-- ARGV[2]: the value ("" when ARGV[3] is "1")
-- ARGV[3]: "1" to store not found, "0" to store the value
-- ARGV[4]: ttl, ms
-- ARGV[5]: how long the load took, ms
-- ARGV[6]: the entry's g as the loader read it before it loaded
-- ARGV[7]: how long the fill message lives, ms
--
-- The fill message (XADD, one kept) has the field r, "1" with the value in
-- v, or "2" for not found: a caller blocked on the stream (XREAD) gets the
-- entry in the reply that wakes it.
--
-- Returns:
--   0 the lock is not the loader's (it expired, or was taken over):
--     nothing stored, so a late loader never overwrites a newer value
--   1 stored
--   2 stored, and marked stale: an Invalidate came after the loader read
--     g, so its value may predate the change and is to be loaded again
--   3 the entry's key holds another type: nothing stored
--
-- One store per call, whatever the client resends: go-redis sends a command
-- whose reply did not come in time again, on another connection, and every
-- copy runs. A copy that finds the entry stored with the loader's token (f)
-- is such a copy, since a lock's token stores once: it changes nothing and
-- answers as the first did, 1 or 2 (2 also if an Invalidate came since),
-- even after the lock was released or taken over.
-- held reports whether the loader's lock is still the loader's: its value
-- is the token, or starts with it and a colon (a token has none).
local function held()
  local v = redis.call('GET', KEYS[2])
  return v == ARGV[1] or type(v) == 'string' and string.sub(v, 1, #ARGV[1] + 1) == ARGV[1] .. ':'
end
local e = redis.pcall('HMGET', KEYS[1], 'g', 'f', 's', 'i')
if type(e) == 'table' and e['err'] then
  if not held() then
    return 0
  end
  return 3
end
if e[2] == ARGV[1] then
  if e[3] == '1' then
    return 2
  end
  return 1
end
if not held() then
  return 0
end
local g = e[1] or '0'
local stale = '0'
if g ~= ARGV[6] then
  stale = '1'
end
redis.call('DEL', KEYS[1])
if ARGV[3] == '1' then
  redis.call('HSET', KEYS[1], 'nf', '1', 'd', ARGV[5], 'f', ARGV[1], 'g', g, 's', stale)
  redis.pcall('XADD', KEYS[3], 'MAXLEN', 1, '*', 'r', '2')
else
  redis.call('HSET', KEYS[1], 'v', ARGV[2], 'd', ARGV[5], 'f', ARGV[1], 'g', g, 's', stale)
  redis.pcall('XADD', KEYS[3], 'MAXLEN', 1, '*', 'r', '1', 'v', ARGV[2])
end
if e[4] then
  redis.call('HSET', KEYS[1], 'i', e[4]) -- the last Invalidate's (see invalidate.lua)
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.pcall('PEXPIRE', KEYS[3], ARGV[7])
redis.call('DEL', KEYS[4])
if stale == '1' then
  return 2
end
return 1
