package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dlock-go/dlock/fence"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/observe"
)

// recorder is an observe.PackageObserver that keeps the events it is told.
type recorder struct {
	mu     sync.Mutex
	events []observe.PackageEvent
}

func (r *recorder) Observe(observe.Event) {}

func (r *recorder) ObservePackage(e observe.PackageEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// outcomes returns the Op/Outcome of each event, in order.
func (r *recorder) outcomes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var got []string
	for _, e := range r.events {
		if e.Package != observe.PackageFence {
			got = append(got, "package "+e.Package)
			continue
		}
		got = append(got, e.Op+" "+e.Outcome)
	}
	return got
}

// WithObserver: every Guard and every fenced Redis write tells what became
// of it: written, stale, failed in fn, or an error.
func TestObserver(t *testing.T) {
	ctx := testenv.Timeout(t, time.Minute)
	obs := &recorder{}
	db := sqliteDB(t)
	if err := fence.CreateTable(ctx, db, fence.WithObserver(obs)); err != nil {
		t.Fatal(err)
	}
	resource := testenv.NewKey(t)
	write := func(*sql.Tx) error { return nil }
	failing := func(*sql.Tx) error { return errors.New("the write failed") }
	_ = fence.Guard(ctx, db, resource, 10, write, fence.WithObserver(obs))
	_ = fence.Guard(ctx, db, resource, 9, write, fence.WithObserver(obs))
	_ = fence.Guard(ctx, db, resource, 11, failing, fence.WithObserver(obs))
	_ = fence.Guard(ctx, db, resource, 12, write, fence.WithObserver(obs), fence.WithTable("no_such_table"))

	r := newRedis(t, sharedClient(t), fence.WithObserver(obs))
	key := testenv.NewKey(t)
	_ = r.Set(ctx, key, 5, "v", 0)
	_ = r.Set(ctx, key, 4, "late", 0)
	_ = r.HSet(ctx, key+":h", 1, map[string]any{"a": 1})
	_ = r.Set(ctx, "", 6, "v", 0)

	want := []string{
		"guard written", "guard stale", "guard failed", "guard error",
		"redis_write written", "redis_write stale", "redis_write written", "redis_write error",
	}
	if got := obs.outcomes(); !slices.Equal(got, want) {
		t.Errorf("events:\n got %q\nwant %q", got, want)
	}
	for _, e := range obs.events {
		if e.Key == "" && e.Outcome != observe.OutcomeError {
			t.Errorf("%s %s: no Key", e.Op, e.Outcome)
		}
	}
}

// Without an observer nothing is told, and an option given where it does
// not apply is an error, not silently ignored.
func TestOptionsWhereTheyApply(t *testing.T) {
	ctx := context.Background()
	db := sqliteDB(t)
	err := fence.Guard(ctx, db, "r", 1, func(*sql.Tx) error { return nil }, fence.WithField("f"))
	if err == nil || errors.Is(err, fence.ErrStale) {
		t.Errorf("Guard with WithField = %v, want an error", err)
	}
	if err := fence.CreateTable(ctx, db, fence.WithField("f")); err == nil {
		t.Error("CreateTable with WithField = nil error")
	}
	if _, err := fence.NewRedis(sharedClient(t), fence.WithObserver(nil)); err == nil {
		t.Error("NewRedis with WithObserver(nil) = nil error")
	}
	if err := fence.CreateTable(ctx, db, fence.WithObserver(nil)); err == nil {
		t.Error("CreateTable with WithObserver(nil) = nil error")
	}
	for name, opt := range map[string]fence.Option{"WithTable": fence.WithTable("t"), "WithDialect": fence.WithDialect(fence.SQLite)} {
		if _, err := fence.NewRedis(sharedClient(t), opt); err == nil {
			t.Errorf("NewRedis with %s = nil error", name)
		}
	}
}
