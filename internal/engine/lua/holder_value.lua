-- holder_value.lua: reading and marking a lock's value (see holder.lua),
-- for the scripts that need more than holds: a value's token is what comes
-- before its first colon (the whole value if it has none), its since the
-- digits after it.

-- token_of returns the token of a lock's value.
local function token_of(value)
  return string.match(value, '^[^:]*')
end

-- since_of returns the since of a lock's value, or nil if it has none.
local function since_of(value)
  return tonumber(string.match(value, '^[^:]*:(%d+)$') or string.match(value, '^[^:]*:(%d+):w$'))
end

-- mark_waited marks the lock at key, whose value this is, as waited for;
-- a value of another kind (a token alone, a foreign client's lock) is left
-- as it is.
local function mark_waited(key, value)
  if type(value) == 'string' and string.find(value, '^[^:]+:%d+$') then
    redis.call('SET', key, value .. ':w', 'KEEPTTL')
  end
end
