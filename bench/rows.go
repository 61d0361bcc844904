package bench

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/dlock-go/dlock"
)

// Env is what a row needs to make a Locker.
type Env struct {
	// Nodes are the Redis servers, host:port: one, or several for Redlock.
	Nodes []string
	// TTL is the time to live of every lock. rueidislock has no per-lock
	// ttl: it becomes its KeyValidity.
	TTL time.Duration
	// Dial, if not nil, makes every connection of the Locker's clients, so
	// that they can be counted (see WriteCounter).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Locker is one library, configured as its Row says, with Redis clients
// and connections of its own. It is safe for concurrent use.
type Locker interface {
	// Obtain holds key when it returns without error. It waits while
	// another holder has the key, as the library's blocking call does; a
	// library that does not wait by default (redislock) makes one attempt.
	Obtain(ctx context.Context, key string) (Held, error)
	// Close closes the Locker's Redis clients.
	Close() error
}

// Held is a lock obtained through a Locker.
type Held interface {
	Release(ctx context.Context) error
}

// Renewed is a Held lock kept alive until Release: by the library itself,
// or by a goroutine of ours where the library has no renewal (those rows
// say "user-renew").
type Renewed interface {
	Held
	// Lost reports whether the holder knows the lock was lost.
	Lost() bool
}

// Row is one library configured one way: a line of the results.
type Row struct {
	// Name identifies the row in benchmark names (lib=Name) and tables.
	Name string
	// Note says how the library is configured, for the docs.
	Note string
	// New makes a Locker with its own connections.
	New func(env Env) (Locker, error)
	// RedisKeys names the Redis keys that hold the lock key, and Quorum how
	// many of them make it held. Nil means the key itself, quorum 1.
	RedisKeys func(key string) []string
	Quorum    int
	// Deadline: the calls get a context with a deadline, as a request's
	// context has, rather than Background, which cannot end (row (a)).
	Deadline bool
}

// errNotObtained is what the raw floor returns when the key is taken.
var errNotObtained = errors.New("bench: not obtained")

// errNotHeld is what a release that found another holder returns, for the
// libraries that report it as false rather than as an error.
var errNotHeld = errors.New("bench: not held at release")

// UncontendedRows are the rows of (a): every library at its defaults, the
// raw floor first (the base of the comparison).
func UncontendedRows() []Row {
	return []Row{
		rawRow(),
		dlockRow("dlock", "`Obtain` + `Release`, defaults"),
		dlockRow("dlock-fair", "`Obtain` with `WithFair()`: waiters queue in Redis, first come first served", dlock.WithFair()),
		dlockRow("dlock-autorenew", "`Obtain` with `WithAutoRenew(true)`: the Client's renewer refreshes it every ttl/3", dlock.WithAutoRenew(true)),
		dlockDeadlineRow("dlock-deadline", "`Obtain` + `Release` with a context that has a deadline, as a request's has: dlock sends each call from a goroutine of its own, so that the call returns when the context ends even if Redis does not answer (the other rows' context, `Background`, cannot end; redsync and redislock call go-redis, which does not stop a read when the context ends)"),
		redsyncRow("redsync", "`NewMutex` + `LockContext` + `UnlockContext`, defaults (one pool)"),
		redislockRow("redislock", "`Obtain` (no retry: its default) + `Release`", nil),
		rueidislockRow("rueidislock", "`WithContext` + cancel, defaults: KeyMajority 2, so 3 keys per lock, renewed every KeyValidity/2", 2, false),
		rueidislockRow("rueidislock-tuned", "KeyMajority 1 (one key) and NoLoopTracking, as its README advises for one Redis", 1, true),
	}
}

// WaitingRows are the rows of (b), the handoff, and (c), the hot key: the
// blocking obtain of every library, at its defaults and tuned to retry
// sooner.
func WaitingRows() []Row {
	return []Row{
		dlockRow("dlock", "`Obtain`, defaults: a release wakes every waiter (pub/sub, one subscriber connection per Client); backoff 2 to 256 ms as a fallback"),
		dlockRow("dlock-fair", "`Obtain` with `WithFair()`: waiters queue in Redis, a release wakes the first", dlock.WithFair()),
		redsyncRow("redsync", "`LockContext`, defaults: 32 tries, 50 to 250 ms apart, then `ErrFailed`"),
		redsyncRow("redsync-tuned", "`WithRetryDelay(2ms)`, `WithTries(MaxInt32)`: retries every 2 ms until the context ends",
			redsyncFastRetry()...),
		redislockRow("redislock-100ms", "its default does not wait; `LinearBackoff(100ms)`, the interval of its retry example",
			linearRetry(100*time.Millisecond)),
		redislockRow("redislock-tuned", "`LinearBackoff(2ms)`", linearRetry(2*time.Millisecond)),
		rueidislockRow("rueidislock", "`WithContext`, defaults: 3 keys; waiters retry when client-side caching reports the key changed", 2, false),
		rueidislockRow("rueidislock-tuned", "KeyMajority 1, NoLoopTracking", 1, true),
	}
}

// RenewRows are the rows of (d): locks kept alive past their ttl.
// redsync and redislock have no renewal of their own: their rows run a
// goroutine per lock that refreshes it every ttl/3, as a user would write
// it, and so does one dlock row, for comparison with its own renewal.
func RenewRows() []Row {
	return []Row{
		dlockRow("dlock-autorenew", "`Obtain` with `WithAutoRenew(true)`: one goroutine of the Client renews all locks, in pipelined batches", dlock.WithAutoRenew(true)),
		userRenewRow(dlockRow("dlock+user-renew", "user-written: a goroutine per lock calls `Refresh(ctx, ttl)` every ttl/3")),
		userRenewRow(redsyncRow("redsync+user-renew", "user-written: a goroutine per lock calls `ExtendContext` every ttl/3 (redsync has no renewal)")),
		userRenewRow(redislockRow("redislock+user-renew", "user-written: a goroutine per lock calls `Refresh` every ttl/3 (redislock has no renewal)", nil)),
		rueidislockRow("rueidislock", "renews by itself every KeyValidity/2; KeyValidity = ttl; defaults otherwise (3 keys per lock)", 2, false),
		rueidislockRow("rueidislock-noloop", "the same with NoLoopTracking, to tell its effect from that of KeyMajority", 2, true),
		rueidislockRow("rueidislock-tuned", "the same with KeyMajority 1, NoLoopTracking", 1, true),
	}
}

// RedlockRows are the rows of (e), over several independent nodes.
func RedlockRows() []Row {
	return []Row{
		dlockRedlockRow(),
		redsyncRow("redsync", "one pool per node, defaults: quorum 3 of 5, nodes asked in parallel"),
	}
}

// Select returns the rows named in names (comma-separated), in that order;
// an empty names selects all. An unknown name is an error, so that a typo
// does not silently measure nothing.
func Select(rows []Row, names string) ([]Row, error) {
	if names == "" {
		return rows, nil
	}
	var picked []Row
	for name := range strings.SplitSeq(names, ",") {
		i := slices.IndexFunc(rows, func(r Row) bool { return r.Name == name })
		if i < 0 {
			return nil, errors.New("bench: no row named " + name)
		}
		picked = append(picked, rows[i])
	}
	return picked, nil
}

// Rotate returns rows shifted left by n, so that successive rounds run the
// rows in different orders and a slow spell of the machine does not always
// hit the same one.
func Rotate(rows []Row, n int) []Row {
	if len(rows) == 0 {
		return rows
	}
	n %= len(rows)
	return slices.Concat(rows[n:], rows[:n])
}

// keysOf returns the Redis keys that hold key for row, and how many of
// them make it held.
func (r Row) keysOf(key string) ([]string, int) {
	if r.RedisKeys == nil {
		return []string{key}, 1
	}
	return r.RedisKeys(key), r.Quorum
}
