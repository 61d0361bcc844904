package dlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
)

func TestExponentialBackoff(t *testing.T) {
	t.Parallel()
	b := dlock.ExponentialBackoff(2*time.Millisecond, 100*time.Millisecond)
	for _, tc := range []struct {
		attempt int
		ceiling time.Duration
	}{
		{1, 2 * time.Millisecond},
		{2, 4 * time.Millisecond},
		{3, 8 * time.Millisecond},
		{6, 64 * time.Millisecond},
		{7, 100 * time.Millisecond}, // 128ms, capped
		{60, 100 * time.Millisecond},
		{1 << 30, 100 * time.Millisecond},
		{0, 100 * time.Millisecond}, // nonsense attempt numbers stay in range
		{-3, 100 * time.Millisecond},
	} {
		seen := map[time.Duration]bool{}
		for range 200 {
			d := b.Delay(tc.attempt, -1)
			if d < tc.ceiling/2 || d > tc.ceiling {
				t.Fatalf("Delay(%d) = %v, want within [%v, %v]", tc.attempt, d, tc.ceiling/2, tc.ceiling)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Errorf("Delay(%d) took only %d distinct values in 200 calls: no jitter", tc.attempt, len(seen))
		}
	}
}

func TestFixedBackoff(t *testing.T) {
	t.Parallel()
	b := dlock.FixedBackoff(50 * time.Millisecond)
	for attempt := range 100 {
		if d := b.Delay(attempt, time.Hour); d < 45*time.Millisecond || d > 55*time.Millisecond {
			t.Fatalf("Delay(%d) = %v, want 50ms give or take a tenth", attempt, d)
		}
	}
}

// Obtain sleeps as the backoff says, but never past the holder's expiry:
// a crashed holder costs its remaining ttl, not the backoff's ten seconds.
func TestObtainNeverSleepsPastHolderExpiry(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	mustObtain(t, e.locker, key, 300*time.Millisecond) // never released

	within(t, 3*time.Second, "Obtain with a 10s backoff behind a 300ms holder", func() {
		_, err := e.locker.Obtain(testenv.Timeout(t, 8*time.Second), key, time.Minute,
			dlock.WithBackoff(dlock.FixedBackoff(10*time.Second)))
		if err != nil {
			t.Errorf("Obtain: %v", err)
		}
	})
}

// A custom Backoff: Obtain calls it with growing attempt numbers and the
// holder's remaining time.
func TestCustomBackoff(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	holder := mustObtain(t, e.locker, key, time.Minute)
	time.AfterFunc(100*time.Millisecond, func() { holder.Release(context.Background()) })

	rec := &recordingBackoff{}
	if _, err := e.locker.Obtain(testenv.Timeout(t, 5*time.Second), key, time.Minute, dlock.WithBackoff(rec)); err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	if len(rec.attempts) < 2 {
		t.Fatalf("Delay called %d times, want several", len(rec.attempts))
	}
	for i, a := range rec.attempts {
		if a != i+1 {
			t.Errorf("call %d had attempt %d, want %d", i, a, i+1)
		}
		if rec.ttls[i] <= 0 || rec.ttls[i] > time.Minute {
			t.Errorf("call %d had holderTTL %v, want the holder's remaining ttl", i, rec.ttls[i])
		}
	}
}

// recordingBackoff waits 10ms and records how it was called. Obtain calls it
// from one goroutine at a time.
type recordingBackoff struct {
	attempts []int
	ttls     []time.Duration
}

func (r *recordingBackoff) Delay(attempt int, holderTTL time.Duration) time.Duration {
	r.attempts = append(r.attempts, attempt)
	r.ttls = append(r.ttls, holderTTL)
	return 10 * time.Millisecond
}
