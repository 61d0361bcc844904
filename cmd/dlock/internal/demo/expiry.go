package demo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/redis/go-redis/v9"
)

// A holder that stops longer than its lock lives (a GC pause, a
// slow call): the lock expires, another holder takes it, and the first one
// comes back not knowing. Its Release must not delete the new holder's lock,
// and the resource must refuse its late write, which fencing tokens allow.
const (
	pauseTTL   = 100 * time.Millisecond
	pauseFor   = 200 * time.Millisecond // twice the ttl
	pauseTTLB  = 10 * time.Second       // the second holder's ttl
	pauseWaitB = 2 * time.Second        // the longest the second holder waits
)

// fencedStore stands for the resource a lock protects: it refuses a write
// whose fence is lower than one it has already accepted.
type fencedStore struct{ highest int64 }

func (s *fencedStore) write(fence int64) (accepted bool) {
	if fence < s.highest {
		return false
	}
	s.highest = fence
	return true
}

func expiredHolder(ctx context.Context, d *env) result {
	key := d.key("report:monthly")
	a, err := d.locker.TryObtain(ctx, key, pauseTTL)
	if err != nil {
		return failed(err)
	}
	if err := sleep(ctx, pauseFor); err != nil { // A pauses
		return failed(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, pauseWaitB)
	defer cancel()
	b, err := d.locker.Obtain(waitCtx, key, pauseTTLB)
	if err != nil {
		return failed(fmt.Errorf("holder B could not take the lock %v after A took it for %v: %w", pauseFor, pauseTTL, err))
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = b.Release(ctx) // or it expires in pauseTTLB
	}()

	var store fencedStore
	bWrote := store.write(b.Fence())
	aWrote := store.write(a.Fence()) // A is back and carries on
	aReleased := a.Release(ctx)
	bTTL, err := b.TTL(ctx) // ErrNotHeld here is a broken invariant, checked below
	if err != nil && !errors.Is(err, dlock.ErrNotHeld) {
		return failed(fmt.Errorf("holder B's lock after A's release: %w", err))
	}
	holder, err := d.rdb.Get(ctx, key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return failed(err)
	}

	happened := fmt.Sprintf("A paused %v, past its %v ttl; B took over\nA's release: %s; A's late write: %s",
		pauseFor, pauseTTL, releaseOutcome(aReleased), writeOutcome(aWrote))
	var problems []string
	if !errors.Is(aReleased, dlock.ErrNotHeld) {
		problems = append(problems, fmt.Sprintf("A's release returned %v, want ErrNotHeld", aReleased))
	}
	if bTTL <= 0 || holder != b.Token() {
		problems = append(problems, fmt.Sprintf("B's lock was touched (ttl %v, held by B: %t)", bTTL, holder == b.Token()))
	}
	if a.Fence() >= b.Fence() || aWrote || !bWrote {
		problems = append(problems, fmt.Sprintf("fence of A %d not below B's %d", a.Fence(), b.Fence()))
	}
	return verdict(happened, "B's lock intact, fence A < B", problems)
}

func releaseOutcome(err error) string {
	switch {
	case err == nil:
		return "deleted the key"
	case errors.Is(err, dlock.ErrNotHeld):
		return "not held"
	}
	return err.Error()
}

func writeOutcome(accepted bool) string {
	if accepted {
		return "accepted"
	}
	return "refused"
}
