package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync/atomic"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/door"
	"github.com/dlock-go/dlock/observe"
)

// Store keeps the outcomes of calls by idempotency key in Redis, and makes
// sure that one call at a time runs for a key. It is safe for concurrent
// use; one Store per process and Redis is enough.
type Store struct {
	locker *dlock.Client // the caller's: its locks, observers and logger
	cfg    config
	obs    observe.PackageObserver // locker's; nil without one

	closed atomic.Bool
}

// New returns a Store that keeps its records and locks on the Redis
// deployment of locker, a Client made by dlock.New on a *redis.Client
// (also from redis.NewFailoverClient) or a *redis.ClusterClient. The keys'
// locks are locker's: its observers (dlock.WithObserver) see them, and its
// holder name (dlock.WithHolderName) names them. The Store reports to
// locker's logger unless WithLogger says otherwise, and tells the
// observers of locker that are observe.PackageObservers how each call of
// Do and each request through the Middleware ended (observe.OpCall:
// stored, replayed, in progress, mismatch, ...). New does not talk to
// Redis.
//
// A Redlock Client (dlock.NewRedlock) is refused: the acquire of a key's
// lock looks for its stored outcome, and its release stores it, in one step
// on the server that keeps both, which a quorum of independent servers
// cannot do (see the package documentation). A nil locker, a Redlock
// Client, one that cannot work (made on a nil go-redis client, or with an
// invalid option) or an invalid option is not a panic: New returns an
// error wrapping ErrInvalidOption, and no Store.
func New(locker *dlock.Client, opts ...Option) (*Store, error) {
	if locker == nil {
		return nil, fmt.Errorf("%w: New with a nil dlock.Client", ErrInvalidOption)
	}
	switch d := door.DeploymentOf(locker); {
	case d.Redlock:
		return nil, fmt.Errorf("%w: New with a Redlock Client: a key's outcome is stored and found in the same step as its lock, on one deployment; use a Client made by dlock.New", ErrInvalidOption)
	case d.Err != nil:
		return nil, fmt.Errorf("%w: New with a dlock.Client that cannot work: %w", ErrInvalidOption, d.Err)
	}
	cfg := newConfig(door.Logger(locker), opts)
	if cfg.err != nil {
		return nil, cfg.err
	}
	return &Store{cfg: cfg, locker: locker, obs: door.PackageObserver(locker)}, nil
}

// Close makes later calls return ErrClosed. A call already running goes on
// on the dlock Client, and stores its outcome while the Client is open.
// Close closes neither the dlock Client nor the Redis client: close the
// Client after the Store, once the calls of Do and the requests through
// the Middleware have returned. A call still running when the Client
// closes loses its lock and cannot store its result (ErrNotStored), and
// its key stays blocked until the lock's time to live runs out (see
// WithLockTTL). Close always returns nil.
func (s *Store) Close() error {
	if s == nil {
		return nil
	}
	s.closed.Store(true)
	return nil
}

// errNotNew is the error of a Store that New did not make.
var errNotNew = fmt.Errorf("%w: a Store not made by New", ErrInvalidOption)

// usable returns the error every call returns on a Store that cannot work.
func (s *Store) usable() error {
	if s == nil || s.locker == nil {
		return errNotNew
	}
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

// keys are the Redis keys of one idempotency key: the dlock lock that the
// call running fn holds, and the record of its outcome. Both carry the same
// hash tag, a digest of the idempotency key, so they live in one Cluster
// slot, have a fixed length whatever the key, and no key can inject anything
// into their names.
type keys struct {
	lock, record string
}

func (s *Store) keysOf(key string) keys {
	sum := sha256.Sum256([]byte(key))
	base := s.cfg.prefix + "{" + hex.EncodeToString(sum[:16]) + "}"
	return keys{lock: base + ":lock", record: base + ":result"}
}
