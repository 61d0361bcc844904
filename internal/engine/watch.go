package engine

import (
	"context"
	"fmt"
	"time"
)

// WaitRelease: a wait for a holder to let go, without taking its place.

// WaitRelease waits until the holder of the name key, as it is when
// WaitRelease is called, holds it no more (see dlock.Client.WaitRelease);
// with holder, a fingerprint, not "": until that holder holds it no more.
func (e *Engine) WaitRelease(ctx context.Context, key, holder string, backoff Backoff) error {
	if err := e.CheckKey(key); err != nil {
		return err
	}
	w := waiter{e: e, cfg: Config{Backoff: backoff}, key: key}
	channel := sideKey(watchKind, key)
	listening := w.listenIfSubscribed(channel, "")
	defer w.stop()
	for n, subscribed := 1, listening; ; n++ {
		// Once it listens, it marks the lock as waited for: only then does
		// the release tell the watch channel (see holder.lua).
		in, err := e.inspect(ctx, key, listening)
		if err != nil {
			return err
		}
		if !in.Held || holder != "" && Fingerprint(in.Token) != holder {
			return nil
		}
		holder = Fingerprint(in.Token)
		if !subscribed {
			subscribed = true
			if listening = w.subscribe(ctx, channel, ""); listening {
				continue // look again now that no release can be missed
			}
		}
		ttl := pttlDuration(in.PTTL)
		d := ttl
		if !listening || d < 0 {
			// No release messages, or a key without expiry: the Backoff.
			d = max(w.cfg.Backoff.Delay(n, ttl), listeningMinDelay)
			if ttl > 0 {
				d = min(d, ttl)
			}
		}
		if !w.sleep(ctx, max(d, time.Millisecond)) {
			return fmt.Errorf("dlock: wait for the release of %s: %w", QuoteKey(key), contextError(ctx))
		}
		if err := e.Usable(); err != nil {
			return err
		}
	}
}
