package observe_test

import (
	"testing"

	"github.com/dlock-go/dlock/observe"
)

// The names of events, results and reasons are those metrics and traces
// use as labels.
func TestEventNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ got, want string }{
		{observe.EventObtain.String(), "obtain"},
		{observe.EventNodeError.String(), "node-error"},
		{observe.EventType(0).String(), "EventType(0)"},
		{observe.ResultTimedOut.String(), "timeout"},
		{observe.ResultFailed.String(), "error"},
		{observe.ObtainResult(99).String(), "ObtainResult(99)"},
		{observe.LostNotHeld.String(), "not_held"},
		{observe.LostClosed.String(), "closed"},
		{observe.LostReason(0).String(), "LostReason(0)"},
	} {
		if tc.got != tc.want {
			t.Errorf("%q, want %q", tc.got, tc.want)
		}
	}
}
