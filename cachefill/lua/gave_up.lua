-- gave_up: tell the callers that wait for a fill that its loader stored
-- nothing (it released its lock already), and clear the fill's claim, so
-- that they elect the next loader at once.
--
-- KEYS[1]: the entry's fill claim (see read.lua)
-- KEYS[2]: the entry's fills (see read.lua)
-- KEYS[3]: the record of the last loader that gave up: its lock token
-- ARGV[1]: the loader's lock token
-- ARGV[2]: how long the fill message, and the record, live, in ms
--
-- One message per call, whatever the client resends: go-redis sends a
-- command whose reply did not come in time again, on another connection,
-- and every copy runs. A copy that finds the loader's token in the record
-- changes nothing: it would clear the claim of the next loader, elected
-- since, and tell the waiters that it gave up.
--
-- Returns 1 when it told the waiters, 0 for a copy of a call that did.
if redis.call('GET', KEYS[3]) == ARGV[1] then
  return 0
end
redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2])
redis.call('DEL', KEYS[1])
redis.pcall('XADD', KEYS[2], 'MAXLEN', 1, '*', 'r', '0')
redis.pcall('PEXPIRE', KEYS[2], ARGV[2])
return 1
