-- set.lua: set the units of a sku available to reserve; holds keep theirs.
--
-- KEYS     the three keys of one sku (see prelude.lua)
-- ARGV[2]  the quantity, a decimal string
-- ARGV[3]  the largest quantity allowed, available plus held
--
-- Returns {DONE, 0}
--         {TOO_MANY, 0, avail}  the quantity plus the units held would pass ARGV[3]
-- and the replies of begin (prelude.lua). Nothing changes unless DONE.
local now, skus = begin(nil)
if not now then
  return skus
end
local s = skus[0]
if tonumber(ARGV[2]) + s.held > tonumber(ARGV[3]) then
  return {TOO_MANY, 0, s.available}
end
s.available = tonumber(ARGV[2])
put(0, s)
return {DONE, 0}
