-- add.lua: add units to a sku's available stock, or take them away.
--
-- KEYS     the three keys of one sku (see prelude.lua), then the call's record
-- ARGV[4]  the change, a decimal string, negative to take away
-- ARGV[5]  the largest quantity allowed, available plus held
--
-- Returns {DONE, 0}
--         {UNKNOWN, 0}            the sku was never set
--         {SOLD_OUT, 0, avail}    fewer than -change units are available
--         {TOO_MANY, 0, avail}    available plus held would pass ARGV[5]
-- and the replies of begin (prelude.lua). Nothing changes unless DONE; a
-- copy of a call that was DONE replies DONE and changes nothing (recall).
local done = recall(RECORD)
if done then
  return done
end
local now, skus = begin(nil)
if not now then
  return skus
end
local s = skus[0]
if not s.known then
  return {UNKNOWN, 0}
end
local after = s.available + tonumber(ARGV[4])
if after < 0 then
  return {SOLD_OUT, 0, s.available}
end
if after + s.held > tonumber(ARGV[5]) then
  return {TOO_MANY, 0, s.available}
end
s.available = after
put(0, s)
return remember(RECORD, {DONE, 0})
