package dlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/redistest"
)

// obtainRenewed obtains key with auto-renew or fails the test.
func obtainRenewed(t testing.TB, locker *dlock.Client, key string, ttl time.Duration) *dlock.Lock {
	t.Helper()
	lock, err := locker.TryObtain(context.Background(), key, ttl, dlock.WithAutoRenew(true))
	if err != nil {
		t.Fatalf("TryObtain(%q, WithAutoRenew): %v", key, err)
	}
	return lock
}

// waitDone waits for lock.Done, failing the test after limit, and returns
// when it closed.
func waitDone(t *testing.T, lock *dlock.Lock, limit time.Duration) time.Time {
	t.Helper()
	select {
	case <-lock.Done():
		return time.Now()
	case <-time.After(limit):
		t.Fatalf("Done not closed after %v; Err = %v", limit, lock.Err())
	}
	return time.Time{}
}

// isOpen reports whether lock.Done is still open.
func isOpen(lock *dlock.Lock) bool {
	select {
	case <-lock.Done():
		return false
	default:
		return true
	}
}

func TestAutoRenewKeepsLock(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	// A refresh gets a sixth of the ttl, at least 50ms: enough on a loaded
	// machine under -race only with a ttl well above that.
	const ttl = time.Second
	lock := obtainRenewed(t, e.locker, key, ttl)

	time.Sleep(4 * ttl)
	if !isOpen(lock) {
		t.Fatalf("lock ended while renewed: %v", lock.Err())
	}
	if got := holderOf(t, e.rdb, key); got != lock.Token() {
		t.Fatalf("after 4 ttls the key holds %q, want our token", got)
	}
	if left := time.Until(lock.Until()); left < ttl/3 {
		t.Errorf("Until is %v away, want it moved by the renewals (> ttl/3)", left)
	}
	other := dlock.New(e.rdb)
	defer other.Close()
	if _, err := other.TryObtain(context.Background(), key, ttl); !errors.Is(err, dlock.ErrNotObtained) {
		t.Errorf("TryObtain by another client = %v, want ErrNotObtained", err)
	}

	if err := lock.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitDone(t, lock, time.Second)
	if err := lock.Err(); !errors.Is(err, dlock.ErrReleased) {
		t.Errorf("Err after Release = %v, want ErrReleased", err)
	}
	time.Sleep(ttl / 2) // a refresh now would recreate nothing, but must not be sent
	if n := e.rdb.Exists(context.Background(), key).Val(); n != 0 {
		t.Errorf("key exists after Release")
	}
}

// Each way of losing a renewed lock is signalled on Done, with ErrLockLost
// that says how. (When the key is deleted, flushed or lost in a restart, it
// is gone at once, and the renewer says so at its next refresh; when Redis
// stops answering, the lock is declared lost when its validity runs out,
// before the key can expire there, without waiting for Redis.) The test
// asserts how it was lost, not how fast: timers fire late on a loaded
// machine; only a loss a whole ttl late fails it.
func TestAutoRenewLost(t *testing.T) {
	t.Parallel()
	const ttl = time.Second
	const found, ranOut = "a refresh found it gone or taken", "no refresh got through before its validity ran out"
	cases := []struct {
		name string
		lose func(*env, string)
		how  string
	}{
		{"DEL", func(e *env, key string) { e.rdb.Del(context.Background(), key) }, found},
		{"FLUSHALL", func(e *env, _ string) { e.rdb.FlushAll(context.Background()) }, found},
		{"taken over", func(e *env, key string) { e.rdb.Set(context.Background(), key, "someone else", 0) }, found},
		{"restart", func(e *env, _ string) { e.srv.Restart() }, ""},
		{"paused past the ttl", func(e *env, _ string) {
			e.srv.Pause()
			time.AfterFunc(ttl+ttl/2, e.srv.Resume)
		}, ranOut},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			key := testenv.Key(t)
			lock := obtainRenewed(t, e.locker, key, ttl)
			time.Sleep(ttl / 2) // after the first renewal
			tc.lose(e, key)
			until := lock.Until()
			closed := waitDone(t, lock, 3*ttl)
			// On a machine slow enough that the renewer misses the whole
			// validity, any loss also reads "ran out".
			if err := lock.Err(); !errors.Is(err, dlock.ErrLockLost) || !strings.Contains(err.Error(), tc.how) && !strings.Contains(err.Error(), ranOut) {
				t.Errorf("Err = %v, want ErrLockLost: %s", err, tc.how)
			}
			if late := closed.Sub(until); late > ttl {
				t.Errorf("Done closed %v after Until", late)
			}
			if err := lock.Release(context.Background()); !errors.Is(err, dlock.ErrNotHeld) {
				t.Errorf("Release after the loss = %v, want ErrNotHeld", err)
			}
		})
	}
}

// Ten thousand renewed locks on one Client stay held for three ttls, and
// the renewer needs far fewer round trips than one per lock per renewal.
func TestAutoRenewManyLocks(t *testing.T) {
	if testing.Short() {
		t.Skip("obtains 10,000 locks")
	}
	t.Parallel()
	e := setup(t)
	var trips atomic.Int64
	e.rdb.AddHook(countTrips{&trips})
	const n, ttl = 10_000, 3 * time.Second
	key := testenv.Key(t)

	locks := make([]*dlock.Lock, n)
	var wg sync.WaitGroup
	const workers = 16
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				lock, err := e.locker.TryObtain(context.Background(), fmt.Sprintf("%s:%d", key, i), ttl, dlock.WithAutoRenew(true))
				if err != nil {
					t.Error(err)
					return
				}
				locks[i] = lock
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	start := trips.Load()
	time.Sleep(3 * ttl)
	renewTrips := trips.Load() - start

	for i, lock := range locks {
		if !isOpen(lock) {
			t.Fatalf("lock %d ended: %v", i, lock.Err())
		}
	}
	keys := e.rdb.DBSize(context.Background()).Val()
	if keys != n { // every lock key (a fence key only once Fence is called)
		t.Errorf("DBSIZE = %d after 3 ttls, want %d", keys, n)
	}
	// One round trip per lock per renewal period would be n*3*3.
	if limit := int64(n); renewTrips >= limit {
		t.Errorf("%d round trips to renew %d locks for 3 ttls, want fewer than %d", renewTrips, n, limit)
	}
	t.Logf("%d round trips renewed %d locks over 3 ttls", renewTrips, n)
}

// countTrips counts the round trips of a go-redis client: one per command
// or pipeline sent.
type countTrips struct{ n *atomic.Int64 }

func (h countTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h countTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && isScript(cmds[0]) {
			h.n.Add(1)
		}
		return next(ctx, cmds)
	}
}

// Without auto-renew, Done closes when the validity runs out, unless
// Refresh moves it.
func TestDoneWithoutAutoRenew(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	const ttl = 300 * time.Millisecond
	lock := mustObtain(t, e.locker, key, ttl)
	done := lock.Done()
	time.Sleep(ttl / 2)
	if err := lock.Refresh(context.Background(), ttl); err != nil {
		t.Fatal(err)
	}
	until := lock.Until()
	closed := waitDone(t, lock, 2*ttl)
	if closed.Before(until) {
		t.Errorf("Done closed %v before Until", until.Sub(closed))
	}
	if err := lock.Err(); !errors.Is(err, dlock.ErrLockLost) {
		t.Errorf("Err = %v, want ErrLockLost", err)
	}
	if done != lock.Done() {
		t.Error("Done returned another channel on the second call")
	}
	if err := lock.Refresh(context.Background(), ttl); !errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("Refresh after Done = %v, want ErrNotHeld", err)
	}
}

func TestDoneAfterRelease(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lock := mustObtain(t, e.locker, testenv.Key(t), time.Minute)
	if lock.Err() != nil {
		t.Fatalf("Err of a held lock = %v, want nil", lock.Err())
	}
	if err := lock.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitDone(t, lock, time.Second) // Done called after the end: closed at once
	if err := lock.Err(); !errors.Is(err, dlock.ErrReleased) {
		t.Errorf("Err = %v, want ErrReleased", err)
	}
}

// A refresh that answers "not held" ends a lock that is not renewed too.
func TestDoneWhenRefreshFindsItGone(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	lock := mustObtain(t, e.locker, key, time.Minute)
	e.rdb.Del(context.Background(), key)
	if err := lock.Refresh(context.Background(), time.Minute); !errors.Is(err, dlock.ErrNotHeld) {
		t.Fatalf("Refresh = %v, want ErrNotHeld", err)
	}
	waitDone(t, lock, time.Second)
	if err := lock.Err(); !errors.Is(err, dlock.ErrLockLost) {
		t.Errorf("Err = %v, want ErrLockLost", err)
	}
}

// Closing the Client stops renewal, and says so on every renewed lock.
func TestCloseEndsRenewedLocks(t *testing.T) {
	t.Parallel()
	e := setup(t)
	locker := dlock.New(e.rdb)
	lock := obtainRenewed(t, locker, testenv.Key(t), time.Minute)
	plain := mustObtain(t, locker, testenv.Key(t)+":plain", time.Minute)
	locker.Close()
	waitDone(t, lock, time.Second)
	if err := lock.Err(); !errors.Is(err, dlock.ErrLockLost) || !errors.Is(err, dlock.ErrClosed) {
		t.Errorf("Err = %v, want ErrLockLost and ErrClosed", err)
	}
	if plain.Err() != nil {
		t.Errorf("a lock without auto-renew ended on Close: %v", plain.Err())
	}
	if _, err := locker.TryObtain(context.Background(), testenv.Key(t)+":after", time.Minute, dlock.WithAutoRenew(true)); !errors.Is(err, dlock.ErrClosed) {
		t.Errorf("TryObtain after Close = %v, want ErrClosed", err)
	}
}

// After a SCRIPT FLUSH the renewer's pipeline falls back to EVAL.
func TestAutoRenewAfterScriptFlush(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	const ttl = 300 * time.Millisecond
	lock := obtainRenewed(t, e.locker, key, ttl)
	e.rdb.ScriptFlush(context.Background())
	time.Sleep(3 * ttl)
	if !isOpen(lock) {
		t.Fatalf("lock lost after SCRIPT FLUSH: %v", lock.Err())
	}
}

// A renewed lock whose refreshes fail, here because Redis refuses
// connections, retries them every ttl/20, not as fast as it can: the loss
// is declared at Until either way.
func TestAutoRenewRetriesAtItsInterval(t *testing.T) {
	t.Parallel()
	const ttl = 600 * time.Millisecond
	srv := redistest.NewServer(t)
	rdb := srv.Client(func(o *redis.Options) {
		o.MaxRetries, o.DialerRetries = -1, 1
	})
	var refreshes atomic.Int64
	rdb.AddHook(pipelineCounter{&refreshes})
	locker := lockenv.Locker(t, rdb)
	lock := obtainRenewed(t, locker, testenv.Key(t), ttl)
	srv.Kill()
	waitDone(t, lock, 10*ttl)
	if err := lock.Err(); !errors.Is(err, dlock.ErrLockLost) {
		t.Errorf("Err = %v, want ErrLockLost", err)
	}
	// From the first refresh, at ttl/3, to the loss, before ttl: at most
	// about (2/3)ttl / (ttl/20) = 14 attempts.
	if n := refreshes.Load(); n < 1 || n > 20 {
		t.Errorf("%d refresh attempts while Redis refused connections, want 1 to 20 (one every ttl/20)", n)
	}
}

// pipelineCounter is a go-redis hook counting the pipelines of scripts,
// which is how the renewer sends its refreshes.
type pipelineCounter struct{ n *atomic.Int64 }

func (pipelineCounter) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (pipelineCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h pipelineCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && isScript(cmds[0]) {
			h.n.Add(1)
		}
		return next(ctx, cmds)
	}
}

// Refresh on a renewed lock sets the ttl the renewer keeps: the automatic
// refreshes after it extend the key by the new ttl, and Until follows.
func TestRefreshSetsTheRenewedTTL(t *testing.T) {
	t.Parallel()
	const ttl, longer = time.Second, 2400 * time.Millisecond
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	var pipelines atomic.Int64
	rdb.AddHook(pipelineCounter{&pipelines})
	locker := lockenv.Locker(t, rdb)
	key := testenv.Key(t)
	lock := obtainRenewed(t, locker, key, ttl)
	if err := lock.Refresh(context.Background(), longer); err != nil {
		t.Fatal(err)
	}
	if left := time.Until(lock.Until()); left <= ttl {
		t.Errorf("Until is %v away after Refresh(%v), want more than the old ttl %v", left, longer, ttl)
	}
	renewals := pipelines.Load()
	testenv.Eventually(t, 10*time.Second, "two automatic refreshes after Refresh", func() bool {
		return pipelines.Load() >= renewals+2
	})
	if pttl := srv.Client().PTTL(context.Background(), key).Val(); pttl <= ttl {
		t.Errorf("PTTL after the renewer's refreshes = %v, want more than the old ttl %v: the renewer went back to it", pttl, ttl)
	}
	if left := time.Until(lock.Until()); left <= ttl {
		t.Errorf("Until is %v away after the renewer's refreshes, want more than the old ttl %v", left, ttl)
	}
	if err := lock.Release(context.Background()); err != nil {
		t.Error(err)
	}
}

// A Refresh while an automatic refresh with the old ttl is on its way: the
// renewer sends the new ttl again once the old one has landed, so the key
// ends up with the Refresh's ttl whichever Redis ran last.
func TestRefreshDuringAutomaticRefresh(t *testing.T) {
	t.Parallel()
	const ttl, longer = 600 * time.Millisecond, 3 * time.Second
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	hold := &holdFirstPipeline{entered: make(chan struct{}), release: make(chan struct{})}
	rdb.AddHook(hold)
	locker := lockenv.Locker(t, rdb)
	key := testenv.Key(t)
	lock := obtainRenewed(t, locker, key, ttl)
	<-hold.entered // the first automatic refresh, with ttl, waits to be sent
	if err := lock.Refresh(context.Background(), longer); err != nil {
		t.Fatal(err)
	}
	close(hold.release) // it lands after the Refresh: the key has ttl again
	testenv.Eventually(t, 10*time.Second, "the renewer sending the Refresh's ttl again", func() bool {
		return srv.Client().PTTL(context.Background(), key).Val() > ttl
	})
	if left := time.Until(lock.Until()); left > longer {
		t.Errorf("Until is %v away, more than the ttl %v", left, longer)
	}
	if err := lock.Release(context.Background()); err != nil {
		t.Error(err)
	}
}

// holdFirstPipeline is a go-redis hook that holds the first pipeline of
// scripts back until release is closed, after closing entered.
type holdFirstPipeline struct {
	entered, release chan struct{}
	once             sync.Once
}

func (*holdFirstPipeline) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (*holdFirstPipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *holdFirstPipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && isScript(cmds[0]) {
			h.once.Do(func() {
				close(h.entered)
				<-h.release
			})
		}
		return next(ctx, cmds)
	}
}
