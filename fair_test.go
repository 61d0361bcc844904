package dlock_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
)

// queueKey is the name of the fair-mode queue of a key without a hash tag
// or '}' (see keys.go).
func queueKey(key string) string { return "dlock:queue{" + key + "}" }

// waitQueued waits until n waiters are in key's fair queue.
func waitQueued(t *testing.T, rdb *redis.Client, key string, n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for rdb.ZCard(context.Background(), queueKey(key)).Val() != n {
		if time.Now().After(deadline) {
			t.Fatalf("the queue of %q has %d waiters, want %d", key, rdb.ZCard(context.Background(), queueKey(key)).Val(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// Twenty fair waiters get the lock in the order they arrived.
func TestFairOrder(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	holder := mustObtain(t, e.locker, key, time.Minute)

	const n = 20
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			lock, err := e.locker.Obtain(testenv.Timeout(t, 20*time.Second), key, time.Minute, dlock.WithFair())
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			if err := lock.Release(context.Background()); err != nil {
				t.Errorf("waiter %d: %v", i, err)
			}
		})
		waitQueued(t, e.rdb, key, int64(i+1)) // arrival order is known
	}
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, got := range order {
		if got != i {
			t.Fatalf("waiters got the lock in the order %v, want 0..%d", order, n-1)
		}
	}
	if len(order) != n {
		t.Fatalf("%d of %d waiters got the lock", len(order), n)
	}
	if k := e.rdb.Exists(context.Background(), queueKey(key)).Val(); k != 0 {
		t.Errorf("the queue is left behind after every waiter got its turn")
	}
}

// TestHelperFairWaiter is not a test: TestFairWaiterKilled runs it in a
// process of its own, which waits in the fair queue until it is killed.
func TestHelperFairWaiter(t *testing.T) {
	addr := os.Getenv("DLOCK_TEST_FAIR_WAITER")
	if addr == "" {
		t.Skip("run by TestFairWaiterKilled")
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()
	_, _ = locker.Obtain(context.Background(), os.Getenv("DLOCK_TEST_KEY"), time.Minute, dlock.WithFair())
	t.Fatal("Obtain returned: the waiter should have been killed first")
}

// A fair waiter that is killed holds up the waiters behind it for at most
// FairLease (plus a renewal period of theirs): it loses its place, or, when
// a fair holder's release hands it the lock, that lock runs out.
func TestFairWaiterKilled(t *testing.T) {
	t.Parallel()
	for _, holderMode := range []struct {
		name string
		opts []dlock.ObtainOption
	}{{"plain holder", nil}, {"fair holder", []dlock.ObtainOption{dlock.WithFair()}}} {
		t.Run(holderMode.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			key := testenv.Key(t)
			holder, err := e.locker.TryObtain(context.Background(), key, time.Minute, holderMode.opts...)
			if err != nil {
				t.Fatal(err)
			}

			child := exec.Command(os.Args[0], "-test.run=^TestHelperFairWaiter$")
			child.Env = append(os.Environ(), "DLOCK_TEST_FAIR_WAITER="+e.srv.Addr(), "DLOCK_TEST_KEY="+key)
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
			waitQueued(t, e.rdb, key, 1)

			got := make(chan error, 1)
			go func() {
				lock, err := e.locker.Obtain(testenv.Timeout(t, 10*time.Second), key, time.Minute, dlock.WithFair())
				if err == nil {
					err = lock.Release(context.Background())
				}
				got <- err
			}()
			waitQueued(t, e.rdb, key, 2)

			if err := child.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = child.Wait()
			killed := time.Now()
			if err := holder.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := <-got; err != nil {
				t.Fatalf("the waiter behind the killed one: %v", err)
			}
			if took, limit := time.Since(killed), dlock.FairLease+dlock.FairLease/3+time.Second; took > limit {
				t.Errorf("the next waiter got the lock %v after the kill, want within %v", took, limit)
			}
		})
	}
}

// A fair holder's release hands the lock over to the first waiter in the
// same script: the waiter holds it with the next fence, for its ttl, and a
// waiter whose ttl is no longer than FairLease sends nothing more. The
// message goes to the waiter's Client alone: the lock's channel, which
// every waiting Client listens to, carries nothing.
func TestFairHandoff(t *testing.T) {
	t.Parallel()
	for _, ttl := range []time.Duration{time.Second, time.Minute} {
		t.Run(ttl.String(), func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			key := testenv.Key(t)
			// Load the scripts, so that none needs an EVAL after a NOSCRIPT.
			warm, err := e.locker.TryObtain(context.Background(), key+":warm", time.Minute, dlock.WithFair())
			if err != nil {
				t.Fatal(err)
			}
			_ = warm.Release(context.Background())
			holder, err := e.locker.TryObtain(context.Background(), key, time.Minute, dlock.WithFair())
			if err != nil {
				t.Fatal(err)
			}
			waiter := lockenv.Locker(t, e.srv.Client())
			got := make(chan *dlock.Lock, 1)
			go func() {
				lock, err := waiter.Obtain(testenv.Timeout(t, 10*time.Second), key, ttl, dlock.WithFair(), noPolling)
				if err != nil {
					t.Error(err)
				}
				got <- lock
			}()
			waitQueued(t, e.rdb, key, 1)
			waitSubscribed(t, e, key)
			bystander := e.rdb.Subscribe(context.Background(), "dlock:fence{"+key+"}")
			defer bystander.Close()
			if _, err := bystander.Receive(context.Background()); err != nil { // the confirmation
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
			before := evalCalls(t, e)
			if err := holder.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
			lock := <-got
			if lock == nil {
				t.FailNow()
			}
			calls := evalCalls(t, e) - before
			if want := map[bool]int64{true: 1, false: 2}[ttl <= dlock.FairLease]; calls != want {
				t.Errorf("%d scripts from the release to the waiter holding the lock, want %d", calls, want)
			}
			if lock.Fence() <= holder.Fence() || holderOf(t, e.rdb, key) != lock.Token() {
				t.Errorf("handed over: fence %d after %d, key holds %q; want a larger fence and our token", lock.Fence(), holder.Fence(), value(t, e.rdb, key))
			}
			if pttl := e.rdb.PTTL(context.Background(), key).Val(); pttl <= 0 || pttl > ttl {
				t.Errorf("PTTL after the handoff = %v, want up to the waiter's ttl %v", pttl, ttl)
			}
			if left := time.Until(lock.Until()); left <= 0 || left > ttl {
				t.Errorf("Until is %v away, want within the ttl %v", left, ttl)
			}
			if msg, err := bystander.ReceiveTimeout(context.Background(), 50*time.Millisecond); err == nil {
				t.Errorf("the lock's channel carried %v for a handoff, want nothing", msg)
			}
			if err := lock.Release(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
}

// evalCalls returns how many scripts the server ran (EVALSHA and EVAL).
func evalCalls(t *testing.T, e *env) int64 {
	t.Helper()
	info := e.rdb.Info(context.Background(), "commandstats").Val()
	var total int64
	for _, line := range strings.Split(info, "\n") {
		for _, cmd := range []string{"cmdstat_evalsha:calls=", "cmdstat_eval:calls="} {
			if rest, ok := strings.CutPrefix(line, cmd); ok {
				n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
				total += n
			}
		}
	}
	return total
}

// A fair waiter that gives up leaves the queue at once: the one behind it
// does not wait for its lease to run out.
func TestFairWaiterGivesUp(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	holder := mustObtain(t, e.locker, key, time.Minute)

	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := e.locker.Obtain(ctx, key, time.Minute, dlock.WithFair())
		first <- err
	}()
	waitQueued(t, e.rdb, key, 1)
	second := make(chan error, 1)
	go func() {
		lock, err := e.locker.Obtain(testenv.Timeout(t, 10*time.Second), key, time.Minute, dlock.WithFair())
		if err == nil {
			err = lock.Release(context.Background())
		}
		second <- err
	}()
	waitQueued(t, e.rdb, key, 2)

	cancel()
	if err := <-first; !errors.Is(err, dlock.ErrNotObtained) || !errors.Is(err, context.Canceled) {
		t.Errorf("the waiter that gave up: %v, want ErrNotObtained and Canceled", err)
	}
	waitQueued(t, e.rdb, key, 1)
	start := time.Now()
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > dlock.FairLease/2 {
		t.Errorf("the second waiter got the lock %v after the release; the first one's place held it up", took)
	}
}

// Fair and plain obtainers on one key never hold it at once.
func TestFairAndPlainMixed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	var inside, overlaps, obtained atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			locker := lockenv.Locker(t, e.srv.Client())
			var opts []dlock.ObtainOption
			if i%2 == 0 {
				opts = append(opts, dlock.WithFair())
			}
			for range 15 {
				lock, err := locker.Obtain(testenv.Timeout(t, 20*time.Second), key, 5*time.Second, opts...)
				if err != nil {
					t.Error(err)
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				obtained.Add(1)
				time.Sleep(time.Millisecond)
				inside.Add(-1)
				if err := lock.Release(context.Background()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if overlaps.Load() != 0 || obtained.Load() != 8*15 {
		t.Errorf("%d overlaps in %d holdings, want 0 in %d", overlaps.Load(), obtained.Load(), 8*15)
	}
}

// TryObtain with WithFair does not jump the queue, and does not join it.
func TestFairTryObtain(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	holder := mustObtain(t, e.locker, key, time.Minute)
	if _, err := e.locker.TryObtain(context.Background(), key, time.Minute, dlock.WithFair()); !errors.Is(err, dlock.ErrNotObtained) {
		t.Fatalf("TryObtain(WithFair) while held = %v, want ErrNotObtained", err)
	}
	if n := e.rdb.ZCard(context.Background(), queueKey(key)).Val(); n != 0 {
		t.Fatalf("TryObtain joined the queue (%d waiters)", n)
	}

	// A waiter in the queue, and the lock free for a moment: no jumping.
	waiting := make(chan *dlock.Lock, 1)
	go func() {
		lock, err := e.locker.Obtain(testenv.Timeout(t, 10*time.Second), key, time.Minute, dlock.WithFair())
		if err != nil {
			t.Error(err)
		}
		waiting <- lock
	}()
	waitQueued(t, e.rdb, key, 1)
	info, err := e.locker.Inspect(context.Background(), key)
	if err != nil || info.Waiters != 1 {
		t.Errorf("Inspect = %+v, %v; want 1 waiter", info, err)
	}
	e.rdb.Del(context.Background(), key) // the holder's key gone without a message
	if _, err := e.locker.TryObtain(context.Background(), key, time.Minute, dlock.WithFair()); !errors.Is(err, dlock.ErrNotObtained) {
		t.Errorf("TryObtain(WithFair) with a waiter queued = %v, want ErrNotObtained", err)
	}
	_ = holder
	lock := <-waiting
	if lock != nil {
		_ = lock.Release(context.Background())
	}
}

// A holder whose ACL lets it publish on lock channels only still hands the
// lock over: the message goes on the lock's channel instead of the
// waiter's own, and its release succeeds.
func TestFairHandoffRestrictedPublisher(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	if err := e.rdb.Do(ctx, "ACL", "SETUSER", "holder", "on", ">pw", "~*", "resetchannels", "&dlock:fence*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	key := testenv.Key(t)
	holderClient := lockenv.Locker(t, e.srv.Client(func(o *redis.Options) { o.Username, o.Password = "holder", "pw" }))
	holder, err := holderClient.TryObtain(ctx, key, time.Minute, dlock.WithFair())
	if err != nil {
		t.Fatal(err)
	}
	// The waiter's Client listens on its own channel already, so it joins
	// the queue naming it.
	warm, err := e.locker.Obtain(testenv.Timeout(t, 5*time.Second), key+":warm", time.Minute, dlock.WithFair())
	if err != nil {
		t.Fatal(err)
	}
	_ = warm.Release(ctx)
	got := make(chan *dlock.Lock, 1)
	go func() {
		lock, err := e.locker.Obtain(testenv.Timeout(t, 10*time.Second), key, time.Second, dlock.WithFair(), noPolling)
		if err != nil {
			t.Error(err)
		}
		got <- lock
	}()
	waitQueued(t, e.rdb, key, 1)
	released := time.Now()
	if err := holder.Release(ctx); err != nil {
		t.Fatalf("Release by a holder that may not publish on the waiter's channel: %v", err)
	}
	lock := <-got
	if lock == nil || holderOf(t, e.rdb, key) != lock.Token() {
		t.Fatal("the waiter does not hold the lock")
	}
	_ = lock.Release(ctx)
	// Not told, it would find the lock its own when it next keeps its
	// place in the queue, FairLease/3 later.
	if d := time.Since(released); d > dlock.FairLease/6 {
		t.Errorf("the waiter got the lock %v after the release, want it told at once", d)
	}
}

// Close ends the Obtain calls waiting on the Client at once, with
// ErrClosed, and its waiters leave the queue before they return, so the
// waiters of other Clients do not wait for their leases to run out.
func TestCloseEndsWaitingObtains(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	holder := mustObtain(t, e.locker, key, time.Minute)
	closing := lockenv.Locker(t, e.srv.Client())
	ended := make(chan error, 2)
	for _, opts := range [][]dlock.ObtainOption{{noPolling}, {noPolling, dlock.WithFair()}} {
		go func() {
			_, err := closing.Obtain(testenv.Timeout(t, 30*time.Second), key, time.Minute, opts...)
			ended <- err
		}()
	}
	waitQueued(t, e.rdb, key, 2) // both wait in the lock's queue
	waitSubscribed(t, e, key)
	start := time.Now()
	closing.Close()
	for range 2 {
		if err := <-ended; !errors.Is(err, dlock.ErrClosed) {
			t.Errorf("a waiting Obtain after Close: %v, want ErrClosed", err)
		}
	}
	if took := time.Since(start); took > dlock.FairLease/6 {
		t.Errorf("the waiting Obtains returned %v after Close, want at once", took)
	}
	if n := e.rdb.ZCard(context.Background(), queueKey(key)).Val(); n != 0 {
		t.Errorf("%d waiters left in the queue after Close, want the closed Client's gone", n)
	}
	_ = holder.Release(context.Background())
}
