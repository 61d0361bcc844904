package dlock

import (
	"crypto/sha1"
	_ "embed" // for the scripts
	"encoding/hex"
)

// The Lua scripts, one file per operation; each file's header documents its
// KEYS, ARGV and replies. Embedding them one by one makes a missing file a
// build error.
var (
	//go:embed lua/acquire.lua
	acquireLua string
	//go:embed lua/release.lua
	releaseLua string
	//go:embed lua/refresh.lua
	refreshLua string
	//go:embed lua/ttl.lua
	ttlLua string
	//go:embed lua/inspect.lua
	inspectLua string
	//go:embed lua/force_release.lua
	forceReleaseLua string
	//go:embed lua/queue_acquire.lua
	queueAcquireLua string
	//go:embed lua/raise_fence.lua
	raiseFenceLua string
)

var (
	acquireScript = newScript(acquireLua)
	releaseScript = newScript(releaseLua)
	refreshScript = newScript(refreshLua)
	ttlScript     = newScript(ttlLua)

	queueAcquireScript = newScript(queueAcquireLua)
	raiseFenceScript   = newScript(raiseFenceLua)

	inspectScript      = newScript(inspectLua)
	forceReleaseScript = newScript(forceReleaseLua)
)

// script is a Lua script and its SHA1 digest, the name EVALSHA knows it by.
type script struct {
	src string
	sha string
}

func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{src: src, sha: hex.EncodeToString(sum[:])}
}
