package bench

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ScriptCost is what one uncontended obtain+release costs the server's
// single thread, by command, as INFO commandstats tells it: the time Redis
// spent in each command (a script's time includes the commands it calls,
// which also appear on their own lines), per cycle.
type ScriptCost struct {
	Row    string             `json:"row"`
	Cycles int                `json:"cycles"`
	Calls  map[string]float64 `json:"calls_per_cycle"`
	Micros map[string]float64 `json:"usec_per_cycle"`
	// Scripts is the server's time per cycle in scripts (EVALSHA and
	// EVAL, the commands they call included), microseconds.
	Scripts float64 `json:"scripts_usec_per_cycle"`
	// CPU is the server's CPU time per cycle (INFO cpu, user and system:
	// reading, parsing and answering too), microseconds.
	CPU float64 `json:"server_cpu_usec_per_cycle"`
	// Wall is the time one cycle took, from the client, one at a time.
	Wall time.Duration `json:"wall_ns"`
}

// RunScriptCost runs cycles obtain+release cycles of row, one at a time,
// against the redis-server at addr, and returns their cost to the server.
func RunScriptCost(ctx context.Context, addr string, row Row, cycles int) (ScriptCost, error) {
	env := Env{Nodes: []string{addr}, TTL: 10 * time.Second}
	locker, err := row.New(env)
	if err != nil {
		return ScriptCost{}, err
	}
	defer func() { _ = locker.Close() }()
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = admin.Close() }()
	key := "scriptcost:" + row.Name
	cycle := func() error {
		h, err := locker.Obtain(ctx, key)
		if err != nil {
			return err
		}
		return h.Release(ctx)
	}
	if err := cycle(); err != nil { // scripts loaded, connections made
		return ScriptCost{}, err
	}
	if err := admin.ConfigResetStat(ctx).Err(); err != nil {
		return ScriptCost{}, err
	}
	before, err := readServerStats(ctx, admin)
	if err != nil {
		return ScriptCost{}, err
	}
	start := time.Now()
	for range cycles {
		if err := cycle(); err != nil {
			return ScriptCost{}, err
		}
	}
	wall := time.Since(start)
	after, err := readServerStats(ctx, admin)
	if err != nil {
		return ScriptCost{}, err
	}
	stats, err := commandStats(ctx, admin)
	if err != nil {
		return ScriptCost{}, err
	}
	res := ScriptCost{Row: row.Name, Cycles: cycles, Calls: map[string]float64{}, Micros: map[string]float64{}, Wall: wall / time.Duration(cycles),
		CPU: (after.cpu - before.cpu) * 1e6 / float64(cycles)}
	for cmd, st := range stats {
		if cmd == "config|resetstat" {
			continue
		}
		res.Calls[cmd] = float64(st.calls) / float64(cycles)
		res.Micros[cmd] = float64(st.usec) / float64(cycles)
	}
	for cmd, us := range res.Micros {
		if strings.HasPrefix(cmd, "eval") {
			res.Scripts += us
		}
	}
	return res, nil
}

// String is one line: the row, the server's CPU and script time per
// cycle, and each command's calls and time per cycle.
func (s ScriptCost) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: server CPU %.1f µs per cycle, %.1f µs of it in scripts (wall %v per cycle, one at a time):", s.Row, s.CPU, s.Scripts, s.Wall)
	for _, cmd := range sortedByValue(s.Micros) {
		fmt.Fprintf(&b, " %s %.2f× %.2f µs;", cmd, s.Calls[cmd], s.Micros[cmd])
	}
	return strings.TrimSuffix(b.String(), ";")
}

// sortedByValue returns m's keys, the largest value first.
func sortedByValue(m map[string]float64) []string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(m[b], m[a]), strings.Compare(a, b))
	})
	return keys
}
