-- unclaim: clear the fill claim of a caller that found the entry after it
-- claimed its fill, so that the next miss does not wait for this one.
--
-- KEYS[1]: the entry's fill claim (see read.lua)
-- ARGV[1]: the caller's token
--
-- Returns 1 when the claim was the caller's and is cleared, else 0.
--
-- A copy that go-redis resends (a reply that did not come in time is asked
-- for again on another connection, and every copy runs) finds the claim
-- cleared, or another caller's, and changes nothing: a token claims a fill
-- for one fetch, which clears it last. It answers 0 where the first copy
-- answered 1; the caller reads no answer but an error.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
