package jobs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/jobs"
)

func at(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestSlot(t *testing.T) {
	t.Parallel()
	paris := time.FixedZone("CET", 3600)
	for _, c := range []struct {
		t     time.Time
		every time.Duration
		want  string
	}{
		{at(t, "2026-11-21T21:00:00Z"), time.Hour, "2026-11-21T21:00:00Z"},
		{at(t, "2026-11-21T21:00:03Z"), time.Hour, "2026-11-21T21:00:00Z"},      // a slow scheduler
		{at(t, "2026-11-21T21:33:00Z"), time.Hour, "2026-11-21T21:00:00Z"},      // by hand, a late boot, a retry
		{at(t, "2026-11-21T21:59:00Z"), time.Hour, "2026-11-21T21:00:00Z"},      // late in the period: still its own
		{at(t, "2026-11-21T21:59:58.9Z"), time.Hour, "2026-11-21T21:00:00Z"},    // over a second early: this period
		{at(t, "2026-11-21T21:59:59Z"), time.Hour, "2026-11-21T22:00:00Z"},      // a second early: the next one
		{at(t, "2026-11-21T21:59:59.8Z"), time.Hour, "2026-11-21T22:00:00Z"},    // a clock a little fast
		{at(t, "2026-11-21T22:00:00Z"), time.Hour, "2026-11-21T22:00:00Z"},      // the next run on time
		{at(t, "2026-11-21T23:59:00Z"), 24 * time.Hour, "2026-11-21T00:00:00Z"}, // a day: from midnight UTC
		{at(t, "2026-11-21T23:59:59.5Z"), 24 * time.Hour, "2026-11-22T00:00:00Z"},
		{at(t, "2026-11-21T12:00:01Z").In(paris), 24 * time.Hour, "2026-11-21T00:00:00Z"}, // in UTC, whatever the zone
		{at(t, "2026-11-21T10:00:00Z"), 7 * 24 * time.Hour, "2026-11-16T00:00:00Z"},       // weeks start on Mondays
		{at(t, "2026-11-21T03:00:00.4Z"), time.Second, "2026-11-21T03:00:00Z"},
		{at(t, "2026-11-21T03:00:00.989Z"), time.Second, "2026-11-21T03:00:00Z"}, // a second: 10ms early at most
		{at(t, "2026-11-21T03:00:00.99Z"), time.Second, "2026-11-21T03:00:01Z"},
		{at(t, "2026-11-21T03:00:00.4Z"), 0, "0001-01-01T00:00:00Z"}, // no period: the zero time, which Run refuses
		{at(t, "2026-11-21T03:00:00.4Z"), -time.Hour, "0001-01-01T00:00:00Z"},
	} {
		if got := jobs.Slot(c.t, c.every).Format(time.RFC3339Nano); got != c.want {
			t.Errorf("Slot(%v, %v) = %s, want %s", c.t, c.every, got, c.want)
		}
	}
}

// Runs fired anywhere in a period, from a moment before its start to a
// moment before the next one's, all get its slot.
func TestSlotIsThePeriodFiredIn(t *testing.T) {
	t.Parallel()
	for _, every := range []time.Duration{time.Second, 10 * time.Minute, time.Hour, 24 * time.Hour} {
		start := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
		early := min(time.Second, every/100)
		for _, offset := range []time.Duration{-early, -early / 2, 0, 1, every / 3, every / 2, every - early - 1} {
			if got := jobs.Slot(start.Add(offset), every); !got.Equal(start) {
				t.Errorf("every %v: a run fired %v after the start of the period gets slot %v, want %v", every, offset, got, start)
			}
		}
		for _, offset := range []time.Duration{-early - 1, every - early} {
			if got := jobs.Slot(start.Add(offset), every); got.Equal(start) {
				t.Errorf("every %v: a run fired %v after the start of the period gets its slot", every, offset)
			}
		}
	}
}

// Run refuses the slot of a period that is not positive, and runs nothing.
func TestRunRefusesSlotOfNoPeriod(t *testing.T) {
	t.Parallel()
	runner := host(t, "a")
	for _, every := range []time.Duration{0, -time.Hour} {
		ran := false
		outcome, err := runner.Run(t.Context(), testenv.NewKey(t), jobs.Slot(time.Now(), every), func(context.Context) error {
			ran = true
			return nil
		})
		if outcome != 0 || !errors.Is(err, jobs.ErrInvalid) || ran {
			t.Errorf("Run in Slot(now, %v) = %v, %v (ran: %v); want ErrInvalid, not run", every, outcome, err, ran)
		}
	}
}
