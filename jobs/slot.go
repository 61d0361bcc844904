package jobs

import "time"

// Slot returns the schedule slot of a run fired at t, for a job that runs
// every period: the start of the period that t falls in, counted from the
// zero time in UTC (so midnights for a day, Mondays for a week, the hour
// for an hour), in UTC.
//
// Cron and other schedulers fire by the host's own clock, so the period a
// run was fired in is what hosts agree on, however early or late their
// clocks are: an hourly job fired at 21:00:00, at 21:00:03 by a slow
// scheduler, at 21:33 by hand or by a host that booted late, or at 21:59,
// all belong to the slot of 21:00, and the run fired at 22:00 to the slot
// of 22:00.
//
// A run fired a moment before the start of a period belongs to that
// period: one fired at most min(1s, every/100) early, as a scheduler's
// timer on a clock slewed by NTP may fire. So an hourly job fired at
// 21:59:59.8 (or at 21:59:59 exactly) belongs to 22:00, and one fired at
// 21:59:58.9 to 21:00.
//
// A period that is not positive has no slots: Slot returns the zero time,
// which Run and Begin refuse with an error wrapping ErrInvalid.
func Slot(t time.Time, every time.Duration) time.Time {
	if every <= 0 {
		return time.Time{}
	}
	return t.Add(earlyTolerance(every)).Truncate(every).UTC()
}

// earlyTolerance is how early a run may fire and still belong to the next
// period: a hundredth of the period, at most a second.
func earlyTolerance(every time.Duration) time.Duration {
	return min(time.Second, every/100)
}
