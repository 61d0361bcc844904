package dlockprom_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/observe"
	dlockprom "github.com/dlock-go/dlock/prometheus"
	"github.com/dlock-go/dlock/redistest"
)

// newCollector returns a Collector and a Client that it observes, on a
// redis-server of the test's own.
func newCollector(t *testing.T, opts ...dlockprom.Option) (*dlockprom.Collector, *dlock.Client, *redistest.Server) {
	t.Helper()
	metrics, err := dlockprom.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	srv := redistest.NewServer(t)
	locker := dlock.New(srv.Client(), dlock.WithObserver(metrics))
	t.Cleanup(func() { locker.Close() })
	return metrics, locker, srv
}

// eventually fails the test unless cond becomes true within d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testenv.Eventually(t, d, what, cond)
}

func TestMetricsOfRealLocks(t *testing.T) {
	t.Parallel()
	metrics, locker, srv := newCollector(t)
	ctx := context.Background()

	lock, err := locker.TryObtain(ctx, "job:a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := sample(t, metrics, "dlock_locks_held", nil); got != 1 {
		t.Errorf("locks held %v, want 1", got)
	}
	if _, err := locker.Obtain(timeout(t, 50*time.Millisecond), "job:a", time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	renewed, err := locker.TryObtain(ctx, "job:b", 300*time.Millisecond, dlock.WithAutoRenew(true))
	if err != nil {
		t.Fatal(err)
	}
	srv.Client().Del(ctx, "job:b")
	<-renewed.Done()
	// Done closes first (the lost signal does not wait for observers), then
	// the Collector hears of the loss.
	eventually(t, 5*time.Second, "the loss's hold counted", func() bool {
		return histogramCount(t, metrics, "dlock_hold_duration_seconds", "") == 2
	})

	want := `
# HELP dlock_locks_held Locks obtained and not yet released or lost.
# TYPE dlock_locks_held gauge
dlock_locks_held{kind="lock"} 0
# HELP dlock_lost_total Locks lost while held, by reason: not_held (found gone or taken), expired (no refresh in time), closed (client closed).
# TYPE dlock_lost_total counter
dlock_lost_total{kind="lock",reason="closed"} 0
dlock_lost_total{kind="lock",reason="expired"} 0
dlock_lost_total{kind="lock",reason="not_held"} 1
# HELP dlock_refresh_failures_total Refreshes of a lock that failed or found it gone, manual and automatic.
# TYPE dlock_refresh_failures_total counter
dlock_refresh_failures_total{kind="lock"} 1
# HELP dlock_waiters Obtains waiting for a lock that another holder has.
# TYPE dlock_waiters gauge
dlock_waiters{kind="lock"} 0
`
	if err := testutil.CollectAndCompare(metrics, strings.NewReader(want),
		"dlock_locks_held", "dlock_lost_total", "dlock_refresh_failures_total", "dlock_waiters"); err != nil {
		t.Error(err)
	}
	// Obtains by result: obtained (two), timeout (one); each a histogram
	// series. Holds: the release and the loss.
	if n := testutil.CollectAndCount(metrics, "dlock_obtain_duration_seconds"); n != 2 {
		t.Errorf("%d obtain series, want 2 (obtained, timeout)", n)
	}
	if got := histogramCount(t, metrics, "dlock_obtain_duration_seconds", "obtained"); got != 2 {
		t.Errorf("%d obtains counted obtained, want 2", got)
	}
	if got := histogramCount(t, metrics, "dlock_hold_duration_seconds", ""); got != 2 {
		t.Errorf("%d holds counted, want 2", got)
	}
	if problems, err := testutil.GatherAndLint(registry(t, metrics)); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// A semaphore's permits and an RW lock's holds count under their kind.
func TestKindLabel(t *testing.T) {
	t.Parallel()
	metrics, locker, _ := newCollector(t)
	ctx := context.Background()
	permit, err := locker.Semaphore("pool", 2).TryAcquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer permit.Release(ctx)
	read, err := locker.RWMutex("config").RLock(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer read.Release(ctx)
	for kind, want := range map[string]float64{"semaphore": 1, "read": 1, "lock": 0} {
		if got := sample(t, metrics, "dlock_locks_held", map[string]string{"kind": kind}); got != want {
			t.Errorf("dlock_locks_held{kind=%q} = %v, want %v", kind, got, want)
		}
	}
}

// A waiter counts in dlock_waiters while it waits.
func TestWaitersGauge(t *testing.T) {
	t.Parallel()
	metrics, locker, _ := newCollector(t)
	lock, err := locker.TryObtain(context.Background(), "job:w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := locker.Obtain(timeout(t, 10*time.Second), "job:w", time.Minute, dlock.WithAutoRenew(false))
		got <- err
	}()
	eventually(t, 10*time.Second, "one waiter", func() bool {
		return sample(t, metrics, "dlock_waiters", nil) == 1
	})
	if err := lock.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if w, h := sample(t, metrics, "dlock_waiters", nil), sample(t, metrics, "dlock_locks_held", nil); w != 0 || h != 1 {
		t.Errorf("waiters %v, held %v; want 0 and 1", w, h)
	}
}

// Node errors count by node.
func TestNodeErrors(t *testing.T) {
	t.Parallel()
	metrics, locker, srv := newCollector(t)
	srv.Kill()
	if _, err := locker.TryObtain(context.Background(), "job:n", time.Minute); err == nil {
		t.Fatal("obtained on a dead server")
	}
	want := fmt.Sprintf(`
# HELP dlock_node_errors_total Operations on a Redis node that failed, by node and operation.
# TYPE dlock_node_errors_total counter
dlock_node_errors_total{node=%q,op="acquire"} 1
`, srv.Addr())
	if err := testutil.CollectAndCompare(metrics, strings.NewReader(want), "dlock_node_errors_total"); err != nil {
		t.Error(err)
	}
}

// Ten thousand distinct keys make at most WithMaxKeyLabels values of the
// key label, and one "other".
func TestKeyLabelCardinality(t *testing.T) {
	t.Parallel()
	metrics, err := dlockprom.New(dlockprom.WithKeyLabel(prefix), dlockprom.WithMaxKeyLabels(20))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10_000 {
		key := fmt.Sprintf("tenant%d:job", i)
		metrics.Observe(observe.Event{Type: observe.EventObtain, Kind: "lock", Key: key, Result: observe.ResultObtained, Duration: time.Millisecond})
		metrics.Observe(observe.Event{Type: observe.EventRelease, Kind: "lock", Key: key, Ended: true, Held: time.Second})
	}
	for _, name := range []string{"dlock_obtain_duration_seconds", "dlock_hold_duration_seconds", "dlock_locks_held"} {
		if n := testutil.CollectAndCount(metrics, name); n != 21 {
			t.Errorf("%s: %d series, want 21 (20 keys and other)", name, n)
		}
	}
	if got := sample(t, metrics, "dlock_locks_held", map[string]string{"key": "other"}); got != 0 {
		t.Errorf("locks held under other: %v, want 0 (each went up and down under the same label)", got)
	}
	if got := histogramCount(t, metrics, "dlock_hold_duration_seconds", ""); got != 10_000 {
		t.Errorf("%d holds counted, want 10000", got)
	}
}

// prefix is the part of key before the first ':'.
func prefix(key string) string {
	p, _, _ := strings.Cut(key, ":")
	return p
}

// The metrics, scraped over HTTP as Prometheus does.
func TestScrape(t *testing.T) {
	t.Parallel()
	metrics, locker, _ := newCollector(t, dlockprom.WithKeyLabel(prefix))
	reg := registry(t, metrics)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	lock, err := locker.TryObtain(context.Background(), "report:daily", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(context.Background())

	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %v, %s", err, resp.Status)
	}
	samples := map[string]string{}
	for line := range strings.Lines(string(body)) {
		if name, value, ok := strings.Cut(strings.TrimSpace(line), " "); ok && !strings.HasPrefix(line, "#") {
			samples[name] = value
		}
	}
	for name, want := range map[string]string{
		`dlock_locks_held{key="report",kind="lock"}`:                                                 "1",
		`dlock_obtain_duration_seconds_count{key="report",kind="lock",result="obtained"}`:            "1",
		`dlock_obtain_duration_seconds_bucket{key="report",kind="lock",result="obtained",le="+Inf"}`: "1",
	} {
		if got := samples[name]; got != want {
			t.Errorf("scraped %s = %q, want %q", name, got, want)
		}
	}
	if !strings.Contains(resp.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
}

func TestBadOptions(t *testing.T) {
	t.Parallel()
	for _, opt := range []dlockprom.Option{nil, dlockprom.WithKeyLabel(nil), dlockprom.WithMaxKeyLabels(0), dlockprom.WithBuckets(nil, nil)} {
		if _, err := dlockprom.New(opt); err == nil {
			t.Errorf("New with a bad option: no error")
		}
	}
}

// registry returns a registry with c registered.
func registry(t *testing.T, c prometheus.Collector) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	return reg
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// sample returns the value of the gauge or counter name whose labels
// include labels, or the sample count of a histogram; it fails the test
// unless exactly one series matches.
func sample(t *testing.T, c prometheus.Collector, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := registry(t, c).Gather()
	if err != nil {
		t.Fatal(err)
	}
	var found []float64
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
			switch {
			case m.Gauge != nil:
				found = append(found, m.GetGauge().GetValue())
			case m.Counter != nil:
				found = append(found, m.GetCounter().GetValue())
			case m.Histogram != nil:
				found = append(found, float64(m.GetHistogram().GetSampleCount()))
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s%v: %d series, want 1", name, labels, len(found))
	}
	return found[0]
}

// histogramCount returns the number of observations of the histogram name,
// of result if not "".
func histogramCount(t *testing.T, c prometheus.Collector, name, result string) int {
	t.Helper()
	var labels map[string]string
	if result != "" {
		labels = map[string]string{"result": result}
	}
	families, err := registry(t, c).Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
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
			total += int(m.GetHistogram().GetSampleCount())
		}
	}
	return total
}

// A record counts in dlock_records_total, by result, and neither as a
// lock held nor, when it runs out or is found gone, as a lock lost.
func TestRecordsKeptApart(t *testing.T) {
	t.Parallel()
	metrics, err := dlockprom.New()
	if err != nil {
		t.Fatal(err)
	}
	open := &lockenv.Holds{}
	srv := redistest.NewServer(t)
	locker := dlock.New(srv.Client(), dlock.WithObserver(metrics), dlock.WithObserver(open))
	t.Cleanup(func() { locker.Close() })
	ctx := context.Background()
	if _, err := locker.TryObtain(ctx, "note:a", 100*time.Millisecond, dlock.AsRecord()); err != nil {
		t.Fatal(err)
	}
	gone, err := locker.TryObtain(ctx, "note:b", time.Minute, dlock.AsRecord())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := locker.TryObtain(ctx, "note:b", time.Minute, dlock.AsRecord()); !errors.Is(err, dlock.ErrNotObtained) {
		t.Fatalf("second record: %v, want ErrNotObtained", err)
	}
	if got := sample(t, metrics, "dlock_locks_held", nil); got != 0 {
		t.Errorf("locks held with two records: %v, want 0", got)
	}
	srv.Client().Del(ctx, "note:b")
	if err := gone.Release(ctx); !errors.Is(err, dlock.ErrNotHeld) {
		t.Fatalf("release of a deleted record: %v", err)
	}
	eventually(t, 10*time.Second, "the end of the record that runs out", open.Ended)
	want := `
# HELP dlock_locks_held Locks obtained and not yet released or lost.
# TYPE dlock_locks_held gauge
dlock_locks_held{kind="lock"} 0
# HELP dlock_lost_total Locks lost while held, by reason: not_held (found gone or taken), expired (no refresh in time), closed (client closed).
# TYPE dlock_lost_total counter
dlock_lost_total{kind="lock",reason="closed"} 0
dlock_lost_total{kind="lock",reason="expired"} 0
dlock_lost_total{kind="lock",reason="not_held"} 0
# HELP dlock_records_total Obtains of records (dlock.AsRecord), kept apart from locks, by result: obtained (written), held (one was there), timeout, canceled, error.
# TYPE dlock_records_total counter
dlock_records_total{kind="lock",result="held"} 1
dlock_records_total{kind="lock",result="obtained"} 2
`
	if err := testutil.CollectAndCompare(metrics, strings.NewReader(want), "dlock_locks_held", "dlock_lost_total", "dlock_records_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(metrics, "dlock_hold_duration_seconds", "dlock_obtain_duration_seconds"); n != 0 {
		t.Errorf("%d series of lock durations from records, want 0", n)
	}
}
