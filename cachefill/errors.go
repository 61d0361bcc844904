package cachefill

import "errors"

// ErrNotFound is what a load function returns when the source has no value
// for the key, such as a missing database row. The Cache remembers it for
// the not-found ttl (WithNotFoundTTL), so that Gets of a key that does not
// exist do not reach the source every time; Get then returns an error
// wrapping it, whether it came from the load or from the cache.
var ErrNotFound = errors.New("cachefill: not found")

// ErrWrongType means that the key where the Cache keeps an entry holds a
// value of another type, written by something else. Get returns it without
// calling load; delete the key to use it again.
var ErrWrongType = errors.New("cachefill: key holds another type")

// Errors of bad input: the call did not reach Redis.
var (
	// ErrInvalidKey means an empty key.
	ErrInvalidKey = errors.New("cachefill: invalid key")
	// ErrInvalidTTL means a ttl under one millisecond, the resolution of
	// Redis expiry.
	ErrInvalidTTL = errors.New("cachefill: invalid ttl")
	// ErrNilLoad means Get was given a nil load function.
	ErrNilLoad = errors.New("cachefill: nil load function")
	// ErrInvalidOption means an option given to New was out of range, or
	// New was given a dlock Client it cannot use: a Redlock, or one given
	// an invalid option.
	ErrInvalidOption = errors.New("cachefill: invalid option")
	// ErrNilClient means that New was given a nil dlock Client, or one
	// made on a nil Redis client.
	ErrNilClient = errors.New("cachefill: nil redis client")
	// ErrClosed means a call on a Cache after Close.
	ErrClosed = errors.New("cachefill: cache closed")
)
