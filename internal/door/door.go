// Package door lends dlock's sibling packages (idempotency, cachefill,
// election, jobs) the few features of the root package that only they
// need, so that the root's public surface stays what a user calls.
//
// The root cannot be imported from here (it imports this package), so the
// functions it lends take and return its types behind any: a *dlock.Client,
// a *dlock.Lock, a dlock.ObtainOption. The root fills the door once, while
// it is initialized, with Lend called from a package-level variable
// declaration (dlock's door.go); every caller of the door imports the root
// for the Client or Lock it passes, so the door is filled before any of
// them runs. This is the pattern of golang.org/x/tools' internal packages
// (packagesinternal, typesinternal), without an init function.
package door

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/observe"
)

// ErrGuarded means an acquire found its guard key (WithGuard) and did not
// take the lock: the work the lock protects is done already. The error is
// a *GuardError, which holds the guard key's value.
var ErrGuarded = errors.New("dlock: guard key exists")

// GuardError is the error of an acquire that found its guard key: it holds
// the key's value, read in the same step. errors.Is(err, ErrGuarded)
// matches it.
type GuardError struct {
	Key   string // the guard key
	Value string // its value when the acquire found it
}

// Error says which guard key the acquire found.
func (e *GuardError) Error() string {
	return fmt.Sprintf("dlock: guard key %s exists: the lock was not taken", strconv.Quote(e.Key))
}

// Is reports whether target is ErrGuarded.
func (e *GuardError) Is(target error) bool { return target == ErrGuarded }

// Lent is what the root lends; see the functions of the same names.
type Lent struct {
	WithGuard      func(key string) any
	ReleaseStoring func(ctx context.Context, lock any, key string, value []byte, ttl time.Duration) error
	Lifetime       func(lock any) context.Context
	WaitReleaseOf  func(ctx context.Context, client any, key, fingerprint string) error
	Logger         func(client any) *slog.Logger
	Observers      func(client any) []observe.Observer
	DeploymentOf   func(client any) Deployment
}

// lent is set once, by the root's package initialization, and only read
// afterwards.
var lent Lent

// Lend fills the door. The root calls it once, from a package-level
// variable declaration; the result is only there to allow that.
func Lend(l Lent) struct{} {
	lent = l
	return struct{}{}
}

// WithGuard returns the dlock.ObtainOption (O) that makes every attempt of
// an acquire look at key first, in the same step: while key exists the
// lock is not taken, and Obtain, TryObtain and Do return a *GuardError
// (matching ErrGuarded) with key's value. A waiter that a release wakes
// finds the guard its holder stored (ReleaseStoring), so "run once, then
// remember the result" costs one round trip to find the result, and two to
// make it.
//
// key must hash to the lock key's Cluster slot (give both the same hash
// tag), on every deployment; otherwise the call returns an error wrapping
// dlock.ErrInvalidKey. A Redlock Client refuses a guard, as do shared
// holds (dlock.ErrInvalidOption). If O is not dlock.ObtainOption, the
// result is nil, which the root refuses with dlock.ErrInvalidOption.
func WithGuard[O any](key string) O {
	o, _ := lent.WithGuard(key).(O)
	return o
}

// ReleaseStoring releases lock (a *dlock.Lock) and stores value at key for
// ttl, in one step, if the lock is still its holder's: the result of the
// work the lock protected, which a caller whose lock expired meanwhile can
// never write. With WithGuard(key), the next acquire finds it and does not
// take the lock. It returns an error wrapping dlock.ErrNotHeld, and writes
// nothing, if the lock is not held any more.
//
// It has one effect whatever go-redis sends again: nil means value is
// stored, and dlock.ErrNotHeld means this call stored nothing. An error
// wrapping dlock.ErrOutcomeUnknown means the answer did not come back;
// calling it again is safe. key must hash to the lock key's Cluster slot;
// ttl must be at least a millisecond. It works for locks of a single
// deployment; otherwise it returns an error wrapping
// dlock.ErrInvalidOption.
func ReleaseStoring(ctx context.Context, lock any, key string, value []byte, ttl time.Duration) error {
	return lent.ReleaseStoring(ctx, lock, key, value, ttl)
}

// Lifetime returns the context that is cancelled, with lock's Err as its
// cause, when lock (a *dlock.Lock) ends: what context.AfterFunc needs to
// act on the end of a lock without a goroutine that waits for it.
func Lifetime(lock any) context.Context {
	return lent.Lifetime(lock)
}

// WaitReleaseOf is dlock.Client.WaitRelease for a holder known by its
// fingerprint (LockInfo.Fingerprint, Lock.Fingerprint): it waits until
// that holder no longer holds the lock named key on client (a
// *dlock.Client), and returns nil at once if it does not hold it now.
// Unlike WaitRelease, it cannot miss a holder that took the lock after the
// caller looked. An empty fingerprint is refused with
// dlock.ErrInvalidOption.
func WaitReleaseOf(ctx context.Context, client any, key, fingerprint string) error {
	return lent.WaitReleaseOf(ctx, client, key, fingerprint)
}

// Logger returns the logger that client (a *dlock.Client) reports to
// (dlock.WithLogger), so that a package built on the Client reports to
// the same place.
func Logger(client any) *slog.Logger {
	return lent.Logger(client)
}

// Deployment is what a package built on a *dlock.Client needs to know of
// the deployment it keeps its locks on, to run scripts of its own there.
type Deployment struct {
	// Redis is the go-redis client a Client made by dlock.New keeps its
	// locks on; nil for a Redlock Client and for a Client that cannot
	// work (Err).
	Redis redis.UniversalClient
	// Redlock reports a Client made by dlock.NewRedlock: its locks are on
	// a quorum of independent deployments, none of which holds them all.
	Redlock bool
	// Err is the error every call of the Client returns: dlock.ErrNilClient
	// for a Client made by dlock.New on a nil go-redis client, an error
	// wrapping dlock.ErrInvalidOption for one given an invalid option, or
	// for client not a *dlock.Client (or a nil one). Nil otherwise, also
	// once the Client is closed.
	Err error
}

// DeploymentOf returns the deployment of client, a *dlock.Client.
func DeploymentOf(client any) Deployment {
	return lent.DeploymentOf(client)
}

// PackageObserver returns what a package built on client (a *dlock.Client)
// tells of itself: the client's Observers (dlock.WithObserver) that are
// observe.PackageObservers, as one; nil if there is none, so that a
// package can skip building its events. A package calls it once, in its
// constructor, and keeps the result.
func PackageObserver(client any) observe.PackageObserver {
	return Join(lent.Observers(client))
}

// Join returns the observers of all that are observe.PackageObservers, as
// one PackageObserver that tells each of them in turn; nil if there is
// none.
func Join(all []observe.Observer) observe.PackageObserver {
	var pkgs packageObservers
	for _, o := range all {
		if p, ok := o.(observe.PackageObserver); ok {
			pkgs = append(pkgs, p)
		}
	}
	switch len(pkgs) {
	case 0:
		return nil
	case 1:
		return pkgs[0]
	}
	return pkgs
}

// packageObservers tells each of several PackageObservers.
type packageObservers []observe.PackageObserver

// Observe tells each of ps of e.
func (ps packageObservers) Observe(e observe.Event) {
	for _, p := range ps {
		p.Observe(e)
	}
}

// ObservePackage tells each of ps of e.
func (ps packageObservers) ObservePackage(e observe.PackageEvent) {
	for _, p := range ps {
		p.ObservePackage(e)
	}
}
