package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/dlock-go/dlock/internal/door"
)

// The acquire of a holding in one attempt, and the Hold it makes.

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
	fence := r.value
	if a.kind.fenceLater || r.granted != nil {
		fence = 0 // handed out at the first Fence; r.value is the time it was taken
	}
	h.init(e, a, fence, sent)
	if a.kind.fenceLater && r.granted == nil {
		h.since = r.value // its value in Redis is "token:since"
	}
	if r.granted != nil {
		h.raise = &fenceRaise{q: e.quorum, kind: a.kind, keys: a.keys, token: a.arg, granted: r.granted}
	}
	h.renewed, h.record = cfg.AutoRenew, cfg.Record
	if cfg.AutoRenew {
		h.renewKeys = h.kind.scriptKeys(h.keys)
		if h.marker != "" {
			h.renewKeys = append(append(make([]string, 0, len(h.renewKeys)+1), h.renewKeys...), h.marker)
		}
	}
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

// newAttempt returns the first attempt of an acquire of kind, with the
// options of cfg and a semaphore's limit (nil for other kinds).
func (e *Engine) newAttempt(kind *Kind, keys []string, ttl time.Duration, limit any, cfg Config) attempt {
	a := attempt{kind: kind, keys: keys, ttl: ttl, fair: cfg.Fair, limit: limit, rel: e.releaseSetting(), record: cfg.Record}
	a.newToken(cfg)
	if cfg.Guard != "" {
		a.guard(cfg.Guard)
	}
	return a
}
