-- acquire.lua: take the lock if nobody holds it.
--
-- KEYS[1]  the lock key (its value is "token:since", see holder.lua)
-- KEYS[2]  the fence key (unused here: the first Lock.Fence hands out the
--          fence, see raise_fence.lua)
-- KEYS[3]  optional: the guard key (WithGuard; same cluster slot)
-- ARGV[1]  the token of the caller
-- ARGV[2]  the time to live, in milliseconds
--
-- Returns {1, since} when the lock is the caller's: since is the server's
--                    time of the acquire, in microseconds.
-- Returns {0, pttl}  when another holder has it; pttl is its remaining time in
--                    milliseconds, or -1 if the key has no expiry.
-- Returns {2, 0}     when the key exists but is not a string, so it is no lock.
-- Returns {4, value} when the guard key exists: nothing is taken; value is
--                    the guard's ('' for a key of another type).
--
-- Two commands take a free lock: TIME and SET NX PX. The fence is not
-- handed out here but at the first Lock.Fence (raise_fence.lua), so a
-- holder that uses none costs Redis nothing for it.
--
-- A client may send the same acquire twice: go-redis resends a command whose
-- reply was lost (EOF, timeout). If the first one took the lock, the key holds
-- the caller's own token, and the lock is the caller's, since the first one.
if KEYS[3] then
  -- WithGuard: the work is done when the guard key exists
  local done = redis.pcall('GET', KEYS[3])
  if type(done) == 'string' then
    return {4, done}
  elseif type(done) == 'table' and done.err then
    return {4, ''} -- a key of another type: it exists
  end
end
local t = redis.call('TIME')
local since = t[1] * 1000000 + t[2]
if redis.call('SET', KEYS[1], ARGV[1] .. ':' .. string.format('%d', since), 'NX', 'PX', ARGV[2]) then
  return {1, since}
end
local holder = redis.pcall('GET', KEYS[1])
if type(holder) ~= 'string' then
  return {2, 0} -- GET failed: a key of another type
elseif holds(holder, ARGV[1]) then
  -- Our own acquire, resent: the lock is ours, since the first copy.
  return {1, tonumber(string.match(holder, '^[^:]*:(%d+)')) or since}
end
return {0, redis.call('PTTL', KEYS[1])}
