-- hset.lua: a fenced HSET. Sets the hash's fields unless a higher fence is
-- recorded in the hash.
--
-- KEYS[1]  the hash
-- ARGV[1]  the field of the hash that holds its fence
-- ARGV[2]  the writer's fence, a positive integer in decimal
-- ARGV[3], ARGV[4], ...  field, value, field, value, ...
--
-- Returns {1, fence}: written, the fence recorded;
--         {0, recorded}: refused, recorded being the higher fence.
-- Fences are compared as decimal strings, so that every int64 compares
-- exactly (Lua's numbers are doubles).

local function greater(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end

local recorded = redis.call('HGET', KEYS[1], ARGV[1])
if recorded then
  if not string.match(recorded, '^[1-9][0-9]*$') then
    return redis.error_reply('fence: the fence recorded in field ' .. ARGV[1] .. ' of ' .. KEYS[1] .. ' is not a positive integer')
  end
  if greater(recorded, ARGV[2]) then
    return {0, recorded}
  end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
for i = 3, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
end
return {1, ARGV[2]}
