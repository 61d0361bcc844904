// Package engine is the machinery beneath package dlock's Client: the
// operations and their Lua scripts, the single node with its batching and
// its failures, the Redlock quorum with its votes and its fence, waiting
// and renewal. It never imports package dlock. It reports what happens
// through Hooks, which dlock's observer code implements, and it makes the
// holdings that dlock's Locks wrap (see Hold).
package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/owner"
	"github.com/dlock-go/dlock/internal/renew"
	"github.com/dlock-go/dlock/internal/wake"
)

// Engine obtains and keeps holdings on one Redis deployment, or on a
// Redlock quorum of independent nodes. It is what a dlock.Client holds.
type Engine struct {
	node   *node   // the deployment of a single-deployment Engine; nil for Redlock
	quorum *quorum // the nodes of a Redlock Engine; nil otherwise
	// cluster: node is a Redis Cluster, where a script of a multi-key
	// holding runs once per slot of its keys (see multi_slots.go)
	cluster bool
	nodes   []*node // every node: node, or the quorum's
	logger  *slog.Logger
	epoch   time.Time // monotonic origin of the validity deadlines
	hooks   Hooks     // nil without an observer
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
	e.node = newNode(rdb, o.Ack, batchLanes, e.nodeError())
	_, e.cluster = rdb.(*redis.ClusterClient)
	e.nodes = []*node{e.node}
	e.markerTTL = markerTTLOf(rdb)
	e.subs = []*wake.Subscriber{wake.New(rdb, e.logger)}
	return e
}

// NewQuorum returns an Engine on a Redlock quorum of nodes, which must be
// at least one, none nil, none twice.
func NewQuorum(nodes []redis.UniversalClient, o Options) *Engine {
	e := newEngine(o)
	for _, rdb := range nodes {
		n := newNode(rdb, o.Ack, quorumBatchLanes, e.nodeError())
		n.fenceless = true
		e.nodes = append(e.nodes, n)
		e.subs = append(e.subs, wake.New(rdb, e.logger))
	}
	e.markerTTL = markerTTLOf(nodes...)
	e.quorum = newQuorum(e.nodes, o.NodeTimeout, e.own)
	return e
}

// nodeError returns what the Engine's nodes tell of their errors: the
// hooks' NodeError, or nil without hooks.
func (e *Engine) nodeError() func(*NodeError) {
	if e.hooks == nil {
		return nil
	}
	return e.hooks.NodeError
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

// releaseSetting returns this Engine's.
func (e *Engine) releaseSetting() releaseSetting {
	r := releaseSetting{counted: "", markerTTL: e.markerTTL}
	if e.node != nil {
		r.counted = e.node.counted
	}
	return r
}

// Keys returns the KEYS of the scripts on the lock named key: a Redlock
// node has no queue of waiters.
func (e *Engine) Keys(key string) []string {
	if e.quorum != nil {
		return lockKeys(key)
	}
	return queueKeys(key)
}

// Hooks are told what the Engine does where no caller sees it: dlock's
// observer code implements them. An Engine without Hooks (nil) calls none
// and allocates nothing for them. Each method is called from the goroutine
// that did the work, and must not block.
type Hooks interface {
	// Held is told of a holding just obtained, before anything else can
	// see it (the renewer included).
	Held(h *Hold)
	// WaitStart is told that an acquire of kind on key starts to wait.
	WaitStart(ctx context.Context, kind *Kind, key string, record bool)
	// Refreshed is told how an automatic refresh of h went: err is nil
	// when it held, else why not.
	Refreshed(h *Hold, err error)
	// Ended is told once when h ends, released or lost, with the error Err
	// returns from then on.
	Ended(h *Hold, err error)
	// RecordEnded is told when a record (AsRecord) ran out, as its holder
	// meant.
	RecordEnded(h *Hold)
	// NodeError is told of a failure of a node, unless it only says that
	// the caller's context ended first.
	NodeError(e *NodeError)
}
