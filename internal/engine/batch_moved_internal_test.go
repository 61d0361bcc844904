package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// A batch whose calls meet MOVED: their slot moved to another primary after
// the Redis client read the slot map, so the one pipeline they go out in
// reaches the old owner, which answers MOVED for each of them, and go-redis
// sends them on to the new owner. Each call gets its own lock there, and the
// calls of another slot in the same wait are not disturbed.
func TestBatchMeetsMoved(t *testing.T) {
	t.Parallel()
	cluster := redistest.NewCluster(t, 2, 0)
	rdb := cluster.Client()
	pipes := &pipeRecorder{}
	rdb.AddHook(pipes)
	c := newTestEngine(t, rdb)
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	from, to := cluster.Primaries()[0], cluster.Primaries()[1]

	// Keys by hash tag: the moving slot's and the lanes' are both on from
	// at first. A lock on the lanes' slot and one on to read the slot map
	// and load the scripts on both (the moving slot stays empty: a slot
	// with keys cannot be given away).
	movingTag := tagOn(t, cluster, from, "")
	laneTag, toTag := tagOn(t, cluster, from, movingTag), tagOn(t, cluster, to, "")
	for _, tag := range []string{laneTag, toTag} {
		lock, err := c.TryObtain(ctx, tag+"warm", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := lock.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// Move the (empty) slot behind the client's back: it still sends its
	// keys to from.
	slot := redistest.Slot(movingTag)
	toID, err := to.Client().Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*redistest.Server{to, from} {
		if err := s.Client().Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", toID).Err(); err != nil {
			t.Fatalf("CLUSTER SETSLOT on %s: %v", s.Addr(), err)
		}
	}

	// Every lane busy with a call to from, paused; then three calls of the
	// moved slot queue.
	lanes := occupyLanes(t, c, from, laneTag, nil)
	const calls = 3
	locks := make([]*Hold, calls)
	errs := make([]error, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() { locks[i], errs[i] = c.TryObtain(ctx, fmt.Sprintf("%smoved:%d", movingTag, i), time.Minute) })
		testenv.Eventually(t, 10*time.Second, "calls queued", func() bool { return c.node.batch.Queued() == i+1 })
	}
	from.Resume()
	wg.Wait()
	lanes()

	for i := range calls {
		key := fmt.Sprintf("%smoved:%d", movingTag, i)
		if errs[i] != nil {
			t.Errorf("TryObtain %s: %v", key, errs[i])
			continue
		}
		if got, _ := SplitValue(to.Client().Get(ctx, key).Val()); got != locks[i].token {
			t.Errorf("%s on the slot's new owner holds %q, want the lock's token", key, got)
		}
		if err := locks[i].Release(ctx); err != nil {
			t.Errorf("Release %s: %v", key, err)
		}
	}
	want := []string{"evalsha", "evalsha", "evalsha"}
	if got := pipes.recorded(); !slices.ContainsFunc(got, func(p []string) bool { return slices.Equal(p, want) }) {
		t.Errorf("pipelines = %v, want one of %v", got, want)
	}
	// The batch did reach the old owner first.
	stats, err := from.Client().Info(ctx, "errorstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stats, fmt.Sprintf("errorstat_MOVED:count=%d\r", calls)) {
		t.Errorf("the old owner did not answer MOVED to each of the %d calls:\n%s", calls, stats)
	}
}

// tagOn returns a hash tag ("{t3}") whose slot primary serves, other than
// the slot of not.
func tagOn(t *testing.T, cluster *redistest.Cluster, primary *redistest.Server, not string) string {
	t.Helper()
	for i := range 1000 {
		tag := fmt.Sprintf("{batch-moved-%d}", i)
		if cluster.PrimaryOf(tag) == primary && (not == "" || redistest.Slot(tag) != redistest.Slot(not)) {
			return tag
		}
	}
	t.Fatal("no hash tag on the primary")
	return ""
}
