package redistest

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
)

// Start starts a redis-server outside of any one test: in TestMain, to share
// one server among a package's tests and examples. Unlike [NewServer] it
// returns its error. The caller must call stop when done: it kills the
// server, closes the clients made by [Server.Client] and removes the
// server's directory.
//
// The methods of a Server from Start that would fail a test (Pause, Resume,
// Start, Restart on failure) panic instead, with the same message.
func Start(opts ...Option) (s *Server, stop func(), err error) {
	owner := &standalone{}
	s, err = newServer(owner, opts)
	if err != nil {
		owner.stop()
		return nil, nil, err
	}
	return s, owner.stop, nil
}

// standalone stands in for a test when a server lives outside of one. Only
// the methods a Server uses are implemented; the embedded nil TB is never
// called.
type standalone struct {
	testing.TB

	mu       sync.Mutex
	cleanups []func()
}

func (o *standalone) Helper() {}

func (o *standalone) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

func (o *standalone) Cleanup(f func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cleanups = append(o.cleanups, f)
}

func (o *standalone) TempDir() string {
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		o.Fatalf("redistest: %v", err)
	}
	o.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// stop runs the cleanups, last registered first, as the testing package does.
func (o *standalone) stop() {
	o.mu.Lock()
	cleanups := o.cleanups
	o.cleanups = nil
	o.mu.Unlock()
	for _, f := range slices.Backward(cleanups) {
		f()
	}
}
