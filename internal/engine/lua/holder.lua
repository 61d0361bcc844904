-- holder.lua: what the scripts of a lock share (see script.go): reading
-- the lock's value. A lock taken on one deployment holds "token:since": the
-- holder's token (which has no colon), then the server's time of the
-- acquire in microseconds; and "token:since:w" once someone waits for it
-- (a waiter in its queue, WaitRelease, ObtainMulti): only then does its
-- release look for waiters to tell. A value that is a token alone (a
-- Redlock node's lock, taken with a plain SET NX) is its holder's too.

-- token_of returns the token of a lock's value: the value itself when it
-- has no since.
local function token_of(value)
  return string.match(value, '^([^:]+):%d+$') or string.match(value, '^([^:]+):%d+:w$') or value
end

-- holds reports whether value, a GET's reply, is token's lock.
local function holds(value, token)
  return type(value) == 'string' and token_of(value) == token
end

-- since_of returns the since of a lock's value, or nil if it has none.
local function since_of(value)
  return tonumber(string.match(value, '^[^:]+:(%d+)$') or string.match(value, '^[^:]+:(%d+):w$'))
end

-- waited reports whether someone waits for the lock whose value this is:
-- it was marked, or it is a value without since, whose release tells
-- everyone as before.
local function waited(value)
  return since_of(value) == nil or string.sub(value, -2) == ':w'
end

-- mark_waited marks the lock at key, whose value this is, as waited for;
-- a value of another kind (a token alone, a foreign client's lock) is left
-- as it is.
local function mark_waited(key, value)
  if type(value) == 'string' and string.match(value, '^[^:]+:%d+$') then
    redis.call('SET', key, value .. ':w', 'KEEPTTL')
  end
end
