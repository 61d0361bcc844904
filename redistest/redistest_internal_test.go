package redistest

import (
	"errors"
	"net"
	"slices"
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
	if elapsed := time.Since(start); elapsed >= readyTimeout {
		t.Errorf("newServer took %v to fail: it waited out the readiness timeout", elapsed)
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
	if err := s.startOnPorts(port, 0); !errors.Is(err, errAddrInUse) {
		t.Fatalf("startOnPorts on a taken port: err = %v, want errAddrInUse", err)
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

func TestSplitSlots(t *testing.T) {
	want := map[int][]slotRange{
		1: {{0, 16383}},
		2: {{0, 8191}, {8192, 16383}},
		3: {{0, 5460}, {5461, 10922}, {10923, 16383}}, // as redis-cli --cluster create
	}
	for n, ranges := range want {
		if got := splitSlots(n); !slices.Equal(got, ranges) {
			t.Errorf("splitSlots(%d) = %v, want %v", n, got, ranges)
		}
	}
	for n := 1; n <= maxClusterNodes; n++ {
		next := 0
		for _, r := range splitSlots(n) {
			if r.first != next || r.last < r.first || r.last-r.first+1 < Slots/n || r.last-r.first+1 > Slots/n+1 {
				t.Fatalf("splitSlots(%d) = %v: range %v is not contiguous and even", n, splitSlots(n), r)
			}
			next = r.last + 1
		}
		if next != Slots {
			t.Fatalf("splitSlots(%d) = %v leaves slots out", n, splitSlots(n))
		}
	}
}

func TestCheckClusterShape(t *testing.T) {
	tests := []struct {
		primaries, replicas int
		ok                  bool
	}{
		{1, 0, true},
		{3, 1, true},
		{32, 1, true},
		{0, 0, false},
		{-1, 1, false},
		{3, -1, false},
		{33, 1, false},
		{1, 64, false},
		{1 << 40, 1 << 40, false}, // no overflow
		{1 << 62, 1, false},
	}
	for _, tt := range tests {
		if err := checkClusterShape(tt.primaries, tt.replicas); (err == nil) != tt.ok {
			t.Errorf("checkClusterShape(%d, %d) = %v, want ok: %v", tt.primaries, tt.replicas, err, tt.ok)
		}
	}
}

func TestNeedsBusPort(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--cluster-enabled", "yes"}, true},
		{[]string{"--CLUSTER-ENABLED", "YES"}, true},
		{[]string{"--cluster-enabled", "yes", "--cluster-enabled", "no"}, false},
		{[]string{"--cluster-enabled", "no", "--cluster-enabled", "yes"}, true},
		{[]string{"--cluster-enabled", "yes", "--cluster-port", "17000"}, false},
		{[]string{"--cluster-enabled"}, false},
	}
	for _, tt := range tests {
		if got := needsBusPort(tt.args); got != tt.want {
			t.Errorf("needsBusPort(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

func TestParseClusterNodes(t *testing.T) {
	const reply = `07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,host4 slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected
67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922
292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@31003 master - 0 1426238318243 3 connected 10923-16383 [42->-e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca]
e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460
aaaa 127.0.0.1:30009@31009 handshake - 0 0 0 disconnected
`
	v, err := parseClusterNodes(reply)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.ownerOf(10923); got != "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f" {
		t.Errorf("ownerOf(10923) = %q", got)
	}
	if got := v.nodes["07c37dfeb235213a872192d90877d0cd55635b91"]; got.primary || got.masterID != "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca" {
		t.Errorf("replica parsed as %+v", got)
	}
	if !v.nodes["aaaa"].pending {
		t.Error("a node in handshake is not pending")
	}
	if _, unserved := v.coverage(); unserved != -1 {
		t.Errorf("coverage: slot %d unserved, want none", unserved)
	}
	// Flags that differ from node to node do not change the canonical view.
	other, err := parseClusterNodes(strings.ReplaceAll(strings.ReplaceAll(reply, "myself,", ""), "connected", "disconnected"))
	if err != nil || other.key != v.key {
		t.Errorf("canonical views differ:\n%s\n%s (%v)", v.key, other.key, err)
	}
	if _, err := parseClusterNodes("abc 127.0.0.1:1@2 master\n"); err == nil {
		t.Error("a short line parsed")
	}
}
