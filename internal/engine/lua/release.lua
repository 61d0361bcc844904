-- release.lua: delete the lock if, and only if, the caller still holds it,
-- and pass it on if someone waits for it (its value is marked so, see
-- holder.lua): hand it over to the first fair waiter of its queue, or wake
-- the first barging one (see queue_acquire.lua), and tell those that watch
-- the lock (WaitRelease, ObtainMulti) on the watch channel. A lock nobody
-- waits for costs three commands: GET, DEL, and the SET of the release
-- marker. (On a Redlock node, which has no queue and whose lock is a token
-- alone, the lock's channel and the watch channel are told.) A waiter
-- giving up also leaves the queue with it.
--
-- KEYS[1]  the lock key
-- KEYS[2]  the fence key, whose name is also the lock's release channel
-- KEYS[3]  the queue (see queue_acquire.lua); absent for a Redlock node,
-- KEYS[4]  the leases                          which has no queue
-- KEYS[5]  the waiters' guard key (WithGuard), if any: while it exists the
--          lock is passed on to nobody; with ARGV[9], the key to store at
-- KEYS[#KEYS] (the last) the release marker of the holding (see below)
-- ARGV[1]  the caller's token
-- ARGV[2]  '' to release; 'quiet' to release and tell nobody (a Redlock
--          attempt that failed takes back the nodes that granted it:
--          nobody waits for those alone); 'leave': the caller is a waiter
--          giving up, which leaves the queue, releases the lock if it got it
--          after all, and passes the lock on if it is free
-- ARGV[3]  with 'leave': the caller's ttl, which names it in the queue
-- ARGV[4]  the longest a lock handed over is set for, in milliseconds (a
--          waiter that died since it last renewed its lease holds the
--          others up no longer than that); also how long a woken waiter
--          keeps its place if it does not try
-- ARGV[5]  with 'leave': the caller's channel, which also names it in the
--          queue; '' or absent if it gave none
-- ARGV[6]  '1' when PUBLISH counts every Client listening on a waiter's
--          channel (not in a Cluster, where it counts one node's): a
--          waiter whose channel nobody hears is then passed over at once
-- ARGV[7]  the call's number among the releases of this holding ('0' for
--          the take-back of an acquire), which the release marker records
-- ARGV[8]  how long the release marker lives, in milliseconds: longer than
--          the Redis client goes on sending copies of one command
-- ARGV[9]  optional (Lock.ReleaseStoring): a value to store at KEYS[5]
-- ARGV[10] its time to live, in milliseconds
--
-- Returns 1 when the lock was the caller's and is now deleted (by this call,
-- or by an earlier copy of it), 2 when another release of the same holding
-- deleted it (nothing was done), 0 otherwise.
--
-- Every copy of a call answers as the first did. go-redis sends a command
-- again when its reply is late, and every copy runs: a copy that comes
-- after the first deleted the lock, or handed it over to a waiter, or after
-- another client took it, must not say "not held". So the release leaves a
-- marker, dlock:freed<the fence key's rest>:<token> (the last of KEYS), in
-- the lock's Cluster slot, holding ARGV[7], for ARGV[8] milliseconds: a copy that finds the
-- lock not the caller's looks for it. The marker is the only write a
-- release adds; the acquire adds none (acquire.lua knows its own token).
--
-- A fair waiter at the head gets the lock at once, since now, for its own
-- ttl but no longer than ARGV[4] (marked as waited for if others wait
-- behind it), and the message "token:since" tells it so: on the waiter's
-- own channel if it gave one, so that no other waiter wakes for nothing,
-- else on the lock's. A waiter
-- whose ttl is no longer than that needs no further round trip; the others
-- extend the lock to their ttl with queue_acquire.lua, which finds it
-- theirs. A barging waiter at the head gets the message "token": it tries
-- again, as anyone may (a newcomer can be first), and keeps its place for
-- ARGV[4] unless it does. So a release wakes one waiter, not all of them.
-- Either way, a message on the lock's watch channel tells those that watch
-- the lock without waiting for it (Client.WaitRelease): its name is the
-- fence key's with "watch" for "fence" (see keys.go).
--
-- Every PUBLISH goes through pcall: a user whose ACL forbids the channels
-- (no &dlock:*) still releases, and says so; its waiters, which cannot
-- subscribe either, find the lock free at their next try.
local watch = watch_channel()
local freed = KEYS[#KEYS]
local n = #KEYS - 1 -- the keys before the marker
local released = 0
local value = redis.pcall('GET', KEYS[1])
local told = true -- someone may wait: tell them
if holds(value, ARGV[1]) then
  -- nobody waits for "token:since": a token alone, or one marked ":w",
  -- tells whoever may listen
  told = value == ARGV[1] or string.byte(value, -1) == 119 -- 'w'
  redis.call('DEL', KEYS[1])
  redis.call('SET', freed, ARGV[7], 'PX', ARGV[8])
  released = 1
  if ARGV[9] then
    -- Lock.ReleaseStoring: the work is done; every waiter, whose guard
    -- (WithGuard) this is, finds it at its next try: wake them all.
    redis.call('SET', KEYS[5], ARGV[9], 'PX', ARGV[10])
    redis.pcall('PUBLISH', KEYS[2], '')
    redis.pcall('PUBLISH', watch, '')
    return 1
  end
else
  -- Released already? By this call (a copy that ran first, and passed the
  -- lock on), or by another release of this holding.
  local reply
  reply, released = marked(freed, ARGV[7], ARGV[2] == 'leave')
  if reply then
    return reply
  end
end
if n < 4 then
  if released == 1 and ARGV[2] ~= 'quiet' and told then
    redis.pcall('PUBLISH', KEYS[2], '')
    redis.pcall('PUBLISH', watch, '') -- an ACL may forbid it: WaitRelease then waits for the ttl
  end
  return released
end
if ARGV[2] == 'leave' then
  local me = ARGV[1] .. ':' .. ARGV[3]
  if ARGV[5] and ARGV[5] ~= '' then
    me = me .. ':' .. ARGV[5]
  end
  redis.call('ZREM', KEYS[3], me, '*' .. me)
  redis.call('ZREM', KEYS[4], me, '*' .. me)
  if redis.call('EXISTS', KEYS[1]) == 1 then
    return released -- held by another: its release passes the lock on
  end
elseif released == 0 then
  return 0
elseif ARGV[2] == 'quiet' or not told then
  return 1
end

if n >= 5 and redis.call('EXISTS', KEYS[5]) == 1 then
  -- The waiters' guard (WithGuard) exists: the work is done, and the lock
  -- goes to nobody. Every waiter finds the guard at its next try.
  redis.pcall('PUBLISH', KEYS[2], '')
  redis.pcall('PUBLISH', watch, '')
  return released
end
local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
-- Nobody queued: on one deployment every waiter that listens for release
-- messages is in the queue (it joins with the try after it subscribes), so
-- the lock's channel has nobody to tell; those that watch hear the watch
-- channel.
local queued = head ~= nil
local t, now_ms
if head then -- nobody waits, mostly: no need for the time
  t = redis.call('TIME')
  now_ms = t[1] * 1000 + math.floor(t[2] / 1000)
end
local cap = tonumber(ARGV[4])
local counted = ARGV[6] == '1'
for _ = 1, 100 do
  if not head then
    break
  end
  local lease = tonumber(redis.call('ZSCORE', KEYS[4], head))
  local barging = string.sub(head, 1, 1) == '*'
  local token, ttl, channel = string.match(head, '^%*?([^:]*):(%d+):?(.*)$')
  if token and lease and lease > now_ms then
    local since
    local message = token
    if not barging then
      since = string.format('%d', t[1] * 1000000 + t[2])
      message = token .. ':' .. since
    end
    local heard = tell(channel, message)
    if not (counted and heard == 0) then
      if barging then
        -- Its turn to try: it keeps its place only as long as a handoff
        -- would hold the lock for it, unless it tries.
        redis.call('ZADD', KEYS[4], 'LT', now_ms + cap, head)
      else
        ttl = math.min(tonumber(ttl), cap)
        redis.call('ZREM', KEYS[3], head)
        redis.call('ZREM', KEYS[4], head)
        if redis.call('EXISTS', KEYS[3]) == 1 then
          message = message .. ':w' -- others wait behind it
        end
        redis.call('SET', KEYS[1], message, 'PX', ttl)
      end
      redis.pcall('PUBLISH', watch, '') -- an ACL may forbid it: WaitRelease then waits for the ttl
      return released
    end
  end
  -- gone: its lease ran out, or no Client listens on its channel any more
  redis.call('ZREM', KEYS[3], head)
  redis.call('ZREM', KEYS[4], head)
  head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
end
if queued then
  -- every waiter of the queue was gone: one that lost its place may listen
  redis.pcall('PUBLISH', KEYS[2], '')
end
redis.pcall('PUBLISH', watch, '') -- an ACL may forbid it: WaitRelease then waits for the ttl
return released
