-- set.lua: set the units of a sku available to reserve; holds keep theirs.
--
-- KEYS     the four keys of one sku (see prelude.lua)
-- ARGV[2]  the quantity, a decimal string
--
-- Returns {DONE, 0} and the replies of begin (prelude.lua).
local now, reply = begin()
if not now then
  return reply
end
local level = sku_keys(0)
redis.call('HSET', level, 'available', ARGV[2])
redis.call('HSETNX', level, 'held', 0)
redis.call('HSETNX', level, 'sold', 0)
return {DONE, 0}
