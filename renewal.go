package dlock

import (
	"context"
	"fmt"
	"time"

	"github.com/dlock-go/dlock/internal/renew"
)

// renewedLock is a Lock as the Client's renewer sees it (a renew.Holding).
// It is the same memory as the Lock: the conversion costs nothing, and the
// methods the renewer needs stay out of Lock's own.
type renewedLock Lock

func (h *renewedLock) lock() *Lock                              { return (*Lock)(h) }
func (h *renewedLock) Renewal() *renew.State                    { return &h.renewal }
func (h *renewedLock) Until() time.Time                         { return h.lock().Until() }
func (h *renewedLock) TTL() time.Duration                       { return h.lock().currentTTL() }
func (h *renewedLock) SetTTL(ttl time.Duration)                 { h.ttl.Store(int64(ttl)) }
func (h *renewedLock) Extend(sent time.Time, ttl time.Duration) { h.lock().setUntil(sent, ttl) }
func (h *renewedLock) Gone() bool                               { return h.gone.Load() }

func (h *renewedLock) Cap(sent time.Time, ttl time.Duration) {
	l := h.lock()
	l.until.Store(min(l.until.Load(), l.untilOf(sent, ttl)))
}

// initRenewer sets up the Client's renewer (WithAutoRenew).
func (c *Client) initRenewer() {
	cfg := renew.Config[*renewedLock]{
		Refresh: c.refreshMany,
		Timeout: c.refreshTimeout,
		Lost: func(h *renewedLock, how string, release bool) {
			l := h.lock()
			if l.end(l.lostError(how)) {
				c.logger.Warn("dlock: lock lost", "key", quoteKey(l.key), "reason", how)
				if release {
					c.releaseInBackground(l.attempt())
				}
			}
		},
		Closed: func(h *renewedLock) { h.lock().end(errNotRenewed(h.key)) },
		Logger: c.logger,
		Owner:  c.own,
		Key:    func(h *renewedLock) string { return quoteKey(h.key) },
	}
	if c.obs != nil {
		cfg.Observe = c.observeRefreshes
	}
	c.renewer.Init(cfg)
}

// errNotRenewed ends a renewed lock when its Client closes.
func errNotRenewed(key string) error {
	return fmt.Errorf("%w: %s: the Client was closed, so nothing renews it: %w", ErrLockLost, quoteKey(key), ErrClosed)
}

// refreshMany refreshes the locks of one renewer batch, handing the
// results to record as they come (see node.refreshMany).
func (c *Client) refreshMany(ctx context.Context, locks []*renewedLock, record func([]*renewedLock, []renew.Result)) {
	if c.quorum != nil {
		record(locks, c.quorum.refreshMany(ctx, locks))
		return
	}
	c.node.refreshMany(ctx, locks, record)
}

// refreshTimeout is how long one attempt of a renewer batch whose shortest
// ttl is shortest may take: a sixth of it (on a Redlock, at least the node
// timeout). go-redis would go on retrying a dead server for seconds, on an
// old Cluster slot map, while a fresh attempt a little later finds the new
// primary.
func (c *Client) refreshTimeout(shortest time.Duration) time.Duration {
	timeout := max(shortest/6, minRefreshTimeout)
	if q := c.quorum; q != nil {
		// A Redlock round gives each node the node timeout: a batch cut
		// shorter would fail on nodes that are slow, not dead.
		timeout = max(timeout, q.timeout())
	}
	return timeout
}

// minRefreshTimeout is the least time a batch of refreshes is given.
const minRefreshTimeout = 50 * time.Millisecond
