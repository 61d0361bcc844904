-- multi_holder.lua: what the fence scripts of a multi-key holding share
-- (see script.go).

-- holds_all reports whether each of the first n KEYS, the lock keys of a
-- multi-key holding, still holds token, the holding's.
local function holds_all(n, token)
  for i = 1, n do
    if redis.pcall('GET', KEYS[i]) ~= token then
      return false
    end
  end
  return true
end
