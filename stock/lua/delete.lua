-- delete.lua: forget a sku: its level, its orders and its holds.
--
-- KEYS     the three keys of one sku (see prelude.lua), then the call's record
--
-- Returns {DONE, 0}. A copy of a call that was DONE replies DONE and
-- changes nothing (recall): it does not delete the sku set again since.
local done = recall(RECORD)
if done then
  return done
end
redis.call('DEL', sku_keys(0))
return remember(RECORD, {DONE, 0})
