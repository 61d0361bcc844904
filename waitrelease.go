package dlock

import (
	"context"
	"fmt"
	"time"
)

// WaitRelease waits until the holder of the lock named key, as it is when
// WaitRelease is called, holds it no more, without taking it: it returns
// nil once that holder released it, or its lock expired or was deleted (at
// once if the lock is free), also if another holder has taken it since. It
// returns an error when ctx ends first (wrapping the context's error) or
// Redis fails.
//
// It is woken by the release, as Obtain is, on the Client's Pub/Sub
// connection (on a channel of its own, which the release tells after it
// passed the lock on: waiters do not hear it), and looks at the lock again
// then (one round trip, as Inspect), and when the holder's ttl runs out; it
// does not poll. A holder whose ACL forbids it to publish on that channel
// releases without telling it. A holder
// that releases without telling, such as a plain DEL from another library,
// is seen when its ttl would have run out. Another caller may take the
// lock as soon as it is free: WaitRelease says it was free, not that it
// still is.
func (c *Client) WaitRelease(ctx context.Context, key string) error {
	return c.waitRelease(ctx, key, "")
}

// waitRelease is WaitRelease, or WaitReleaseOf when holder, a fingerprint,
// is not "".
func (c *Client) waitRelease(ctx context.Context, key, holder string) error {
	if err := c.checkKey(key); err != nil {
		return err
	}
	w := waiter{c: c, cfg: obtainConfig{backoff: defaultBackoff}, key: key}
	channel := sideKey(watchKind, key)
	listening := w.listenIfSubscribed(channel, "")
	defer w.stop()
	for n, subscribed := 1, listening; ; n++ {
		info, err := c.Inspect(ctx, key)
		if err != nil {
			return err
		}
		if !info.Held || holder != "" && info.Fingerprint != holder {
			return nil
		}
		holder = info.Fingerprint
		if !subscribed {
			subscribed = true
			if listening = w.subscribe(ctx, channel, ""); listening {
				continue // look again now that no release can be missed
			}
		}
		d := info.TTL
		if !listening || d < 0 {
			// No release messages, or a key without expiry: the Backoff.
			d = max(w.cfg.backoff.Delay(n, info.TTL), listeningMinDelay)
			if info.TTL > 0 {
				d = min(d, info.TTL)
			}
		}
		if !w.sleep(ctx, max(d, time.Millisecond)) {
			return fmt.Errorf("dlock: wait for the release of %s: %w", quoteKey(key), contextError(ctx))
		}
		if err := c.usable(); err != nil {
			return err
		}
	}
}
