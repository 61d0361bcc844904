-- reserve.lua: hold units of one or more skus for an order, all or nothing.
--
-- KEYS     three per sku (see prelude.lua), then the call's record
-- ARGV[4]  the order
-- ARGV[5]  how long the hold lasts, in ms
-- ARGV[6…] the quantity of each sku, in the order of KEYS, as decimal strings
--
-- Returns {DONE, 0, n}          n skus held anew (the others were held already)
--         {UNCHANGED, 0}        the order held (or bought) every quantity already:
--                               a retried call, which must not hold twice
--         {UNKNOWN, i}          sku i was never set
--         {SOLD_OUT, i, avail}  sku i has only avail units
--         {CONFLICT, i, qty}    the order holds (or bought) qty units of sku i, another quantity
-- and the replies of begin and add_hold (prelude.lua). Nothing changes unless
-- DONE; a copy of a call that was DONE replies the same and changes nothing
-- (recall), even if the order's hold has ended since.
--
-- An order whose hold on a sku was cancelled or expired may reserve it again.
local done = recall(RECORD)
if done then
  return done
end
local order = ARGV[4]
local now, skus = begin(order)
if not now then
  return skus
end
local fresh = {}
for i = 0, SKUS - 1 do
  local s, qty = skus[i], ARGV[6 + i]
  if not s.known then
    return {UNKNOWN, i}
  end
  local state, had = parse(s.record)
  if state == 'held' or state == 'sold' then
    if had ~= qty then
      return {CONFLICT, i, tonumber(had)}
    end
  elseif s.available < tonumber(qty) then
    return {SOLD_OUT, i, s.available}
  else
    fresh[#fresh + 1] = i
  end
end
if #fresh == 0 then
  return {UNCHANGED, 0}
end
local deadline = now + tonumber(ARGV[5])
for _, i in ipairs(fresh) do
  local s, qty = skus[i], ARGV[6 + i]
  local _, orders = sku_keys(i)
  local bad = add_hold(i, s, order, deadline)
  if bad then
    return bad -- only ever for the first sku: a cart's holds were read
  end
  s.available, s.held = s.available - tonumber(qty), s.held + tonumber(qty)
  put(i, s)
  redis.call('HSET', orders, order, 'held:' .. qty)
end
return remember(RECORD, {DONE, 0, #fresh})
