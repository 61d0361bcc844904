-- release_marker.lua: what release.lua and hold_release.lua share (the
-- watch channel, telling a waiter, the release marker), run before either
-- (see script.go). KEYS[2] is the holding's fence key; the last of KEYS is
-- the holding's release marker.

-- watch_channel returns the name of the lock's watch channel: the fence
-- key's name with 'watch' for 'fence' (see keys.go). A channel, no key:
-- the scripts touch only the keys they are given.
local function watch_channel()
  return 'dlock:watch' .. string.sub(KEYS[2], 12)
end

-- tell tells a waiter message: on its own channel if it gave one (pcall:
-- an ACL may let the caller publish on the lock's channel only), else on
-- the holding's (KEYS[2]). It returns how many heard it on the waiter's
-- channel, or nil if it went out on the holding's.
local function tell(channel, message)
  local heard = nil
  if channel ~= '' then
    heard = redis.pcall('PUBLISH', channel, message)
    if type(heard) ~= 'number' then
      heard = nil
    end
  end
  if heard == nil then
    redis.pcall('PUBLISH', KEYS[2], message) -- see release.lua: pcall, as every PUBLISH
  end
  return heard
end

-- marked reads the release marker freed of a holding that the release did
-- not find: a release of it ran already, a copy of this call (which
-- recorded the same number, call) or another call. For a release it
-- returns the reply to give at once: 1 if this call released it, 2 if
-- another did. For a waiter's leave (leaving), which goes on, it returns
-- nil and whether this call released the holding (1 or 0).
local function marked(freed, call, leaving)
  local marker = redis.pcall('GET', freed)
  if type(marker) ~= 'string' then
    return nil, 0
  end
  if not leaving then
    return marker == call and 1 or 2, 0
  end
  return nil, marker == call and 1 or 0
end
