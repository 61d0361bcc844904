package bench

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Percentile returns the p-th percentile (0 < p <= 100) of d by the
// nearest-rank method, sorting d in place; 0 for an empty d.
func Percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	if !slices.IsSorted(d) {
		slices.Sort(d)
	}
	rank := int(float64(len(d))*p/100+0.999999999) - 1
	return d[min(max(rank, 0), len(d)-1)]
}

// WriteCounter counts the writes that clients make on the connections it
// dials. A client sends each request, or each pipeline of requests, in one
// write, so the count is the number of round trips.
type WriteCounter struct{ n atomic.Int64 }

// Dial dials a TCP connection whose writes are counted. Its signature is
// go-redis's Options.Dialer.
func (w *WriteCounter) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tcp, ok := c.(*net.TCPConn)
	if !ok {
		_ = c.Close()
		return nil, fmt.Errorf("bench: %s %s is not a TCP connection", network, addr)
	}
	return &countingConn{TCPConn: tcp, writes: &w.n}, nil
}

// Writes returns the number of writes so far.
func (w *WriteCounter) Writes() int64 { return w.n.Load() }

// countingConn embeds *net.TCPConn, not net.Conn, so that go-redis still
// finds its SyscallConn for the health check of pooled connections.
type countingConn struct {
	*net.TCPConn
	writes *atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.TCPConn.Write(b)
}

// serverStats is what INFO says about the work a server did.
type serverStats struct {
	commands int64   // total_commands_processed: also counts commands run inside scripts
	cpu      float64 // used_cpu_user + used_cpu_sys, seconds
}

// readServerStats asks a server for its counters. The INFO command itself
// counts as one command.
func readServerStats(ctx context.Context, rdb *redis.Client) (serverStats, error) {
	info, err := rdb.Info(ctx, "stats", "cpu").Result()
	if err != nil {
		return serverStats{}, err
	}
	fields := infoFields(info)
	var s serverStats
	s.commands, err = strconv.ParseInt(fields["total_commands_processed"], 10, 64)
	if err != nil {
		return s, fmt.Errorf("bench: INFO total_commands_processed: %w", err)
	}
	for _, f := range []string{"used_cpu_user", "used_cpu_sys"} {
		v, err := strconv.ParseFloat(fields[f], 64)
		if err != nil {
			return s, fmt.Errorf("bench: INFO %s: %w", f, err)
		}
		s.cpu += v
	}
	return s, nil
}

// infoFields splits INFO's "name:value" lines.
func infoFields(info string) map[string]string {
	fields := make(map[string]string)
	for line := range strings.SplitSeq(info, "\n") {
		if name, value, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(name, "#") {
			fields[name] = value
		}
	}
	return fields
}

// commandCalls returns INFO commandstats: how many times each command ran,
// counting those run inside scripts, leaving out INFO itself.
func commandCalls(ctx context.Context, rdb *redis.Client) (map[string]int64, error) {
	stats, err := commandStats(ctx, rdb)
	if err != nil {
		return nil, err
	}
	calls := make(map[string]int64, len(stats))
	for cmd, s := range stats {
		calls[cmd] = s.calls
	}
	return calls, nil
}

// commandStat is one command's line of INFO commandstats.
type commandStat struct {
	calls int64 // times it ran, inside scripts too
	usec  int64 // the server's time in it, microseconds (a script's includes its commands')
}

// commandStats returns INFO commandstats by command, leaving out INFO
// itself.
func commandStats(ctx context.Context, rdb *redis.Client) (map[string]commandStat, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	stats := make(map[string]commandStat)
	for name, value := range infoFields(info) {
		cmd, ok := strings.CutPrefix(name, "cmdstat_")
		if !ok || cmd == "info" {
			continue
		}
		var s commandStat
		for field := range strings.SplitSeq(value, ",") {
			key, n, _ := strings.Cut(field, "=")
			var into *int64
			switch key {
			case "calls":
				into = &s.calls
			case "usec":
				into = &s.usec
			default:
				continue
			}
			v, err := strconv.ParseInt(n, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bench: INFO commandstats %s: %w", name, err)
			}
			*into = v
		}
		stats[cmd] = s
	}
	return stats, nil
}

// callsDelta returns after - before, command by command, and the total.
func callsDelta(before, after map[string]int64) (map[string]int64, int64) {
	delta := make(map[string]int64)
	var total int64
	for cmd, n := range after {
		if d := n - before[cmd]; d > 0 {
			delta[cmd] = d
			total += d
		}
	}
	return delta, total
}

// perOp formats the commands of delta divided by ops, the most frequent
// first: "evalsha 2.00, publish 1.00".
func perOp(delta map[string]int64, ops int) string {
	if ops == 0 {
		return ""
	}
	cmds := make([]string, 0, len(delta))
	for cmd := range delta {
		cmds = append(cmds, cmd)
	}
	slices.SortFunc(cmds, func(a, b string) int {
		if c := -cmpInt(delta[a], delta[b]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, 0, len(cmds))
	for _, cmd := range cmds {
		if v := float64(delta[cmd]) / float64(ops); v >= 0.005 {
			parts = append(parts, fmt.Sprintf("%s %.2f", cmd, v))
		}
	}
	return strings.Join(parts, ", ")
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
