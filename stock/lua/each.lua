-- each.lua: what reserve_each.lua and settle_each.lua share (scripts.go puts
-- it after prelude.lua in front of each). Each makes the calls of several
-- orders on one sku, one after the other in the order given, as the batch of
-- an Inventory's concurrent calls of one sku (merge.go): one script, one look
-- at the sku and one write of it, instead of one script each.
--
-- KEYS     the three of one sku (see prelude.lua)
-- ARGV[2…] the calls, WIDTH values each, the order first
--
-- They return a list with one reply per call, in the order given: the reply
-- the script for one call would have given it, run after the calls before
-- it. When the script cannot begin (a key of another type, AGAIN, the sku
-- never set), or its first write meets a key of another type, every call
-- gets that reply, and nothing changes.

-- every returns a list of n replies r.
local function every(n, r)
  local replies = {}
  for j = 1, n do
    replies[j] = r
  end
  return replies
end

-- each_begin reads the sku (settling the orders due, as begin does) and the
-- record of each call's order. It returns the number of calls, the server
-- time, the sku's state and the orders' records (false for none); or nil and
-- the replies to return at once.
local function each_begin(width)
  local n = (#ARGV - 1) / width
  local now, skus = begin(nil)
  if not now then
    return nil, every(n, skus)
  end
  local s = skus[0]
  if not s.known then
    return nil, every(n, {UNKNOWN, 0})
  end
  local names = {}
  for j = 1, n do
    names[j] = ARGV[2 + width * (j - 1)]
  end
  local _, orders = sku_keys(0)
  return n, now, s, redis.call('HMGET', orders, unpack(names)) -- begin read its type
end

-- each_write writes what the calls did: holds, the scores of orders in the
-- sku's holds (score, order, ...), whose earliest may bring the sku's due
-- forward; records, the orders' new records (order, record, ...); and the
-- sku's level from s. It returns replies, or every reply a key of another
-- type, when the holds are one: their ZADD is the first write.
local function each_write(n, s, holds, records, replies)
  if #holds == 0 then
    return replies
  end
  local _, orders, holds_key = sku_keys(0)
  local _, bad = checked(3, 'ZADD', holds_key, unpack(holds))
  if bad then
    return every(n, bad)
  end
  for j = 1, #holds, 2 do
    if holds[j] < s.due then
      s.due = holds[j]
    end
  end
  put(0, s)
  redis.call('HSET', orders, unpack(records))
  return replies
end
