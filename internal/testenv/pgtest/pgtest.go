// Package pgtest starts throwaway PostgreSQL servers for tests: a cluster
// made by initdb in a temporary directory, served by postgres on a Unix
// socket in that directory (no TCP port), with durability turned off for
// speed, and removed when the test ends.
//
// The binaries are those of Debian's postgresql package
// (/usr/lib/postgresql/N/bin, the highest N), or of the directory that
// the environment variable PGTEST_BIN names. PostgreSQL refuses to run as
// root: run as root, the package runs initdb and postgres as the user
// nobody. Where PostgreSQL is missing, New and Shared.Server skip the test
// and say how to install it, except where the environment variable CI is
// set: there they fail it.
//
// pgtest uses only the standard library (and dlock's internal/childproc,
// which does too), so that any module's tests can use it with the
// database/sql driver of their choice (DSN suits pgx and lib/pq).
package pgtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dlock-go/dlock/internal/childproc"
)

// ErrNotInstalled is matched by the error of Start when no PostgreSQL
// binaries are found.
var ErrNotInstalled = errors.New("pgtest: PostgreSQL is not installed (Debian: apt-get install postgresql; or set PGTEST_BIN to the directory of initdb and postgres)")

// port names the socket, .s.PGSQL.5432, in the server's own directory.
const port = "5432"

// startTimeout bounds how long Start waits for a server to accept
// connections; it only ends a start that would otherwise hang.
const startTimeout = 60 * time.Second

// A Server is a PostgreSQL server of its own cluster, in a temporary
// directory. Its superuser is postgres, with no password.
type Server struct {
	bin  string // the directory of initdb, postgres and pg_isready
	dir  string // the cluster's data directory, also the socket's
	root string // the temporary directory that holds dir
	cred *syscall.Credential

	mu   sync.Mutex
	cmd  *exec.Cmd
	exit chan struct{} // closed when cmd has exited
}

// New starts a server for the test and stops it, removing its files, when
// the test ends. Where PostgreSQL is missing it skips the test, or fails it
// if CI is set.
func New(t testing.TB) *Server {
	t.Helper()
	s, err := Start()
	if err != nil {
		skipOrFail(t, err)
	}
	t.Cleanup(s.Close)
	return s
}

// Start makes a cluster in a new temporary directory and starts its server.
// The caller must Close it.
func Start() (*Server, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin}
	if os.Geteuid() == 0 {
		if s.cred, err = nobody(); err != nil {
			return nil, err
		}
	}
	if s.root, err = os.MkdirTemp(tempBase(s.cred != nil), "pgtest"); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	if err := s.initdb(); err != nil {
		_ = os.RemoveAll(s.root)
		return nil, err
	}
	if err := s.Start(); err != nil {
		_ = os.RemoveAll(s.root)
		return nil, err
	}
	return s, nil
}

// DSN returns the server's connection string, for database/sql drivers of
// PostgreSQL (github.com/jackc/pgx/v5/stdlib, github.com/lib/pq): the
// database postgres, as its superuser.
func (s *Server) DSN() string {
	return "host=" + s.dir + " port=" + port + " user=postgres dbname=postgres sslmode=disable"
}

// Start starts the server again after Stop. It returns once the server
// accepts connections.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("pgtest: the server is running")
	}
	log, err := os.OpenFile(filepath.Join(s.root, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer log.Close()
	cmd := s.command("postgres", "-D", s.dir, "-k", s.dir, "-p", port,
		"-c", "listen_addresses=", "-c", "fsync=off", "-c", "full_page_writes=off",
		"-c", "synchronous_commit=off", "-c", "max_connections=100")
	cmd.Stdout, cmd.Stderr = log, log
	exit := make(chan struct{})
	// From a thread kept until the server exits: the parent-death signal
	// (see sysProcAttr) follows the thread that started it.
	if err := childproc.Start(cmd, func(error) { close(exit) }); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	s.cmd, s.exit = cmd, exit
	deadline := time.Now().Add(startTimeout)
	for {
		ready := s.command("pg_isready", "-q", "-h", s.dir, "-p", port, "-U", "postgres").Run() == nil
		if ready {
			return nil
		}
		select {
		case <-exit:
			s.cmd = nil
			return fmt.Errorf("pgtest: postgres exited at start:\n%s", s.logTail())
		default:
		}
		if time.Now().After(deadline) {
			s.stopLocked()
			return fmt.Errorf("pgtest: postgres not ready within %v:\n%s", startTimeout, s.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops the server (a fast shutdown: open sessions are ended,
// transactions rolled back) and returns once it has exited. Its data stay
// for Start.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
}

func (s *Server) stopLocked() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exit:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exit
	}
	s.cmd = nil
}

// Close stops the server and removes its files.
func (s *Server) Close() {
	s.Stop()
	_ = os.RemoveAll(s.root)
}

// initdb makes the cluster, owned by the user the server runs as.
func (s *Server) initdb() error {
	s.dir = filepath.Join(s.root, "data")
	if err := os.Mkdir(s.dir, 0o700); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	if s.cred != nil {
		// nobody must reach the directory and own the data.
		if err := os.Chmod(s.root, 0o755); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
	}
	out, err := s.command("initdb", "-D", s.dir, "-U", "postgres", "-A", "trust", "-E", "UTF8",
		"--locale=C", "-N").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgtest: initdb: %w:\n%s", err, out)
	}
	return nil
}

// command returns a command of the server's binaries, run as the server's
// user.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.root
	cmd.Env = []string{"LC_ALL=C", "PATH=" + s.bin + ":/usr/bin:/bin"}
	cmd.SysProcAttr = sysProcAttr(s.cred)
	return cmd
}

// logTail returns the end of the server's log.
func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.root, "postgres.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// findBin returns the directory of PostgreSQL's binaries.
func findBin() (string, error) {
	if dir := os.Getenv("PGTEST_BIN"); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err != nil {
			return "", fmt.Errorf("pgtest: PGTEST_BIN: %w", err)
		}
		return dir, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	if path, err := exec.LookPath("postgres"); err == nil {
		if resolved, err := filepath.EvalSymlinks(path); err == nil {
			return filepath.Dir(resolved), nil
		}
	}
	return "", ErrNotInstalled
}

// tempBase returns the directory to make the server's directory in: the
// system's temporary directory, or /tmp if the server runs as another user
// (nobody) who could not reach it (a TMPDIR under /root, say).
func tempBase(otherUser bool) string {
	base := os.TempDir()
	if !otherUser {
		return base
	}
	for dir := base; ; dir = filepath.Dir(dir) {
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm()&0o001 == 0 {
			return "/tmp"
		}
		if dir == filepath.Dir(dir) {
			return base
		}
	}
}

// version returns N of /usr/lib/postgresql/N/bin.
func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// nobody returns the credential of the user nobody.
func nobody() (*syscall.Credential, error) {
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("pgtest: PostgreSQL will not run as root, and %w", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// skipOrFail skips the test for want of PostgreSQL, or fails it for that
// where CI is set, and fails it for any other error.
func skipOrFail(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrNotInstalled) && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	t.Fatal(err)
}

// Shared is one server shared by the tests of a package, started by the
// first test that asks for it. Its zero value is ready to use; TestMain
// closes it after the tests.
type Shared struct {
	once sync.Once
	srv  *Server
	err  error
}

// Server returns the shared server, starting it at the first call. Where
// PostgreSQL is missing it skips the test, or fails it if CI is set.
func (sh *Shared) Server(t testing.TB) *Server {
	t.Helper()
	sh.once.Do(func() { sh.srv, sh.err = Start() })
	if sh.err != nil {
		skipOrFail(t, sh.err)
	}
	return sh.srv
}

// Close stops the shared server, if it was started, and removes its files.
func (sh *Shared) Close() {
	sh.once.Do(func() { sh.err = errors.New("pgtest: closed") })
	if sh.srv != nil {
		sh.srv.Close()
	}
}
