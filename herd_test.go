package dlock_test

import (
	"context"
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
	"github.com/dlock-go/dlock/redistest"
)

// scriptCalls returns how many scripts the server ran (EVALSHA and EVAL
// calls in INFO commandstats).
func scriptCalls(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for line := range strings.SplitSeq(info, "\r\n") {
		name, stats, ok := strings.Cut(line, ":")
		if !ok || (name != "cmdstat_evalsha" && name != "cmdstat_eval") {
			continue
		}
		for field := range strings.SplitSeq(stats, ",") {
			if v, ok := strings.CutPrefix(field, "calls="); ok {
				calls, _ := strconv.ParseInt(v, 10, 64)
				n += calls
			}
		}
	}
	return n
}

// A release wakes one waiter, not every waiter of every Client: 80 waiters
// on 4 Clients, one lock, cost about three scripts each (an attempt that
// joins the queue, the attempt the release woke it for, the release), not
// one attempt per waiter per release.
func TestOneWakeUpPerRelease(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	const clients, perClient = 4, 20
	lockers := make([]*dlock.Client, clients)
	for i := range lockers {
		lockers[i] = lockenv.Locker(t, srv.Client())
	}
	doAll := func(key string, n int) int32 {
		var holders, overlaps atomic.Int32
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				err := lockers[i%clients].Do(testenv.Timeout(t, 30*time.Second), key, 10*time.Second, func(context.Context) error {
					if holders.Add(1) > 1 {
						overlaps.Add(1)
					}
					time.Sleep(time.Millisecond)
					holders.Add(-1)
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		return overlaps.Load()
	}
	// Warm up, as a service that has run for a while: the scripts loaded,
	// the Clients listening.
	doAll(testenv.Key(t)+":warm", 2*clients)

	before := scriptCalls(t, srv.Client())
	if overlaps := doAll(testenv.Key(t), clients*perClient); overlaps > 0 {
		t.Errorf("%d times two held the lock at once", overlaps)
	}
	perDo := float64(scriptCalls(t, srv.Client())-before) / (clients * perClient)
	t.Logf("%.2f scripts per Do", perDo)
	if perDo > 4 {
		t.Errorf("%.2f scripts per Do with %d waiters on %d Clients, want at most 4: one wake-up per release", perDo, clients*perClient, clients)
	}
}

// A waiter whose Client is gone, first in the queue when the lock is
// released, does not hold the others up: the release passes it over and
// wakes the next, whose Backoff alone would let it sleep a minute.
func TestReleasePassesOverAGoneWaiter(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	holder := mustObtain(t, e.locker, key, time.Minute)

	goneRdb := e.srv.Client()
	gone := lockenv.Locker(t, goneRdb)
	go func() {
		_, _ = gone.Obtain(testenv.Timeout(t, 10*time.Second), key, time.Minute, noPolling)
	}()
	waitQueued(t, e.rdb, key, 1)
	next := lockenv.Locker(t, e.srv.Client())
	got := make(chan error, 1)
	go func() {
		lock, err := next.Obtain(testenv.Timeout(t, 10*time.Second), key, time.Minute, noPolling)
		if err == nil {
			err = lock.Release(context.Background())
		}
		got <- err
	}()
	waitQueued(t, e.rdb, key, 2)
	_ = goneRdb.Close() // its connections close, as a process's do when it dies

	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the next waiter: %v", err)
		}
	case <-time.After(time.Second): // a third of its lease in the queue: when it would try anyway
		t.Fatal("the next waiter was not woken by the release: the gone one held it up")
	}
}

// A waiter that a release woke, and that never tries (its process froze
// as it was about to), holds the others up for a while only: the next
// waiter gets the lock, without the release that would wake it.
func TestWokenWaiterThatFreezes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	holder := mustObtain(t, e.locker, key, time.Minute)

	frozenRdb := e.srv.Client()
	freeze := make(chan struct{})
	frozenRdb.AddHook(freezeWokenAttempt{freeze})
	frozen := lockenv.Locker(t, frozenRdb)
	t.Cleanup(func() { close(freeze) }) // before Close, which waits for the frozen call
	go func() { _, _ = frozen.Obtain(testenv.Timeout(t, 20*time.Second), key, time.Minute, noPolling) }()
	waitQueued(t, e.rdb, key, 1)
	got := make(chan error, 1)
	go func() {
		lock, err := lockenv.Locker(t, e.srv.Client()).Obtain(testenv.Timeout(t, 15*time.Second), key, time.Minute, noPolling)
		if err == nil {
			err = lock.Release(context.Background())
		}
		got <- err
	}()
	waitQueued(t, e.rdb, key, 2)
	if err := holder.Release(context.Background()); err != nil { // wakes the first waiter, which freezes
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiter behind the frozen one: %v", err)
	}
}

// freezeWokenAttempt is a go-redis hook that blocks, until its channel is
// closed, the attempt of a waiter that a release woke (queue_acquire.lua's
// last argument "1").
type freezeWokenAttempt struct{ until chan struct{} }

func (freezeWokenAttempt) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h freezeWokenAttempt) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); isScript(cmd) && len(args) > 0 && args[len(args)-1] == "1" {
			<-h.until
		}
		return next(ctx, cmd)
	}
}
func (freezeWokenAttempt) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
