package dlockotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/dlock-go/dlock/cachefill"
	"github.com/dlock-go/dlock/election"
	"github.com/dlock-go/dlock/fence"
	"github.com/dlock-go/dlock/idempotency"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/jobs"
	dlockotel "github.com/dlock-go/dlock/otel"
	"github.com/dlock-go/dlock/stock"
)

func outcome(v string) attribute.KeyValue { return attribute.String("dlock.outcome", v) }

// check fails the test unless got is want.
func check[N int64 | uint64](t *testing.T, what string, got, want N) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %d, want %d", what, got, want)
	}
}

// A cache's lookups, waits and loads, with a second Cache waiting for the
// first one's load.
func TestCachefillInstruments(t *testing.T) {
	t.Parallel()
	tm := setup(t)
	ctx := timeout(t, 30*time.Second)
	caches := make([]*cachefill.Cache, 2)
	for i := range caches {
		c, err := cachefill.New(tm.locker)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		caches[i] = c
	}
	release := make(chan struct{})
	errs := make(chan error, 2)
	go func() {
		_, err := caches[0].Get(ctx, "k", time.Minute, func(ctx context.Context) ([]byte, error) {
			select {
			case <-release:
				return []byte("v"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
		errs <- err
	}()
	eventually(t, 10*time.Second, "the first miss", func() bool {
		return tm.sum(t, "dlock.cachefill.lookups", outcome("miss")) == 1
	})
	go func() {
		_, err := caches[1].Get(ctx, "k", time.Minute, func(context.Context) ([]byte, error) { return []byte("w"), nil })
		errs <- err
	}()
	eventually(t, 10*time.Second, "the second Cache waiting", func() bool { return tm.sum(t, "dlock.cachefill.waits") == 1 })
	close(release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := caches[1].Get(ctx, "k", time.Minute, nil); err == nil {
		t.Fatal("Get with a nil load accepted") // bad input tells nothing
	}
	if v, err := caches[1].Get(ctx, "k", time.Minute, func(context.Context) ([]byte, error) { return nil, errors.New("not called") }); err != nil || string(v) != "v" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	check(t, "hits", tm.sum(t, "dlock.cachefill.lookups", outcome("hit")), 1)
	check(t, "misses", tm.sum(t, "dlock.cachefill.lookups", outcome("miss")), 2)
	check(t, "loads stored", tm.count(t, "dlock.cachefill.load.duration", attribute.String("dlock.op", "load"), outcome("stored")), 1)
	check(t, "fallbacks", tm.sum(t, "dlock.cachefill.fallbacks"), 0)
}

// Runs by job and outcome: one while another host runs the job, whose
// attempt fails, and one after it, with no attempt left.
func TestJobsInstruments(t *testing.T) {
	t.Parallel()
	tm := setup(t)
	ctx := timeout(t, 30*time.Second)
	runner, err := jobs.New(tm.locker)
	if err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Truncate(time.Minute)
	attempt, err := runner.Begin(ctx, "sync", slot)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := runner.Run(ctx, "sync", slot, func(context.Context) error { return nil }); out != jobs.RunningElsewhere || err != nil {
		t.Fatalf("Run while another runs = %v, %v", out, err)
	}
	if _, err := attempt.Finish(ctx, errors.New("failed")); err == nil {
		t.Fatal("Finish of a failure returned nil")
	}
	// One attempt per slot (the default), and it failed.
	if out, err := runner.Run(ctx, "sync", slot, func(context.Context) error { return nil }); out != jobs.NoAttemptsLeft || err != nil {
		t.Fatalf("Run after the failure = %v, %v", out, err)
	}
	name := attribute.String("dlock.job.name", "sync")
	check(t, "running elsewhere", tm.sum(t, "dlock.jobs.runs", name, outcome("running_elsewhere")), 1)
	check(t, "failed", tm.sum(t, "dlock.jobs.runs", name, outcome("failed")), 1)
	check(t, "no attempts left", tm.sum(t, "dlock.jobs.runs", name, outcome("no_attempts_left")), 1)
	check(t, "durations", tm.count(t, "dlock.jobs.run.duration", name), 1)
}

// The leader gauge goes up with a won term and down with its loss, while
// a rival waits; the rival's term is counted too.
func TestElectionInstruments(t *testing.T) {
	t.Parallel()
	tm := setup(t)
	ctx := timeout(t, 30*time.Second)
	seat, err := election.New(tm.locker, "primary", election.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	name := attribute.String("dlock.election.name", "primary")
	first, err := seat.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	check(t, "leader", tm.sum(t, "dlock.election.leader", name), 1)
	rival := make(chan *election.Leadership, 1)
	go func() {
		l, err := seat.Campaign(ctx, "b")
		if err != nil {
			t.Error(err)
		}
		rival <- l
	}()
	if err := tm.srv.Client().Del(ctx, "primary").Err(); err != nil {
		t.Fatal(err)
	}
	<-first.Done()
	second := <-rival
	if second == nil {
		return
	}
	eventually(t, 10*time.Second, "the lost term told", func() bool {
		return tm.sum(t, "dlock.election.terms", name, outcome("lost")) == 1
	})
	check(t, "won", tm.sum(t, "dlock.election.terms", name, outcome("won")), 2)
	check(t, "leader", tm.sum(t, "dlock.election.leader", name), 1)
	if err := second.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the gauge down", func() bool { return tm.sum(t, "dlock.election.leader", name) == 0 })
}

// Calls by outcome: stored, replayed, mismatch, and in progress while a
// first call runs.
func TestIdempotencyInstruments(t *testing.T) {
	t.Parallel()
	tm := setup(t)
	ctx := timeout(t, 30*time.Second)
	store, err := idempotency.New(tm.locker, idempotency.WithWait(0))
	if err != nil {
		t.Fatal(err)
	}
	pay := func(context.Context) ([]byte, error) { return []byte("paid"), nil }
	if _, _, err := store.Do(ctx, "a", []byte("x"), pay); err != nil {
		t.Fatal(err)
	}
	if _, replayed, err := store.Do(ctx, "a", []byte("x"), pay); !replayed || err != nil {
		t.Fatalf("second Do: replayed %v, %v", replayed, err)
	}
	if _, _, err := store.Do(ctx, "a", []byte("y"), pay); !errors.Is(err, idempotency.ErrMismatch) {
		t.Fatalf("Do with another fingerprint: %v", err)
	}
	running, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, _, err := store.Do(ctx, "b", nil, func(context.Context) ([]byte, error) {
			close(running)
			<-release
			return nil, nil
		})
		done <- err
	}()
	<-running
	if _, _, err := store.Do(ctx, "b", nil, pay); !errors.Is(err, idempotency.ErrInProgress) {
		t.Errorf("Do while in progress: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.Do(ctx, "", nil, pay); err == nil {
		t.Fatal("empty key accepted") // bad input tells nothing
	}
	for o, n := range map[string]int64{"stored": 2, "replayed": 1, "mismatch": 1, "in_progress": 1, "error": 0} {
		check(t, o, tm.sum(t, "dlock.idempotency.calls", outcome(o)), n)
	}
}

// Reservations, a sold-out, a commit and a cancel of nothing, through
// stock.WithObserver.
// TestFenceInstruments counts fenced writes: one written, a late one
// refused.
func TestFenceInstruments(t *testing.T) {
	t.Parallel()
	tm := setup(t)
	ctx := timeout(t, 30*time.Second)
	store, err := fence.NewRedis(tm.srv.Client(), fence.WithObserver(tm.observe))
	if err != nil {
		t.Fatal(err)
	}
	key := testenv.Key(t)
	if err := store.Set(ctx, key, 10, "v", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := store.Set(ctx, key, 9, "late", time.Minute); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("a lower fence: %v, want ErrStale", err)
	}
	op := attribute.String("dlock.op", "redis_write")
	check(t, "written", tm.sum(t, "dlock.fence.writes", op, outcome("written")), 1)
	check(t, "stale", tm.sum(t, "dlock.fence.writes", op, outcome("stale")), 1)
}

func TestStockInstruments(t *testing.T) {
	t.Parallel()
	tm := setup(t)
	ctx := timeout(t, 30*time.Second)
	if _, err := stock.New(tm.srv.Client(), stock.WithObserver(nil)); !errors.Is(err, stock.ErrInvalidOption) {
		t.Errorf("WithObserver(nil): %v", err)
	}
	inv, err := stock.New(tm.srv.Client(), stock.WithObserver(tm.observe))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inv.Close() })
	if err := inv.Set(ctx, "shirt", 1); err != nil {
		t.Fatal(err)
	}
	if err := inv.Reserve(ctx, "shirt", "o1", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := inv.Reserve(ctx, "shirt", "o2", 1, time.Minute); !errors.Is(err, stock.ErrSoldOut) {
		t.Fatalf("second Reserve: %v", err)
	}
	if err := inv.Commit(ctx, "shirt", "o1"); err != nil {
		t.Fatal(err)
	}
	if err := inv.Cancel(ctx, "shirt", "o2"); !errors.Is(err, stock.ErrNoReservation) {
		t.Fatalf("Cancel: %v", err)
	}
	op := func(v string) attribute.KeyValue { return attribute.String("dlock.op", v) }
	check(t, "reserved", tm.sum(t, "dlock.stock.operations", op("reserve"), outcome("ok")), 1)
	check(t, "sold out", tm.sum(t, "dlock.stock.operations", op("reserve"), outcome("sold_out")), 1)
	check(t, "committed", tm.sum(t, "dlock.stock.operations", op("commit"), outcome("ok")), 1)
	check(t, "cancelled nothing", tm.sum(t, "dlock.stock.operations", op("cancel"), outcome("no_reservation")), 1)
}

// Names past WithMaxNameValues count as other; 0 is refused.
func TestNameValuesBounded(t *testing.T) {
	t.Parallel()
	if _, err := dlockotel.New(dlockotel.WithMaxNameValues(0)); err == nil {
		t.Error("WithMaxNameValues(0) accepted")
	}
	tm := setup(t, dlockotel.WithMaxNameValues(1))
	ctx := timeout(t, 30*time.Second)
	runner, err := jobs.New(tm.locker)
	if err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Truncate(time.Minute)
	for _, name := range []string{"a", "b", "c"} {
		if _, err := runner.Run(ctx, name, slot, func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	check(t, "a", tm.sum(t, "dlock.jobs.runs", attribute.String("dlock.job.name", "a")), 1)
	check(t, "other", tm.sum(t, "dlock.jobs.runs", attribute.String("dlock.job.name", "other")), 2)
}
