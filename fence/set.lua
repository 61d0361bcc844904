-- set.lua: a fenced SET. Writes the value unless a higher fence is
-- recorded for the key.
--
-- KEYS[1]  the key of the value
-- KEYS[2]  the key of its fence (in the same Cluster slot)
-- ARGV[1]  the writer's fence, a positive integer in decimal
-- ARGV[2]  the value
-- ARGV[3]  the value's time to live in milliseconds, 0 for none
--
-- Returns {1, fence}: written, the fence recorded;
--         {0, recorded}: refused, recorded being the higher fence.
-- Fences are compared as decimal strings, so that every int64 compares
-- exactly (Lua's numbers are doubles).

local function greater(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end

local recorded = redis.call('GET', KEYS[2])
if recorded then
  if not string.match(recorded, '^[1-9][0-9]*$') then
    return redis.error_reply('fence: the fence recorded at ' .. KEYS[2] .. ' is not a positive integer')
  end
  if greater(recorded, ARGV[1]) then
    return {0, recorded}
  end
end
redis.call('SET', KEYS[2], ARGV[1])
if ARGV[3] == '0' then
  redis.call('SET', KEYS[1], ARGV[2])
else
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
return {1, ARGV[1]}
