package redistest

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestFindBinaryMissing(t *testing.T) {
	t.Setenv(BinaryEnv, "")
	t.Setenv("PATH", t.TempDir())
	_, err := findBinary()
	if err == nil {
		t.Fatal("findBinary() succeeded with an empty PATH")
	}
	const want = `redistest: redis-server not found in PATH: install it with ` +
		`"sudo apt-get install -y redis-server" (Debian/Ubuntu) or set REDIS_SERVER_BIN to its path`
	if err.Error() != want {
		t.Errorf("error = %q\nwant      %q", err, want)
	}
}

func TestFindBinaryBadEnv(t *testing.T) {
	t.Setenv(BinaryEnv, "/nonexistent")
	_, err := findBinary()
	if err == nil {
		t.Fatal("findBinary() succeeded with REDIS_SERVER_BIN=/nonexistent")
	}
	for _, want := range []string{"REDIS_SERVER_BIN", "/nonexistent", "sudo apt-get install -y redis-server"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestCheckArgs(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr bool
	}{
		{nil, false},
		{[]string{"--maxmemory-policy", "allkeys-lru"}, false},
		{[]string{"--appendonly", "yes"}, false},
		{[]string{"--port", "6379"}, true},
		{[]string{"--hz", "20", "--DIR", "/tmp"}, true},
		{[]string{"--logfile", ""}, true},
		{[]string{"--bind", "0.0.0.0"}, true},
		{[]string{"--daemonize", "yes"}, true},
	}
	for _, tt := range tests {
		if err := checkArgs(tt.args); (err != nil) != tt.wantErr {
			t.Errorf("checkArgs(%q) = %v, want error: %v", tt.args, err, tt.wantErr)
		}
	}
}

func TestNewServerBadArgs(t *testing.T) {
	start := time.Now()
	_, err := newServer(t, []Option{WithArgs("--no-such-directive", "x")})
	if err == nil {
		t.Fatal("newServer succeeded with a bad argument")
	}
	// redis-server explains bad arguments on stderr, which goes to the log.
	if !strings.Contains(err.Error(), "no-such-directive") {
		t.Errorf("error does not show the log's explanation:\n%v", err)
	}
	if errors.Is(err, errAddrInUse) {
		t.Errorf("error %v is errAddrInUse", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("newServer took %v to fail, want well under the readiness timeout", elapsed)
	}
}

func TestStartPortTaken(t *testing.T) {
	s, err := newServer(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	port := s.Port()
	s.Kill()
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.startOnPort(port); !errors.Is(err, errAddrInUse) {
		t.Fatalf("startOnPort on a taken port: err = %v, want errAddrInUse", err)
	}

	// Start retries until the port is free again.
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		time.Sleep(200 * time.Millisecond)
		l.Close()
	})
	s.Start()
	if !s.Running() || s.Port() != port {
		t.Fatalf("after Start: Running() = %v, Port() = %d; want true, %d", s.Running(), s.Port(), port)
	}
}

func TestPidFromInfo(t *testing.T) {
	pid, err := pidFromInfo("# Server\r\nredis_version:7.0.15\r\nprocess_id:4242\r\ntcp_port:1\r\n")
	if err != nil || pid != 4242 {
		t.Errorf("pidFromInfo = %d, %v; want 4242", pid, err)
	}
	if _, err := pidFromInfo("# Server\r\n"); err == nil {
		t.Error("pidFromInfo without process_id succeeded")
	}
}
