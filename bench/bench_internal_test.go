package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock/redistest"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		d := make([]time.Duration, len(v))
		for i, x := range v {
			d[i] = time.Duration(x) * time.Millisecond
		}
		return d
	}
	for _, tc := range []struct {
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{nil, 50, 0},
		{ms(7), 99, 7 * time.Millisecond},
		{ms(3, 1, 2), 50, 2 * time.Millisecond},
		{ms(4, 3, 2, 1), 50, 2 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 90, 9 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 100, 10 * time.Millisecond},
	} {
		if got := Percentile(tc.in, tc.p); got != tc.want {
			t.Errorf("Percentile(%v, %v) = %v, want %v", tc.in, tc.p, got, tc.want)
		}
	}
}

func TestSelectAndRotate(t *testing.T) {
	rows := WaitingRows()
	picked, err := Select(rows, "redsync,dlock")
	if err != nil || len(picked) != 2 || picked[0].Name != "redsync" || picked[1].Name != "dlock" {
		t.Errorf("Select = %v, %v", names(picked), err)
	}
	if _, err := Select(rows, "dlock,nope"); err == nil {
		t.Error("Select of an unknown row succeeded")
	}
	if got := names(Rotate(rows[:3], 4)); strings.Join(got, " ") != rows[1].Name+" "+rows[2].Name+" "+rows[0].Name {
		t.Errorf("Rotate by 4 of 3 rows = %v", got)
	}
	for _, set := range [][]Row{UncontendedRows(), WaitingRows(), RenewRows(), RedlockRows()} {
		seen := map[string]bool{}
		for _, r := range set {
			if seen[r.Name] || r.Note == "" || strings.ContainsAny(r.Name, " /=") {
				t.Errorf("row %q: duplicate, without a note, or a name benchstat cannot split", r.Name)
			}
			seen[r.Name] = true
		}
	}
}

func names(rows []Row) []string {
	var n []string
	for _, r := range rows {
		n = append(n, r.Name)
	}
	return n
}

func TestReadResultsAndMarkdown(t *testing.T) {
	input := `goos: linux
BenchmarkUncontended
BenchmarkUncontended/lib=raw/g=1-2         	    100	    50000 ns/op	 48000 p50-ns	 90000 p99-ns	 698 B/op	 21 allocs/op
BenchmarkUncontended/lib=dlock/g=1-2       	    100	    55000 ns/op	 50000 p50-ns	 99000 p99-ns	 1184 B/op	 31 allocs/op
# a comment
BenchmarkUncontended/lib=raw/g=1-2         	    100	    70000 ns/op	 48000 p50-ns	 90000 p99-ns	 698 B/op	 21 allocs/op
BenchmarkHandoff/lib=dlock-2               	     20	   186367 p50-ns	   337644 p99-ns
{"scenario":"hotkey","lib":"dlock","clients":16,"seconds":5,"hold_ms":1,"acquisitions":10,"acquisitions_per_s":2}
{"scenario":"renew","lib":"dlock-autorenew","locks":10000,"ttl_s":3,"hold_s":9,"held_by_library":10000,"held_in_redis":10000}
`
	res, err := ReadResults(strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	if got, n := res.Median("Uncontended/lib=raw/g=1", "ns/op"); got != 60000 || n != 2 {
		t.Errorf("median of raw = %v over %d runs, want 60000 over 2", got, n)
	}
	if len(res.HotKey) != 1 || len(res.Renew) != 1 {
		t.Fatalf("read %d hotkey and %d renew results, want 1 each", len(res.HotKey), len(res.Renew))
	}
	var md bytes.Buffer
	res.WriteMarkdown(&md)
	for _, want := range []string{
		"| dlock | 1 | 55.0 µs | 0.92× | 31 | 50.0 µs | 99.0 µs |",
		"| dlock | 186 µs | 338 µs | 20 |",
		"| dlock | 2 | 0% | ",
		"| dlock-autorenew | ",
		"10000 / 10000 |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the markdown lacks %q:\n%s", want, md.String())
		}
	}
	if _, err := ReadResults(strings.NewReader(`{"scenario":"other"}`)); err == nil {
		t.Error("an unknown scenario was accepted")
	}
}

// TestScenarios runs (c) and (d) for a moment each, on a few rows: they
// must finish, count what they should and lose nothing.
func TestScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-servers")
	}
	srv := redistest.NewServer(t)
	ctx := t.Context()
	rows, err := Select(WaitingRows(), "dlock,redislock-tuned")
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		cfg := HotKeyConfig{Clients: 3, Duration: 200 * time.Millisecond, Hold: time.Millisecond, TTL: 5 * time.Second, Monitor: 100 * time.Millisecond}
		res, err := RunHotKey(ctx, srv.Addr(), row, cfg)
		if err != nil {
			t.Fatalf("%s: %v", row.Name, err)
		}
		if res.Acquisitions == 0 || res.Overlaps != 0 || res.CommandsPerAcq < 2 || res.RoundTripsPerAcq < 2 || res.MonitorRequestsPerAcq < 2 {
			t.Errorf("%s: implausible result %s", row.Name, asJSON(res))
		}
	}
	rows, err = Select(RenewRows(), "dlock+user-renew,rueidislock-tuned")
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		res, err := RunRenew(ctx, srv.Addr(), row, RenewConfig{Locks: 20, TTL: 300 * time.Millisecond, Periods: 2, Workers: 4})
		if err != nil {
			t.Fatalf("%s: %v", row.Name, err)
		}
		if res.HeldByLibrary != 20 || res.HeldInRedis != 20 || res.CommandsPerSecond == 0 || res.RoundTripsPerSecond == 0 {
			t.Errorf("%s: implausible result %s", row.Name, asJSON(res))
		}
	}
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// The CPU meter sees the servers' work: a few thousand commands cost the
// server some CPU time, and this process some too.
func TestCPUMeter(t *testing.T) {
	srv := redistest.NewServer(t)
	ctx := t.Context()
	m, err := StartCPU(ctx, []string{srv.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	rdb := srv.Client()
	for i := range 5000 {
		if err := rdb.Set(ctx, "cpu-meter", i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	client, server, err := m.Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if client <= 0 || server <= 0 {
		t.Errorf("CPU time of 5,000 SETs: client %v, server %v; want both above zero", client, server)
	}
	if _, err := StartCPU(ctx, []string{"127.0.0.1:1"}); err == nil {
		t.Error("StartCPU on an address nobody listens on: want an error")
	}
}

// RunScriptCost counts what a cycle sends: the raw floor one SET and one
// script, dlock two scripts with two SETs inside them.
func TestRunScriptCost(t *testing.T) {
	srv := redistest.NewServer(t)
	for _, tc := range []struct {
		row          Row
		evalsha, set float64
	}{
		{rawRow(), 1, 1},
		// the lock key, inside the acquire; the release marker, inside the
		// release
		{dlockRow("dlock", ""), 2, 2},
	} {
		res, err := RunScriptCost(t.Context(), srv.Addr(), tc.row, 500) // enough CPU time for a tick-based getrusage
		if err != nil {
			t.Fatal(err)
		}
		if res.Calls["evalsha"] != tc.evalsha || res.Calls["set"] != tc.set || res.Scripts <= 0 || res.CPU <= 0 {
			t.Errorf("%s: %v; want %v EVALSHA and %v SET per cycle, and some time", tc.row.Name, res, tc.evalsha, tc.set)
		}
	}
	if _, err := RunScriptCost(t.Context(), "127.0.0.1:1", rawRow(), 1); err == nil {
		t.Error("RunScriptCost on an address nobody listens on: want an error")
	}
}
