-- settle.lua: end an order's holds on one or more skus, all or nothing:
-- commit them (the units are sold) or cancel them (the units go back).
--
-- KEYS     four per sku (see prelude.lua)
-- ARGV[2]  the order
-- ARGV[3]  "sold" to commit, "cancelled" to cancel
--
-- Returns {DONE, 0, n}               n holds settled (the others were already)
--         {UNCHANGED, 0}             every sku was settled so already: a retried call
--         {UNKNOWN, i}               sku i was never set
--         {NO_RESERVATION, i, state} the order holds nothing on sku i: state says
--                                    why (prelude.lua's STATE, 0 for never
--                                    reserved or forgotten)
-- and the replies of begin (prelude.lua). Nothing changes unless DONE.
local now, reply = begin()
if not now then
  return reply
end
local order, outcome = ARGV[2], ARGV[3]
local held = {}
for i = 0, SKUS - 1 do
  local level, orders = sku_keys(i)
  if redis.call('HEXISTS', level, 'available') == 0 then
    return {UNKNOWN, i}
  end
  local state, qty = parse(redis.call('HGET', orders, order))
  if state == 'held' then
    held[#held + 1] = {i, qty}
  elseif state ~= outcome then
    return {NO_RESERVATION, i, STATE[state] or 0}
  end
end
if #held == 0 then
  return {UNCHANGED, 0}
end
local to = 'available'
if outcome == 'sold' then
  to = 'sold'
end
for _, h in ipairs(held) do
  local level, orders, holds, ended = sku_keys(h[1])
  local qty = h[2]
  redis.call('HINCRBY', level, 'held', '-' .. qty)
  redis.call('HINCRBY', level, to, qty)
  redis.call('HSET', orders, order, outcome .. ':' .. qty)
  redis.call('ZREM', holds, order)
  redis.call('ZADD', ended, now + RETENTION, order)
end
return {DONE, 0, #held}
