package dlock

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/dlock-go/dlock/internal/engine"
)

// LockInfo is what Redis holds for a lock key at one moment, whoever holds
// it. Inspect and Scan return it; the CLI's status and list show it.
type LockInfo struct {
	Key string

	// Held reports whether the key exists as a lock. Keys taken by other
	// clients with a plain SET NX count too.
	Held bool

	// TTL is the lock's remaining time to live: 0 when it is not held, -1
	// when the key has no expiry.
	TTL time.Duration

	// Fingerprint tells holders apart without revealing their tokens: the
	// first 8 hex digits of the SHA-256 of the key's value, "" when it is
	// not held. A holder's own is Lock.Fingerprint. The token itself stays
	// with its holder, since whoever knows it can release the lock; a lock
	// whose holder is gone for good is cleared with ForceRelease.
	Fingerprint string

	value string // see Value

	// seen is what Redis held, for ForceReleaseHolder: the SHA-1 (hex) of
	// the lock's token, or of the names (class and token) of a shared
	// hold's holders. Never the tokens themselves, which release the lock:
	// a LockInfo may be logged.
	seen []string

	// HolderName names the holder, as its Client's WithHolderName did
	// (by default the host name, pid and program): "" when it is not held,
	// or was taken without one (by another client, or an older dlock).
	HolderName string

	// Since is when the holder obtained the lock, by the server's clock.
	// On a Redlock quorum its fence tells it, once the holder's first
	// Lock.Fence handed one out; zero until then.
	Since time.Time

	// Fence is the holder's fencing token; for a lock (Obtain, TryObtain,
	// Do) once its holder asked for it (Lock.Fence), on a Redlock quorum
	// once a quorum stores it, and 0 until then. For a key that is not held,
	// it is the last fencing token handed out, or 0 when that is no longer
	// known (the lock was not taken by dlock, or its fence expired with it).
	Fence int64

	// Waiters is how many callers wait for the lock in its queue (see
	// Obtain), counting those whose lease there still runs. On a Redlock
	// quorum waiters leave no trace in Redis and are not counted.
	Waiters int

	// Kind is what the key holds: "lock" (Obtain), "multi" (one of the
	// keys of one Lock of ObtainMulti), "semaphore" (Client.Semaphore) or
	// "rwmutex" (Client.RWMutex); "" when it is not held. Every key of a
	// "multi" holding shows the same Fingerprint and Fence.
	Kind string

	// Keys are all of the keys of a "multi" holding, this one among them,
	// sorted: the holding is one Lock over all of them. nil for the other
	// kinds, and when the holding ended meanwhile.
	Keys []string

	// Limit is a semaphore's limit, as its permits were taken with; 0 for
	// the other kinds.
	Limit int

	// Holders are the holders of a semaphore or an RW lock, one for each
	// permit or read hold, or the writer (TTL, Fingerprint and Fence above
	// are then those of the holding that expires first, and the largest
	// fence handed out). nil for a lock, which has one holder.
	Holders []HolderInfo
}

// Value returns the value the holder's lock carries (see WithValue), or ""
// if it carries none or was not taken by dlock.
func (i LockInfo) Value() string { return i.value }

// HolderInfo is one holder of a semaphore or an RW lock, in LockInfo.
type HolderInfo struct {
	// Mode is "permit" for a semaphore, "read" or "write" for an RW lock.
	Mode string

	// Fingerprint tells the holder apart, as LockInfo.Fingerprint does for
	// a lock; Lock.Fingerprint is the holder's own.
	Fingerprint string

	// TTL is its holding's remaining time to live.
	TTL time.Duration

	// Fence is the fencing token its acquire got; 0 on a Redlock quorum,
	// where only the holder's first Lock.Fence hands one out.
	Fence int64

	// HolderName and Since are as in LockInfo.
	HolderName string
	Since      time.Time

	value string // see Value
}

// Value returns the value the holder's hold carries (see WithValue), or "".
func (h HolderInfo) Value() string { return h.value }

// Inspect reports the state of the lock, semaphore or RW lock named key,
// whoever holds it, in one round trip (two for a key of a multi-key
// holding, whose other keys it reads too). It changes nothing. A key of another
// type gives ErrWrongType.
func (c *Client) Inspect(ctx context.Context, key string) (LockInfo, error) {
	if err := c.checkKey(key); err != nil {
		return LockInfo{}, err
	}
	in, err := c.e.Inspect(ctx, key)
	if err != nil {
		return LockInfo{}, err
	}
	info := LockInfo{Key: key, Held: in.Held, Fingerprint: engine.Fingerprint(in.Token), Fence: in.Fence, Waiters: int(in.Waiters), seen: in.Seen}
	if !info.Held {
		return info, nil
	}
	info.HolderName, info.value = engine.SplitToken(in.Token)
	info.Since = sinceFence(in.Fence)
	if in.Since > 0 {
		info.Since = time.UnixMicro(in.Since)
	}
	info.TTL = pttlDuration(in.PTTL)
	info.Kind, info.Limit = "lock", int(in.Limit)
	if in.Holders == nil {
		if engine.IsMultiToken(in.Token) {
			info.Kind = "multi"
			if info.Keys, err = c.e.HoldingKeys(ctx, key, in.Token); err != nil {
				return LockInfo{}, err
			}
		}
		return info, nil
	}
	info.Kind = in.Kind
	info.Holders = make([]HolderInfo, len(in.Holders))
	for i, h := range in.Holders {
		name, value := engine.SplitToken(h.Token)
		info.Holders[i] = HolderInfo{Mode: h.Mode, Fingerprint: engine.Fingerprint(h.Token), TTL: pttlDuration(h.PTTL), Fence: h.Fence,
			HolderName: name, Since: sinceFence(h.Fence), value: value}
	}
	if len(info.Holders) > 0 { // the first to expire, as TTL and Fingerprint
		info.Since = info.Holders[0].Since
	}
	return info, nil
}

// pttlDuration is a PTTL in milliseconds as a Duration: -1 (one nanosecond
// under zero) for none, as go-redis does.
func pttlDuration(ms int64) time.Duration {
	if ms < 0 {
		return -1
	}
	return time.Duration(ms) * time.Millisecond
}

// sinceFence returns when a holding whose fence is fence was obtained, by
// the server's clock: a fence is at least the server's time in
// microseconds at the acquire (see acquire.lua), and only a burst of
// millions of acquires a second puts it ahead. Zero when unknown.
func sinceFence(fence int64) time.Time {
	if fence <= 0 {
		return time.Time{}
	}
	return time.UnixMicro(fence)
}

// ForceRelease deletes the lock named key whoever holds it, and tells
// waiters it is free. It is for operators clearing a lock whose holder is
// gone for good: a holder that is still working is not told, and from then
// on shares the resource with the next holder, until its next Refresh or
// Release returns ErrNotHeld. It reports whether there was a lock to
// delete, and leaves a key of another type alone (ErrWrongType).
//
// It deletes the holder it finds, and never one that obtains the lock
// after it looked: it is Inspect, then ForceReleaseHolder of what that
// saw. Every string key is a lock to it, as a lock taken with a plain SET
// NX by another client is one: look first (Inspect) when the key may be a
// value of another kind.
func (c *Client) ForceRelease(ctx context.Context, key string) (bool, error) {
	info, err := c.Inspect(ctx, key)
	if err != nil {
		return false, err
	}
	return c.ForceReleaseHolder(ctx, info)
}

// ForceReleaseHolder is ForceRelease of the holder that info shows, as
// Inspect or Scan returned it: it deletes the lock only while that holder
// still holds it, and for a semaphore or an RW lock, the holdings info
// lists and no others. It reports whether it deleted them; false when they
// were gone already (released, expired, or deleted by someone else), or
// info shows no holder.
//
// A call that go-redis sends again, when a reply is late, deletes once: a
// copy that runs after another holder took the lock leaves it alone, and
// the answer says what the first copy did. On a Redlock quorum it deletes
// the holder on every server that answers and still holds it; a server
// that holds another token keeps it until it expires.
func (c *Client) ForceReleaseHolder(ctx context.Context, info LockInfo) (bool, error) {
	if err := c.checkKey(info.Key); err != nil {
		return false, err
	}
	if !info.Held {
		return false, nil
	}
	if len(info.seen) == 0 {
		return false, fmt.Errorf("%w: ForceReleaseHolder of %s: a LockInfo that Inspect or Scan did not return", ErrInvalidOption, engine.QuoteKey(info.Key))
	}
	return c.e.ForceRelease(ctx, info.Key, info.seen)
}

// Scan lists the locks held now whose names match pattern, on every primary
// of a Cluster, and on every node of a Redlock (each lock once). The pattern
// is a Redis glob, as for KEYS and SCAN MATCH: "*" for all, ? * [abc] [^a]
// [a-z], and a backslash to escape. Scan uses SCAN, never KEYS, so it does
// not block Redis, and like SCAN it may miss locks taken or released while
// it runs. It finds the holdings taken by dlock, not the locks of other
// clients: by their fence keys, and on one deployment also by the values of
// the string keys that match pattern, of which it reads the first and last
// few bytes (a pattern that matches few keys makes that cheap).
//
// The iteration stops at the first error, which it yields.
func (c *Client) Scan(ctx context.Context, pattern string) iter.Seq2[LockInfo, error] {
	return func(yield func(LockInfo, error) bool) {
		if err := c.usable(); err != nil {
			yield(LockInfo{}, err)
			return
		}
		for key, err := range c.e.ScanKeys(ctx, pattern) {
			if err != nil {
				yield(LockInfo{}, err)
				return
			}
			info, err := c.Inspect(ctx, key)
			if err == nil && !info.Held {
				continue // released or expired since
			}
			if !yield(info, err) || err != nil {
				return
			}
		}
	}
}

// CheckDeployment asks each Redis server behind the Client (every primary of
// a Cluster) for settings that silently weaken locks, and returns a warning
// for each one it finds, also logged through the Client's logger:
//
//   - an eviction policy other than noeviction with a memory limit: every
//     lock key has an expiry, so volatile-* and allkeys-* policies may
//     evict a held lock under memory pressure;
//   - no append-only file: a restart loses every lock, so another client can
//     take a lock its holder still believes it has, unless restarts are
//     delayed by more than the longest ttl;
//   - an append-only file not synced on every write (appendfsync other than
//     always): a crash can lose the locks of the last second.
//
// Call it once at start-up. A server whose ACL refuses CONFIG GET is not
// checked, and is no error: CheckDeployment says nothing it does not know.
// It returns an error only if a server cannot be reached.
func (c *Client) CheckDeployment(ctx context.Context) ([]string, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	return c.e.CheckDeployment(ctx)
}
