package dlock

import (
	"context"
	"fmt"
	"time"

	"github.com/dlock-go/dlock/internal/engine"
)

// MaxMultiKeys is how many distinct keys one ObtainMulti or TryObtainMulti
// may name.
const MaxMultiKeys = engine.MaxMultiKeys

// TryObtainMulti makes one attempt to obtain the locks named keys, all of
// them or none, for ttl, as one Lock. When another holder has one of them,
// the error wraps ErrNotObtained, nothing was taken, and TryObtainMulti does
// not wait. See ObtainMulti.
func (c *Client) TryObtainMulti(ctx context.Context, keys []string, ttl time.Duration, opts ...ObtainOption) (*Lock, error) {
	sorted, cfg, err := c.checkMulti(keys, ttl, opts)
	if err != nil {
		return nil, err
	}
	return c.acquire(ctx, engine.KindMulti, sorted, ttl, nil, false, cfg)
}

// ObtainMulti obtains the locks named keys, all of them or none, for ttl,
// waiting while another holder has any of them, until ctx is done. It is
// for work on several things at once, such as moving money between two
// accounts. The locks are the same as Obtain's: a lock of ObtainMulti on
// "a" and "b" excludes Obtain's on "a", and the other way round.
//
// The keys are sorted and each is taken once (a key named twice is one
// lock); there must be at least one and at most MaxMultiKeys, none empty,
// else the error wraps ErrInvalidKey. Callers that name the same keys in
// different orders never deadlock: nobody holds some of the keys while it
// waits for the others. On a single server, Sentinel, and a Redlock of
// single servers, one script takes every lock in one step: whoever comes
// first gets them all, the other waits for all. On a Redlock every node
// takes all of them, or none, in one script, and the lock is the caller's
// when a quorum of nodes took all of them.
//
// On a Redis Cluster one script may touch one hash slot only. Keys that
// share a hash tag, as in "{order:7}:from" and "{order:7}:to", are in one
// slot and are taken by one script. Keys in several slots are grouped by
// slot and the groups are taken one after the other, in ascending order of
// their slot number, each group by one script: when a group is held by
// another, the groups taken before it are released before ObtainMulti
// waits, and it tries again from the first group, so for a moment a
// caller may hold some of the keys, never while it waits. (A Redlock whose
// nodes are Clusters refuses keys in several slots with ErrInvalidKey.)
//
// The Lock covers every key: Release, ReleaseAfter, Refresh, TTL (the least
// of the keys'), auto-renewal (WithAutoRenew), Done and Err act on all of
// them at once, and the lock is lost when any one of them is found gone or
// taken; the others are then deleted too (on a Cluster, in every slot).
// Its Key is the first of the sorted keys, which also names it in
// observe.Events (of Kind "multi"). Its Fence is larger than the fence of every earlier holder of every one of
// the keys, and each key records it: a resource guarded by the fence of any
// one of the keys refuses an earlier holder of that key. Inspect shows each
// key held, of Kind "multi", with the same Fingerprint and fence on every
// key, and all of the keys (LockInfo.Keys); the CLI's status and list show
// them as one holding.
//
// A waiter listens for the release of every one of the keys, as Obtain
// does, and tries again when any is released, when the longest remaining
// time of those held runs out, and after the delays of its Backoff. It
// joins no queue of waiters: a WithFair waiter of one of the keys may take
// that key first, and WithFair is refused here, as are AsRecord: both are
// errors wrapping ErrInvalidOption. WithAutoRenew, WithBackoff and
// WithValue apply.
//
// Every call has one effect, as Obtain's (see docs/safety.md): a copy of
// the acquire that go-redis sends again answers as the first did, and an
// acquire whose reply was lost is taken back in the background.
func (c *Client) ObtainMulti(ctx context.Context, keys []string, ttl time.Duration, opts ...ObtainOption) (*Lock, error) {
	sorted, cfg, err := c.checkMulti(keys, ttl, opts)
	if err != nil {
		return nil, err
	}
	return c.acquire(ctx, engine.KindMulti, sorted, ttl, nil, true, cfg)
}

// checkMulti validates the arguments of a multi-key obtain, and returns the
// keys sorted, each once, and the options.
func (c *Client) checkMulti(keys []string, ttl time.Duration, opts []ObtainOption) ([]string, obtainConfig, error) {
	if err := c.usable(); err != nil {
		return nil, obtainConfig{}, err
	}
	sorted, err := c.e.MultiKeys(keys)
	if err != nil {
		return nil, obtainConfig{}, err
	}
	if err := engine.CheckTTL(ttl); err != nil {
		return nil, obtainConfig{}, err
	}
	cfg, err := newObtainConfig(opts)
	cfg.HolderSuffix = c.holder
	switch {
	case err != nil:
		return nil, cfg, err
	case cfg.Fair:
		return nil, cfg, fmt.Errorf("%w: WithFair with several keys: a queue of waiters is one key's", ErrInvalidOption)
	case cfg.Record:
		return nil, cfg, fmt.Errorf("%w: AsRecord with several keys: a record is one key", ErrInvalidOption)
	case cfg.Guard != "":
		return nil, cfg, fmt.Errorf("%w: a guard with several keys", ErrInvalidOption)
	}
	return sorted, cfg, nil
}
