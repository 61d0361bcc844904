-- add.lua: add units to a sku's available stock, or take them away.
--
-- KEYS     the three keys of one sku (see prelude.lua)
-- ARGV[2]  the change, a decimal string, negative to take away
-- ARGV[3]  the largest quantity allowed, available plus held
--
-- Returns {DONE, 0}
--         {UNKNOWN, 0}            the sku was never set
--         {SOLD_OUT, 0, avail}    fewer than -change units are available
--         {TOO_MANY, 0, avail}    available plus held would pass ARGV[3]
-- and the replies of begin (prelude.lua). Nothing changes unless DONE.
local now, skus = begin(nil)
if not now then
  return skus
end
local s = skus[0]
if not s.known then
  return {UNKNOWN, 0}
end
local after = s.available + tonumber(ARGV[2])
if after < 0 then
  return {SOLD_OUT, 0, s.available}
end
if after + s.held > tonumber(ARGV[3]) then
  return {TOO_MANY, 0, s.available}
end
s.available = after
put(0, s)
return {DONE, 0}
