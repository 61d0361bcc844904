package testenv

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Commands is what a redis-server ran, as MONITOR told it (see Monitor).
type Commands struct {
	mu    sync.Mutex
	lines []string
}

// Monitor records the commands the redis-server at addr runs until the test
// ends, through a MONITOR connection of its own.
func Monitor(t testing.TB, addr string) *Commands {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	if line, err := r.ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Fatalf("MONITOR = %q, %v", line, err)
	}
	c := &Commands{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			c.mu.Lock()
			c.lines = append(c.lines, line)
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		conn.Close()
		<-done
	})
	return c
}

// Count returns how many commands sent by a client (not run by a script)
// contain every one of parts.
func (c *Commands) Count(parts ...string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
next:
	for _, line := range c.lines {
		if strings.Contains(line, " lua] ") {
			continue
		}
		for _, p := range parts {
			if !strings.Contains(line, p) {
				continue next
			}
		}
		n++
	}
	return n
}

// WarmPool makes rdb open n connections and leaves them idle in its pool.
// go-redis sends a copy of an unanswered command on another connection: a
// new one would first wait for a paused server's answer to its handshake
// (HELLO), and send no copy.
func WarmPool(t testing.TB, rdb *redis.Client, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			// Each BLPOP holds its connection while it waits.
			if err := rdb.Do(context.Background(), "BLPOP", "warm:"+t.Name(), "0.1").Err(); err != nil && !errors.Is(err, redis.Nil) {
				t.Errorf("warm the pool: %v", err)
			}
		})
	}
	wg.Wait()
}

// Logs is a slog.Handler that keeps every record it is given, for tests
// that look at what was logged. Its zero value is ready to use.
type Logs struct {
	mu   sync.Mutex
	recs []slog.Record
}

// Enabled reports true: every level is kept.
func (h *Logs) Enabled(context.Context, slog.Level) bool { return true }

// Handle keeps r.
func (h *Logs) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}

// WithAttrs returns h: attributes given this way are not kept.
func (h *Logs) WithAttrs([]slog.Attr) slog.Handler { return h }

// WithGroup returns h: groups are not kept.
func (h *Logs) WithGroup(string) slog.Handler { return h }

// Matching returns the records at level whose message contains msg.
func (h *Logs) Matching(level slog.Level, msg string) []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []slog.Record
	for _, r := range h.recs {
		if r.Level == level && strings.Contains(r.Message, msg) {
			out = append(out, r)
		}
	}
	return out
}

// Attr returns the value of r's attribute key, or nil.
func Attr(r slog.Record, key string) any {
	var v any
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.Any()
			return false
		}
		return true
	})
	return v
}

// EvalshaCalls returns how many EVALSHA commands the redis-server of rdb
// has run (INFO commandstats), so that a test can tell that go-redis sent a
// script again.
func EvalshaCalls(t testing.TB, rdb *redis.Client) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

// OnlyMarkersLeft reports whether every key left in rdb is a marker that a
// release or a forced release leaves for go-redis's resend window
// ("dlock:freed...", "dlock:forced..."), which outlives most tests.
func OnlyMarkersLeft(ctx context.Context, rdb *redis.Client) bool {
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		return false
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "dlock:freed") && !strings.HasPrefix(k, "dlock:forced") {
			return false
		}
	}
	return true
}
