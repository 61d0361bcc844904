-- settle.lua: end an order's holds on one or more skus, all or nothing:
-- commit them (the units are sold) or cancel them (the units go back).
--
-- KEYS     three per sku (see prelude.lua), then the call's record
-- ARGV[4]  the order
-- ARGV[5]  "sold" to commit, "cancelled" to cancel
--
-- Returns {DONE, 0, n}               n holds settled (the others were already)
--         {UNCHANGED, 0}             every sku was settled so already: a retried call
--         {UNKNOWN, i}               sku i was never set
--         {NO_RESERVATION, i, state} the order holds nothing on sku i: state says
--                                    why (prelude.lua's STATE, 0 for never
--                                    reserved or forgotten)
-- and the replies of begin and add_hold (prelude.lua). Nothing changes unless
-- DONE; a copy of a call that was DONE replies the same and changes nothing
-- (recall), even if the order reserved the sku again since.
local done = recall(RECORD)
if done then
  return done
end
local order, outcome = ARGV[4], ARGV[5]
local now, skus = begin(order)
if not now then
  return skus
end
local held = {}
for i = 0, SKUS - 1 do
  local s = skus[i]
  if not s.known then
    return {UNKNOWN, i}
  end
  local state, qty = parse(s.record)
  if state == 'held' then
    held[#held + 1] = {i, qty}
  elseif state ~= outcome then
    return {NO_RESERVATION, i, STATE[state] or 0}
  end
end
if #held == 0 then
  return {UNCHANGED, 0}
end
for _, h in ipairs(held) do
  local i, qty = h[1], h[2]
  local s = skus[i]
  local _, orders = sku_keys(i)
  local bad = add_hold(i, s, order, now + RETENTION)
  if bad then
    return bad -- only ever for the first sku: a cart's holds were read
  end
  settle_units(s, outcome, tonumber(qty))
  put(i, s)
  redis.call('HSET', orders, order, outcome .. ':' .. qty)
end
return remember(RECORD, {DONE, 0, #held})
