package door_test

import (
	"testing"

	"github.com/dlock-go/dlock/internal/door"
	"github.com/dlock-go/dlock/observe"
)

// told records the package events it is told.
type told struct{ events []observe.PackageEvent }

func (t *told) Observe(observe.Event)                 {}
func (t *told) ObservePackage(e observe.PackageEvent) { t.events = append(t.events, e) }

// Join keeps the PackageObservers, in order, and is nil without one, so
// that a package can skip building its events.
func TestJoin(t *testing.T) {
	t.Parallel()
	plain := observe.ObserverFunc(func(observe.Event) {})
	if got := door.Join(nil); got != nil {
		t.Errorf("Join(nil) = %v, want nil", got)
	}
	if got := door.Join([]observe.Observer{plain}); got != nil {
		t.Errorf("Join of an Observer that is no PackageObserver = %v, want nil", got)
	}
	one := &told{}
	if got := door.Join([]observe.Observer{plain, one}); got != observe.PackageObserver(one) {
		t.Errorf("Join of one PackageObserver = %v, want it", got)
	}
	two := &told{}
	both := door.Join([]observe.Observer{one, plain, two})
	e := observe.PackageEvent{Package: observe.PackageJobs, Op: observe.OpRun, Outcome: observe.OutcomeRan, Name: "report"}
	both.ObservePackage(e)
	both.Observe(observe.Event{Type: observe.EventObtain})
	for i, o := range []*told{one, two} {
		if len(o.events) != 1 || o.events[0] != e {
			t.Errorf("observer %d told %v, want %v", i, o.events, e)
		}
	}
}
