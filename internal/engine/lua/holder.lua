-- holder.lua: what the scripts of a lock share (see script.go): whose lock
-- a value is. A lock taken on one deployment holds "token:since": the
-- holder's token (which has no colon), then the server's time of the
-- acquire in microseconds; and "token:since:w" once someone waits for it
-- (a waiter in its queue, WaitRelease, ObtainMulti): only then does its
-- release look for waiters to tell. A value that is a token alone (a
-- Redlock node's lock, taken with a plain SET NX) is its holder's too.

-- holds reports whether value, a GET's reply, is token's lock: the token
-- alone, or the token and a colon. Every release and refresh asks, so it
-- reads no more than that.
local function holds(value, token)
  return value == token or type(value) == 'string' and string.sub(value, 1, #token + 1) == token .. ':'
end
