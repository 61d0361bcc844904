package testwait

import (
	"fmt"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatalf records instead of stopping.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}

func TestUntil(t *testing.T) {
	n := 0
	Until(t, time.Second, "the third look", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Errorf("cond looked at %d times, want 3", n)
	}
	r := &recorder{TB: t}
	Until(r, 20*time.Millisecond, "never", func() bool { return r.failed != "" })
	if r.failed != "never: not within 20ms" {
		t.Errorf("the failure said %q", r.failed)
	}
}
