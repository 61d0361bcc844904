package dlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// The regression test of a Redlock double grant: an Obtain whose first
// attempt found the lock held while three nodes were slow retried at once
// with the same token, and the first attempt's late clean-up on the slow
// nodes then deleted what the retry had won there, leaving the holder on a
// minority with nothing said, while another client obtained the lock.
func TestRedlockRetryAfterSlowNodesKeepsItsQuorum(t *testing.T) {
	t.Parallel()
	const key = "redlock:retry"
	srvs := redistest.NewServers(t, 5)
	direct := make([]*redis.Client, len(srvs))
	for i, s := range srvs {
		direct[i] = s.Client()
	}
	// Another holder has the lock on nodes 0 and 1, a minority.
	for _, rdb := range direct[:2] {
		if err := rdb.Set(context.Background(), key, "another-holder", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var slowDone, undone sync.WaitGroup
	slowDone.Add(3)
	undone.Add(3)
	rdbs := make([]*redis.Client, len(srvs))
	for i, s := range srvs {
		rdbs[i] = s.Client()
		switch i {
		case 0:
			// Once node 0 said "held" to the first attempt, the other holder
			// goes away: the next attempt finds nodes 0 and 1 free.
			rdbs[i].AddHook(&afterFirstAcquire{key: key, then: func() {
				for _, rdb := range direct[:2] {
					rdb.Del(context.Background(), key)
				}
			}})
		case 2, 3, 4:
			// The first attempt's SET lands on nodes 2-4, but its replies
			// come long after the node timeout.
			rdbs[i].AddHook(&afterFirstAcquire{key: key, then: func() {
				time.Sleep(300 * time.Millisecond)
				slowDone.Done()
			}, releases: &undone})
		}
	}
	locker := newRedlock(t, rdbs, dlock.WithNodeTimeout(100*time.Millisecond))
	lock, err := locker.Obtain(testenv.Timeout(t, 10*time.Second), key, time.Minute)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	slowDone.Wait()
	undone.Wait() // the first attempt was taken back on the slow nodes

	held := 0
	for _, rdb := range direct {
		if rdb.Get(context.Background(), key).Val() == lock.Token() {
			held++
		}
	}
	t.Logf("the holder is on %d of 5 nodes", held)
	if held < 3 {
		t.Errorf("the holder's token is on %d of 5 nodes once the first attempt was taken back, want a majority", held)
	}
	other := newRedlock(t, direct)
	if _, err := other.TryObtain(context.Background(), key, time.Minute); !errors.Is(err, dlock.ErrNotObtained) {
		t.Errorf("another client's TryObtain while the lock is held = %v; want ErrNotObtained", err)
	}
	if err := lock.Release(context.Background()); err != nil {
		t.Errorf("Release: %v", err)
	}
}

// afterFirstAcquire is a go-redis hook that calls then once, after the
// first pipeline that sets key (a Redlock node's acquire) has its replies.
// If releases is not nil, it is marked done once per release script run
// on the node after that, the first attempt's clean-up.
type afterFirstAcquire struct {
	key      string
	then     func()
	releases *sync.WaitGroup
	fired    atomic.Bool
	released atomic.Bool
}

func (h *afterFirstAcquire) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *afterFirstAcquire) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if h.releases != nil && h.fired.Load() && isScript(cmd) && !h.released.Swap(true) {
			h.releases.Done()
		}
		return err
	}
}

func (h *afterFirstAcquire) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if len(cmds) > 0 && cmds[0].Name() == "set" && len(cmds[0].Args()) > 1 &&
			cmds[0].Args()[1] == h.key && !h.fired.Swap(true) {
			h.then()
		}
		return err
	}
}

func isScript(cmd redis.Cmder) bool {
	return strings.HasPrefix(cmd.Name(), "eval")
}

// On a Redlock, Inspect tells a holder's fence only once a quorum stores
// it: not before its first Fence, when the nodes still keep the previous
// holder's (which would be a lie about who holds it), and then exactly
// the one Fence returned.
func TestRedlockInspectTellsTheHoldersFence(t *testing.T) {
	t.Parallel()
	e := setupQuorum(t, 3)
	key := testenv.Key(t)
	ctx := context.Background()
	first, err := e.locker.TryObtain(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := e.locker.Inspect(ctx, key); err != nil || !info.Held || info.Fence != 0 {
		t.Errorf("Inspect before the first Fence = %+v, %v; want held, fence 0", info, err)
	}
	fence := first.Fence()
	if info, err := e.locker.Inspect(ctx, key); err != nil || info.Fence != fence {
		t.Errorf("Inspect after Fence = %+v, %v; want fence %d", info, err, fence)
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	second, err := e.locker.TryObtain(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := e.locker.Inspect(ctx, key); err != nil || info.Fence != 0 {
		t.Errorf("Inspect of a new holder before its Fence = %+v, %v; want fence 0, not the last holder's %d", info, err, fence)
	}
	if f := second.Fence(); f <= fence {
		t.Errorf("second fence %d after %d", f, fence)
	}
	_ = second.Release(ctx)
}
