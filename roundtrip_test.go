package dlock_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/redistest"
	"github.com/redis/go-redis/v9"
)

// An obtain and a release are one round trip each. MONITOR shows every
// command a client sends, and the commands scripts run tagged "lua"; INFO
// commandstats would count those too.
func TestRoundTripsPerCycle(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	key := testenv.Key(t)
	// Warm up: connect, and load the scripts.
	if err := mustObtain(t, e.locker, key, time.Minute).Release(ctx); err != nil {
		t.Fatal(err)
	}

	conn, err := net.Dial("tcp", e.srv.Addr())
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

	const cycles = 5
	for range cycles {
		if err := mustObtain(t, e.locker, key, time.Minute).Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	e.rdb.Echo(ctx, "end-of-test")

	var sent, inScripts int
	for {
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("reading MONITOR: %v", err)
		}
		if strings.Contains(line, `"end-of-test"`) {
			break
		}
		if strings.Contains(line, " lua] ") {
			inScripts++
		} else {
			sent++
			t.Logf("sent: %s", strings.TrimSpace(line))
		}
	}
	if sent != 2*cycles {
		t.Errorf("%d commands sent for %d obtain+release cycles, want %d", sent, cycles, 2*cycles)
	}
	if inScripts == 0 {
		t.Errorf("MONITOR showed no commands run by scripts: is the test reading it right?")
	}
}

// The commands Redis runs for a lock nobody else wants, counted with INFO
// commandstats (the commands inside scripts included, the EVALSHA that runs
// a script not): an acquire is TIME and SET NX PX; a release GET, DEL and
// the SET of its release marker; the first Fence GET and one SET.
func TestCommandsPerCycle(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	locker := lockenv.Locker(t, rdb)
	ctx := context.Background()
	key := testenv.Key(t)
	const cycles = 10
	for _, tc := range []struct {
		name  string
		cycle func() error
		want  map[string]int64
	}{
		{"TryObtain+Release", func() error {
			lock, err := locker.TryObtain(ctx, key, time.Minute)
			if err != nil {
				return err
			}
			return lock.Release(ctx)
		}, map[string]int64{"time": 1, "set": 2, "get": 1, "del": 1}},
		{"Obtain+Release", func() error {
			lock, err := locker.Obtain(ctx, key, time.Minute)
			if err != nil {
				return err
			}
			return lock.Release(ctx)
		}, map[string]int64{"time": 1, "set": 2, "get": 1, "del": 1}},
		{"TryObtain+Fence+Release", func() error {
			lock, err := locker.TryObtain(ctx, key, time.Minute)
			if err != nil {
				return err
			}
			if lock.Fence() <= 0 {
				return fmt.Errorf("fence %d", lock.Fence())
			}
			return lock.Release(ctx)
		}, map[string]int64{"time": 1, "set": 3, "get": 2, "del": 1}},
	} {
		if err := tc.cycle(); err != nil { // connects, and loads the scripts
			t.Fatalf("%s: %v", tc.name, err)
		}
		if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		for range cycles {
			if err := tc.cycle(); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
		got := commandCounts(t, rdb)
		var total int64
		for cmd, n := range got {
			total += n
			if n != tc.want[cmd]*cycles {
				t.Errorf("%s: %d %s per %d cycles, want %d", tc.name, n, cmd, cycles, tc.want[cmd]*cycles)
			}
		}
		for cmd, n := range tc.want {
			if got[cmd] == 0 {
				t.Errorf("%s: no %s, want %d per cycle", tc.name, cmd, n)
			}
		}
		t.Logf("%s: %.1f commands per cycle: %v", tc.name, float64(total)/cycles, got)
	}
}

// commandCounts returns how many times redis-server ran each command since
// its statistics were last reset (INFO commandstats), those that scripts
// ran included; the EVALSHA or EVAL that runs a script, and INFO, CONFIG
// and SCRIPT, are left out.
func commandCounts(t testing.TB, rdb *redis.Client) map[string]int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		cmd, isCmd := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isCmd {
			continue
		}
		cmd = strings.SplitN(cmd, "|", 2)[0]
		switch cmd {
		case "info", "config", "script", "evalsha", "eval", "evalsha_ro", "eval_ro":
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
		n, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			t.Fatalf("commandstats line %q: %v", line, err)
		}
		counts[cmd] += n
	}
	return counts
}
