package stock

import (
	_ "embed" // for the scripts

	"github.com/redis/go-redis/v9"
)

// The Lua scripts, one file per operation, each run after prelude.lua,
// which holds what they share: the keys of a sku, the reply codes, and the
// return of expired holds to the stock; the *_each.lua scripts also after
// each.lua. Each file's header documents its KEYS, ARGV and replies. They
// run with EVALSHA, and with EVAL when the server does not have them
// (NOSCRIPT): see send.go.
var (
	//go:embed lua/prelude.lua
	preludeLua string
	//go:embed lua/reserve.lua
	reserveLua string
	//go:embed lua/each.lua
	eachLua string
	//go:embed lua/reserve_each.lua
	reserveEachLua string
	//go:embed lua/settle_each.lua
	settleEachLua string
	//go:embed lua/settle.lua
	settleLua string
	//go:embed lua/levels.lua
	levelsLua string
	//go:embed lua/set.lua
	setLua string
	//go:embed lua/add.lua
	addLua string
	//go:embed lua/delete.lua
	deleteLua string
)

var (
	reserveScript = newScript(preludeLua + reserveLua)
	// The calls of several orders on one sku, merged from a batch (merge.go).
	reserveEachScript = newScript(preludeLua + eachLua + reserveEachLua)
	settleEachScript  = newScript(preludeLua + eachLua + settleEachLua)
	settleScript      = newScript(preludeLua + settleLua)
	levelsScript      = newScript(preludeLua + levelsLua)
	setScript         = newScript(preludeLua + setLua)
	addScript         = newScript(preludeLua + addLua)
	deleteScript      = newScript(preludeLua + deleteLua)
)

// script is a Lua script's source and its SHA1 digest, which EVALSHA
// names it by.
type script struct {
	src, hash string
}

func newScript(src string) script {
	return script{src: src, hash: redis.NewScript(src).Hash()}
}
