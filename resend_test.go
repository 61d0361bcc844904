package dlock_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/redistest"
)

// Two Release calls of one Lock at once: one releases it and returns nil,
// the other finds it released by the first and returns ErrNotHeld; Err
// says released, never lost. The same with automatic renewal, which each
// Release pauses.
func TestConcurrentReleasesOfOneLock(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, renewed := range []bool{false, true} {
		t.Run("renewed="+strconv.FormatBool(renewed), func(t *testing.T) {
			ctx := context.Background()
			for i := range 100 {
				key := testenv.Key(t) + ":" + strconv.Itoa(i)
				lock, err := e.locker.TryObtain(ctx, key, time.Minute, dlock.WithAutoRenew(renewed))
				if err != nil {
					t.Fatal(err)
				}
				var wg sync.WaitGroup
				errs := make([]error, 2)
				start := make(chan struct{})
				for j := range errs {
					wg.Go(func() {
						<-start
						errs[j] = lock.Release(ctx)
					})
				}
				close(start)
				wg.Wait()
				released := 0
				for _, err := range errs {
					switch {
					case err == nil:
						released++
					case !errors.Is(err, dlock.ErrNotHeld):
						t.Fatalf("lock %d: Release = %v, want nil or ErrNotHeld", i, err)
					}
				}
				if released != 1 {
					t.Fatalf("lock %d: %d of 2 concurrent Releases returned nil (%v), want 1", i, released, errs)
				}
				if err := lock.Err(); !errors.Is(err, dlock.ErrReleased) || errors.Is(err, dlock.ErrLockLost) {
					t.Fatalf("lock %d: Err = %v, want ErrReleased", i, err)
				}
			}
		})
	}
}

// A Refresh that lands after a Release of the same Lock at the same time
// ends it as released, not lost.
func TestRefreshConcurrentWithRelease(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	for i := range 50 {
		lock := mustObtain(t, e.locker, testenv.Key(t)+":"+strconv.Itoa(i), time.Minute)
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			_ = lock.Refresh(ctx, time.Minute)
		})
		wg.Go(func() {
			<-start
			if err := lock.Release(ctx); err != nil && !errors.Is(err, dlock.ErrNotHeld) {
				t.Errorf("Release = %v", err)
			}
		})
		close(start)
		wg.Wait()
		if err := lock.Err(); !errors.Is(err, dlock.ErrReleased) {
			t.Fatalf("lock %d: Err = %v, want ErrReleased", i, err)
		}
	}
}

// A call whose context ends before Redis answers says that its outcome is
// unknown; once Redis answers, the release has happened once, and calling
// Release again says so: ErrNotHeld, with Err wrapping ErrReleased.
func TestOutcomeUnknownWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	lock := mustObtain(t, e.locker, key, time.Minute)
	e.srv.Pause()
	err := lock.Release(testenv.Timeout(t, 200*time.Millisecond))
	e.srv.Resume()
	if !errors.Is(err, dlock.ErrOutcomeUnknown) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Release while Redis is paused = %v, want ErrOutcomeUnknown and the context's error", err)
	}
	if errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("Release = %v: it says not held, which it does not know", err)
	}
	testenv.Eventually(t, 10*time.Second, "the release goes on in the background", func() bool {
		return e.rdb.Exists(context.Background(), key).Val() == 0
	})
	if err := lock.Release(context.Background()); !errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("Release again = %v, want ErrNotHeld", err)
	}
	if err := lock.Err(); !errors.Is(err, dlock.ErrReleased) {
		t.Errorf("Err = %v, want ErrReleased: the first call released it", err)
	}
}

// A renewed lock whose Release's answer did not come back: once the release
// lands, the next automatic refresh finds it released, and the lock ends
// as released, not lost.
func TestOutcomeUnknownReleaseOfARenewedLock(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	lock, err := e.locker.TryObtain(context.Background(), key, 3*time.Second, dlock.WithAutoRenew(true))
	if err != nil {
		t.Fatal(err)
	}
	e.srv.Pause()
	err = lock.Release(testenv.Timeout(t, 100*time.Millisecond))
	e.srv.Resume()
	if !errors.Is(err, dlock.ErrOutcomeUnknown) {
		t.Fatalf("Release while Redis is paused = %v, want ErrOutcomeUnknown", err)
	}
	select {
	case <-lock.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the lock did not end after its release landed")
	}
	if err := lock.Err(); !errors.Is(err, dlock.ErrReleased) || errors.Is(err, dlock.ErrLockLost) {
		t.Errorf("Err = %v, want ErrReleased", err)
	}
}

// A call whose Redis client gave up waiting (its read timed out) says that
// its outcome is unknown; a call that could not connect says what it is.
func TestOutcomeUnknownWhenTheClientGivesUp(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client(func(o *redis.Options) {
		o.ReadTimeout, o.MaxRetries = 200*time.Millisecond, -1
	})
	locker := lockenv.Locker(t, rdb)
	lock := mustObtain(t, locker, testenv.Key(t), time.Minute)
	srv.Pause()
	err := lock.Release(context.Background())
	srv.Resume()
	if !errors.Is(err, dlock.ErrOutcomeUnknown) || errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("Release whose read timed out = %v, want ErrOutcomeUnknown", err)
	}
	var nodeErr *dlock.NodeError
	if !errors.As(err, &nodeErr) {
		t.Errorf("Release = %v, want a NodeError too", err)
	}

	down := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = down.Close() })
	srv.Kill()
	_, err = lockenv.Locker(t, down).TryObtain(context.Background(), testenv.Key(t), time.Minute)
	if err == nil || errors.Is(err, dlock.ErrOutcomeUnknown) {
		t.Errorf("TryObtain on a server that refuses connections = %v, want an error of known outcome", err)
	}
}

// go-redis (default options) sends the release again when Redis does not
// answer within ReadTimeout, and both copies run once it does; another
// client's SET NX ran between them. The second copy finds the lock
// another's: Release still says it released it, and touches nothing else.
func TestReleaseResentByTheRedisClient(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client() // go-redis's defaults: MaxRetries 3, ReadTimeout 5 s
	testenv.WarmPool(t, rdb, 4)
	locker := lockenv.Locker(t, rdb)
	other := srv.Client(func(o *redis.Options) { o.ReadTimeout, o.MaxRetries = 30*time.Second, -1 })
	key := testenv.Key(t)
	if err := mustObtain(t, locker, key+":warm", time.Minute).Release(context.Background()); err != nil {
		t.Fatal(err) // the scripts are loaded now: a copy of EVALSHA does not fail with NOSCRIPT
	}
	lock := mustObtain(t, locker, key, time.Minute)
	before := testenv.EvalshaCalls(t, rdb)

	srv.Pause()
	released := make(chan error, 1)
	go func() { released <- lock.Release(context.Background()) }()
	time.Sleep(time.Second) // the first copy is on its way
	taken := make(chan bool, 1)
	go func() { taken <- other.SetNX(context.Background(), key, "other", time.Minute).Val() }()
	time.Sleep(testenv.ResendPause - time.Second) // past ReadTimeout: go-redis sends the release again
	srv.Resume()

	if err := <-released; err != nil {
		t.Errorf("Release = %v, want nil: it released the lock", err)
	}
	if err := lock.Err(); !errors.Is(err, dlock.ErrReleased) {
		t.Errorf("Err = %v, want ErrReleased", err)
	}
	if !<-taken {
		t.Error("the other client's SET NX, sent while the release was on its way, did not take the lock")
	}
	if v := value(t, rdb, key); v != "other" {
		t.Errorf("the lock holds %q, want the other client's", v)
	}
	if n := testenv.EvalshaCalls(t, rdb) - before; n < 2 {
		t.Errorf("Redis ran %d EVALSHA, want the release's copies (2 or more): go-redis did not send it again", n)
	}
}

// A record whose acquire got no answer is kept if it landed: it is what
// its caller asked for (a job's done record), so it is not taken back as a
// lock would be. A lock taken in the same pause is taken back.
func TestRecordWithUnknownOutcomeIsKept(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	locker := dlock.New(srv.Client())
	t.Cleanup(func() { locker.Close() })
	recordKey, lockKey := testenv.Key(t)+":record", testenv.Key(t)+":lock"
	// Warm the connection and the scripts, so that both calls are sent
	// while Redis is paused.
	warm, err := locker.TryObtain(context.Background(), testenv.Key(t)+":warm", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv.Pause()
	var recordErr, lockErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		_, recordErr = locker.TryObtain(testenv.Timeout(t, 200*time.Millisecond), recordKey, time.Minute, dlock.AsRecord())
	})
	wg.Go(func() {
		_, lockErr = locker.TryObtain(testenv.Timeout(t, 200*time.Millisecond), lockKey, time.Minute)
	})
	wg.Wait()
	srv.Resume()
	for name, err := range map[string]error{"record": recordErr, "lock": lockErr} {
		if !errors.Is(err, dlock.ErrOutcomeUnknown) {
			t.Fatalf("TryObtain of the %s while Redis is paused = %v, want ErrOutcomeUnknown", name, err)
		}
	}
	locker.Close() // waits for the calls that went on in the background
	rdb := srv.Client()
	if n := rdb.Exists(context.Background(), recordKey).Val(); n != 1 {
		t.Errorf("the record's key exists %d times after its acquire landed, want 1: it was taken back", n)
	}
	if n := rdb.Exists(context.Background(), lockKey).Val(); n != 0 {
		t.Errorf("the lock's key exists %d times after its caller gave up, want 0", n)
	}
}
