-- refresh.lua: set a new time to live on the lock if the caller still holds it.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the fence key (same cluster slot as KEYS[1])
-- KEYS[3]  the release marker of the holding (see release.lua)
-- ARGV[1]  the caller's lock as its acquire set it, "token:since" (see
--          holder.lua), compared whole first; or its token alone
-- ARGV[2]  the new time to live, in milliseconds
-- ARGV[3]  optional (Lock.ReleaseAfter, which ends the holding here and
--          keeps it in Redis for ARGV[2]): the call's number among the
--          releases of this holding, recorded in the release marker
-- ARGV[4]  with ARGV[3]: how long the release marker lives, in milliseconds
--
-- Returns 1 when the lock was ours and now expires in ARGV[2] ms (with
-- ARGV[3]: by this call, or by an earlier copy of it), 2 when a release of
-- this holding ended it (see release.lua's marker), 0 when it was not ours
-- (expired, taken by another holder, deleted, another type).
--
-- The fence key, if a Lock.Fence made it, gets the same expiry, so it
-- lives as long as the lock.
--
-- A refresh sent twice sets the same ttl twice, the second from a moment
-- later: still a refresh. A ReleaseAfter sent twice must not keep the lock
-- longer than asked: its copies find its marker, and change nothing.
local freed = KEYS[3]
if ARGV[3] and redis.pcall('GET', freed) == ARGV[3] then
  return 1
end
-- The value as the acquire set it, mostly; else (marked as waited for
-- since, or a since the caller does not know) by its token.
local value = redis.pcall('GET', KEYS[1])
if value == ARGV[1] or holds(value, string.match(ARGV[1], '^[^:]*')) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  if ARGV[3] then
    redis.call('SET', freed, ARGV[3], 'PX', ARGV[4])
  end
  return 1
end
if type(redis.pcall('GET', freed)) == 'string' then
  return 2
end
return 0
