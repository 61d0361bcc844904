-- reserve.lua: hold units of one or more skus for an order, all or nothing.
--
-- KEYS     four per sku (see prelude.lua)
-- ARGV[2]  the order
-- ARGV[3]  how long the hold lasts, in ms
-- ARGV[4…] the quantity of each sku, in the order of KEYS, as decimal strings
--
-- Returns {DONE, 0, n}          n skus held anew (the others were held already)
--         {UNCHANGED, 0}        the order held (or bought) every quantity already:
--                               a retried call, which must not hold twice
--         {UNKNOWN, i}          sku i was never set
--         {SOLD_OUT, i, avail}  sku i has only avail units
--         {CONFLICT, i, qty}    the order holds (or bought) qty units of sku i, another quantity
-- and the replies of begin (prelude.lua). Nothing changes unless DONE.
--
-- An order whose hold on a sku was cancelled or expired may reserve it again.
local now, reply = begin()
if not now then
  return reply
end
local order = ARGV[2]
local fresh = {}
for i = 0, SKUS - 1 do
  local level, orders = sku_keys(i)
  local qty = ARGV[4 + i]
  local available = redis.call('HGET', level, 'available')
  if not available then
    return {UNKNOWN, i}
  end
  local state, had = parse(redis.call('HGET', orders, order))
  if state == 'held' or state == 'sold' then
    if had ~= qty then
      return {CONFLICT, i, tonumber(had)}
    end
  elseif tonumber(available) < tonumber(qty) then
    return {SOLD_OUT, i, tonumber(available)}
  else
    fresh[#fresh + 1] = i
  end
end
if #fresh == 0 then
  return {UNCHANGED, 0}
end
local deadline = now + tonumber(ARGV[3])
for _, i in ipairs(fresh) do
  local level, orders, holds, ended = sku_keys(i)
  local qty = ARGV[4 + i]
  redis.call('HINCRBY', level, 'available', '-' .. qty)
  redis.call('HINCRBY', level, 'held', qty)
  redis.call('HSET', orders, order, 'held:' .. qty)
  redis.call('ZADD', holds, deadline, order)
  redis.call('ZREM', ended, order)
end
return {DONE, 0, #fresh}
