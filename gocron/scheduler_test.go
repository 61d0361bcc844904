package dlockgocron_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/jonboulle/clockwork"

	"github.com/dlock-go/dlock/jobs"
)

// host is one scheduler of a test, with a fake clock of its own, skewed
// from the test's true time.
type host struct {
	name   string
	skew   time.Duration
	clock  *clockwork.FakeClock
	sched  gocron.Scheduler
	events chan string // "ran" or "skipped", once per firing
	ran    func()      // if not nil, called at the end of each run
}

// Three hosts: one whose clock is early, one on time, one late, by less
// than half the period (a minute).
var skews = []time.Duration{3 * time.Second, 0, -2 * time.Second}

const every = time.Minute

// trueStart is the true time at which a test starts: mid-slot.
var trueStart = time.Date(2026, 11, 21, 3, 0, 20, 0, time.UTC)

// ledger counts the runs of each slot, on every host.
type ledger struct {
	mu   sync.Mutex
	runs map[time.Time][]string
}

func (l *ledger) ran(h *host) {
	l.mu.Lock()
	defer l.mu.Unlock()
	slot := jobs.Slot(h.clock.Now(), every)
	l.runs[slot] = append(l.runs[slot], h.name)
}

// startHosts starts a scheduler per skew, with the options that opts
// returns for it, each running the job named job on every minute.
func startHosts(t *testing.T, job string, runs *ledger, opts func(h *host) []gocron.SchedulerOption) []*host {
	t.Helper()
	var hosts []*host
	for i, skew := range skews {
		h := &host{
			name: fmt.Sprint("host-", i), skew: skew,
			clock:  clockwork.NewFakeClockAt(trueStart.Add(skew)),
			events: make(chan string, 10),
		}
		s, err := gocron.NewScheduler(append([]gocron.SchedulerOption{gocron.WithClock(h.clock)}, opts(h)...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Shutdown() })
		_, err = s.NewJob(gocron.CronJob("* * * * *", false), gocron.NewTask(func() {
			runs.ran(h)
			if h.ran != nil {
				h.ran()
			}
		}), gocron.WithName(job))
		if err != nil {
			t.Fatal(err)
		}
		s.Start()
		h.sched = s
		hosts = append(hosts, h)
	}
	return hosts
}

// fire drives the true time through slots minutes: in each, every host's
// cron fires when its own clock reaches the minute, the early one first,
// and the test waits until that firing is over before the next one.
// between, if not nil, runs after each slot.
func fire(t *testing.T, hosts []*host, slots int, between func(slot int)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second) // only ends a hung test
	defer cancel()
	order := slices.Clone(hosts)
	slices.SortFunc(order, func(a, b *host) int { return int(b.skew - a.skew) }) // early clocks fire first
	now := trueStart
	boundary := trueStart.Truncate(every).Add(every)
	for slot := range slots {
		for _, h := range order {
			at := boundary.Add(-h.skew) // the true time at which h's clock reads the minute
			for _, other := range hosts {
				if err := other.clock.BlockUntilContext(ctx, 1); err != nil { // its next run is scheduled
					t.Fatalf("slot %d, firing %s: %s has no timer: %v", slot, h.name, other.name, err)
				}
				other.clock.Advance(at.Sub(now))
			}
			now = at
			select {
			case <-h.events:
			case <-ctx.Done():
				t.Fatalf("slot %d: %s did not fire", slot, h.name)
			}
		}
		if between != nil {
			between(slot)
		}
		boundary = boundary.Add(every)
	}
}

// check fails the test unless each of the slots ran once.
func (l *ledger) check(t *testing.T, slots int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	first := trueStart.Truncate(every).Add(every)
	for i := range slots {
		slot := first.Add(time.Duration(i) * every)
		if runs := l.runs[slot]; len(runs) != 1 {
			t.Errorf("slot %s ran on %v, want once", slot.Format(time.TimeOnly), runs)
		}
	}
	if len(l.runs) != slots {
		t.Errorf("runs in %d slots, want %d", len(l.runs), slots)
	}
}
