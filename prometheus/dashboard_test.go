package dlockprom_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	dlockprom "github.com/dlock-go/dlock/prometheus"
	"github.com/dlock-go/dlock/redistest"
)

// dashboardExprs returns the PromQL expressions of dashboard.json: those
// of its panels' targets and of its template variables.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	type target struct {
		Expr string `json:"expr"`
	}
	type panel struct {
		Targets []target `json:"targets"`
		Panels  []panel  `json:"panels"` // of a collapsed row
	}
	var dash struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	var exprs []string
	var walk func([]panel)
	walk = func(panels []panel) {
		for _, p := range panels {
			for _, target := range p.Targets {
				exprs = append(exprs, target.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		// label_values(metric, label): the metric is a name like any.
		if strings.HasPrefix(v.Definition, "label_values(") {
			exprs = append(exprs, strings.TrimPrefix(v.Definition, "label_values"))
		}
	}
	return exprs
}

// rulesExprs returns the expressions of alerts.yml's rules. The file is
// simple YAML, checked by promtool (TestAlertRules): a rule's expression
// is the one line after "expr:".
func rulesExprs(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for line := range strings.Lines(string(data)) {
		if _, expr, ok := strings.Cut(line, " expr: "); ok {
			exprs = append(exprs, strings.TrimSpace(expr))
		}
	}
	return exprs
}

var (
	// What in PromQL is no metric name: strings, label matchers, ranges,
	// the label lists of by, without, on, ignoring and group_x, and
	// Grafana's variables.
	promqlStrings   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promqlMatchers  = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	promqlGroupings = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promqlVariables = regexp.MustCompile(`\$\{?\w+\}?`)
	// An identifier, and what follows it.
	promqlIdent    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*\s*\(?`)
	promqlKeywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset", "inf", "nan"}
)

// metricNames returns the metric names expr reads. It is a lexer, not a
// parser: what is left of expr once strings, matchers, ranges, grouping
// labels and variables are gone, identifiers that no '(' follows (a
// function or an aggregation) and that are no keyword, nor a number's
// exponent.
func metricNames(expr string) []string {
	expr = promqlStrings.ReplaceAllString(expr, `""`)
	expr = promqlMatchers.ReplaceAllString(expr, " ")
	expr = promqlGroupings.ReplaceAllString(expr, " ")
	expr = promqlVariables.ReplaceAllString(expr, " ")
	var names []string
	for _, m := range promqlIdent.FindAllStringIndex(expr, -1) {
		word := strings.TrimSpace(expr[m[0]:m[1]])
		if strings.HasSuffix(word, "(") || slices.Contains(promqlKeywords, strings.ToLower(word)) {
			continue
		}
		if m[0] > 0 && strings.ContainsAny(expr[m[0]-1:m[0]], "0123456789.") {
			continue // 1e3, 0.5
		}
		if !slices.Contains(names, word) {
			names = append(names, word)
		}
	}
	return names
}

// The lexer finds the names of the metrics, and nothing else.
func TestMetricNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`sum by (job, reason) (increase(dlock_lost_total[10m])) > 0`, []string{"dlock_lost_total"}},
		{`histogram_quantile(0.99, sum by (le) (rate(a_bucket{job=~"$job",x="a{b}"}[$__rate_interval])))`, []string{"a_bucket"}},
		{`sum(rate(a{o=~"hit|stale"}[5m])) / sum(rate(b[5m])) > 1e3`, []string{"a", "b"}},
		{`x == 0 and on (job) y unless ignoring(a) z offset 5m`, []string{"x", "y", "z"}},
		{`(dlock_locks_held, job)`, []string{"dlock_locks_held", "job"}},
	} {
		if got := metricNames(c.expr); !slices.Equal(got, c.want) {
			t.Errorf("metricNames(%s) = %q, want %q", c.expr, got, c.want)
		}
	}
}

// everyPackageWork does, on locker and on rdb, what makes every metric of
// the Collector: locks obtained, waited for, lost and released, a failed
// node, and the work of every package.
func everyPackageWork(t *testing.T, metrics *dlockprom.Collector, locker *dlock.Client, srv *redistest.Server) {
	t.Helper()
	ctx := timeout(t, 60*time.Second)
	held, err := locker.TryObtain(ctx, "held", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		// Waits until the release below.
		l, err := locker.Obtain(ctx, "held", time.Minute)
		if err == nil {
			err = l.Release(ctx)
		}
		waited <- err
	}()
	eventually(t, 10*time.Second, "a waiter", func() bool { return sample(t, metrics, "dlock_waiters", nil) == 1 })
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	taken, err := locker.TryObtain(ctx, "taken", 300*time.Millisecond, dlock.WithAutoRenew(true))
	if err != nil {
		t.Fatal(err)
	}
	srv.Client().Del(ctx, "taken")
	<-taken.Done()

	quietWork(t, locker)
	cacheWork(t, locker, metrics)
	jobsWork(t, locker)
	electionWork(t, locker, srv.Client())
	idempotencyWork(t, locker)
	stockWork(t, srv.Client(), metrics)
	fenceWork(t, srv.Client(), locker, metrics)

	dead := redistest.NewServer(t)
	dead.Kill()
	rdb := redis.NewClient(&redis.Options{Addr: dead.Addr(), MaxRetries: -1})
	defer rdb.Close()
	down := dlock.New(rdb, dlock.WithObserver(metrics))
	defer down.Close()
	if _, err := down.TryObtain(ctx, "down", time.Minute); err == nil {
		t.Fatal("obtained on a dead server")
	}
}

// TestDashboardAndRulesNames checks that every metric name that
// dashboard.json and alerts.yml use is in a scrape of a real run that
// exercises the core and every package, so that a metric renamed cannot
// leave a panel or a rule dead; and that the dashboard shows every metric
// the Collector exports.
func TestDashboardAndRulesNames(t *testing.T) {
	t.Parallel()
	metrics, locker, srv := newCollector(t)
	everyPackageWork(t, metrics, locker, srv)
	families, err := registry(t, metrics).Gather()
	if err != nil {
		t.Fatal(err)
	}
	scraped := map[string]bool{} // the names of the series, as PromQL sees them
	var exported []string
	for _, f := range families {
		name := f.GetName()
		exported = append(exported, name)
		if len(f.GetMetric()) == 0 {
			continue
		}
		scraped[name] = true
		if f.GetMetric()[0].GetHistogram() != nil {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				scraped[name+suffix] = true
			}
		}
	}
	used := map[string]bool{}
	for file, exprs := range map[string][]string{"dashboard.json": dashboardExprs(t), "alerts.yml": rulesExprs(t)} {
		if len(exprs) == 0 {
			t.Errorf("%s: no expression found", file)
		}
		for _, expr := range exprs {
			names := metricNames(expr)
			if len(names) == 0 {
				t.Errorf("%s: no metric in %s", file, expr)
			}
			for _, name := range names {
				if name == "job" && strings.HasPrefix(expr, "(") {
					continue // label_values' label
				}
				used[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")] = true
				if !scraped[name] {
					t.Errorf("%s uses %s, which the scrape of a real run does not have: %s", file, name, expr)
				}
			}
		}
	}
	for _, name := range exported {
		if !used[name] {
			t.Errorf("the Collector exports %s, which dashboard.json does not show", name)
		}
	}
	if len(exported) < 20 {
		t.Errorf("%d metrics exported: %q", len(exported), exported)
	}
}
