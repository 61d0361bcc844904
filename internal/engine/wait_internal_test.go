package engine

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dlock-go/dlock/internal/owner"
	"github.com/dlock-go/dlock/internal/wake"
)

// A waiter's sleep between two tries, in fake time: whatever its place in
// the queue, it ends when the holder's time to live, as its last try saw
// it, runs out, unless it ends sooner; for a waiter behind the first,
// behindFirstGrace later, so that the first, which wakes at the expiry,
// goes first. No waiter sleeps longer than a third of its lease in the
// queue, and without a known expiry a waiter behind the first sleeps that
// long. A waiter behind the first, unlike the first, does not poll on its
// Backoff: a release wakes the first only, and the queue's order stands.
func TestWaiterSleepsUntilTheHolderExpires(t *testing.T) {
	const pttl = 300 * time.Millisecond
	polling := fixedBackoff(time.Millisecond) // under listeningMinDelay
	never := fixedBackoff(time.Hour)
	for _, tc := range []struct {
		name    string
		backoff Backoff
		lease   time.Duration // 0: not in the queue (a Redlock's waiter)
		head    bool
		value   int64 // the reply's PTTL, or freeButQueued, -1 or unknownTTL
		want    time.Duration
		upTo    bool // want is the longest sleep: the Backoff's jitter
	}{
		{name: "behind the first", backoff: never, lease: waitLease, value: pttl.Milliseconds(), want: pttl + behindFirstGrace},
		{name: "behind the first, polling", backoff: polling, lease: waitLease, value: pttl.Milliseconds(), want: pttl + behindFirstGrace},
		{name: "behind the first, fair", backoff: never, lease: FairLease, value: pttl.Milliseconds(), want: pttl + behindFirstGrace},
		{name: "behind the first, expiry after a renewal", backoff: never, lease: waitLease, value: time.Minute.Milliseconds(), want: waitLease / 3},
		{name: "behind the first, no expiry", backoff: never, lease: waitLease, value: -1, want: waitLease / 3},
		{name: "behind the first, free but queued", backoff: never, lease: FairLease, value: freeButQueued, want: FairLease / 3},
		{name: "first", backoff: never, lease: waitLease, head: true, value: pttl.Milliseconds(), want: pttl},
		{name: "first, polling", backoff: polling, lease: waitLease, head: true, value: pttl.Milliseconds(), want: listeningMinDelay},
		{name: "first, no expiry", backoff: never, lease: waitLease, head: true, value: -1, want: waitLease / 3},
		{name: "redlock", backoff: never, value: pttl.Milliseconds(), want: pttl},
		{name: "redlock, unknown expiry", backoff: never, value: unknownTTL, want: time.Hour + time.Hour/10, upTo: true},
		{name: "expired", backoff: never, lease: waitLease, head: true, value: 0, want: 0},
		{name: "expired, behind the first", backoff: never, lease: waitLease, value: 0, want: behindFirstGrace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := &waiter{
					e:       &Engine{own: owner.New()},
					cfg:     Config{Backoff: tc.backoff},
					watches: []*wake.Watch{nil}, // it listens: only its length counts here
					wake:    make(chan struct{}, 1),
				}
				a := attempt{lease: tc.lease}
				r := reply{code: held, value: tc.value, head: tc.head}
				start := time.Now()
				if !w.sleep(context.Background(), w.delay(1, a, r)) {
					t.Fatal("the sleep ended with its context")
				}
				slept := time.Since(start)
				if slept > tc.want || !tc.upTo && slept < tc.want {
					t.Errorf("slept %v, want %v", slept, tc.want)
				}
				w.timer.Stop()
			})
		})
	}
}
