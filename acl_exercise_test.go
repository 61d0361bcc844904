package dlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/cachefill"
	"github.com/dlock-go/dlock/election"
	"github.com/dlock-go/dlock/idempotency"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/jobs"
	"github.com/dlock-go/dlock/stock"
)

// The keys the exercises use: the application's under "app:", and the
// packages' under their default prefixes (see docs/compat.md).
const (
	appLock  = "app:lock"
	appFair  = "app:fair"
	appSem   = "app:sem"
	appRW    = "app:rw"
	appWatch = "app:watched"
	appForce = "app:forced"
	appRed   = "app:redlock"
	appRedS  = "app:redlock-sem"
	appElect = "app:leader"
	appJob   = "app-job"
)

// exercise runs every feature of dlock and of its packages on clients
// that newClient makes, each a separate connection pool: every script of
// the engine (Redlock's through three clients) and of the packages, and
// waiting woken by a release.
func exercise(t *testing.T, newClient func() *redis.Client) {
	t.Helper()
	rdb := newClient()
	locker := dlock.New(rdb)
	t.Cleanup(func() { locker.Close() })
	other := dlock.New(newClient()) // a second process
	t.Cleanup(func() { other.Close() })
	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"lock", func(t *testing.T) { exerciseLock(t, locker, other) }},
		{"fair", func(t *testing.T) { exerciseFair(t, locker, other) }},
		{"semaphore", func(t *testing.T) { exerciseSemaphore(t, locker, other) }},
		{"rwmutex", func(t *testing.T) { exerciseRWMutex(t, locker, other) }},
		{"admin", func(t *testing.T) { exerciseAdmin(t, locker, other) }},
		{"multi", func(t *testing.T) { exerciseMulti(t, locker, other) }},
		{"redlock", func(t *testing.T) { exerciseRedlock(t, newClient) }},
		{"jobs", func(t *testing.T) { exerciseJobs(t, locker) }},
		{"election", func(t *testing.T) { exerciseElection(t, locker, other) }},
		{"cachefill", func(t *testing.T) { exerciseCachefill(t, locker) }},
		{"idempotency", func(t *testing.T) { exerciseIdempotency(t, locker) }},
		{"stock", func(t *testing.T) { exerciseStock(t, rdb) }},
	}
	for _, s := range steps {
		if !t.Run(s.name, s.run) {
			return
		}
	}
}

func check(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// exerciseLock takes, refreshes, releases a lock, and hands it to a waiter
// woken by the release.
func exerciseLock(t *testing.T, locker, other *dlock.Client) {
	ctx := testenv.Timeout(t, 30*time.Second)
	l, err := locker.TryObtain(ctx, appLock, time.Minute)
	check(t, "TryObtain", err)
	check(t, "Refresh", l.Refresh(ctx, time.Minute))
	if _, err := l.TTL(ctx); err != nil {
		t.Fatalf("TTL: %v", err)
	}
	waited := make(chan error, 1)
	go func() {
		// held for a minute: only the release wakes it in time
		w, err := other.Obtain(ctx, appLock, time.Minute)
		if err == nil {
			err = w.ReleaseAfter(ctx, time.Millisecond)
		}
		waited <- err
	}()
	testenv.Eventually(t, 10*time.Second, "the waiter queued", func() bool {
		in, err := locker.Inspect(ctx, appLock)
		return err == nil && in.Waiters > 0
	})
	check(t, "Release", l.Release(ctx))
	check(t, "the waiter", <-waited)

	renewed, err := locker.TryObtain(ctx, appLock+":renewed", 300*time.Millisecond, dlock.WithAutoRenew(true))
	check(t, "TryObtain WithAutoRenew", err)
	first := renewed.Until()
	testenv.Eventually(t, 10*time.Second, "a renewal", func() bool { return renewed.Until().After(first) })
	check(t, "Release", renewed.Release(ctx))
}

// exerciseFair hands a lock over to a fair waiter, and lets another give up.
func exerciseFair(t *testing.T, locker, other *dlock.Client) {
	ctx := testenv.Timeout(t, 30*time.Second)
	l, err := locker.Obtain(ctx, appFair, time.Minute, dlock.WithFair())
	check(t, "Obtain", err)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := other.Obtain(short, appFair, time.Minute, dlock.WithFair()); err == nil {
		t.Fatal("Obtain of a held lock succeeded") // else it gave up, and left the queue
	}
	waited := make(chan error, 1)
	go func() {
		w, err := other.Obtain(ctx, appFair, time.Minute, dlock.WithFair())
		if err == nil {
			err = w.Release(ctx)
		}
		waited <- err
	}()
	testenv.Eventually(t, 10*time.Second, "the fair waiter queued", func() bool {
		in, err := locker.Inspect(ctx, appFair)
		return err == nil && in.Waiters > 0
	})
	check(t, "Release", l.Release(ctx))
	check(t, "the fair waiter", <-waited)
}

func exerciseSemaphore(t *testing.T, locker, other *dlock.Client) {
	ctx := testenv.Timeout(t, 30*time.Second)
	sem := locker.Semaphore(appSem, 1)
	p, err := sem.Acquire(ctx, time.Minute)
	check(t, "Acquire", err)
	check(t, "Refresh", p.Refresh(ctx, time.Minute))
	if _, err := p.TTL(ctx); err != nil {
		t.Fatalf("TTL: %v", err)
	}
	waited := make(chan error, 1)
	go func() {
		w, err := other.Semaphore(appSem, 1).Acquire(ctx, time.Minute)
		if err == nil {
			err = w.Release(ctx)
		}
		waited <- err
	}()
	testenv.Eventually(t, 10*time.Second, "the waiter queued", func() bool {
		in, err := locker.Inspect(ctx, appSem)
		return err == nil && in.Waiters > 0
	})
	check(t, "Release", p.Release(ctx))
	check(t, "the waiter", <-waited)
}

func exerciseRWMutex(t *testing.T, locker, other *dlock.Client) {
	ctx := testenv.Timeout(t, 30*time.Second)
	r, err := locker.RWMutex(appRW).RLock(ctx, time.Minute)
	check(t, "RLock", err)
	if _, err := other.RWMutex(appRW).TryLock(ctx, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
		t.Fatalf("TryLock while read-held = %v, want ErrNotObtained", err)
	}
	check(t, "ReleaseAfter", r.ReleaseAfter(ctx, time.Millisecond))
	w, err := other.RWMutex(appRW).Lock(ctx, time.Minute)
	check(t, "Lock", err)
	check(t, "Release", w.Release(ctx))
}

// exerciseAdmin inspects, force-releases and watches locks.
func exerciseAdmin(t *testing.T, locker, other *dlock.Client) {
	ctx := testenv.Timeout(t, 30*time.Second)
	if _, err := other.TryObtain(ctx, appForce, time.Minute); err != nil {
		t.Fatalf("TryObtain: %v", err)
	}
	in, err := locker.Inspect(ctx, appForce)
	check(t, "Inspect", err)
	if !in.Held {
		t.Fatalf("Inspect = %+v, want held", in)
	}
	released, err := locker.ForceRelease(ctx, appForce)
	check(t, "ForceRelease", err)
	if !released {
		t.Fatal("ForceRelease found nothing to release")
	}

	l, err := other.TryObtain(ctx, appWatch, time.Minute)
	check(t, "TryObtain", err)
	found := false
	for info, err := range locker.Scan(ctx, "app:*") {
		check(t, "Scan", err)
		found = found || (info.Key == appWatch && info.Held)
	}
	if !found {
		t.Fatalf("Scan did not find %s", appWatch)
	}
	// CONFIG GET: refused under the minimal ACL, where the check says nothing
	if _, err := locker.CheckDeployment(ctx); err != nil {
		t.Fatalf("CheckDeployment: %v", err)
	}
	watched := make(chan error, 1)
	go func() { watched <- locker.WaitRelease(ctx, appWatch) }()
	testenv.Eventually(t, 10*time.Second, "WaitRelease listening", func() bool {
		n, err := other.Inspect(ctx, appWatch)
		return err == nil && n.Held // the watcher is no waiter: nothing to see but time
	})
	check(t, "Release", l.Release(ctx))
	check(t, "WaitRelease", <-watched)
}

// exerciseMulti takes several locks at once, refreshes and releases them,
// and hands them to a waiter woken by the release.
func exerciseMulti(t *testing.T, locker, other *dlock.Client) {
	ctx := testenv.Timeout(t, 30*time.Second)
	keys := []string{"app:multi:a", "app:multi:b"}
	l, err := locker.TryObtainMulti(ctx, keys, time.Minute)
	check(t, "TryObtainMulti", err)
	check(t, "Refresh", l.Refresh(ctx, time.Minute))
	if _, err := l.TTL(ctx); err != nil {
		t.Fatalf("TTL: %v", err)
	}
	waited := make(chan error, 1)
	tried := &signalledBackoff{tried: make(chan struct{}), delay: time.Minute}
	go func() {
		// held for a minute, tried again in a minute: only the release wakes it in time
		w, err := other.ObtainMulti(ctx, keys, time.Minute, dlock.WithBackoff(tried))
		if err == nil {
			err = w.ReleaseAfter(ctx, time.Millisecond)
		}
		waited <- err
	}()
	<-tried.tried // the waiter found the locks held
	check(t, "Release", l.Release(ctx))
	check(t, "the waiter", <-waited)
}

// exerciseRedlock takes a lock, several locks at once and a permit on a
// quorum of three clients, with their fences (raise_fence.lua,
// multi_raise_fence.lua, hold_raise_fence.lua).
func exerciseRedlock(t *testing.T, newClient func() *redis.Client) {
	ctx := testenv.Timeout(t, 30*time.Second)
	// A node timeout far longer than the default: a first connection over
	// TLS, under -race on a busy machine, may take longer than that.
	nodes := []redis.UniversalClient{newClient(), newClient(), newClient()}
	quorum, err := dlock.NewRedlock(nodes, dlock.WithNodeTimeout(10*time.Second))
	check(t, "NewRedlock", err)
	t.Cleanup(func() { quorum.Close() })
	l, err := quorum.TryObtain(ctx, appRed, time.Minute)
	check(t, "TryObtain", err)
	if l.Fence() <= 0 {
		t.Fatalf("Fence = %d", l.Fence())
	}
	check(t, "Refresh", l.Refresh(ctx, time.Minute))
	check(t, "Release", l.Release(ctx))
	m, err := quorum.TryObtainMulti(ctx, []string{appRed + ":a", appRed + ":b"}, time.Minute)
	check(t, "TryObtainMulti", err)
	if m.Fence() <= 0 {
		t.Fatalf("Fence = %d", m.Fence())
	}
	check(t, "Release", m.Release(ctx))
	p, err := quorum.Semaphore(appRedS, 1).TryAcquire(ctx, time.Minute)
	check(t, "TryAcquire", err)
	if p.Fence() <= 0 {
		t.Fatalf("Fence = %d", p.Fence())
	}
	check(t, "Release", p.Release(ctx))
}

func exerciseJobs(t *testing.T, locker *dlock.Client) {
	ctx := testenv.Timeout(t, 30*time.Second)
	runner, err := jobs.New(locker)
	check(t, "jobs.New", err)
	slot := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	for i, want := range []jobs.Outcome{jobs.Ran, jobs.AlreadyDone} {
		got, err := runner.Run(ctx, appJob, slot, func(context.Context) error { return nil })
		if err != nil || got != want {
			t.Fatalf("Run %d = %v, %v; want %v", i+1, got, err, want)
		}
	}
	if _, err := runner.History(ctx, appJob); err != nil {
		t.Fatalf("History: %v", err)
	}
}

func exerciseElection(t *testing.T, locker, other *dlock.Client) {
	ctx := testenv.Timeout(t, 30*time.Second)
	e, err := election.New(locker, appElect)
	check(t, "election.New", err)
	watching, stop := context.WithCancel(ctx)
	defer stop()
	seen := e.Observe(watching)
	lead, err := e.Campaign(ctx, "me")
	check(t, "Campaign", err)
	for l := range seen {
		if l.Value == "me" {
			break
		}
	}
	rival, err := election.New(other, appElect)
	check(t, "election.New", err)
	if l, err := rival.Leader(ctx); err != nil || l.Value != "me" {
		t.Fatalf("Leader = %+v, %v; want me", l, err)
	}
	check(t, "Resign", lead.Resign(ctx))
	stop()
	for range seen { // Observe's goroutine ends
	}
}

func exerciseCachefill(t *testing.T, locker *dlock.Client) {
	ctx := testenv.Timeout(t, 30*time.Second)
	cache, err := cachefill.New(locker)
	check(t, "cachefill.New", err)
	loads := 0
	load := func(context.Context) ([]byte, error) { loads++; return []byte("v"), nil }
	for range 2 {
		v, err := cache.Get(ctx, "app:cached", time.Minute, load)
		if err != nil || string(v) != "v" {
			t.Fatalf("Get = %q, %v", v, err)
		}
	}
	if loads != 1 {
		t.Fatalf("%d loads, want 1", loads)
	}
	check(t, "Invalidate", cache.Invalidate(ctx, "app:cached"))
}

func exerciseIdempotency(t *testing.T, locker *dlock.Client) {
	ctx := testenv.Timeout(t, 30*time.Second)
	store, err := idempotency.New(locker)
	check(t, "idempotency.New", err)
	for i, want := range []bool{false, true} {
		v, replayed, err := store.Do(ctx, "app-request", []byte("body"), func(context.Context) ([]byte, error) { return []byte("done"), nil })
		if err != nil || string(v) != "done" || replayed != want {
			t.Fatalf("Do %d = %q, %v, %v; want replayed %v", i+1, v, replayed, err, want)
		}
	}
}

func exerciseStock(t *testing.T, rdb *redis.Client) {
	ctx := testenv.Timeout(t, 30*time.Second)
	inv, err := stock.New(rdb)
	check(t, "stock.New", err)
	t.Cleanup(func() { inv.Close() })
	check(t, "Set", inv.Set(ctx, "app-console", 10))
	check(t, "Add", inv.Add(ctx, "app-console", 5))
	check(t, "Set", inv.Set(ctx, "app-pad", 10))
	check(t, "Reserve", inv.Reserve(ctx, "app-console", "o1", 2, time.Minute))
	check(t, "Commit", inv.Commit(ctx, "app-console", "o1"))
	check(t, "ReserveAll", inv.ReserveAll(ctx, "o2", map[string]int64{"app-console": 1, "app-pad": 1}, time.Minute))
	check(t, "CancelAll", inv.CancelAll(ctx, "o2", []string{"app-console", "app-pad"}))
	check(t, "ReserveAll", inv.ReserveAll(ctx, "o3", map[string]int64{"app-console": 1, "app-pad": 1}, time.Minute))
	check(t, "CommitAll", inv.CommitAll(ctx, "o3", []string{"app-console", "app-pad"}))
	check(t, "Reserve", inv.Reserve(ctx, "app-pad", "o4", 1, time.Minute))
	check(t, "Cancel", inv.Cancel(ctx, "app-pad", "o4"))
	levels, err := inv.Levels(ctx, "app-console")
	check(t, "Levels", err)
	if levels.Sold != 3 {
		t.Fatalf("Levels = %+v, want 3 sold", levels)
	}
	check(t, "Delete", inv.Delete(ctx, "app-pad"))
}
