package owner

import (
	"testing"
	"testing/synctest"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
