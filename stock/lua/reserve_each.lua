-- reserve_each.lua: the Reserves of several orders on one sku (each.lua).
--
-- ARGV[4…] three per order: the order, how long its hold lasts (ms), the
--          quantity, as decimal strings
--
-- Each reply is what reserve.lua would have replied to the order alone.
return each_run(3, function(s, now, b, state, had)
  local qty = ARGV[b + 2]
  if state == 'held' or state == 'sold' then
    if had ~= qty then
      return {CONFLICT, 0, tonumber(had)}
    end
    return {UNCHANGED, 0}
  end
  if s.available < tonumber(qty) then
    return {SOLD_OUT, 0, s.available}
  end
  s.available, s.held = s.available - tonumber(qty), s.held + tonumber(qty)
  return {DONE, 0, 1}, 'held:' .. qty, now + tonumber(ARGV[b + 1])
end)
