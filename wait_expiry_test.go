package dlock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/observe"
)

// expiryGapBound is how long after the holder's expiry, in the server's
// time, a waiter may get the lock in the tests below: a timer, 20ms of
// grace for the first of the queue, and a round trip take tens of
// milliseconds, and half a second leaves room for a machine busy with
// -race on two cores. A waiter that sleeps until it renews its place in the
// queue, 2s after its try, instead of the expiry, 1s after it, is later.
const expiryGapBound = 500 * time.Millisecond

// serverExpiry returns when the lock named key expires, in microseconds of
// the server's clock (the unit of fences): its PEXPIRETIME, the time Redis
// keeps it until, which a fence taken after it cannot precede.
func serverExpiry(t *testing.T, rdb *redis.Client, key string) int64 {
	t.Helper()
	ms, err := rdb.Do(context.Background(), "PEXPIRETIME", key).Int64()
	if err != nil {
		t.Fatal(err)
	}
	if ms < 0 {
		t.Fatalf("PEXPIRETIME %q: %d, want a lock with a time to live", key, ms)
	}
	return ms * 1000
}

// checkObtainedAfterExpiry fails the test unless lock, which it releases,
// has a fence (the server's time when it was set, in microseconds) at most
// expiryGapBound after expiry.
func checkObtainedAfterExpiry(t *testing.T, lock *dlock.Lock, expiry int64) {
	t.Helper()
	if lock == nil {
		t.Fatal("the waiter did not get the lock")
	}
	gap := time.Duration(lock.Fence()-expiry) * time.Microsecond
	t.Logf("the waiter got the lock %v after the holder's expiry", gap)
	if gap < 0 {
		t.Errorf("the waiter got the lock %v before the holder's expiry", -gap)
	}
	if gap > expiryGapBound {
		t.Errorf("the waiter got the lock %v after the holder's expiry, want it woken by the expiry", gap)
	}
	if err := lock.Release(context.Background()); err != nil {
		t.Error(err)
	}
}

// obtainLock starts Obtain in a goroutine and returns a channel that gets
// the lock, or nil if Obtain failed.
func obtainLock(t *testing.T, locker *dlock.Client, key string, ttl time.Duration, opts ...dlock.ObtainOption) <-chan *dlock.Lock {
	got := make(chan *dlock.Lock, 1)
	go func() {
		lock, err := locker.Obtain(testenv.Timeout(t, 10*time.Second), key, ttl, opts...)
		if err != nil {
			t.Error(err)
		}
		got <- lock
	}()
	return got
}

// freezeScripts is a go-redis hook that, once frozen is closed, blocks every
// script call until its context ends or thaw is closed: a Client whose
// process or connection froze.
type freezeScripts struct{ frozen, thaw chan struct{} }

func (freezeScripts) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h freezeScripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		select {
		case <-h.frozen:
			if isScript(cmd) {
				select {
				case <-h.thaw:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		default:
		}
		return next(ctx, cmd)
	}
}
func (freezeScripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A waiter behind one whose Client froze, first in the queue, gets the
// lock when the holder's time runs out: the first never tries again, and
// nothing else tells the second of the expiry.
func TestWaiterBehindAFrozenOneWakesOnExpiry(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	const ttl = time.Second
	// A holder that never releases, as one that froze; first for long
	// enough that the first waiter joins the queue, whatever the machine.
	if err := e.rdb.Set(context.Background(), key, "frozen holder", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	frozenRdb := e.srv.Client()
	hook := freezeScripts{frozen: make(chan struct{}), thaw: make(chan struct{})}
	frozenRdb.AddHook(hook)
	frozen := lockenv.Locker(t, frozenRdb)
	t.Cleanup(func() { close(hook.thaw) }) // before Close, which waits for the frozen call
	go func() { _, _ = frozen.Obtain(testenv.Timeout(t, 10*time.Second), key, ttl, noPolling) }()
	waitQueued(t, e.rdb, key, 1)
	close(hook.frozen) // its next try never reaches Redis

	// Another holder now, as silently (no release message), for ttl: the
	// second waiter sees its time to live when it joins the queue.
	if err := e.rdb.Set(context.Background(), key, "frozen holder 2", ttl).Err(); err != nil {
		t.Fatal(err)
	}
	expiry := serverExpiry(t, e.rdb, key)
	var attempts atomic.Int64
	second := lockenv.Locker(t, e.srv.Client(), dlock.WithObserver(observe.ObserverFunc(func(ev observe.Event) {
		if ev.Type == observe.EventObtain {
			attempts.Store(int64(ev.Attempts))
		}
	})))
	lock := <-obtainLock(t, second, key, ttl, noPolling)
	if lock != nil && attempts.Load() == 1 {
		// It joined no queue: the holder had expired already (a machine too
		// busy for the case to arise).
		t.Log("the second waiter found the lock free at its first attempt")
		_ = lock.Release(context.Background())
		return
	}
	checkObtainedAfterExpiry(t, lock, expiry)
}

// A waiter behind one that a release handed the lock over to, and that
// froze with it (it never releases), gets the lock when the handover's time
// runs out. The handover also makes the second the first of the queue, and
// nothing tells it so.
func TestWaiterBehindAFrozenHandoverWakesOnExpiry(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	const ttl = time.Second // shorter than FairLease: the handover needs no round trip
	holder := mustObtain(t, e.locker, key, ttl)

	handedOver := obtainLock(t, lockenv.Locker(t, e.srv.Client()), key, ttl, dlock.WithFair(), noPolling)
	waitQueued(t, e.rdb, key, 1)
	got := obtainLock(t, lockenv.Locker(t, e.srv.Client()), key, ttl, noPolling)
	waitQueued(t, e.rdb, key, 2)
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	frozenLock := <-handedOver // it freezes with it: no release, no renewal
	if frozenLock == nil {
		t.Fatal("the first waiter did not get the lock")
	}
	expiry := serverExpiry(t, e.rdb, key)
	checkObtainedAfterExpiry(t, <-got, expiry)
}

// The plainest case: the first waiter, woken by a release, takes the lock
// and freezes with it. The waiter behind it is now first, and nothing tells
// it so; it gets the lock when the frozen one's time runs out.
func TestWaiterBehindAFrozenHolderWakesOnExpiry(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	const ttl = time.Second
	holder := mustObtain(t, e.locker, key, ttl)

	first := obtainLock(t, lockenv.Locker(t, e.srv.Client()), key, ttl, noPolling)
	waitQueued(t, e.rdb, key, 1)
	got := obtainLock(t, lockenv.Locker(t, e.srv.Client()), key, ttl, noPolling)
	waitQueued(t, e.rdb, key, 2)
	if err := holder.Release(context.Background()); err != nil { // wakes the first alone
		t.Fatal(err)
	}
	select {
	case frozenLock := <-first: // it freezes with it: no release, no renewal
		if frozenLock == nil {
			t.Fatal("the first waiter did not get the lock")
		}
	case lock := <-got:
		// The second took the lock at the holder's expiry, before the
		// first, woken, tried (a machine too busy for the case to arise):
		// let the first have it, and end.
		t.Log("the first waiter did not try within the holder's ttl")
		if lock != nil {
			_ = lock.Release(context.Background())
		}
		if lock := <-first; lock != nil {
			_ = lock.Release(context.Background())
		}
		return
	}
	expiry := serverExpiry(t, e.rdb, key)
	checkObtainedAfterExpiry(t, <-got, expiry)
}

// Redis paused (SIGSTOP) past the holder's expiry, while three waiters
// wait: each wakes at the expiry, first in the queue or not, and its try
// hangs. With go-redis's default options (MaxRetries 3, ReadTimeout 5s) it
// is sent again on another connection while Redis sleeps, and every copy
// runs once it is back; still, the waiters get the lock one at a time,
// and leave no lock and no queue behind. Without retries a try fails after
// its read timeout, and Obtain with it; no lock is left behind, beyond the
// ttl of one that such a try took.
func TestWaitersWakeOnExpiryWhileRedisPaused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		options func(*redis.Options)
	}{
		{"defaults", func(*redis.Options) {}},
		{"no retries", func(o *redis.Options) { o.MaxRetries = -1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			key := testenv.Key(t)
			const ttl = time.Second
			holder := mustObtain(t, e.locker, key, 3*ttl/2) // it never releases

			var holders, overlaps atomic.Int32
			done := make(chan error, 3)
			for range 3 {
				locker := lockenv.Locker(t, e.srv.Client(tc.options))
				go func() {
					lock, err := locker.Obtain(testenv.Timeout(t, 30*time.Second), key, ttl, noPolling)
					if err == nil {
						if holders.Add(1) > 1 {
							overlaps.Add(1)
						}
						time.Sleep(10 * time.Millisecond)
						holders.Add(-1)
						err = lock.Release(context.Background())
					}
					done <- err
				}()
			}
			// All three in the queue, unless the holder's lock ran out first
			// (a machine too busy for the case to arise).
			testenv.Eventually(t, 5*time.Second, "three waiters queued", func() bool {
				return e.rdb.ZCard(context.Background(), queueKey(key)).Val() == 3 || holderOf(t, e.rdb, key) != holder.Token()
			})
			e.srv.Pause()
			time.Sleep(7 * time.Second) // past the expiry, and two read timeouts
			e.srv.Resume()
			obtained := 0
			for range 3 {
				err := <-done
				switch {
				case err == nil:
					obtained++
				case tc.name == "defaults":
					t.Errorf("a waiter: %v", err)
				default:
					t.Logf("a waiter: %v", err)
				}
			}
			t.Logf("%d of 3 waiters got the lock", obtained)
			if n := overlaps.Load(); n > 0 {
				t.Errorf("%d times two waiters held the lock at once", n)
			}
			testenv.Eventually(t, 5*time.Second, "no lock left", func() bool { return value(t, e.rdb, key) == "" })
			if tc.name == "defaults" {
				testenv.Eventually(t, 5*time.Second, "no queue left", func() bool {
					return e.rdb.ZCard(context.Background(), queueKey(key)).Val() == 0
				})
			}
			// Without retries, a waiter whose try's reply was lost leaves the
			// queue in the background, for at most its ttl: with Redis
			// paused for longer, its place is left to lapse with its lease.
		})
	}
}
