package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Results is what the measurements printed: go test -bench lines and the
// JSON lines of cmd/peers, read back by ReadResults.
type Results struct {
	// Bench maps a benchmark's name, without "Benchmark" and the
	// GOMAXPROCS suffix ("Uncontended/lib=dlock/g=8"), to one map of
	// unit to value per run, in the order read.
	Bench map[string][]map[string]float64
	// Names lists the benchmark names in the order first read.
	Names   []string
	HotKey  []HotKeyResult
	Renew   []RenewResult
	Skipped int // lines that were neither, such as "goos: linux"
}

// ReadResults reads go test -bench output and JSON result lines, in any
// mix and order.
func ReadResults(r io.Reader) (*Results, error) {
	res := &Results{Bench: make(map[string][]map[string]float64)}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		var err error
		switch {
		case strings.HasPrefix(line, "Benchmark"):
			err = res.addBench(line)
		case strings.HasPrefix(line, "{"):
			err = res.addJSON(line)
		default:
			res.Skipped++
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
	}
	return res, sc.Err()
}

// addBench parses "BenchmarkX/lib=a/g=1-2  N  v unit  v unit ...". A line
// without results (a parent benchmark's name alone) is skipped.
func (res *Results) addBench(line string) error {
	f := strings.Fields(line)
	if len(f) < 4 || len(f)%2 != 0 {
		res.Skipped++
		return nil
	}
	name := strings.TrimPrefix(f[0], "Benchmark")
	if i := strings.LastIndexByte(name, '-'); i > 0 && isDigits(name[i+1:]) {
		name = name[:i]
	}
	iterations, err := strconv.ParseFloat(f[1], 64)
	if err != nil {
		return fmt.Errorf("benchmark %s: %w", f[0], err)
	}
	metrics := map[string]float64{"iterations": iterations}
	for i := 2; i < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return fmt.Errorf("benchmark %s: %w", f[0], err)
		}
		metrics[f[i+1]] = v
	}
	if _, seen := res.Bench[name]; !seen {
		res.Names = append(res.Names, name)
	}
	res.Bench[name] = append(res.Bench[name], metrics)
	return nil
}

func (res *Results) addJSON(line string) error {
	var kind struct{ Scenario string }
	if err := json.Unmarshal([]byte(line), &kind); err != nil {
		return err
	}
	switch kind.Scenario {
	case "hotkey":
		var r HotKeyResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return err
		}
		res.HotKey = append(res.HotKey, r)
	case "renew":
		var r RenewResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return err
		}
		res.Renew = append(res.Renew, r)
	default:
		return fmt.Errorf("unknown scenario %q", kind.Scenario)
	}
	return nil
}

// Median returns the median of unit over the runs of the benchmark name,
// and how many runs reported it.
func (res *Results) Median(name, unit string) (float64, int) {
	var vs []float64
	for _, m := range res.Bench[name] {
		if v, ok := m[unit]; ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 0, 0
	}
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2], len(vs)
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2, len(vs)
}

// subNames returns, for the benchmark top (such as "Uncontended"), the
// distinct values of the name part key ("lib", "g") in the order first
// read.
func (res *Results) subNames(top, key string) []string {
	var values []string
	for _, name := range res.Names {
		parts := strings.Split(name, "/")
		if parts[0] != top {
			continue
		}
		for _, p := range parts[1:] {
			if v, ok := strings.CutPrefix(p, key+"="); ok && !slices.Contains(values, v) {
				values = append(values, v)
			}
		}
	}
	return values
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
