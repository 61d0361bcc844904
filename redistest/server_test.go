package redistest_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

func TestMain(m *testing.M) {
	testenv.Main(m)
}

func TestServerSetGet(t *testing.T) {
	srv := redistest.NewServer(t)
	if want := "127.0.0.1:" + strconv.Itoa(srv.Port()); srv.Addr() != want {
		t.Errorf("Addr() = %q, want %q", srv.Addr(), want)
	}
	opt, err := redis.ParseURL(srv.URL())
	if err != nil || opt.Addr != srv.Addr() || opt.DB != 0 {
		t.Errorf("ParseURL(%q) = %+v, %v; want Addr %q, DB 0", srv.URL(), opt, err, srv.Addr())
	}
	if !srv.Running() {
		t.Error("Running() = false after NewServer")
	}

	rdb := srv.Client()
	ctx := t.Context()
	if err := rdb.Set(ctx, "greeting", "hello", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if got, err := rdb.Get(ctx, "greeting").Result(); err != nil || got != "hello" {
		t.Fatalf("GET = %q, %v; want \"hello\"", got, err)
	}
}

func TestServerKillStart(t *testing.T) {
	srv := redistest.NewServer(t)
	// Fail fast: by default go-redis retries a refused dial for seconds.
	rdb := srv.Client(func(o *redis.Options) {
		o.MaxRetries = -1
		o.DialerRetries = 1
	})
	ctx := t.Context()
	port := srv.Port()
	mustSet(t, rdb, "k", "v")

	// Running is documented as safe for concurrent use: poll it while the
	// test goroutine kills and starts the server.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				_ = srv.Running()
			}
		}
	})
	defer wg.Wait()
	defer close(stop)

	srv.Kill()
	srv.Kill() // a no-op
	if srv.Running() {
		t.Error("Running() = true after Kill")
	}
	err := rdb.Get(ctx, "k").Err()
	if !isConnError(err) {
		t.Fatalf("GET after Kill: err = %v, want a connection error", err)
	}

	srv.Start()
	if !srv.Running() {
		t.Error("Running() = false after Start")
	}
	if srv.Port() != port {
		t.Errorf("Port() = %d after Start, want %d", srv.Port(), port)
	}
	if err := rdb.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after Start: err = %v, want redis.Nil (empty dataset)", err)
	}
	mustSet(t, rdb, "k", "v2")
}

func TestServerRestartLosesData(t *testing.T) {
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	port := srv.Port()
	mustSet(t, rdb, "k", "v")

	srv.Restart()
	if srv.Port() != port {
		t.Errorf("Port() = %d after Restart, want %d", srv.Port(), port)
	}
	if err := rdb.Get(t.Context(), "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after Restart: err = %v, want redis.Nil", err)
	}
}

func TestServerPauseResume(t *testing.T) {
	srv := redistest.NewServer(t)
	rdb := srv.Client(func(o *redis.Options) {
		o.ContextTimeoutEnabled = true
		o.MaxRetries = -1
	})
	mustSet(t, rdb, "k", "v")

	srv.Pause()
	if !srv.Running() {
		t.Error("Running() = false for a paused server")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := rdb.Get(ctx, "k").Err()
	if !isTimeout(err) {
		t.Fatalf("GET on a paused server: err = %v, want a timeout", err)
	}
	if elapsed := time.Since(start); elapsed >= 5*time.Second {
		t.Errorf("GET on a paused server took %v: it outlived its 200ms context", elapsed)
	}

	srv.Resume()
	ctx, cancel = context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if got, err := rdb.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET after Resume = %q, %v; want \"v\"", got, err)
	}
}

func TestCleanupStopsServer(t *testing.T) {
	var addr string
	t.Run("paused", func(t *testing.T) {
		srv := redistest.NewServer(t)
		srv.Client().Ping(t.Context()) // a client whose Close runs first
		srv.Pause()
		addr = srv.Addr()
	})
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		conn.Close()
		t.Fatalf("%s still accepts connections after the test's cleanup", addr)
	}
}

func TestNewServers(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	if len(servers) != 3 {
		t.Fatalf("NewServers(t, 3) returned %d servers", len(servers))
	}
	ports := make(map[int]bool)
	for i, srv := range servers {
		ports[srv.Port()] = true
		mustSet(t, srv.Client(), "node", strconv.Itoa(i))
	}
	if len(ports) != 3 {
		t.Fatalf("ports %v are not distinct", ports)
	}
	for i, srv := range servers {
		got, err := srv.Client().Get(t.Context(), "node").Result()
		if err != nil || got != strconv.Itoa(i) {
			t.Errorf("server %d: GET node = %q, %v; want %q", i, got, err, strconv.Itoa(i))
		}
	}
}

func TestWithArgs(t *testing.T) {
	srv := redistest.NewServer(t,
		redistest.WithArgs("--maxmemory-policy", "allkeys-lru"),
		redistest.WithArgs("--maxmemory-policy", "volatile-ttl", "--hz", "20"),
	)
	want := map[string]string{
		"maxmemory-policy": "volatile-ttl", // the later value wins
		"hz":               "20",
		"save":             "", // the defaults of the package
		"appendonly":       "no",
		"bind":             "127.0.0.1",
	}
	rdb := srv.Client()
	for key, value := range want {
		got, err := rdb.ConfigGet(t.Context(), key).Result()
		if err != nil || got[key] != value {
			t.Errorf("CONFIG GET %s = %v, %v; want %q", key, got, err, value)
		}
	}
}

func TestWithArgsCluster(t *testing.T) {
	srv := redistest.NewServer(t, redistest.WithArgs("--cluster-enabled", "yes"))
	rdb := srv.Client()
	if err := rdb.ClusterInfo(t.Context()).Err(); err != nil {
		t.Fatalf("CLUSTER INFO: %v", err)
	}
	dir, err := rdb.ConfigGet(t.Context(), "dir").Result()
	if err != nil {
		t.Fatalf("CONFIG GET dir: %v", err)
	}
	// The relative default cluster-config-file lands in the temp dir.
	if _, err := os.Stat(filepath.Join(dir["dir"], "nodes.conf")); err != nil {
		t.Errorf("nodes.conf is not in the server's directory: %v", err)
	}
	// The bus port is a free port of its own, not PORT+10000, which is out
	// of range for a fifth of the ports the system hands out; it survives
	// a restart.
	busPort := srv.ClusterBusPort()
	if busPort == 0 || busPort == srv.Port() {
		t.Fatalf("ClusterBusPort() = %d, want a free port other than %d", busPort, srv.Port())
	}
	srv.Restart()
	got, err := rdb.ConfigGet(t.Context(), "cluster-port").Result()
	if err != nil || got["cluster-port"] != strconv.Itoa(busPort) || srv.ClusterBusPort() != busPort {
		t.Errorf("after Restart: CONFIG GET cluster-port = %v, %v, ClusterBusPort() = %d; want %d",
			got, err, srv.ClusterBusPort(), busPort)
	}
	if plain := redistest.NewServer(t); plain.ClusterBusPort() != 0 {
		t.Errorf("ClusterBusPort() = %d for a server not in cluster mode, want 0", plain.ClusterBusPort())
	}
}

func TestLogTail(t *testing.T) {
	srv := redistest.NewServer(t)
	if got := srv.LogTail(0); got != "" {
		t.Errorf("LogTail(0) = %q, want \"\"", got)
	}
	if got := srv.LogTail(1); got == "" || strings.Contains(got, "\n") {
		t.Errorf("LogTail(1) = %q, want one line", got)
	}
	if got := srv.LogTail(1000); !strings.Contains(got, "Ready to accept connections") {
		t.Errorf("LogTail(1000) does not say the server is ready:\n%s", got)
	}
}

// mustSet sets key to value or fails the test.
func mustSet(t *testing.T, rdb *redis.Client, key, value string) {
	t.Helper()
	if err := rdb.Set(t.Context(), key, value, 0).Err(); err != nil {
		t.Fatalf("SET %s: %v", key, err)
	}
}

// isConnError reports whether err is what a client gets from a dead server.
func isConnError(err error) bool {
	var opErr *net.OpError
	return errors.As(err, &opErr) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}

// isTimeout reports whether err is a context or network timeout.
func isTimeout(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout())
}

func TestStartOutsideATest(t *testing.T) {
	srv, stop, err := redistest.Start()
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	rdb := srv.Client()
	if err := rdb.Set(context.Background(), "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	dir := srv.Dir()
	stop()
	if srv.Running() {
		t.Error("server still running after stop")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("directory %s still there after stop: %v", dir, err)
	}
	if err := rdb.Ping(context.Background()).Err(); err == nil {
		t.Error("client still works after stop")
	}

	if _, _, err := redistest.Start(redistest.WithArgs("--port", "1")); err == nil {
		t.Error("Start with a reserved argument succeeded")
	}
}

func TestSentinel(t *testing.T) {
	primary := redistest.NewServer(t)
	sentinel := redistest.NewSentinel(t, "mymaster", primary)
	ctx := context.Background()

	addr, err := sentinel.Client().Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster").StringSlice()
	if err != nil || len(addr) != 2 || addr[1] != strconv.Itoa(primary.Port()) {
		t.Fatalf("the Sentinel reports the primary at %q, %v; want port %d", addr, err, primary.Port())
	}
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: []string{sentinel.Addr()}})
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through the failover client: %v", err)
	}
	if got := primary.Client().Get(ctx, "k").Val(); got != "v" {
		t.Errorf("the primary holds %q, want the value set through the Sentinel", got)
	}
	sentinel.Restart() // it keeps its configuration across a restart
	if addr, err := sentinel.Client().Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster").StringSlice(); err != nil || len(addr) != 2 {
		t.Errorf("after a restart the Sentinel reports %q, %v", addr, err)
	}
}
