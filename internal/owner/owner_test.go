package owner

import (
	"testing"
	"testing/synctest"

	"github.com/dlock-go/dlock/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Close stops new goroutines at once and closes Closing; Wait waits for
// those already running, which see Closing.
func TestCloseAndWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New()
		stopped := false
		if !g.Go(func() {
			<-g.Closing()
			stopped = true
		}) {
			t.Fatal("Go on an open group refused")
		}
		if g.Closed() {
			t.Fatal("Closed before Close")
		}
		if !g.Close() || g.Close() {
			t.Fatal("Close: want true the first time only")
		}
		if g.Go(func() { t.Error("ran after Close") }) || g.Add(1) {
			t.Fatal("Go or Add after Close accepted")
		}
		g.Wait()
		if !stopped || !g.Closed() {
			t.Errorf("after Wait: stopped %v, Closed %v; want both", stopped, g.Closed())
		}
	})
}

// Await returns fn's result when it comes first; when done comes first it
// returns unanswered, fn goes on and Wait waits for it; on a closed group
// fn does not run.
func TestAwait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New()
		never := make(chan struct{})
		if v, answered, started := Await(g, never, func() int { return 7 }); v != 7 || !answered || !started {
			t.Errorf("Await of a quick fn = %d, %v, %v; want 7, answered", v, answered, started)
		}

		done, release := make(chan struct{}), make(chan struct{})
		finished := false
		close(done)
		v, answered, started := Await(g, done, func() int {
			<-release
			finished = true
			return 8
		})
		if v != 0 || answered || !started {
			t.Errorf("Await past done = %d, %v, %v; want 0, not answered, started", v, answered, started)
		}
		close(release)
		g.Close()
		g.Wait()
		if !finished {
			t.Error("Wait returned before the unanswered fn finished")
		}
		if _, answered, started := Await(g, never, func() int { t.Error("ran on a closed group"); return 0 }); answered || started {
			t.Errorf("Await on a closed group = %v, %v; want neither", answered, started)
		}
	})
}
