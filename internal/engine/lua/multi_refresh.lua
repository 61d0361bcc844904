-- multi_refresh.lua: set a new time to live on every lock of a multi-key
-- holding, if the caller still holds them all.
--
-- KEYS[1..4n]  as in multi_acquire.lua: the lock keys, their fence keys,
--              their release markers, their holding keys
-- ARGV[1]      the caller's token
-- ARGV[2]      the new time to live, in milliseconds
-- ARGV[3]      optional (Lock.ReleaseAfter, which ends the holding here
--              and keeps it in Redis for ARGV[2]): the call's number among
--              the releases of this holding, recorded in the markers
-- ARGV[4]      with ARGV[3]: how long the markers live, in milliseconds
--
-- Returns 1 when every lock was ours and now expires in ARGV[2] ms (with
-- ARGV[3]: by this call, or by an earlier copy of it), 2 when a release of
-- this holding ended it (see multi_release.lua's markers), 0 when some lock
-- was not ours (expired, taken, deleted, another type): the holding is
-- lost, and the locks that were still ours are deleted here, so that they
-- hold nobody up until they expire.
--
-- A refresh sent twice sets the same ttl twice: still a refresh. A
-- ReleaseAfter sent twice must not keep the locks longer than asked: its
-- copies find its markers, and change nothing.
local n = #KEYS / 4
if ARGV[3] and redis.pcall('GET', KEYS[2 * n + 1]) == ARGV[3] then
  return 1
end
local held = 0
for i = 1, n do
  if redis.pcall('GET', KEYS[i]) == ARGV[1] then
    held = held + 1
  end
end
if held == n then
  for i = 1, n do
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
    redis.call('PEXPIRE', KEYS[n + i], ARGV[2])
    redis.call('PEXPIRE', KEYS[3 * n + i], ARGV[2])
    if ARGV[3] then
      redis.call('SET', KEYS[2 * n + i], ARGV[3], 'PX', ARGV[4])
    end
  end
  return 1
end
if held == 0 then
  for i = 2 * n + 1, 3 * n do
    if type(redis.pcall('GET', KEYS[i])) == 'string' then
      return 2
    end
  end
  return 0
end
for i = 1, n do
  if redis.pcall('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i], KEYS[3 * n + i])
    redis.pcall('PUBLISH', KEYS[n + i], '')
    redis.pcall('PUBLISH', 'dlock:watch' .. string.sub(KEYS[n + i], 12), '')
  end
end
return 0
