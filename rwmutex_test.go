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

func TestRWMutexReadersAndWriter(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	rw := e.locker.RWMutex(testenv.Key(t))

	var readers []*dlock.Lock
	for range 3 {
		r, err := rw.TryRLock(ctx, time.Minute)
		if err != nil {
			t.Fatalf("TryRLock: %v", err)
		}
		readers = append(readers, r)
	}
	if _, err := rw.TryLock(ctx, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
		t.Fatalf("TryLock under readers = %v, want ErrNotObtained", err)
	}
	info, err := e.locker.Inspect(ctx, rw.Name())
	if err != nil || info.Kind != "rwmutex" || len(info.Holders) != 3 || info.Holders[0].Mode != "read" {
		t.Fatalf("Inspect = %+v, %v; want an RW lock with 3 readers", info, err)
	}
	for _, r := range readers {
		if err := r.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	w, err := rw.TryLock(ctx, time.Minute)
	if err != nil {
		t.Fatalf("TryLock once the readers left: %v", err)
	}
	if w.Fence() <= readers[2].Fence() {
		t.Errorf("the writer's fence %d is not above the readers' %d", w.Fence(), readers[2].Fence())
	}
	if _, err := rw.TryRLock(ctx, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
		t.Errorf("TryRLock under a writer = %v, want ErrNotObtained", err)
	}
	if _, err := rw.TryLock(ctx, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
		t.Errorf("TryLock under a writer = %v, want ErrNotObtained", err)
	}
	if info, _ := e.locker.Inspect(ctx, rw.Name()); len(info.Holders) != 1 || info.Holders[0].Mode != "write" {
		t.Errorf("Inspect = %+v, want the writer", info)
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A waiting writer keeps new readers out, and gets the lock once the
// readers before it have left; the readers that came meanwhile get their
// holds together when it releases.
func TestRWMutexWriterWaitsAheadOfNewReaders(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 20*time.Second)
	rw := e.locker.RWMutex(testenv.Key(t))
	first, err := rw.RLock(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	wrote := make(chan *dlock.Lock, 1)
	go func() {
		w, err := lockenv.Locker(t, e.rdb).RWMutex(rw.Name()).Lock(ctx, time.Minute)
		if err != nil {
			t.Errorf("Lock: %v", err)
		}
		wrote <- w
	}()
	testenv.Eventually(t, 5*time.Second, "the writer waits", func() bool {
		info, _ := e.locker.Inspect(ctx, rw.Name())
		return info.Waiters == 1
	})
	if _, err := rw.TryRLock(ctx, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
		t.Fatalf("a new reader while a writer waits = %v, want ErrNotObtained", err)
	}
	const later = 3
	read := make(chan *dlock.Lock, later)
	for range later {
		go func() {
			r, err := lockenv.Locker(t, e.rdb).RWMutex(rw.Name()).RLock(ctx, time.Minute)
			if err != nil {
				t.Errorf("RLock: %v", err)
			}
			read <- r
		}()
	}
	testenv.Eventually(t, 5*time.Second, "the readers wait", func() bool {
		info, _ := e.locker.Inspect(ctx, rw.Name())
		return info.Waiters == 1+later
	})
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	w := <-wrote
	if len(read) != 0 {
		t.Fatal("a reader got in before the writer")
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for range later {
		if r := <-read; r == nil {
			t.Fatal("a reader failed")
		}
	}
	if info, _ := e.locker.Inspect(ctx, rw.Name()); len(info.Holders) != later {
		t.Errorf("Inspect after the writer = %+v, want the %d readers in together", info, later)
	}
}

// A steady stream of readers does not starve a writer.
func TestRWMutexWriterNotStarved(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 30*time.Second)
	name := testenv.Key(t)
	stop := make(chan struct{})
	var reads atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		rw := lockenv.Locker(t, e.rdb).RWMutex(name)
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := rw.RDo(ctx, 5*time.Second, func(context.Context) error {
					time.Sleep(5 * time.Millisecond)
					return nil
				})
				if err != nil && ctx.Err() == nil {
					t.Errorf("RDo: %v", err)
					return
				}
				reads.Add(1)
			}
		})
	}
	testenv.Eventually(t, 5*time.Second, "readers read", func() bool { return reads.Load() > 20 })
	writer := e.locker.RWMutex(name)
	for range 3 {
		w, err := writer.Lock(ctx, time.Minute)
		if err != nil {
			t.Fatalf("the writer, among a stream of readers: %v", err)
		}
		if info, _ := e.locker.Inspect(ctx, name); len(info.Holders) != 1 || info.Holders[0].Mode != "write" {
			t.Errorf("while writing: %+v", info)
		}
		if err := w.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}

// Each reader's hold expires on its own.
func TestRWMutexReaderExpiresAlone(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	rw := e.locker.RWMutex(testenv.Key(t))
	short, err := rw.TryRLock(ctx, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	long, err := rw.TryRLock(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	<-short.Done() // its validity ran out
	testenv.Eventually(t, 5*time.Second, "the short hold expired", func() bool {
		info, _ := e.locker.Inspect(ctx, rw.Name())
		return len(info.Holders) == 1 && info.Holders[0].Fingerprint == long.Fingerprint()
	})
	if _, err := short.TTL(ctx); !errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("TTL of the expired reader = %v, want ErrNotHeld", err)
	}
	if _, err := long.TTL(ctx); err != nil {
		t.Errorf("TTL of the other reader: %v", err)
	}
	// A crashed writer holds nobody up past its ttl either.
	if err := long.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rw.TryLock(ctx, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := rw.RLock(ctx, time.Minute); err != nil {
		t.Errorf("RLock after the writer's hold lapsed: %v", err)
	}
}

func TestRWMutexBadInputs(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	if _, err := e.locker.RWMutex("").RLock(ctx, time.Minute); !errors.Is(err, dlock.ErrInvalidKey) {
		t.Errorf("empty name: %v, want ErrInvalidKey", err)
	}
	rw := e.locker.RWMutex(testenv.Key(t))
	if _, err := rw.Lock(ctx, 0); !errors.Is(err, dlock.ErrInvalidTTL) {
		t.Errorf("ttl 0: %v, want ErrInvalidTTL", err)
	}
	if _, err := rw.TryRLock(ctx, time.Minute, nil); !errors.Is(err, dlock.ErrInvalidOption) {
		t.Errorf("a nil option: %v, want ErrInvalidOption", err)
	}
	if err := rw.RDo(ctx, time.Minute, func(context.Context) error { return nil }, nil); !errors.Is(err, dlock.ErrInvalidOption) {
		t.Errorf("a nil DoOption: %v, want ErrInvalidOption", err)
	}
	if err := rw.Do(ctx, time.Minute, nil); !errors.Is(err, dlock.ErrNilFunc) {
		t.Errorf("Do(nil): %v, want ErrNilFunc", err)
	}
	if r, err := rw.RLock(ctx, time.Minute, dlock.WithFair()); err != nil {
		t.Errorf("WithFair changes nothing: %v", err)
	} else {
		_ = r.Release(ctx)
	}
	ran := false
	if err := rw.Do(ctx, time.Minute, func(ctx context.Context) error {
		ran = true
		l, ok := dlock.LockFromContext(ctx)
		if !ok || l.Fence() <= 0 {
			t.Error("Do's context has no Lock")
		}
		return nil
	}); err != nil || !ran {
		t.Errorf("Do = %v, ran %v", err, ran)
	}
}

// On a Redlock quorum both sides work, and a writer excludes a reader
// with one node down.
func TestRWMutexOnRedlock(t *testing.T) {
	t.Parallel()
	e := setupQuorum(t, 3)
	ctx := testenv.Timeout(t, 10*time.Second)
	rw := e.locker.RWMutex(testenv.Key(t))
	r1, err := rw.TryRLock(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := rw.TryRLock(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rw.TryLock(ctx, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
		t.Errorf("TryLock under readers = %v, want ErrNotObtained", err)
	}
	if r1.Fence() <= 0 || r2.Fence() <= r1.Fence() {
		t.Errorf("fences %d then %d, want increasing", r1.Fence(), r2.Fence())
	}
	_ = r1.Release(ctx)
	_ = r2.Release(ctx)
	e.srvs[0].Kill()
	w, err := rw.Lock(ctx, time.Minute)
	if err != nil {
		t.Fatalf("Lock with 2 of 3 nodes: %v", err)
	}
	if _, err := rw.TryRLock(ctx, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
		t.Errorf("TryRLock under the writer = %v, want ErrNotObtained", err)
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
