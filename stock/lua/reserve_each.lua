-- reserve_each.lua: the Reserves of several orders on one sku (each.lua).
--
-- ARGV[2…] three per order: the order, how long its hold lasts (ms), the
--          quantity, as decimal strings
--
-- Each reply is what reserve.lua would have replied to the order alone.
local n, now, s, records = each_begin(3)
if not n then
  return now
end
local replies, holds, written = {}, {}, {}
local last = {} -- order -> the record this script gave it
for j = 1, n do
  local b = 3 * j - 1
  local order, qty = ARGV[b], ARGV[b + 2]
  local state, had = parse(last[order] or records[j])
  if state == 'held' or state == 'sold' then
    if had ~= qty then
      replies[j] = {CONFLICT, 0, tonumber(had)}
    else
      replies[j] = {UNCHANGED, 0}
    end
  elseif s.available < tonumber(qty) then
    replies[j] = {SOLD_OUT, 0, s.available}
  else
    s.available, s.held = s.available - tonumber(qty), s.held + tonumber(qty)
    last[order] = 'held:' .. qty
    holds[#holds + 1], holds[#holds + 2] = now + tonumber(ARGV[b + 1]), order
    written[#written + 1], written[#written + 2] = order, last[order]
    replies[j] = {DONE, 0, 1}
  end
end
return each_write(n, s, holds, written, replies)
