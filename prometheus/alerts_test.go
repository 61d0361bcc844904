package dlockprom_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/election"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/jobs"
	dlockprom "github.com/dlock-go/dlock/prometheus"
	"github.com/dlock-go/dlock/redistest"
)

// promtool returns the path of promtool: $PROMTOOL, or the one on PATH.
// Where there is none, the test is skipped, unless CI is set: scripts/test
// installs it (Debian's package prometheus), so CI always runs the test.
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PROMTOOL"); p != "" {
		return p
	}
	p, err := exec.LookPath("promtool")
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("promtool not found, and CI is set: scripts/test installs it (Debian's package prometheus); or set PROMTOOL")
	}
	t.Skip("promtool not found, so alerts.yml is not tested: install Debian's package prometheus (scripts/test does), or set PROMTOOL")
	return ""
}

// runTool runs promtool with args, and fails the test if it fails, with
// its output and what explain returns.
func runTool(t *testing.T, tool string, explain func() string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, tool, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s%s", strings.Join(args, " "), err, out, explain())
	}
}

// scrape returns the counters and gauges of c, by series, as promtool
// writes them, with the label job that Prometheus adds when it scrapes.
func scrape(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	families, err := registry(t, c).Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var v float64
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				v = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				v = m.GetGauge().GetValue()
			default:
				continue // the rules use no histogram
			}
			labels := []string{`job="app"`}
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			slices.Sort(labels)
			series[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return series
}

// phase is what a scrape found, and for how many minutes of the rule test
// the series keep those values.
type phase struct {
	minutes int
	series  map[string]float64
}

// ruleTest writes a promtool rule test of the rules in rules: its input is
// the series of the phases, one after the other, a sample a minute; tests
// is the YAML of its alert_rule_test.
func ruleTest(t *testing.T, rules string, phases []phase, tests string) string {
	t.Helper()
	var names []string
	for _, p := range phases {
		for name := range p.series {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	var b strings.Builder
	fmt.Fprintf(&b, "rule_files: [%q]\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n", rules)
	for _, name := range names {
		var values []string
		for _, p := range phases {
			v, ok := p.series[name]
			for range p.minutes {
				if ok {
					values = append(values, fmt.Sprint(v))
				} else {
					values = append(values, "_")
				}
			}
		}
		fmt.Fprintf(&b, "      - series: %q\n        values: %q\n", name, strings.Join(values, " "))
	}
	b.WriteString("    alert_rule_test:\n")
	b.WriteString(tests)
	path := filepath.Join(t.TempDir(), "alerts_test.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// quietWork does what must page nobody: jobs that succeed or fail (their
// records are no locks), locks kept after the work and left to expire, an
// election whose leader resigns while an observer watches (a seat left
// empty for 10 minutes then warns: DlockNoLeader).
func quietWork(t *testing.T, locker *dlock.Client) {
	t.Helper()
	ctx := context.Background()
	const keep = 300 * time.Millisecond

	runner, err := jobs.New(locker, jobs.WithRetention(keep), jobs.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Truncate(time.Minute)
	for i := range 3 {
		if out, err := runner.Run(ctx, "report", slot.Add(time.Duration(i)*time.Minute), func(context.Context) error { return nil }); out != jobs.Ran || err != nil {
			t.Fatalf("run %d: %v, %v", i, out, err)
		}
	}
	failed := errors.New("the job failed")
	if out, err := runner.Run(ctx, "flaky", slot, func(context.Context) error { return failed }); out != jobs.RanAndFailed || !errors.Is(err, failed) {
		t.Fatalf("failed run: %v, %v", out, err)
	}

	kept, err := locker.TryObtain(ctx, "kept", time.Second, dlock.WithAutoRenew(true))
	if err != nil {
		t.Fatal(err)
	}
	if err := kept.ReleaseAfter(ctx, keep); err != nil {
		t.Fatal(err)
	}
	if err := locker.Do(ctx, "cron", time.Second, func(context.Context) error { return nil }, dlock.WithMinHold(keep)); err != nil {
		t.Fatal(err)
	}

	seat, err := election.New(locker, "leader", election.WithTTL(keep))
	if err != nil {
		t.Fatal(err)
	}
	watch, stop := context.WithCancel(ctx)
	leaders := seat.Observe(watch)
	if l := next(t, leaders); l.Term != 0 {
		t.Fatalf("leader %+v before any campaign", l)
	}
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
		t.Fatalf("observed %+v after the resignation, want the empty seat", l)
	}
	stop()
	for range leaders { // closed once the observer has stopped
	}
}

// counted reports whether the series name counts what quietWork does
// without paging: records, and the runs and terms of the packages.
func counted(name string) bool {
	for _, p := range []string{"dlock_records_total", "dlock_jobs_runs_total", "dlock_election_terms_total", "dlock_election_leader_changes_total"} {
		if strings.HasPrefix(name, p+"{") {
			return true
		}
	}
	return false
}

// TestAlertRules checks alerts.yml with promtool, and tests it on the
// metrics of a real run: successful and failed jobs, kept locks and an
// election page nobody; a lock taken away from its holder pages, and an
// election seat left empty warns after 10 minutes.
func TestAlertRules(t *testing.T) {
	t.Parallel()
	tool := promtool(t)
	rules, err := filepath.Abs("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	runTool(t, tool, func() string { return "" }, "check", "rules", rules)

	metrics, err := dlockprom.New()
	if err != nil {
		t.Fatal(err)
	}
	open := &lockenv.Holds{}
	srv := redistest.NewServer(t)
	locker := dlock.New(srv.Client(), dlock.WithObserver(metrics), dlock.WithObserver(open))
	t.Cleanup(func() { locker.Close() })
	ctx := context.Background()

	before := scrape(t, metrics)
	quietWork(t, locker)
	eventually(t, 10*time.Second, "every hold's end told", open.Ended)
	eventually(t, 10*time.Second, "every key expired", func() bool { return testenv.OnlyMarkersLeft(ctx, srv.Client()) })
	quiet := scrape(t, metrics)
	for name, v := range quiet {
		if v != 0 && !counted(name) {
			t.Errorf("after the quiet work, %s = %v, want 0", name, v)
		}
	}
	if got := sample(t, metrics, "dlock_records_total", map[string]string{"result": "obtained"}); got < 8 {
		t.Errorf("%v records obtained, want at least 8 (2 for each of the 4 runs)", got)
	}

	taken, err := locker.TryObtain(ctx, "taken", 300*time.Millisecond, dlock.WithAutoRenew(true))
	if err != nil {
		t.Fatal(err)
	}
	srv.Client().Del(ctx, "taken")
	<-taken.Done()
	eventually(t, 10*time.Second, "the loss told", open.Ended)
	lost := scrape(t, metrics)

	// 0m-4m before, 5m-14m after the quiet work, then after the loss.
	file := ruleTest(t, rules, []phase{{5, before}, {10, quiet}, {20, lost}}, `
      - eval_time: 10m
        alertname: DlockLocksLost
        exp_alerts: []
      - eval_time: 14m
        alertname: DlockLocksLost
        exp_alerts: []
      - eval_time: 14m
        alertname: DlockRenewalsFailing
        exp_alerts: []
      - eval_time: 14m
        alertname: DlockNodeErrors
        exp_alerts: []
      - eval_time: 20m
        alertname: DlockLocksLost
        exp_alerts:
          - exp_labels: {severity: page, job: app, reason: not_held}
            exp_annotations:
              summary: "app: 1 dlock locks lost (not_held) in 10 minutes"
      - eval_time: 20m
        alertname: DlockRenewalsFailing
        exp_alerts: []
      - eval_time: 34m
        alertname: DlockLocksLost
        exp_alerts: []
      - eval_time: 14m
        alertname: DlockNoLeader
        exp_alerts: []
      - eval_time: 20m
        alertname: DlockNoLeader
        exp_alerts:
          - exp_labels: {severity: warn, job: app, election: leader}
            exp_annotations:
              summary: "app: nobody has led election leader for 10 minutes"
`)
	runTool(t, tool, func() string {
		input, _ := os.ReadFile(file)
		return "the test:\n" + string(input)
	}, "test", "rules", file)
}

// next returns the next leader that leaders tells, within 10 seconds.
func next(t *testing.T, leaders <-chan election.Leader) election.Leader {
	t.Helper()
	select {
	case l := <-leaders:
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no word from Observe within 10s")
	}
	return election.Leader{}
}
