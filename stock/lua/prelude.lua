-- prelude.lua: the part every stock script starts with (scripts.go puts it
-- in front of each). It defines locals only: Redis forbids globals.
--
-- Every script works on one or more skus, four KEYS each, in this order:
--   level   hash: available, held, sold (units); it exists once the sku is set
--   orders  hash: order -> "held:<qty>", "sold:<qty>", "cancelled:<qty>" or "expired:<qty>"
--   holds   zset: order -> the deadline of its hold, in ms of server time
--   ended   zset: order -> when its outcome (sold, cancelled, expired) is forgotten, in ms
-- ARGV[1] is how long outcomes are remembered, in ms; the rest is the script's.
--
-- Replies are {code, item, values...}, where item is the 0-based index of the
-- sku the code is about. The codes:
local DONE = 0           -- done as asked
local UNCHANGED = 1      -- already so: nothing to do
local AGAIN = 2          -- more expired holds than one call returns: call again
local UNKNOWN = 3        -- the sku was never set
local SOLD_OUT = 4       -- {SOLD_OUT, item, available}
local NO_RESERVATION = 5 -- {NO_RESERVATION, item, state}, states below
local CONFLICT = 6       -- {CONFLICT, item, qty}: the order holds another quantity
local WRONG_TYPE = 7     -- {WRONG_TYPE, item, key}: KEYS[key] holds another type
local TOO_MANY = 8       -- {TOO_MANY, item, available}: past the largest quantity

-- The states of an order on a sku, as NO_RESERVATION reports them.
local STATE = {held = 1, sold = 2, cancelled = 3, expired = 4} -- none: 0

-- At most this many expired holds go back to the stock per sku and call, so
-- that no call keeps Redis busy for long; a call that finds more asks to be
-- called again (AGAIN), having changed nothing else.
local BATCH = 100

local RETENTION = tonumber(ARGV[1])
local SKUS = #KEYS / 4

local function sku_keys(i)
  local b = 4 * i
  return KEYS[b + 1], KEYS[b + 2], KEYS[b + 3], KEYS[b + 4]
end

-- parse splits an order's record, "held:3", into "held" and "3"; quantities
-- stay strings, so that numbers past 14 digits are never reformatted.
local function parse(record)
  if not record then
    return nil, nil
  end
  return string.match(record, '^(%a+):(%d+)$')
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- wrong_type returns the reply for the first key of another type, if any,
-- before anything is written: a failed call changes nothing.
local function wrong_type()
  local kinds = {'hash', 'hash', 'zset', 'zset'}
  for k = 1, #KEYS do
    local t = redis.call('TYPE', KEYS[k])
    t = t.ok or t
    if t ~= 'none' and t ~= kinds[(k - 1) % 4 + 1] then
      return {WRONG_TYPE, math.floor((k - 1) / 4), k}
    end
  end
  return nil
end

-- reclaim returns the units of the sku's expired holds to its stock, and
-- forgets outcomes past their retention, BATCH of each at most. It reports
-- whether expired holds are left.
local function reclaim(i, now)
  local level, orders, holds, ended = sku_keys(i)
  local due = redis.call('ZRANGEBYSCORE', holds, '-inf', now, 'LIMIT', 0, BATCH)
  if #due > 0 then
    local known = redis.call('HEXISTS', level, 'available') == 1
    for _, order in ipairs(due) do
      local state, qty = parse(redis.call('HGET', orders, order))
      if state == 'held' then
        if known then
          redis.call('HINCRBY', level, 'available', qty)
          redis.call('HINCRBY', level, 'held', '-' .. qty)
        end
        redis.call('HSET', orders, order, 'expired:' .. qty)
        redis.call('ZADD', ended, now + RETENTION, order)
      end
    end
    redis.call('ZREM', holds, unpack(due))
  end
  local old = redis.call('ZRANGEBYSCORE', ended, '-inf', now, 'LIMIT', 0, BATCH)
  if #old > 0 then
    redis.call('HDEL', orders, unpack(old))
    redis.call('ZREM', ended, unpack(old))
  end
  return #due == BATCH and redis.call('ZCOUNT', holds, '-inf', now) > 0
end

-- begin checks the keys' types and reclaims expired holds. It returns the
-- server time in ms, or nil and the reply to return at once.
local function begin()
  local bad = wrong_type()
  if bad then
    return nil, bad
  end
  local now = now_ms()
  local again = false
  for i = 0, SKUS - 1 do
    if reclaim(i, now) then
      again = true
    end
  end
  if again then
    return nil, {AGAIN, 0}
  end
  return now
end

