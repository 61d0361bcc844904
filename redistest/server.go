package redistest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// host is the only address servers listen on.
	host = "127.0.0.1"
	// logName is the server's log file, in its temporary directory.
	logName = "redis.log"
	// maxPortAttempts bounds how often NewServer picks a new port when
	// another process takes the chosen one before redis-server binds it.
	maxPortAttempts = 5
	// rebindTimeout bounds how long Start retries binding the old port.
	rebindTimeout = 2 * time.Second
	// rebindInterval is the pause between two attempts to bind the old port.
	rebindInterval = 50 * time.Millisecond
	// failureLogLines is how much of the log a startup failure shows.
	failureLogLines = 20
)

// Server is a redis-server process owned by a test. Create one with
// [NewServer] or [NewServers]; it is stopped by the test's cleanup.
//
// The methods that change the process (Kill, Pause, Resume, Start, Restart)
// and Client must be called from the test's goroutine; they stop the test with
// t.Fatalf on failure. Addr, Port, URL, Running, LogTail, Dir and
// ClusterBusPort are safe for concurrent use.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	args []string // from WithArgs

	sentinel bool // runs as a Sentinel, configured by confPath

	mu      sync.Mutex
	port    int
	busPort int      // the cluster bus port we chose (--cluster-port), or 0
	proc    *process // nil after Kill
}

// NewServer starts a redis-server on a free 127.0.0.1 port, waits until it
// answers PING, and registers a t.Cleanup that kills it; its temporary
// directory is removed by t.TempDir's own cleanup, after that. It fails the
// test with t.Fatalf if redis-server cannot be found or does not start.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := newServer(t, opts)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return s
}

// NewServers starts n independent servers, one after the other, as
// [NewServer] does, for tests that need several nodes such as Redlock.
// Every server gets the same options.
func NewServers(t testing.TB, n int, opts ...Option) []*Server {
	t.Helper()
	if n < 0 {
		t.Fatalf("redistest: NewServers: negative count %d", n)
	}
	servers := make([]*Server, n)
	for i := range servers {
		servers[i] = NewServer(t, opts...)
	}
	return servers
}

// newServer is NewServer returning its error.
func newServer(t testing.TB, opts []Option) (*Server, error) {
	var cfg config
	for _, opt := range opts {
		opt(&cfg)
	}
	if err := checkArgs(cfg.args); err != nil {
		return nil, err
	}
	bin, err := findBinary()
	if err != nil {
		return nil, err
	}
	// TempDir before Cleanup: cleanups run last-in first-out, so the
	// process is killed before its directory is removed.
	s := &Server{t: t, bin: bin, dir: t.TempDir(), args: cfg.args, sentinel: cfg.sentinel != ""}
	t.Cleanup(s.Kill)
	if s.sentinel {
		// Sentinel rewrites its configuration file as it learns about the
		// deployment, so it lives in the server's directory.
		if err := os.WriteFile(s.confPath(), []byte(cfg.sentinel), 0o600); err != nil {
			return nil, fmt.Errorf("redistest: %w", err)
		}
	}
	return s, s.startOnFreePort()
}

// Addr returns the server's address, "127.0.0.1:PORT".
func (s *Server) Addr() string {
	return net.JoinHostPort(host, strconv.Itoa(s.Port()))
}

// Port returns the server's TCP port. It does not change on Start or Restart.
func (s *Server) Port() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.port
}

// URL returns the server's URL for database 0, "redis://127.0.0.1:PORT/0",
// in the form that redis.ParseURL accepts.
func (s *Server) URL() string {
	return "redis://" + s.Addr() + "/0"
}

// Client returns a new go-redis client for the server. Its options are the
// go-redis defaults with Addr set; each function in opts may change them
// before the client is made. The client is closed by a t.Cleanup, which runs
// before the server is killed. Clients keep working across Restart: go-redis
// reconnects when a command is next sent.
func (s *Server) Client(opts ...func(*redis.Options)) *redis.Client {
	s.t.Helper()
	o := &redis.Options{Addr: s.Addr()}
	for _, opt := range opts {
		opt(o)
	}
	c := redis.NewClient(o)
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// LogTail returns the last n lines of the server's log, which accumulates
// over restarts, or "" if n <= 0 or there is no log yet. Use it to explain a
// failure, as in t.Log(srv.LogTail(20)).
func (s *Server) LogTail(n int) string {
	if n <= 0 {
		return ""
	}
	data, err := os.ReadFile(s.logPath())
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Dir returns the server's working directory, where its log and any files
// it writes (such as a cluster's nodes.conf) live. It is removed when the
// server's test ends.
func (s *Server) Dir() string { return s.dir }

// logPath returns the path of the server's log file.
func (s *Server) logPath() string {
	return filepath.Join(s.dir, logName)
}

// confPath returns the path of a Sentinel's configuration file.
func (s *Server) confPath() string {
	return filepath.Join(s.dir, "sentinel.conf")
}

// argv returns redis-server's command line for port and, if it is not 0,
// the cluster bus port.
func (s *Server) argv(port, busPort int) []string {
	var args []string
	if s.sentinel {
		args = []string{s.confPath(), "--sentinel"}
	}
	args = append(args,
		"--port", strconv.Itoa(port),
		"--bind", host,
		"--save", "",
		"--appendonly", "no",
		// A replica gets its first copy of the dataset at once, not after
		// the five seconds Redis 7 waits by default for more replicas.
		"--repl-diskless-sync-delay", "0",
		"--dir", s.dir,
		"--daemonize", "no",
		"--logfile", s.logPath(),
	)
	if busPort != 0 {
		args = append(args, "--cluster-port", strconv.Itoa(busPort))
	}
	return append(args, s.args...)
}

// startOnFreePort starts the server on a free port, trying another port if
// the chosen one is taken before redis-server binds it.
func (s *Server) startOnFreePort() error {
	for attempt := 1; ; attempt++ {
		port, busPort, err := s.freePorts()
		if err != nil {
			return err
		}
		err = s.startOnPorts(port, busPort)
		if err == nil || !errors.Is(err, errAddrInUse) || attempt == maxPortAttempts {
			return err
		}
	}
}

// startOnPortRetrying starts the server on port, retrying for a while if the
// port is still in use, as it can be just after Kill.
func (s *Server) startOnPortRetrying(port int) error {
	deadline := time.Now().Add(rebindTimeout)
	busPort := s.ClusterBusPort()
	for {
		err := s.startOnPorts(port, busPort)
		if err == nil || !errors.Is(err, errAddrInUse) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(rebindInterval)
	}
}

// startOnPorts starts redis-server on port, with busPort as its cluster bus
// port if it is not 0, and waits until it is ready, then makes it the
// server's process. On failure no process is left running, and the error
// includes the end of the log.
func (s *Server) startOnPorts(port, busPort int) error {
	p, logOffset, err := spawn(s.bin, s.argv(port, busPort), s.dir, s.logPath())
	if err != nil {
		return err
	}
	if err := waitReady(p, net.JoinHostPort(host, strconv.Itoa(port)), s.logPath(), logOffset); err != nil {
		p.kill()
		return fmt.Errorf("%w\nlast lines of %s:\n%s", err, s.logPath(), s.LogTail(failureLogLines))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.port = port
	s.busPort = busPort
	s.proc = p
	return nil
}
