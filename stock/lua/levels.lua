-- levels.lua: how many units of a sku are available, held and sold, once its
-- expired holds are back in stock.
--
-- KEYS     the three keys of one sku (see prelude.lua)
--
-- Returns {DONE, 0, available, held, sold}
--         {UNKNOWN, 0}  the sku was never set
-- and the replies of begin (prelude.lua).
local now, skus = begin(nil)
if not now then
  return skus
end
local s = skus[0]
if not s.known then
  return {UNKNOWN, 0}
end
return {DONE, 0, s.available, s.held, s.sold}
