package stock

import (
	_ "embed" // for the scripts

	"github.com/redis/go-redis/v9"
)

// The Lua scripts, one file per operation, each run after prelude.lua,
// which holds what they share: the keys of a sku, the reply codes, and the
// return of expired holds to the stock. Each file's header documents its
// KEYS, ARGV and replies. go-redis runs them with EVALSHA, and with EVAL
// when the server does not have them (NOSCRIPT).
var (
	//go:embed lua/prelude.lua
	preludeLua string
	//go:embed lua/reserve.lua
	reserveLua string
	//go:embed lua/settle.lua
	settleLua string
	//go:embed lua/levels.lua
	levelsLua string
	//go:embed lua/set.lua
	setLua string
	//go:embed lua/add.lua
	addLua string
)

var (
	reserveScript = redis.NewScript(preludeLua + reserveLua)
	settleScript  = redis.NewScript(preludeLua + settleLua)
	levelsScript  = redis.NewScript(preludeLua + levelsLua)
	setScript     = redis.NewScript(preludeLua + setLua)
	addScript     = redis.NewScript(preludeLua + addLua)
)
