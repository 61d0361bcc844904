package cachefill

import (
	_ "embed" // for the scripts

	"github.com/redis/go-redis/v9"
)

// The Lua scripts, one file per operation; each file's header documents
// its KEYS, ARGV and replies. go-redis runs them with EVALSHA, and with
// EVAL when the server does not have them (NOSCRIPT).
var (
	//go:embed lua/read.lua
	readLua string
	//go:embed lua/store.lua
	storeLua string
	//go:embed lua/invalidate.lua
	invalidateLua string
	//go:embed lua/unclaim.lua
	unclaimLua string
	//go:embed lua/gave_up.lua
	gaveUpLua string
)

var (
	readScript       = redis.NewScript(readLua)
	storeScript      = redis.NewScript(storeLua)
	invalidateScript = redis.NewScript(invalidateLua)
	unclaimScript    = redis.NewScript(unclaimLua)
	gaveUpScript     = redis.NewScript(gaveUpLua)
)

// Reply codes of read.lua.
const (
	readMiss      = 0
	readValue     = 1
	readNotFound  = 2
	readWrongType = 3
)

// Reply codes of store.lua.
const (
	storeNotHeld   = 0
	storeDone      = 1
	storeStale     = 2
	storeWrongType = 3
)

// Reply codes of invalidate.lua.
const (
	invalidateMarked    = 0
	invalidateEntry     = 1
	invalidateWrongType = 3
)
