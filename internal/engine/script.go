package engine

import (
	"crypto/sha1"
	_ "embed" // for the scripts
	"encoding/hex"
)

// The Lua scripts, one file per operation; each file's header documents its
// KEYS, ARGV and replies. The acquires that queue run after queue.lua, the
// releases after release_marker.lua, a lock's scripts after holder.lua
// and, those that read more of its value, holder_value.lua, and the fence
// scripts of a multi-key holding after multi_holder.lua: what each group
// shares. Embedding them one by one makes a missing file a build error.
var (
	//go:embed lua/holder.lua
	holderLua string
	//go:embed lua/holder_value.lua
	holderValueLua string
	//go:embed lua/queue.lua
	queueLua string
	//go:embed lua/release_marker.lua
	releaseMarkerLua string

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

	//go:embed lua/hold_acquire.lua
	holdAcquireLua string
	//go:embed lua/hold_release.lua
	holdReleaseLua string
	//go:embed lua/hold_refresh.lua
	holdRefreshLua string
	//go:embed lua/hold_ttl.lua
	holdTTLLua string
	//go:embed lua/hold_raise_fence.lua
	holdRaiseFenceLua string

	//go:embed lua/multi_holder.lua
	multiHolderLua string
	//go:embed lua/multi_acquire.lua
	multiAcquireLua string
	//go:embed lua/multi_release.lua
	multiReleaseLua string
	//go:embed lua/multi_refresh.lua
	multiRefreshLua string
	//go:embed lua/multi_ttl.lua
	multiTTLLua string
	//go:embed lua/multi_raise_fence.lua
	multiRaiseFenceLua string
	//go:embed lua/multi_store_fence.lua
	multiStoreFenceLua string
)

var (
	acquireScript = newScript(holderLua + acquireLua)
	releaseScript = newScript(holderLua + releaseMarkerLua + releaseLua)
	refreshScript = newScript(holderLua + refreshLua)
	ttlScript     = newScript(holderLua + ttlLua)

	queueAcquireScript = newScript(holderLua + holderValueLua + queueLua + queueAcquireLua)
	raiseFenceScript   = newScript(holderLua + holderValueLua + raiseFenceLua)

	inspectScript      = newScript(holderValueLua + inspectLua)
	forceReleaseScript = newScript(holderValueLua + forceReleaseLua)

	// the shared holds: semaphores, RW locks
	holdAcquireScript    = newScript(queueLua + holdAcquireLua)
	holdReleaseScript    = newScript(releaseMarkerLua + holdReleaseLua)
	holdRefreshScript    = newScript(holdRefreshLua)
	holdTTLScript        = newScript(holdTTLLua)
	holdRaiseFenceScript = newScript(holdRaiseFenceLua)

	// the multi-key holdings (see multi.go)
	multiAcquireScript = newScript(holderValueLua + multiAcquireLua)
	// (release, refresh, ttl and store fence run once per slot when the keys
	// are in several Cluster slots, see multi_slots.go)
	multiReleaseScript    = perSlot(newScript(multiReleaseLua))
	multiRefreshScript    = perSlot(newScript(multiRefreshLua))
	multiTTLScript        = perSlot(newScript(multiTTLLua))
	multiRaiseFenceScript = newScript(multiHolderLua + multiRaiseFenceLua)
	multiStoreFenceScript = perSlot(newScript(multiHolderLua + multiStoreFenceLua))
)

// script is a Lua script and its SHA1 digest, the name EVALSHA knows it by.
type script struct {
	src string
	sha string
	// src and sha boxed once, for the ARGV of EVAL and EVALSHA (see evalCmd)
	srcArg, shaArg any
	// perSlot: a script of a multi-key holding that a Cluster runs once per
	// slot of the holding's keys, whose replies combine (see
	// Engine.runPerSlot)
	perSlot bool
}

// perSlot marks s as a script that may run once per Cluster slot.
func perSlot(s *script) *script {
	s.perSlot = true
	return s
}

func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	sha := hex.EncodeToString(sum[:])
	return &script{src: src, sha: sha, srcArg: src, shaArg: sha}
}

// Scripts returns the SHA-1 digest of every script the engine runs, by its
// file's name: for the tests that check what each one touches (a script
// added above belongs here too).
func Scripts() map[string]string {
	return map[string]string{
		"acquire": acquireScript.sha, "release": releaseScript.sha, "refresh": refreshScript.sha, "ttl": ttlScript.sha,
		"queue_acquire": queueAcquireScript.sha, "raise_fence": raiseFenceScript.sha,
		"inspect": inspectScript.sha, "force_release": forceReleaseScript.sha,
		"hold_acquire": holdAcquireScript.sha, "hold_release": holdReleaseScript.sha, "hold_refresh": holdRefreshScript.sha,
		"hold_ttl": holdTTLScript.sha, "hold_raise_fence": holdRaiseFenceScript.sha,
		"multi_acquire": multiAcquireScript.sha, "multi_release": multiReleaseScript.sha, "multi_refresh": multiRefreshScript.sha,
		"multi_ttl": multiTTLScript.sha, "multi_raise_fence": multiRaiseFenceScript.sha, "multi_store_fence": multiStoreFenceScript.sha,
	}
}
