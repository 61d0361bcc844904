-- prelude.lua: the part every stock script starts with (scripts.go puts it
-- in front of each). It defines locals only: Redis forbids globals.
--
-- Every script works on one or more skus, three KEYS each, in this order:
--   level   hash: available, held, sold (units); it exists once the sku is set;
--           and due (ms of server time): no score in holds is earlier, so
--           that a call before it need not look for orders due (missing:
--           not known, look; NEVER: holds is empty)
--   orders  hash: order -> "held:<qty>", "sold:<qty>", "cancelled:<qty>" or "expired:<qty>"
--   holds   zset: order -> for a held order the deadline of its hold, for the
--           others when their outcome is forgotten; in ms of server time
-- A script that may change anything takes after the skus' KEYS the key of
-- the record of each call it makes (see recall).
--
-- ARGV[1] is how long outcomes are remembered, in ms; ARGV[2] how long a
-- call's record is kept, in ms (the resend window); ARGV[3] the number of
-- skus. The rest is the script's.
--
-- Replies are {code, item, values...}, where item is the 0-based index of the
-- sku the code is about. The codes:
local DONE = 0           -- done as asked
local UNCHANGED = 1      -- already so: nothing to do
local AGAIN = 2          -- more is due than one call does: call again
local UNKNOWN = 3        -- the sku was never set
local SOLD_OUT = 4       -- {SOLD_OUT, item, available}
local NO_RESERVATION = 5 -- {NO_RESERVATION, item, state}, states below
local CONFLICT = 6       -- {CONFLICT, item, qty}: the order holds another quantity
local WRONG_TYPE = 7     -- {WRONG_TYPE, item, key}: KEYS[key] holds another type
local TOO_MANY = 8       -- {TOO_MANY, item, available}: past the largest quantity

-- The states of an order on a sku, as NO_RESERVATION reports them.
local STATE = {held = 1, sold = 2, cancelled = 3, expired = 4} -- none: 0

-- At most this many orders are due per sku and call: expired holds whose
-- units go back to the stock, and outcomes to forget. A call that finds
-- more asks to be called again (AGAIN), having changed nothing else, so
-- that no call keeps Redis busy for long.
local BATCH = 100

-- The due of a sku whose holds are empty: later than any deadline (2^53).
local NEVER = 9007199254740992

local RETENTION = tonumber(ARGV[1])
local WINDOW = ARGV[2]
local SKUS = tonumber(ARGV[3])
-- The index in KEYS of the record of a script's call (of its first call,
-- for a script that makes several).
local RECORD = 3 * SKUS + 1

local function sku_keys(i)
  local b = 3 * i
  return KEYS[b + 1], KEYS[b + 2], KEYS[b + 3]
end

-- parse splits an order's record, "held:3", into "held" and "3".
local function parse(record)
  if not record then
    return nil, nil
  end
  return string.match(record, '^(%a+):(%d+)$')
end

-- int formats a whole number exactly (tostring would round past 14 digits).
local function int(n)
  return string.format('%d', n)
end

-- go-redis sends a command again when its reply is late, and every copy
-- runs. So a call that changes anything records its reply under its own
-- key, KEYS[k], for the resend window, and a later copy finds it there:
-- recall returns it, and the copy replies the same and changes nothing.
-- A call that changed nothing leaves no record: a later copy may do what
-- it asks, once.
local function recall(k)
  local record = redis.call('GET', KEYS[k])
  if not record then
    return nil
  end
  local reply = {}
  for n in string.gmatch(record, '-?%d+') do
    reply[#reply + 1] = tonumber(n)
  end
  return reply
end

-- remember records reply as that of the call whose record is KEYS[k], and
-- returns it.
local function remember(k, reply)
  local parts = {}
  for j, n in ipairs(reply) do
    parts[j] = int(n)
  end
  redis.call('SET', KEYS[k], table.concat(parts, ','), 'PX', WINDOW)
  return reply
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- checked runs a command on KEYS[k] and returns its reply, or nil and the
-- reply for a key of another type. The scripts read each of their keys
-- before they write any, or make their first write the one to a key they
-- did not read, so that a call that meets a key of another type changes
-- nothing.
local function checked(k, ...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r.err then
    if string.find(r.err, 'WRONGTYPE', 1, true) then
      return nil, {WRONG_TYPE, math.floor((k - 1) / 3), k}
    end
    return redis.error_reply(r.err)
  end
  return r
end

-- look reads what a script needs of sku i into s: its level (due 0 when not
-- known), and the record of order unless order is nil. Units stay numbers
-- of whole units.
local function look(i, order, s)
  local level, orders = sku_keys(i)
  local v, bad = checked(3 * i + 1, 'HMGET', level, 'available', 'held', 'sold', 'due')
  if bad then
    return bad
  end
  s.known = v[1] ~= false
  s.available, s.held, s.sold = tonumber(v[1] or 0), tonumber(v[2] or 0), tonumber(v[3] or 0)
  s.due = tonumber(v[4] or 0)
  if order then
    s.record, bad = checked(3 * i + 2, 'HGET', orders, order)
  else
    v, bad = checked(3 * i + 2, 'HLEN', orders)
  end
  return bad
end

-- settle_due handles the orders due of sku i: an expired hold's units go
-- back to the stock, and its outcome is remembered; an outcome past its
-- retention is forgotten. Then it writes the sku's next due.
local function settle_due(i, now, due, s)
  local level, orders, holds = sku_keys(i)
  local back = 0
  for _, order in ipairs(due) do
    local state, qty = parse(redis.call('HGET', orders, order))
    if state == 'held' then
      back = back + tonumber(qty)
      redis.call('HSET', orders, order, 'expired:' .. qty)
      redis.call('ZADD', holds, now + RETENTION, order)
    else
      redis.call('HDEL', orders, order)
      redis.call('ZREM', holds, order)
    end
  end
  local first = redis.call('ZRANGE', holds, 0, 0, 'WITHSCORES')
  s.due = tonumber(first[2] or NEVER)
  if s.known then
    s.available, s.held = s.available + back, s.held - back
    redis.call('HSET', level, 'available', int(s.available), 'held', int(s.held), 'due', int(s.due))
  end
end

-- begin reads every key, then settles the orders due (BATCH per sku at
-- most). It returns the server time in ms and, for each sku (from 0), what
-- look found; or nil and the reply to return at once: a key of another
-- type, or AGAIN when more is due. A lone sku whose due is later than now
-- has nothing due, and its holds are not read: a script adds to them
-- first (add_hold).
local function begin(order)
  local now = now_ms()
  local skus = {}
  for i = 0, SKUS - 1 do
    local _, _, holds = sku_keys(i)
    local s = {}
    local bad = look(i, order, s)
    if not bad and (s.due <= now or SKUS > 1) then
      s.due_orders, bad = checked(3 * i + 3, 'ZRANGEBYSCORE', holds, '-inf', now, 'LIMIT', 0, BATCH)
    end
    if bad then
      return nil, bad
    end
    skus[i] = s
  end
  local again = false
  for i = 0, SKUS - 1 do
    local s = skus[i]
    if s.due_orders and (#s.due_orders > 0 or s.due <= now) then
      settle_due(i, now, s.due_orders, s)
      if order and #s.due_orders > 0 then
        local _, orders = sku_keys(i)
        s.record = redis.call('HGET', orders, order)
      end
      again = again or #s.due_orders == BATCH
    end
  end
  if again then
    return nil, {AGAIN, 0}
  end
  return now, skus
end

-- add_hold scores order in the holds of sku i, and brings the sku's due
-- forward to the score if it is earlier (put writes it). It is the first
-- write to sku i, as begin may not have read its holds: it returns the
-- reply for a key of another type, and then nothing has changed.
local function add_hold(i, s, order, score)
  local _, _, holds = sku_keys(i)
  local _, bad = checked(3 * i + 3, 'ZADD', holds, score, order)
  if bad then
    return bad
  end
  if score < s.due then
    s.due = score
  end
end

-- settle_units ends a hold of qty units in s: they are sold for outcome
-- 'sold', and available again for 'cancelled'.
local function settle_units(s, outcome, qty)
  s.held = s.held - qty
  if outcome == 'sold' then
    s.sold = s.sold + qty
  else
    s.available = s.available + qty
  end
end

-- put writes the level of sku i from s.
local function put(i, s)
  redis.call('HSET', sku_keys(i), 'available', int(s.available), 'held', int(s.held), 'sold', int(s.sold), 'due', int(s.due))
end
