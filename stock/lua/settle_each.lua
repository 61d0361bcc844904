-- settle_each.lua: the Commits and Cancels of several orders on one sku
-- (each.lua).
--
-- ARGV[2…] two per order: the order, and "sold" to commit or "cancelled" to
--          cancel
--
-- Each reply is what settle.lua would have replied to the order alone.
local n, now, s, records = each_begin(2)
if not n then
  return now
end
local replies, holds, written = {}, {}, {}
local last = {} -- order -> the record this script gave it
for j = 1, n do
  local b = 2 * j
  local order, outcome = ARGV[b], ARGV[b + 1]
  local state, qty = parse(last[order] or records[j])
  if state == 'held' then
    s.held = s.held - tonumber(qty)
    if outcome == 'sold' then
      s.sold = s.sold + tonumber(qty)
    else
      s.available = s.available + tonumber(qty)
    end
    last[order] = outcome .. ':' .. qty
    holds[#holds + 1], holds[#holds + 2] = now + RETENTION, order
    written[#written + 1], written[#written + 2] = order, last[order]
    replies[j] = {DONE, 0, 1}
  elseif state == outcome then
    replies[j] = {UNCHANGED, 0}
  else
    replies[j] = {NO_RESERVATION, 0, STATE[state] or 0}
  end
end
return each_write(n, s, holds, written, replies)
