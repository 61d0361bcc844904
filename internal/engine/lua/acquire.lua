-- acquire.lua: take the lock if nobody holds it, and hand out a fencing token.
--
-- KEYS[1]  the lock key (its value is the holder's token)
-- KEYS[2]  the fence key (the last fence handed out for KEYS[1]; same cluster slot)
-- KEYS[3]  optional: the guard key (WithGuard; same cluster slot)
-- ARGV[1]  the token of the caller
-- ARGV[2]  the time to live, in milliseconds
--
-- Returns {1, fence} when the lock is the caller's.
-- Returns {0, pttl}  when another holder has it; pttl is its remaining time in
--                    milliseconds, or -1 if the key has no expiry.
-- Returns {2, 0}     when the key exists but is not a string, so it is no lock.
-- Returns {4, value} when the guard key exists: nothing is taken; value is
--                    the guard's ('' for a key of another type).
--
-- The fence is max(last fence + 1, server time in microseconds). The fence key
-- lives as long as the lock (refresh.lua extends it too): once it is gone, at
-- least a millisecond has passed, so the server's clock alone keeps the next
-- fence larger. This also holds across a restart without persistence, as long
-- as the server's clock does not step backwards.
--
-- A client may send the same acquire twice: go-redis resends a command whose
-- reply was lost (EOF, timeout). If the first one took the lock, the key holds
-- the caller's own token, and the lock is the caller's, with the fence the
-- first one wrote.
if KEYS[3] then
  -- WithGuard: the work is done when the guard key exists
  local done = redis.pcall('GET', KEYS[3])
  if type(done) == 'string' then
    return {4, done}
  elseif type(done) == 'table' and done.err then
    return {4, ''} -- a key of another type: it exists
  end
end
local fence
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local holder = redis.pcall('GET', KEYS[1])
  if holder ~= ARGV[1] then
    if type(holder) ~= 'string' then
      return {2, 0} -- GET failed: a key of another type
    end
    return {0, redis.call('PTTL', KEYS[1])}
  end
  -- Our own acquire, resent: the lock is ours, with the fence it wrote.
  fence = tonumber(redis.pcall('GET', KEYS[2]))
  if fence then
    return {1, fence}
  end
end
-- A new holding: the next fence. The server's time is stored, and the last
-- fence read back, in one command (SET ... GET); only when the last fence is
-- not below the time (a burst of acquires within a microsecond, or a fence
-- key that holds no number) is the fence written again.
local now = redis.call('TIME')
fence = now[1] * 1000000 + now[2]
local prev = redis.pcall('SET', KEYS[2], string.format('%d', fence), 'PX', ARGV[2], 'GET')
local last = tonumber(prev)
if last and last >= fence or type(prev) == 'table' and prev.err then
  if last and last >= fence then
    fence = last + 1
  end
  redis.call('SET', KEYS[2], string.format('%d', fence), 'PX', ARGV[2])
end
return {1, fence}
