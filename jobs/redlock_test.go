package jobs_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/jobs"
	"github.com/dlock-go/dlock/redistest"
)

// On a Redlock of three nodes with one down, three hosts run a slot once.
// (History needs every node, as dlock's Scan does.)
func TestRedlockWithANodeDown(t *testing.T) {
	t.Parallel()
	srvs := redistest.NewServers(t, 3)
	var runners []*jobs.Runner
	for _, h := range []string{"a", "b", "c"} {
		var nodes []redis.UniversalClient
		for _, s := range srvs {
			nodes = append(nodes, s.Client(testenv.FastFail))
		}
		locker, err := dlock.NewRedlock(nodes, dlock.WithNodeTimeout(500*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { locker.Close() })
		runners = append(runners, newRunner(t, locker, jobs.WithHost(h)))
	}
	srvs[1].Kill()
	name, slot := testenv.NewKey(t), time.Now()
	var ran atomic.Int32
	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Go(func() {
			if _, err := r.Run(t.Context(), name, slot, func(context.Context) error { ran.Add(1); return nil }); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if outcome, err := runners[0].Run(t.Context(), name, slot, func(context.Context) error { ran.Add(1); return nil }); outcome != jobs.AlreadyDone || err != nil {
		t.Errorf("a late Run = %v, %v; want already done", outcome, err)
	}
	if n := ran.Load(); n != 1 {
		t.Errorf("the slot ran %d times, want once", n)
	}
}
