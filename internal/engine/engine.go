// Package engine is the machinery beneath package dlock's Client: the
// operations and their Lua scripts, the single node with its batching and
// its failures, the Redlock quorum with its votes and its fence, waiting
// and renewal. It never imports package dlock. It reports what happens
// through Hooks, which dlock's observer code implements, and it makes the
// holdings that dlock's Locks wrap (see Hold).
package engine

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/door"
	"github.com/dlock-go/dlock/internal/owner"
	"github.com/dlock-go/dlock/internal/renew"
	"github.com/dlock-go/dlock/internal/wake"
)

// Engine obtains and keeps holdings on one Redis deployment, or on a
// Redlock quorum of independent nodes. It is what a dlock.Client holds.
type Engine struct {
	node   *node   // the deployment of a single-deployment Engine; nil for Redlock
	quorum *quorum // the nodes of a Redlock Engine; nil otherwise
	nodes  []*node // every node: node, or the quorum's
	logger *slog.Logger
	epoch  time.Time // monotonic origin of the validity deadlines
	hooks  Hooks     // nil without an observer
	// newHold returns the Hold inside a new holding of the package above
	// (a dlock.Lock), so that a holding is one allocation
	newHold func() *Hold

	renewer renew.Renewer[*renewedHold] // of the holdings renewed automatically (see renewedHold)
	subs    []*wake.Subscriber          // the release messages that wake waiters, one per node

	own *owner.Group // the goroutines of this Engine, which Close stops and waits for

	// markerTTL is how long a release marker lives, boxed milliseconds:
	// longer than the Redis clients go on sending copies of one command
	// (see resendWindow and release.lua)
	markerTTL any
}

// Options configure an Engine.
type Options struct {
	Logger      *slog.Logger
	Ack         ReplicaAck    // acquires wait for replicas; zero: no WAIT
	NodeTimeout time.Duration // a Redlock round's wait for each node
	Hooks       Hooks         // nil: nothing is told
	// NewHold returns the Hold inside a new holding; nil: a Hold alone
	NewHold func() *Hold
}

// ReplicaAck is what WithReplicaAck asks for; Replicas 0 means nothing.
type ReplicaAck struct {
	Replicas int
	Timeout  time.Duration
}

func newEngine(o Options) *Engine {
	e := &Engine{logger: o.Logger, epoch: time.Now(), hooks: o.Hooks, newHold: o.NewHold, own: owner.New()}
	if e.newHold == nil {
		e.newHold = func() *Hold { return new(Hold) }
	}
	e.initRenewer()
	return e
}

// New returns an Engine on one deployment, rdb, which must not be nil.
func New(rdb redis.UniversalClient, o Options) *Engine {
	e := newEngine(o)
	e.node = newNode(rdb, o.Ack, batchLanes, e.hooks)
	e.nodes = []*node{e.node}
	e.markerTTL = markerTTLOf(e.nodes)
	e.subs = []*wake.Subscriber{wake.New(rdb, e.logger)}
	return e
}

// NewQuorum returns an Engine on a Redlock quorum of nodes, which must be
// at least one, none nil, none twice.
func NewQuorum(nodes []redis.UniversalClient, o Options) *Engine {
	e := newEngine(o)
	for _, rdb := range nodes {
		n := newNode(rdb, o.Ack, quorumBatchLanes, e.hooks)
		n.fenceless = true
		e.nodes = append(e.nodes, n)
		e.subs = append(e.subs, wake.New(rdb, e.logger))
	}
	e.markerTTL = markerTTLOf(e.nodes)
	e.quorum = newQuorum(e.nodes, o.NodeTimeout, e.own)
	return e
}

// Close waits for the Engine's background work to finish and makes later
// calls return ErrClosed; see dlock.Client.Close.
func (e *Engine) Close() {
	if e.own.Close() {
		for _, s := range e.subs {
			s.Close()
		}
	}
	e.own.Wait()
}

// Usable returns ErrClosed once the Engine is closed, else nil.
func (e *Engine) Usable() error {
	if e.own.Closed() {
		return ErrClosed
	}
	return nil
}

// Redlock reports whether the Engine is on a Redlock quorum.
func (e *Engine) Redlock() bool { return e.quorum != nil }

// Redis returns the client of a single deployment; nil on a Redlock.
func (e *Engine) Redis() redis.UniversalClient {
	if e.node == nil {
		return nil
	}
	return e.node.rdb
}

// Logger returns where the Engine logs.
func (e *Engine) Logger() *slog.Logger { return e.logger }

// Deployment names the deployment for the events of its calls; "" for a
// Redlock.
func (e *Engine) Deployment() string {
	if e.node != nil {
		return e.node.name
	}
	return ""
}

// Seen is what an acquire that waits notes for its observer. The waiter
// keeps it up to date whether or not one is set: a few stores, no call.
type Seen struct {
	Attempts  int
	Woken     bool      // the last sleep ended by a release message
	Handoff   bool      // a release handed the hold over
	WaitStart time.Time // Hooks.WaitStart was told; zero otherwise
}

// Acquire obtains a hold of kind on the name keys[0] (Keys or HoldKeys),
// for every kind and every entry point: waiting if wait (and not
// cfg.NoWait), else in one attempt. limit is a semaphore's, boxed; nil for
// other kinds. cfg has been checked (see Check).
func (e *Engine) Acquire(ctx context.Context, kind *Kind, keys []string, ttl time.Duration, limit any, wait bool, cfg Config) (*Hold, Seen, error) {
	if !wait || cfg.NoWait {
		h, _, err := e.try(ctx, e.newAttempt(kind, keys, ttl, limit, cfg), cfg)
		return h, Seen{Attempts: 1}, err
	}
	w := waiter{e: e, kind: kind, limit: limit, cfg: cfg, key: keys[0], keys: keys, ttl: ttl}
	h, err := w.obtain(ctx)
	return h, w.seen, err
}

// try makes one attempt, a. When another holder has the hold, the error
// wraps ErrNotObtained, and the reply says what the holder has left (value,
// negative if unknown) and in fair mode whether the caller is first in the
// queue.
func (e *Engine) try(ctx context.Context, a attempt, cfg Config) (h *Hold, r reply, err error) {
	key := a.keys[0]
	sent := time.Now()
	o := a.op()
	a.keyArgs = a.boxedKeys(o) // for the Hold's calls, and for the take-back
	r, err = e.call(ctx, o)
	if err != nil {
		if replyLost(err) {
			// The script may have run before the reply was lost.
			e.releaseInBackground(a)
		}
		return nil, r, err
	}
	switch r.code {
	case acquired:
		h, err = e.hold(a, r, sent, cfg)
		return h, r, err
	case held:
		holderTTL := time.Duration(r.value) * time.Millisecond
		switch r.value {
		case freeButQueued:
			return nil, r, fmt.Errorf("%w: %s is free, but earlier waiters go first", ErrNotObtained, QuoteKey(key))
		case unknownTTL:
			return nil, r, fmt.Errorf("%w: %s is held by another holder", ErrNotObtained, QuoteKey(key))
		}
		return nil, r, fmt.Errorf("%w: %s is held by another holder%s", ErrNotObtained, QuoteKey(key), expiresIn(holderTTL))
	case wrongType:
		return nil, r, a.kind.wrongTypeError(key)
	case guarded:
		return nil, r, &door.GuardError{Key: a.keys[len(a.keys)-1], Value: r.token}
	case limitMismatch:
		return nil, r, fmt.Errorf("%w: %s: its permits were taken with a limit of %d, not %v", ErrLimitMismatch, QuoteKey(key), r.value, a.limit)
	}
	return nil, r, fmt.Errorf("dlock: acquire %s: unexpected reply code %d", QuoteKey(key), r.code)
}

// hold returns the Hold that the acquire a, sent at sent, obtained with the
// reply r, renewed if cfg says so.
func (e *Engine) hold(a attempt, r reply, sent time.Time, cfg Config) (*Hold, error) {
	h := e.newHold()
	h.init(e, a, r.value, sent)
	h.raise = r.raise
	h.renewed, h.record = cfg.AutoRenew, cfg.Record
	h.stragglers = r.stragglers
	if e.hooks != nil {
		e.hooks.Held(h)
	}
	if cfg.AutoRenew && !e.renewer.Add((*renewedHold)(h)) {
		return nil, ErrClosed // closed meanwhile; the hold expires
	}
	return h, nil
}

func expiresIn(d time.Duration) string {
	if d < 0 {
		return " with no expiry"
	}
	return " for " + d.String() + " more"
}

// replyLost reports whether err leaves unknown whether a script ran: Redis
// failed to answer (a network error, a timeout). It is false when the
// context ended first, after which call itself cleans up, and when the
// command never left the client: no connection could be had.
func replyLost(err error) bool {
	var nodeErr *NodeError
	var noAnswer *noAnswerError
	var netErr *net.OpError
	var quorumErr *QuorumError
	switch {
	case !errors.As(err, &nodeErr), errors.As(err, &noAnswer), errors.As(err, &quorumErr):
		return false // a quorum cleans up after itself
	case errors.As(err, &netErr) && netErr.Op == "dial",
		errors.Is(err, redis.ErrClosed),
		errors.Is(err, redis.ErrPoolTimeout),
		errors.Is(err, redis.ErrPoolExhausted):
		return false // never sent
	}
	return true
}

// releaseInBackground runs releaseLate in a goroutine the Engine tracks.
func (e *Engine) releaseInBackground(acquire attempt) {
	e.own.Go(func() { e.releaseLate(acquire) })
}

// releaseLate releases a hold whose acquire may have landed although its
// caller did not get it (the reply was lost, or the caller's context ended
// first), a lost hold that Redis may still keep, or a fair waiter's place.
// It runs in a goroutine the Engine tracks. The release only deletes the
// key if it still holds the token, so it never touches anyone else's lock.
// Trying for longer than the hold lives is pointless, so its ttl bounds it.
// acquire is the acquire to undo.
//
// A record's acquire (AsRecord) is not undone: its caller was told that the
// outcome is unknown (ErrOutcomeUnknown), and a record that landed is what
// it asked for (a job's done record, say): deleting it would undo finished
// work. It expires with its ttl.
func (e *Engine) releaseLate(acquire attempt) {
	if acquire.record {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), acquire.ttl)
	defer cancel()
	if _, err := e.run(ctx, acquire.undo(false)); err != nil {
		e.logger.Warn("dlock: could not release a lock in the background; it expires by itself",
			"key", QuoteKey(acquire.keys[0]), "ttl", acquire.ttl, "error", err)
	}
}

// NewToken returns 128 random bits from crypto/rand, URL-safe base64.
func NewToken() string { return newTokenWith("", "") }

// newTokenWith returns NewToken followed by a and b, in one allocation.
func newTokenWith(a, b string) string {
	var random [16]byte
	_, _ = rand.Read(random[:]) // never fails: it crashes the program instead
	var encoded [RandomTokenLen]byte
	base64.RawURLEncoding.Encode(encoded[:], random[:])
	var t strings.Builder
	t.Grow(RandomTokenLen + len(a) + len(b))
	t.Write(encoded[:])
	t.WriteString(a)
	t.WriteString(b)
	return t.String()
}
