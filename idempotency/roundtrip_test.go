package idempotency_test

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// The commands a call sends to Redis, counted with MONITOR (commands that
// scripts run are tagged "lua" and not counted). A replay is one: the
// lock's acquire, which finds the stored result first (dlock.WithGuard). A
// first call is two: that acquire, and the release that stores the result
// (Lock.ReleaseStoring).
func TestRoundTrips(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	store := newStore(t, rdb)
	ctx := testenv.Timeout(t, 10*time.Second)
	fn := func(context.Context) ([]byte, error) { return []byte("r"), nil }
	// Warm up: connect, load the scripts.
	if _, _, err := store.Do(ctx, "warm-up", nil, fn); err != nil {
		t.Fatal(err)
	}

	conn, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	lines := bufio.NewReader(conn)
	conn.Write([]byte("MONITOR\r\n"))
	if ok, _ := lines.ReadString('\n'); ok != "+OK\r\n" {
		t.Fatalf("MONITOR answered %q", ok)
	}
	count := func(what string, call func()) []string {
		call()
		rdb.Echo(ctx, "end-of-"+what)
		var sent []string
		for {
			line, err := lines.ReadString('\n')
			if err != nil {
				t.Fatalf("reading MONITOR: %v", err)
			}
			if strings.Contains(line, `"end-of-`+what+`"`) {
				return sent
			}
			if !strings.Contains(line, " lua] ") {
				fields := strings.Fields(line)
				sent = append(sent, strings.Trim(fields[3], `"`))
			}
		}
	}
	first := count("first", func() { store.Do(ctx, "k", nil, fn) })
	replay := count("replay", func() { store.Do(ctx, "k", nil, fn) })
	t.Logf("first call: %q; replay: %q", first, replay)
	if strings.Join(first, " ") != "evalsha evalsha" {
		t.Errorf("a first call sent %q, want evalsha evalsha", first)
	}
	if strings.Join(replay, " ") != "evalsha" {
		t.Errorf("a replay sent %q, want one evalsha", replay)
	}
}
