-- each.lua: what reserve_each.lua and settle_each.lua share (scripts.go puts
-- it after prelude.lua in front of each). Each makes the calls of several
-- orders on one sku, one after the other in the order given, as the batch of
-- an Inventory's concurrent calls of one sku (merge.go): one script, one look
-- at the sku and one write of it, instead of one script each.
--
-- KEYS     the three of one sku (see prelude.lua), then the record of each
--          call, in the order of the calls
-- ARGV[4…] the calls, the same number of values each, the order first
--
-- They return a list with one reply per call, in the order given: the reply
-- the script for one call would have given it, run after the calls before
-- it. A call that a copy of this run made already gets the reply it got
-- then, and is not made again (recall). When the script cannot begin (a key
-- of another type, AGAIN, the sku never set), or its first write meets a
-- key of another type, every other call gets that reply, and nothing
-- changes.

-- fill gives reply r to every call of the n that has none yet.
local function fill(replies, n, r)
  for j = 1, n do
    replies[j] = replies[j] or r
  end
  return replies
end

-- each_run reads the sku (settling the orders due, as begin does) and the
-- records of the calls' orders, makes the calls, then writes what they did
-- and returns their replies. width is how many ARGV each call takes.
--
-- decide makes one call: decide(s, now, b, state, qty) gets the sku's state
-- s (which it changes as the call does), the server time, the index in ARGV
-- of the call's first value (its order), and the state and quantity of the
-- order's record (as parse gives them), as the calls before it left it. It
-- returns the call's reply; and for a call that changes the order, its new
-- record and its new score in the sku's holds.
local function each_run(width, decide)
  local n = (#ARGV - 3) / width
  local replies, made = {}, {}
  local left = n
  for j = 1, n do
    replies[j] = recall(3 + j)
    if replies[j] then
      left = left - 1
    end
  end
  if left == 0 then
    return replies
  end
  local now, skus = begin(nil)
  if not now then
    return fill(replies, n, skus)
  end
  local s = skus[0]
  if not s.known then
    return fill(replies, n, {UNKNOWN, 0})
  end
  local _, orders, holds_key = sku_keys(0)
  local names = {}
  for j = 1, n do
    names[j] = ARGV[4 + width * (j - 1)]
  end
  local records = redis.call('HMGET', orders, unpack(names)) -- begin read its type

  local fresh, holds, written = {}, {}, {}
  local last = {} -- order -> the record a call before gave it
  for j = 1, n do
    if not replies[j] then
      local order = names[j]
      local state, qty = parse(last[order] or records[j])
      local reply, record, score = decide(s, now, 4 + width * (j - 1), state, qty)
      replies[j], made[j] = reply, true
      if record then
        fresh[#fresh + 1] = j
        last[order] = record
        holds[#holds + 1], holds[#holds + 2] = score, order
        written[#written + 1], written[#written + 2] = order, record
        if score < s.due then
          s.due = score
        end
      end
    end
  end
  if #holds == 0 then
    return replies
  end
  -- The first write, to the one key begin may not have read (see add_hold).
  local _, bad = checked(3, 'ZADD', holds_key, unpack(holds))
  if bad then
    for j = 1, n do
      if made[j] then
        replies[j] = bad
      end
    end
    return replies
  end
  put(0, s)
  redis.call('HSET', orders, unpack(written))
  for _, j in ipairs(fresh) do
    remember(3 + j, replies[j])
  end
  return replies
end
