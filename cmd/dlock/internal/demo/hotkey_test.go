package demo

import (
	"strings"
	"testing"
)

// TestDemoHotKey runs the case of a hot key that 50 requests miss: one
// load runs, and every request gets its value.
func TestDemoHotKey(t *testing.T) {
	t.Parallel()
	for name, rdb := range demoBackends(t) {
		r := hotKeyMiss(t.Context(), testDemo(t, rdb))
		if !r.ok || r.err != nil || !strings.Contains(r.happened, "load takes 200ms: 1 load; all served within ") {
			t.Errorf("%s: hot key: %q, %q, error %v", name, r.happened, r.invariant, r.err)
		}
		t.Logf("%s: %s", name, strings.ReplaceAll(r.happened, "\n", " "))
	}
}
