-- store.lua: store the outcome of a call, if and only if the caller still
-- holds the key's lock, so a caller whose lock expired or was taken over can
-- never write or overwrite a result.
--
-- KEYS[1]  the lock key: a dlock lock, whose value is its holder's token
-- KEYS[2]  the record key (same cluster slot as KEYS[1])
-- ARGV[1]  the caller's lock token
-- ARGV[2]  the record
-- ARGV[3]  the retention of the record, in milliseconds
--
-- Returns 1 (stored)      the record is stored for ARGV[3] milliseconds.
-- Returns 0 (not held)    the lock is not the caller's: nothing written.
-- Returns 2 (exists)      a record is there already: nothing written.
if redis.pcall('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  return 2
end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
return 1
