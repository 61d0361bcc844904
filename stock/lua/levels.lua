-- levels.lua: how many units of a sku are available, held and sold, once its
-- expired holds are back in stock.
--
-- KEYS     the four keys of one sku (see prelude.lua)
--
-- Returns {DONE, 0, available, held, sold}
--         {UNKNOWN, 0}  the sku was never set
-- and the replies of begin (prelude.lua).
local now, reply = begin()
if not now then
  return reply
end
local level = sku_keys(0)
local v = redis.call('HMGET', level, 'available', 'held', 'sold')
if not v[1] then
  return {UNKNOWN, 0}
end
return {DONE, 0, tonumber(v[1]), tonumber(v[2] or 0), tonumber(v[3] or 0)}
