package dlock_test

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock/internal/testenv"
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
