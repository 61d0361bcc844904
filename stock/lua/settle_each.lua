-- settle_each.lua: the Commits and Cancels of several orders on one sku
-- (each.lua).
--
-- ARGV[4…] two per order: the order, and "sold" to commit or "cancelled" to
--          cancel
--
-- Each reply is what settle.lua would have replied to the order alone.
return each_run(2, function(s, now, b, state, qty)
  local outcome = ARGV[b + 1]
  if state == 'held' then
    settle_units(s, outcome, tonumber(qty))
    return {DONE, 0, 1}, outcome .. ':' .. qty, now + RETENTION
  end
  if state == outcome then
    return {UNCHANGED, 0}
  end
  return {NO_RESERVATION, 0, STATE[state] or 0}
end)
