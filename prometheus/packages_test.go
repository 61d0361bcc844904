package dlockprom_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/cachefill"
	"github.com/dlock-go/dlock/election"
	"github.com/dlock-go/dlock/fence"
	"github.com/dlock-go/dlock/idempotency"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/jobs"
	dlockprom "github.com/dlock-go/dlock/prometheus"
	"github.com/dlock-go/dlock/redistest"
	"github.com/dlock-go/dlock/stock"
)

// value is the sum of the counters, gauges or histogram counts of name
// whose labels include labels: 0 where none matches yet.
func value(t *testing.T, c prometheus.Collector, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := registry(t, c).Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue metrics
				}
			}
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return total
}

// want checks the value of the series of name whose labels include
// labels (see sample).
func want(t *testing.T, c prometheus.Collector, name string, labels map[string]string, v float64) {
	t.Helper()
	if got := sample(t, c, name, labels); got != v {
		t.Errorf("%s%v = %v, want %v", name, labels, got, v)
	}
}

// cacheWork fills a key with one load while a second Cache waits for it,
// reads it again (a hit), invalidates it and reads it until it was
// refreshed (stale, and hits once refreshed), and has a load fail.
func cacheWork(t *testing.T, locker *dlock.Client, metrics prometheus.Collector) {
	t.Helper()
	ctx := timeout(t, 30*time.Second)
	newCache := func() *cachefill.Cache {
		c, err := cachefill.New(locker, cachefill.WithPrefix("metrics"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	first, second := newCache(), newCache()
	release := make(chan struct{})
	slow := func(ctx context.Context) ([]byte, error) {
		select {
		case <-release:
			return []byte("v"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	loaded := make(chan error, 1)
	go func() {
		_, err := first.Get(ctx, "k", time.Minute, slow)
		loaded <- err
	}()
	eventually(t, 10*time.Second, "the first load", func() bool {
		return value(t, metrics, "dlock_cachefill_lookups_total", map[string]string{"outcome": "miss"}) == 1
	})
	waited := make(chan error, 1)
	go func() {
		_, err := second.Get(ctx, "k", time.Minute, func(context.Context) ([]byte, error) { return []byte("w"), nil })
		waited <- err
	}()
	eventually(t, 10*time.Second, "the second Cache waiting", func() bool {
		return sample(t, metrics, "dlock_cachefill_waits_total", nil) == 1
	})
	close(release)
	for _, ch := range []chan error{loaded, waited} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	if v, err := second.Get(ctx, "k", time.Minute, slow); err != nil || string(v) != "v" {
		t.Fatalf("Get = %q, %v; want the stored v", v, err)
	}
	if err := first.Invalidate(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	// The stale entry is served, and refreshed in the background where the
	// key's lock is free: the release of the first load's lock may still
	// be under way, so read it until a refresh ran.
	eventually(t, 10*time.Second, "the refresh", func() bool {
		if _, err := first.Get(ctx, "k", time.Minute, func(context.Context) ([]byte, error) { return []byte("v2"), nil }); err != nil {
			t.Error(err)
		}
		return value(t, metrics, "dlock_cachefill_load_duration_seconds", map[string]string{"op": "refresh"}) >= 1
	})
	failed := errors.New("the database failed")
	if _, err := first.Get(ctx, "broken", time.Minute, func(context.Context) ([]byte, error) { return nil, failed }); !errors.Is(err, failed) {
		t.Fatalf("Get of a failing load: %v", err)
	}
}

// TestCachefillMetrics counts a cache's lookups, waits, loads and refreshes
// on a real scrape.
func TestCachefillMetrics(t *testing.T) {
	t.Parallel()
	metrics, locker, _ := newCollector(t)
	cacheWork(t, locker, metrics)
	absent, err := cachefill.New(locker, cachefill.WithPrefix("absent"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { absent.Close() })
	ctx := timeout(t, 30*time.Second)
	if _, err := absent.Get(ctx, "none", time.Minute, func(context.Context) ([]byte, error) { return nil, cachefill.ErrNotFound }); !errors.Is(err, cachefill.ErrNotFound) {
		t.Fatalf("Get of a key the load does not find: %v", err)
	}
	if _, err := absent.Get(ctx, "", time.Minute, func(context.Context) ([]byte, error) { return nil, nil }); err == nil {
		t.Fatal("Get of an empty key accepted") // bad input: not counted
	}
	want(t, metrics, "dlock_cachefill_load_duration_seconds", map[string]string{"op": "load", "outcome": "not_found"}, 1)
	// Misses: the first Cache's, the second's before it waits, the broken
	// key, the absent one.
	want(t, metrics, "dlock_cachefill_lookups_total", map[string]string{"outcome": "miss"}, 4)
	for _, outcome := range []string{"hit", "stale"} {
		if n := value(t, metrics, "dlock_cachefill_lookups_total", map[string]string{"outcome": outcome}); n < 1 {
			t.Errorf("%v lookups %s, want at least 1", n, outcome)
		}
	}
	want(t, metrics, "dlock_cachefill_waits_total", nil, 1)
	want(t, metrics, "dlock_cachefill_load_duration_seconds", map[string]string{"op": "load", "outcome": "stored"}, 1)
	want(t, metrics, "dlock_cachefill_load_duration_seconds", map[string]string{"op": "load", "outcome": "failed"}, 1)
	if n := value(t, metrics, "dlock_cachefill_load_duration_seconds", map[string]string{"op": "refresh", "outcome": "stored"}); n < 1 {
		t.Errorf("%v refreshes stored, want at least 1", n)
	}
	want(t, metrics, "dlock_cachefill_gave_up_total", nil, 1) // the failed load
	want(t, metrics, "dlock_cachefill_fallbacks_total", nil, 0)
}

// TestCachefillFallbackMetric counts a load made directly while Redis is
// down.
func TestCachefillFallbackMetric(t *testing.T) {
	t.Parallel()
	metrics, err := dlockprom.New()
	if err != nil {
		t.Fatal(err)
	}
	srv := redistest.NewServer(t)
	locker := dlock.New(srv.Client(), dlock.WithObserver(metrics))
	t.Cleanup(func() { locker.Close() })
	cache, err := cachefill.New(locker, cachefill.WithFallback(true), cachefill.WithRedisTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cache.Close() })
	srv.Kill()
	v, err := cache.Get(timeout(t, 30*time.Second), "k", time.Minute, func(context.Context) ([]byte, error) { return []byte("direct"), nil })
	if err != nil || string(v) != "direct" {
		t.Fatalf("Get with Redis down = %q, %v; want the load's value", v, err)
	}
	want(t, metrics, "dlock_cachefill_fallbacks_total", nil, 1)
}

// jobsWork runs a job, runs it again in its slot (done already), runs
// another while a host holds its slot (elsewhere), and one that fails.
func jobsWork(t *testing.T, locker *dlock.Client) {
	t.Helper()
	ctx := timeout(t, 30*time.Second)
	runner, err := jobs.New(locker, jobs.WithRetention(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Truncate(time.Minute)
	ok := func(context.Context) error { return nil }
	for _, wantOut := range []jobs.Outcome{jobs.Ran, jobs.AlreadyDone} {
		if out, err := runner.Run(ctx, "invoice", slot, ok); out != wantOut || err != nil {
			t.Fatalf("Run = %v, %v; want %v", out, err, wantOut)
		}
	}
	attempt, err := runner.Begin(ctx, "sync", slot)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := runner.Run(ctx, "sync", slot, ok); out != jobs.RunningElsewhere || err != nil {
		t.Fatalf("Run while another runs = %v, %v", out, err)
	}
	if _, err := attempt.Finish(ctx, nil); err != nil {
		t.Fatal(err)
	}
	failed := errors.New("the job failed")
	if out, err := runner.Run(ctx, "import", slot, func(context.Context) error { return failed }); out != jobs.RanAndFailed || !errors.Is(err, failed) {
		t.Fatalf("failing Run = %v, %v", out, err)
	}
}

// TestJobsMetrics counts runs by job and outcome on a real scrape.
func TestJobsMetrics(t *testing.T) {
	t.Parallel()
	metrics, locker, _ := newCollector(t)
	jobsWork(t, locker)
	runner, err := jobs.New(locker)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Run(timeout(t, 10*time.Second), "", time.Now(), func(context.Context) error { return nil }); !errors.Is(err, jobs.ErrInvalid) {
		t.Fatalf("Run of an empty name: %v", err) // bad input: not counted
	}
	if n := value(t, metrics, "dlock_jobs_runs_total", nil); n != 5 {
		t.Errorf("%v runs counted, want 5", n)
	}
	for _, c := range []struct {
		job, outcome string
		n            float64
	}{
		{"invoice", "ran", 1}, {"invoice", "already_done", 1}, {"sync", "running_elsewhere", 1},
		{"sync", "ran", 1}, {"import", "failed", 1},
	} {
		want(t, metrics, "dlock_jobs_runs_total", map[string]string{"job_name": c.job, "outcome": c.outcome}, c.n)
	}
	want(t, metrics, "dlock_jobs_run_duration_seconds", map[string]string{"job_name": "import", "outcome": "failed"}, 1)
}

// electionWork has a candidate win and resign while an observer watches,
// and another win and lose its seat (deleted by hand).
func electionWork(t *testing.T, locker *dlock.Client, rdb *redis.Client) {
	t.Helper()
	ctx := timeout(t, 30*time.Second)
	seat, err := election.New(locker, "leader", election.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	watch, stop := context.WithCancel(ctx)
	defer func() {
		stop()
	}()
	leaders := seat.Observe(watch)
	next(t, leaders) // the empty seat
	lead, err := seat.Campaign(ctx, "host-a")
	if err != nil {
		t.Fatal(err)
	}
	if l := next(t, leaders); l.Term != lead.Term() {
		t.Fatalf("observed %+v, want term %d", l, lead.Term())
	}
	if err := lead.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if l := next(t, leaders); l.Term != 0 {
		t.Fatalf("observed %+v after the resignation", l)
	}
	stop()
	for range leaders { // closed once the observer has stopped
	}
	lead, err = seat.Campaign(ctx, "host-b")
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.Del(ctx, seat.Name()).Err(); err != nil {
		t.Fatal(err)
	}
	<-lead.Done()
}

// TestElectionMetrics tells leadership by a gauge that goes up and down,
// and counts terms and changes seen.
func TestElectionMetrics(t *testing.T) {
	t.Parallel()
	metrics, locker, srv := newCollector(t)
	electionWork(t, locker, srv.Client())
	name := map[string]string{"election": "leader"}
	eventually(t, 10*time.Second, "the lost term told", func() bool {
		return value(t, metrics, "dlock_election_terms_total", map[string]string{"election": "leader", "outcome": "lost"}) == 1
	})
	want(t, metrics, "dlock_election_leader", name, 0)
	want(t, metrics, "dlock_election_terms_total", map[string]string{"election": "leader", "outcome": "won"}, 2)
	want(t, metrics, "dlock_election_terms_total", map[string]string{"election": "leader", "outcome": "resigned"}, 1)
	want(t, metrics, "dlock_election_leader_changes_total", name, 2)
}

// TestElectionLeaderGauge is 1 while this process leads.
func TestElectionLeaderGauge(t *testing.T) {
	t.Parallel()
	metrics, locker, _ := newCollector(t)
	ctx := timeout(t, 30*time.Second)
	seat, err := election.New(locker, "gauge")
	if err != nil {
		t.Fatal(err)
	}
	lead, err := seat.Campaign(ctx, "me")
	if err != nil {
		t.Fatal(err)
	}
	want(t, metrics, "dlock_election_leader", map[string]string{"election": "gauge"}, 1)
	if err := lead.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the gauge down", func() bool {
		return sample(t, metrics, "dlock_election_leader", map[string]string{"election": "gauge"}) == 0
	})
}

// idempotencyWork stores a call, replays it, reuses its key with another
// body, and asks while another request with the key runs (409).
func idempotencyWork(t *testing.T, locker *dlock.Client) {
	t.Helper()
	ctx := timeout(t, 30*time.Second)
	store, err := idempotency.New(locker, idempotency.WithWait(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	running, release := make(chan struct{}), make(chan struct{})
	handler := store.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(running)
			<-release
		}
		_, _ = w.Write([]byte("paid"))
	}))
	post := func(path, key, body string) int {
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, path, strings.NewReader(body))
		r.Header.Set(idempotency.KeyHeader, `"`+key+`"`)
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		return w.Code
	}
	for _, c := range []struct {
		key, body string
		code      int
	}{{"a", "x", 200}, {"a", "x", 200}, {"a", "y", 422}} {
		if got := post("/pay", c.key, c.body); got != c.code {
			t.Fatalf("POST key %s body %s: %d, want %d", c.key, c.body, got, c.code)
		}
	}
	slow := make(chan int, 1)
	go func() { slow <- post("/slow", "b", "x") }()
	<-running
	if got := post("/slow", "b", "x"); got != http.StatusConflict {
		t.Errorf("POST while in progress: %d, want 409", got)
	}
	close(release)
	if got := <-slow; got != 200 {
		t.Errorf("slow POST: %d", got)
	}
}

// TestIdempotencyMetrics counts calls by outcome on a real scrape.
func TestIdempotencyMetrics(t *testing.T) {
	t.Parallel()
	metrics, locker, _ := newCollector(t)
	idempotencyWork(t, locker)
	for outcome, n := range map[string]float64{"stored": 2, "replayed": 1, "mismatch": 1, "in_progress": 1} {
		want(t, metrics, "dlock_idempotency_calls_total", map[string]string{"outcome": outcome}, n)
	}
}

// stockWork sells the last unit of a sku to one order while another finds
// it sold out, and cancels an order that holds nothing.
func stockWork(t *testing.T, rdb *redis.Client, obs *dlockprom.Collector) {
	t.Helper()
	ctx := timeout(t, 30*time.Second)
	inv, err := stock.New(rdb, stock.WithObserver(obs))
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
		t.Fatalf("second Reserve: %v, want ErrSoldOut", err)
	}
	if err := inv.Commit(ctx, "shirt", "o1"); err != nil {
		t.Fatal(err)
	}
	if err := inv.Cancel(ctx, "shirt", "o2"); !errors.Is(err, stock.ErrNoReservation) {
		t.Fatalf("Cancel of no reservation: %v", err)
	}
	if err := inv.Reserve(ctx, "", "o3", 1, time.Minute); !errors.Is(err, stock.ErrInvalidSKU) {
		t.Fatalf("Reserve of an empty sku: %v", err) // bad input: not counted
	}
}

// TestStockMetrics counts reservations, sold-outs, commits and cancels.
func TestStockMetrics(t *testing.T) {
	t.Parallel()
	metrics, _, srv := newCollector(t)
	stockWork(t, srv.Client(), metrics)
	for _, c := range []struct {
		op, outcome string
	}{{"reserve", "ok"}, {"reserve", "sold_out"}, {"commit", "ok"}, {"cancel", "no_reservation"}} {
		want(t, metrics, "dlock_stock_operations_total", map[string]string{"op": c.op, "outcome": c.outcome}, 1)
	}
	families, err := registry(t, metrics).Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "dlock_stock_operations_total" && len(f.GetMetric()) != 4 {
			t.Errorf("%d series of dlock_stock_operations_total, want 4: %v", len(f.GetMetric()), f)
		}
	}
}

// fenceWork writes with a lock's fence to Redis through package fence: a
// write that passes, then a late holder's that is refused.
func fenceWork(t *testing.T, rdb *redis.Client, locker *dlock.Client, obs *dlockprom.Collector) {
	t.Helper()
	ctx := timeout(t, 30*time.Second)
	key := testenv.Key(t)
	lock, err := locker.Obtain(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(ctx)
	store, err := fence.NewRedis(rdb, fence.WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Set(ctx, key+":report", lock.Fence(), "v", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := store.Set(ctx, key+":report", lock.Fence()-1, "late", time.Minute); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("a write with a lower fence: %v, want ErrStale", err)
	}
}

// TestFenceMetrics counts fenced writes by outcome.
func TestFenceMetrics(t *testing.T) {
	t.Parallel()
	metrics, locker, srv := newCollector(t)
	fenceWork(t, srv.Client(), locker, metrics)
	want(t, metrics, "dlock_fence_writes_total", map[string]string{"op": "redis_write", "outcome": "written"}, 1)
	want(t, metrics, "dlock_fence_writes_total", map[string]string{"op": "redis_write", "outcome": "stale"}, 1)
}

// TestNameLabelBounded admits WithMaxNameLabels names of jobs and
// elections, and counts the others as other.
func TestNameLabelBounded(t *testing.T) {
	t.Parallel()
	metrics, locker, _ := newCollector(t, dlockprom.WithMaxNameLabels(2))
	ctx := timeout(t, 30*time.Second)
	runner, err := jobs.New(locker)
	if err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Truncate(time.Minute)
	for _, name := range []string{"a", "b", "c", "d"} {
		if _, err := runner.Run(ctx, name, slot, func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	want(t, metrics, "dlock_jobs_runs_total", map[string]string{"job_name": "a", "outcome": "ran"}, 1)
	want(t, metrics, "dlock_jobs_runs_total", map[string]string{"job_name": "other", "outcome": "ran"}, 2)
	if _, err := dlockprom.New(dlockprom.WithMaxNameLabels(0)); err == nil {
		t.Error("WithMaxNameLabels(0) accepted")
	}
}

// TestPackagesRedisDown counts the calls of the packages that Redis
// failed as errors, with go-redis's default options: a job that could not
// begin, an idempotent call before its function ran, a reservation.
func TestPackagesRedisDown(t *testing.T) {
	t.Parallel()
	metrics, locker, srv := newCollector(t)
	ctx := timeout(t, 60*time.Second)
	runner, err := jobs.New(locker)
	if err != nil {
		t.Fatal(err)
	}
	store, err := idempotency.New(locker)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := stock.New(srv.Client(), stock.WithObserver(metrics))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inv.Close() })
	srv.Kill()

	ran := false
	if out, err := runner.Run(ctx, "nightly", time.Now().Truncate(time.Minute), func(context.Context) error { ran = true; return nil }); out != 0 || err == nil || ran {
		t.Fatalf("Run with Redis down = %v, %v (ran %v)", out, err, ran)
	}
	if _, _, err := store.Do(ctx, "k", nil, func(context.Context) ([]byte, error) { return nil, nil }); !errors.Is(err, idempotency.ErrUnavailable) {
		t.Fatalf("Do with Redis down: %v", err)
	}
	if err := inv.Reserve(ctx, "shirt", "o1", 1, time.Minute); err == nil {
		t.Fatal("Reserve with Redis down succeeded")
	}
	want(t, metrics, "dlock_jobs_runs_total", map[string]string{"job_name": "nightly", "outcome": "error"}, 1)
	want(t, metrics, "dlock_idempotency_calls_total", map[string]string{"outcome": "error"}, 1)
	// Refused at the dial, or sent with no answer: an error either way.
	if got := value(t, metrics, "dlock_stock_operations_total", map[string]string{"op": "reserve", "outcome": "error"}) +
		value(t, metrics, "dlock_stock_operations_total", map[string]string{"op": "reserve", "outcome": "unknown"}); got != 1 {
		t.Errorf("%v reservations in error, want 1", got)
	}
}
