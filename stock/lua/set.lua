-- set.lua: set the units of a sku available to reserve; holds keep theirs.
--
-- KEYS     the three keys of one sku (see prelude.lua), then the call's record
-- ARGV[4]  the quantity, a decimal string
-- ARGV[5]  the largest quantity allowed, available plus held
--
-- Returns {DONE, 0}
--         {TOO_MANY, 0, avail}  the quantity plus the units held would pass ARGV[5]
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
if tonumber(ARGV[4]) + s.held > tonumber(ARGV[5]) then
  return {TOO_MANY, 0, s.available}
end
s.available = tonumber(ARGV[4])
put(0, s)
return remember(RECORD, {DONE, 0})
