package jobs

import "time"

// Slot returns the schedule slot of a run fired at t, for a job that runs
// every period: t rounded to the nearest multiple of every (counted from
// the zero time, so in UTC: midnights for a day, Mondays for a week, the
// hour for an hour), halfway values rounding up. Hosts whose clocks are
// early or late by less than every/2 fire into the same slot. every <= 0
// returns t unchanged, in UTC, which Run does not refuse: keep every
// positive.
func Slot(t time.Time, every time.Duration) time.Time {
	return t.Round(every).UTC()
}
