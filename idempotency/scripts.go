package idempotency

import (
	_ "embed" // for the script
	"fmt"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/store.lua
var storeLua string

// storeScript runs with EVALSHA, and EVAL when the server does not know it
// (go-redis's Script.Run).
var storeScript = redis.NewScript(storeLua)

// The replies of store.lua.
const (
	storeNotHeld = 0
	storeStored  = 1
	storeExists  = 2
)

// storeError maps a reply of store.lua to an error: nil when stored.
func storeError(code int64) error {
	switch code {
	case storeStored:
		return nil
	case storeNotHeld:
		return fmt.Errorf("%w: the key's lock is not ours any more", ErrNotStored)
	case storeExists:
		return fmt.Errorf("%w: another call stored a result first", ErrNotStored)
	}
	return fmt.Errorf("%w: unexpected reply %d from the store script", ErrNotStored, code)
}
