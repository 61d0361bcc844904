package jobs_test

import (
	"testing"
	"time"

	"github.com/dlock-go/dlock/jobs"
)

func TestSlot(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	paris := time.FixedZone("CET", 3600)
	for _, c := range []struct {
		t     time.Time
		every time.Duration
		want  string
	}{
		{at("2026-11-21T03:00:00Z"), time.Hour, "2026-11-21T03:00:00Z"},
		{at("2026-11-21T02:59:59.5Z"), time.Hour, "2026-11-21T03:00:00Z"}, // a clock a little early
		{at("2026-11-21T03:00:07Z"), time.Hour, "2026-11-21T03:00:00Z"},   // a little late
		{at("2026-11-21T03:29:59Z"), time.Hour, "2026-11-21T03:00:00Z"},
		{at("2026-11-21T03:30:00Z"), time.Hour, "2026-11-21T04:00:00Z"}, // halfway rounds up
		{at("2026-11-21T23:59:00Z"), 24 * time.Hour, "2026-11-22T00:00:00Z"},
		{at("2026-11-21T12:00:01Z").In(paris), 24 * time.Hour, "2026-11-22T00:00:00Z"}, // in UTC, whatever the zone
		{at("2026-11-21T10:00:00Z"), 7 * 24 * time.Hour, "2026-11-23T00:00:00Z"},       // weeks start on Mondays
		{at("2026-11-21T03:00:00.4Z"), time.Second, "2026-11-21T03:00:00Z"},
		{at("2026-11-21T03:00:00.4Z"), 0, "2026-11-21T03:00:00.4Z"}, // no period: unchanged
	} {
		if got := jobs.Slot(c.t, c.every).Format(time.RFC3339Nano); got != c.want {
			t.Errorf("Slot(%v, %v) = %s, want %s", c.t, c.every, got, c.want)
		}
	}
}

// Clocks up to half a period apart agree on the slot.
func TestSlotSkew(t *testing.T) {
	t.Parallel()
	every := 10 * time.Minute
	fired := time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC) // the true time every cron fires
	want := jobs.Slot(fired, every)
	for skew := -every/2 + time.Second; skew < every/2; skew += 7 * time.Second {
		if got := jobs.Slot(fired.Add(skew), every); !got.Equal(want) {
			t.Errorf("a clock %v off gets slot %v, want %v", skew, got, want)
		}
	}
}
