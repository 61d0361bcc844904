package dlock

import (
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/owner"
	"github.com/dlock-go/dlock/internal/redisclient"
	"github.com/dlock-go/dlock/internal/wake"
)

// NewRedlock returns a Client whose locks live on a quorum of independent
// Redis nodes, as in the Redlock algorithm: a lock is obtained when a
// majority (N/2+1) of the nodes granted it within its validity, and it is
// lost when a majority no longer holds it. The nodes must not replicate one
// another. The Client and its Locks work as with New: Obtain, TryObtain, Do,
// Release, Refresh, TTL, auto-renew, Fence and the wake-ups: a waiter
// listens on enough nodes to share one with any quorum that releases. Fair
// mode (WithFair) needs a single deployment and is refused. Between
// wake-ups, waiters retry after their Backoff's delays, which are random as
// Redlock advises, so rivals fall out of step.
//
// Each round asks all nodes at once and waits for a node at most the node
// timeout (WithNodeTimeout), so a slow or dead minority does not slow an
// acquire down. An acquire is a plain SET NX on each node (pipelined with
// the upkeep of its side key), which does not tell a waiter how long the
// holder has left: between release messages it sleeps its Backoff's
// delays. The fence
// of a Redlock lock is handed out by the quorum at the first Lock.Fence, so
// fences increase across holders whatever quorums they get. See
// docs/safety.md for what Redlock assumes about clocks and restarts.
//
// As New does, NewRedlock adds a hook to each node's client, so that a
// node that had not answered when a round ended is reported with the last
// failure its client met, if any.
//
// NewRedlock returns an error wrapping ErrInvalidOption for an empty node
// list or the same client twice, ErrNilClient for a nil one.
func NewRedlock(nodes []redis.UniversalClient, opts ...Option) (*Client, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%w: NewRedlock needs at least one node", ErrInvalidOption)
	}
	cfg, err := newClientConfig(opts)
	if err != nil {
		return nil, err
	}
	c := &Client{logger: cfg.logger, holder: holderSuffix(cfg.holderName), epoch: time.Now(), own: owner.New()}
	c.obs = newObservers(cfg.observers)
	c.initRenewer()
	seen := map[redis.UniversalClient]bool{}
	for i, rdb := range nodes {
		if redisclient.IsNil(rdb) {
			return nil, fmt.Errorf("%w: node %d of NewRedlock", ErrNilClient, i)
		}
		if seen[rdb] {
			return nil, fmt.Errorf("%w: node %d of NewRedlock is given twice", ErrInvalidOption, i)
		}
		seen[rdb] = true
	}
	for _, rdb := range nodes { // valid: newNode adds a hook to each
		n := newNode(rdb, cfg.ack, quorumBatchLanes)
		n.fenceless = true
		n.obs = c.obs
		c.nodes = append(c.nodes, n)
		c.subs = append(c.subs, wake.New(rdb, c.logger))
	}
	c.markerTTL = markerTTLOf(c.nodes)
	c.quorum = newQuorum(c.nodes, cfg.nodeTimeout, c.own)
	return c, nil
}

// QuorumError is the failure of a Redlock operation that did not get a
// quorum of answers: it says how the nodes voted, and holds each node's
// error (NodeError) for errors.Is and errors.As. An acquire that found the
// lock held is ErrNotObtained as long as the nodes that failed leave room
// for a quorum (at most N-Q of them); with more failed, it is a
// QuorumError, whatever the others said.
type QuorumError struct {
	Op      string // "acquire", "release", "refresh", "ttl", "inspect", "force-release"
	Key     string
	Nodes   int // how many nodes there are
	Quorum  int // how many must agree
	Granted int // how many did (refresh only; see the message otherwise)
	Errs    []error
	summary string
}

// Error says how the nodes voted, and why the failed ones failed.
func (e *QuorumError) Error() string {
	summary := e.summary
	if summary == "" {
		summary = fmt.Sprintf("%d of %d nodes agreed, %d needed", e.Granted, e.Nodes, e.Quorum)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "dlock: %s %s on a Redlock quorum: %s", e.Op, quoteKey(e.Key), summary)
	for i, err := range e.Errs {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(err.Error())
	}
	return b.String()
}

// Unwrap returns the errors of the nodes that failed.
func (e *QuorumError) Unwrap() []error { return e.Errs }

// error returns a QuorumError for o that says how the nodes voted. The
// nodes that had not answered are named without telling Observers: their
// calls go on, and each tells of its own failure if it fails.
func (q *quorum) error(o op, summary string, votes []vote) error {
	e := &QuorumError{Op: o.name, Key: o.key(), Nodes: len(q.nodes), Quorum: q.need, summary: summary}
	for i, v := range votes {
		switch {
		case !v.Answered:
			err := fmt.Errorf("no answer before the round ended (node timeout %v)", q.timeout())
			if v.Failing != nil {
				err = fmt.Errorf("%w; %w", err, v.Failing)
			}
			e.Errs = append(e.Errs, q.nodes[i].errorOf(o.name, o.key(), err))
		case v.Err != nil:
			e.Errs = append(e.Errs, v.Err)
		}
	}
	return e
}
