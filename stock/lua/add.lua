-- add.lua: add units to a sku's available stock, or take them away.
--
-- KEYS     the four keys of one sku (see prelude.lua)
-- ARGV[2]  the change, a decimal string, negative to take away
-- ARGV[3]  the largest quantity allowed, available plus held
--
-- Returns {DONE, 0}
--         {UNKNOWN, 0}            the sku was never set
--         {SOLD_OUT, 0, avail}    fewer than -change units are available
--         {TOO_MANY, 0, avail}    available plus held would pass ARGV[3]
-- and the replies of begin (prelude.lua). Nothing changes unless DONE.
local now, reply = begin()
if not now then
  return reply
end
local level = sku_keys(0)
local v = redis.call('HMGET', level, 'available', 'held')
if not v[1] then
  return {UNKNOWN, 0}
end
local available = tonumber(v[1])
local after = available + tonumber(ARGV[2])
if after < 0 then
  return {SOLD_OUT, 0, available}
end
if after + tonumber(v[2] or 0) > tonumber(ARGV[3]) then
  return {TOO_MANY, 0, available}
end
redis.call('HINCRBY', level, 'available', ARGV[2])
return {DONE, 0}
