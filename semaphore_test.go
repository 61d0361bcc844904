package dlock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
)

func TestSemaphoreAcquireAndRelease(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	sem := e.locker.Semaphore(testenv.Key(t), 3)

	var permits []*dlock.Lock
	var last int64
	for i := range 3 {
		p, err := sem.TryAcquire(ctx, time.Minute)
		if err != nil {
			t.Fatalf("TryAcquire %d: %v", i+1, err)
		}
		if p.Fence() <= last {
			t.Errorf("permit %d has fence %d, not above the last one's %d", i+1, p.Fence(), last)
		}
		last = p.Fence()
		permits = append(permits, p)
	}
	if _, err := sem.TryAcquire(ctx, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
		t.Fatalf("a 4th TryAcquire of 3 permits = %v, want ErrNotObtained", err)
	}

	info, err := e.locker.Inspect(ctx, sem.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !info.Held || info.Kind != "semaphore" || info.Limit != 3 || len(info.Holders) != 3 {
		t.Fatalf("Inspect = %+v, want a semaphore of limit 3 with 3 holders", info)
	}
	fingerprints := map[string]bool{}
	for _, h := range info.Holders {
		if h.Mode != "permit" || h.TTL <= 0 || h.TTL > time.Minute || h.Fence <= 0 {
			t.Errorf("holder %+v: want a permit with a ttl and a fence", h)
		}
		fingerprints[h.Fingerprint] = true
	}
	for _, p := range permits {
		if !fingerprints[p.Fingerprint()] {
			t.Errorf("Inspect does not show permit %s", p.Fingerprint())
		}
	}

	if err := permits[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := permits[0].Release(ctx); !errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("a second Release = %v, want ErrNotHeld", err)
	}
	p, err := sem.TryAcquire(ctx, time.Minute)
	if err != nil {
		t.Fatalf("TryAcquire after a release: %v", err)
	}
	if p.Fence() <= last {
		t.Errorf("the new permit's fence %d is not above %d", p.Fence(), last)
	}
	for _, p := range append(permits[1:], p) {
		if err := p.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if info, err := e.locker.Inspect(ctx, sem.Name()); err != nil || info.Held {
		t.Errorf("Inspect after every release = %+v, %v; want not held", info, err)
	}
}

// A permit is a Lock: Refresh, TTL, Done and Err, ReleaseAfter and
// auto-renewal work as for a lock.
func TestSemaphorePermitIsALock(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	sem := e.locker.Semaphore(testenv.Key(t), 2)

	p, err := sem.Acquire(ctx, 300*time.Millisecond, dlock.WithAutoRenew(true))
	if err != nil {
		t.Fatal(err)
	}
	other, err := sem.Acquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Refresh(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if ttl, err := other.TTL(ctx); err != nil || ttl <= time.Minute {
		t.Errorf("TTL after Refresh(2m) = %v, %v", ttl, err)
	}
	// The renewed permit outlives its ttl several times over.
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if _, err := p.TTL(ctx); err != nil {
			t.Fatalf("the auto-renewed permit: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if !errors.Is(p.Err(), dlock.ErrReleased) {
		t.Errorf("Err after Release = %v, want ErrReleased", p.Err())
	}
	if err := other.ReleaseAfter(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if info, _ := e.locker.Inspect(ctx, sem.Name()); len(info.Holders) != 1 {
		t.Errorf("after ReleaseAfter: %d holders, want the permit kept", len(info.Holders))
	}
	if ok, err := e.locker.ForceRelease(ctx, sem.Name()); !ok || err != nil {
		t.Errorf("ForceRelease = %v, %v", ok, err)
	}
	if _, err := other.TTL(ctx); !errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("TTL after ForceRelease = %v, want ErrNotHeld", err)
	}
}

// Many goroutines of several Clients: never more than the limit at once,
// and everybody gets a permit in the end.
func TestSemaphoreContention(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 30*time.Second)
	const limit, workers, rounds = 3, 12, 5
	lockers := []*dlock.Client{e.locker, lockenv.Locker(t, e.rdb), lockenv.Locker(t, e.srv.Client())}
	var inside, most, done atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			sem := lockers[w%len(lockers)].Semaphore(testenv.Key(t), limit)
			for range rounds {
				err := sem.Do(ctx, 10*time.Second, func(context.Context) error {
					n := inside.Add(1)
					raiseTo(&most, n)
					time.Sleep(time.Millisecond)
					inside.Add(-1)
					return nil
				})
				if err != nil {
					t.Errorf("Do: %v", err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if most.Load() > limit {
		t.Errorf("%d holders at once, over the limit of %d", most.Load(), limit)
	}
	if done.Load() != workers*rounds {
		t.Errorf("%d of %d runs done", done.Load(), workers*rounds)
	}
}

// A waiter is woken by the release, not by its Backoff, which here would
// make it wait an hour.
func TestSemaphoreWaiterWokenByRelease(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	sem := e.locker.Semaphore(testenv.Key(t), 1)
	held, err := sem.TryAcquire(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		p, err := lockenv.Locker(t, e.rdb).Semaphore(sem.Name(), 1).Acquire(ctx, time.Minute, dlock.WithBackoff(dlock.FixedBackoff(time.Hour)))
		if err == nil {
			err = p.Release(context.Background())
		}
		got <- err
	}()
	testenv.Eventually(t, 5*time.Second, "the waiter queued", func() bool {
		info, _ := e.locker.Inspect(ctx, sem.Name())
		return info.Waiters == 1
	})
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiter: %v", err)
	}
}

// WithFair: waiters get their permits in the order they came.
func TestSemaphoreFairOrder(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 20*time.Second)
	name := testenv.Key(t)
	held, err := e.locker.Semaphore(name, 1).TryAcquire(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan int, 3)
	for i := range 3 {
		sem := lockenv.Locker(t, e.rdb).Semaphore(name, 1)
		go func() {
			p, err := sem.Acquire(ctx, time.Minute, dlock.WithFair())
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				order <- -1
				return
			}
			order <- i
			_ = p.Release(context.Background())
		}()
		testenv.Eventually(t, 5*time.Second, "the waiter queued", func() bool {
			info, _ := e.locker.Inspect(ctx, name)
			return info.Waiters == i+1
		})
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for want := range 3 {
		if got := <-order; got != want {
			t.Fatalf("permit %d went to waiter %d, want %d", want+1, got, want)
		}
	}
}

// A permit whose holder is gone lapses after its ttl, with nobody to sweep
// it: the next acquire finds it expired.
func TestSemaphorePermitLapses(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	name := testenv.Key(t)
	crashed := lockenv.Locker(t, e.rdb)
	if _, err := crashed.Semaphore(name, 1).TryAcquire(ctx, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	crashed.Close() // its holder is gone; nothing releases the permit
	p, err := e.locker.Semaphore(name, 1).Acquire(ctx, time.Minute)
	if err != nil {
		t.Fatalf("Acquire after the holder died: %v", err)
	}
	if info, _ := e.locker.Inspect(ctx, name); len(info.Holders) != 1 || info.Holders[0].Fingerprint != p.Fingerprint() {
		t.Errorf("Inspect = %+v, want the new permit alone", info)
	}
}

func TestSemaphoreBadInputs(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	name := testenv.Key(t)
	for _, limit := range []int{0, -1} {
		if _, err := e.locker.Semaphore(name, limit).TryAcquire(ctx, time.Minute); !errors.Is(err, dlock.ErrInvalidOption) {
			t.Errorf("limit %d: %v, want ErrInvalidOption", limit, err)
		}
		if _, err := e.locker.Semaphore(name, limit).Acquire(ctx, time.Minute); !errors.Is(err, dlock.ErrInvalidOption) {
			t.Errorf("limit %d: %v, want ErrInvalidOption", limit, err)
		}
	}
	if _, err := e.locker.Semaphore("", 1).Acquire(ctx, time.Minute); !errors.Is(err, dlock.ErrInvalidKey) {
		t.Errorf("empty name: %v, want ErrInvalidKey", err)
	}
	if _, err := e.locker.Semaphore(name, 1).Acquire(ctx, 0); !errors.Is(err, dlock.ErrInvalidTTL) {
		t.Errorf("ttl 0: %v, want ErrInvalidTTL", err)
	}
	if _, err := e.locker.Semaphore(name, 1).Acquire(ctx, time.Minute, nil); !errors.Is(err, dlock.ErrInvalidOption) {
		t.Errorf("a nil option: %v, want ErrInvalidOption", err)
	}
	if err := e.locker.Semaphore(name, 1).Do(ctx, time.Minute, nil); !errors.Is(err, dlock.ErrNilFunc) {
		t.Errorf("Do(nil): %v, want ErrNilFunc", err)
	}

	// Clients that disagree about the limit: the permits held say which.
	p, err := e.locker.Semaphore(name, 2).TryAcquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.locker.Semaphore(name, 5).TryAcquire(ctx, time.Minute); !errors.Is(err, dlock.ErrLimitMismatch) {
		t.Errorf("another limit while permits are held: %v, want ErrLimitMismatch", err)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if p, err := e.locker.Semaphore(name, 5).TryAcquire(ctx, time.Minute); err != nil {
		t.Errorf("another limit once none is held: %v", err)
	} else {
		_ = p.Release(ctx)
	}
}

// A lock, a semaphore and an RW lock under one name exclude each other
// with ErrWrongType, and none overwrites the other.
func TestKindsDoNotMix(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	try := map[string]func(name string) (*dlock.Lock, error){
		"lock": func(name string) (*dlock.Lock, error) { return e.locker.TryObtain(ctx, name, time.Minute) },
		"semaphore": func(name string) (*dlock.Lock, error) {
			return e.locker.Semaphore(name, 2).TryAcquire(ctx, time.Minute)
		},
		"read":  func(name string) (*dlock.Lock, error) { return e.locker.RWMutex(name).TryRLock(ctx, time.Minute) },
		"write": func(name string) (*dlock.Lock, error) { return e.locker.RWMutex(name).TryLock(ctx, time.Minute) },
	}
	conflicts := map[[2]string]bool{
		{"lock", "semaphore"}: true, {"lock", "read"}: true, {"lock", "write"}: true,
		{"semaphore", "lock"}: true, {"semaphore", "read"}: true, {"semaphore", "write"}: true,
		{"read", "lock"}: true, {"read", "semaphore"}: true,
		{"write", "lock"}: true, {"write", "semaphore"}: true,
	}
	for pair := range conflicts {
		name := testenv.Key(t) + ":" + pair[0] + ":" + pair[1]
		first, err := try[pair[0]](name)
		if err != nil {
			t.Fatalf("%s: %v", pair[0], err)
		}
		if _, err := try[pair[1]](name); !errors.Is(err, dlock.ErrWrongType) {
			t.Errorf("%s on a %s: %v, want ErrWrongType", pair[1], pair[0], err)
		}
		if _, err := first.TTL(ctx); err != nil {
			t.Errorf("the %s after a %s tried: %v", pair[0], pair[1], err)
		}
	}
	if err := e.rdb.HSet(ctx, testenv.Key(t)+":hash", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	for kind, f := range try {
		if _, err := f(testenv.Key(t) + ":hash"); !errors.Is(err, dlock.ErrWrongType) {
			t.Errorf("%s on a hash: %v, want ErrWrongType", kind, err)
		}
	}
}

// Redis paused while permits are taken and waited for: calls fail by
// their context, and once Redis is back the limit still holds.
func TestSemaphoreRedisPaused(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 20*time.Second)
	sem := e.locker.Semaphore(testenv.Key(t), 2)
	held, err := sem.TryAcquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	e.srv.Pause()
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = sem.Acquire(short, time.Minute)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Acquire with Redis paused = %v, want the deadline", err)
	}
	e.srv.Resume()
	second, err := sem.Acquire(ctx, time.Minute)
	if err != nil {
		t.Fatalf("Acquire after Redis is back: %v", err)
	}
	if _, err := sem.TryAcquire(ctx, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
		t.Errorf("a third permit of 2 after the pause: %v, want ErrNotObtained", err)
	}
	if info, _ := e.locker.Inspect(ctx, sem.Name()); len(info.Holders) > 2 {
		t.Errorf("%d permits held, over the limit of 2", len(info.Holders))
	}
	_ = held.Release(ctx)
	_ = second.Release(ctx)
}

// A restart without persistence loses the permits: an auto-renewed one
// is told (Done), and the semaphore works again.
func TestSemaphoreRedisRestarted(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 20*time.Second)
	sem := e.locker.Semaphore(testenv.Key(t), 1)
	p, err := sem.Acquire(ctx, 300*time.Millisecond, dlock.WithAutoRenew(true))
	if err != nil {
		t.Fatal(err)
	}
	e.srv.Restart()
	select {
	case <-p.Done():
	case <-ctx.Done():
		t.Fatal("the permit was not found lost after the restart")
	}
	if !errors.Is(p.Err(), dlock.ErrLockLost) {
		t.Errorf("Err = %v, want ErrLockLost", p.Err())
	}
	waitUp(t, e.rdb)
	if _, err := sem.Acquire(ctx, time.Minute); err != nil {
		t.Errorf("Acquire after the restart: %v", err)
	}
}

func TestSemaphoreOnRedlock(t *testing.T) {
	t.Parallel()
	e := setupQuorum(t, 3)
	ctx := testenv.Timeout(t, 10*time.Second)
	name := testenv.Key(t)
	if _, err := e.locker.Semaphore(name, 2).TryAcquire(ctx, time.Minute); !errors.Is(err, dlock.ErrInvalidOption) {
		t.Errorf("a limit of 2 on Redlock: %v, want ErrInvalidOption", err)
	}
	sem := e.locker.Semaphore(name, 1)
	p, err := sem.TryAcquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sem.TryAcquire(ctx, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
		t.Errorf("a second permit of 1: %v, want ErrNotObtained", err)
	}
	if p.Fence() <= 0 {
		t.Errorf("Fence = %d on Redlock, want one handed out by the quorum", p.Fence())
	}
	if info, err := e.locker.Inspect(ctx, name); err != nil || info.Kind != "semaphore" || len(info.Holders) != 1 {
		t.Errorf("Inspect on Redlock = %+v, %v", info, err)
	}
	waiter := make(chan error, 1)
	go func() {
		q, err := newRedlock(t, e.rdbs).Semaphore(name, 1).Acquire(ctx, time.Minute)
		if err == nil {
			err = q.Release(context.Background())
		}
		waiter <- err
	}()
	time.Sleep(50 * time.Millisecond) // let it wait: the test passes either way
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-waiter; err != nil {
		t.Errorf("the waiter on Redlock: %v", err)
	}
}

func TestSharedHoldsOnCluster(t *testing.T) {
	t.Parallel()
	ctx := testenv.Timeout(t, 20*time.Second)
	locker := lockenv.Locker(t, newCluster(t))
	for _, name := range []string{"sem:42", "{user:7}:sem", "a}b", "a{}b"} {
		p, err := locker.Semaphore(name, 2).Acquire(ctx, time.Minute)
		if err != nil {
			t.Fatalf("semaphore %q on a cluster: %v", name, err)
		}
		if err := p.Refresh(ctx, time.Minute); err != nil {
			t.Errorf("Refresh %q: %v", name, err)
		}
		if info, err := locker.Inspect(ctx, name); err != nil || len(info.Holders) != 1 {
			t.Errorf("Inspect %q = %+v, %v", name, info, err)
		}
		if err := p.Release(ctx); err != nil {
			t.Errorf("Release %q: %v", name, err)
		}
		rw := locker.RWMutex(name + ":rw")
		r, err := rw.RLock(ctx, time.Minute)
		if err != nil {
			t.Fatalf("RLock %q on a cluster: %v", name, err)
		}
		if _, err := rw.TryLock(ctx, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
			t.Errorf("TryLock under a reader: %v", err)
		}
		if err := r.Release(ctx); err != nil {
			t.Errorf("Release %q: %v", name, err)
		}
		if ok, err := locker.ForceRelease(ctx, name+":rw"); ok || err != nil {
			t.Errorf("ForceRelease of a free RW lock = %v, %v", ok, err)
		}
	}
}

// The code of docs/locks.md runs: exports through the semaphore, reads and a
// write through the RW lock.
func TestSharedReadmeCode(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	var exported atomic.Int64
	if err := exportAll(ctx, e.locker, []string{"a", "b", "c", "d"}, func(context.Context, string) error {
		exported.Add(1)
		return nil
	}); err != nil || exported.Load() != 4 {
		t.Errorf("exportAll = %v, %d exported", err, exported.Load())
	}
	read := func(context.Context) error { return nil }
	if err := readPrice(ctx, e.locker, read); err != nil {
		t.Error(err)
	}
	if err := setPrice(ctx, e.locker, read); err != nil {
		t.Error(err)
	}
}

// Scan finds every kind of hold, with its kind.
func TestScanFindsEveryKind(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	prefix := testenv.Key(t) + ":"
	if _, err := e.locker.TryObtain(ctx, prefix+"lock", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := e.locker.Semaphore(prefix+"sem", 2).TryAcquire(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := e.locker.RWMutex(prefix+"rw").TryRLock(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for info, err := range e.locker.Scan(ctx, prefix+"*") {
		if err != nil {
			t.Fatal(err)
		}
		kinds[info.Key] = info.Kind
	}
	want := map[string]string{prefix + "lock": "lock", prefix + "sem": "semaphore", prefix + "rw": "rwmutex"}
	if len(kinds) != len(want) {
		t.Errorf("Scan found %v, want %v", kinds, want)
	}
	for key, kind := range want {
		if kinds[key] != kind {
			t.Errorf("Scan: %s is %q, want %q", key, kinds[key], kind)
		}
	}
}

// Connections cut while a permit is held and another waits: the holder's
// release and the waiter's wake-up go through once go-redis reconnects.
func TestSemaphoreConnectionsCut(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 20*time.Second)
	name := testenv.Key(t)
	held, err := e.locker.Semaphore(name, 1).TryAcquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		p, err := lockenv.Locker(t, e.rdb).Semaphore(name, 1).Acquire(ctx, time.Minute)
		if err == nil {
			err = p.Release(context.Background())
		}
		got <- err
	}()
	testenv.Eventually(t, 5*time.Second, "the waiter queued", func() bool {
		info, _ := e.locker.Inspect(ctx, name)
		return info.Waiters == 1
	})
	admin := e.srv.Client()
	defer admin.Close()
	for _, typ := range []string{"pubsub", "normal"} {
		if err := admin.Do(ctx, "CLIENT", "KILL", "TYPE", typ, "SKIPME", "yes").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := held.Release(ctx); err != nil {
		t.Fatalf("Release after the connections were cut: %v", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiter after the connections were cut: %v", err)
	}
	if info, _ := e.locker.Inspect(ctx, name); info.Held {
		t.Errorf("Inspect at the end = %+v, want nothing held", info)
	}
}

// raiseTo raises m to n if n is larger, as several goroutines count.
func raiseTo(m *atomic.Int64, n int64) {
	for old := m.Load(); n > old && !m.CompareAndSwap(old, n); old = m.Load() {
		continue // another goroutine raised it meanwhile: look again
	}
}
