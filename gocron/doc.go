// Package dlockgocron runs the jobs of several gocron v2 schedulers
// (github.com/go-co-op/gocron/v2) once across hosts, with dlock.
//
//	runner, err := jobs.New(dlockClient)
//	if err != nil {
//		return err
//	}
//	locker, err := dlockgocron.NewLocker(runner, time.Minute)
//	if err != nil {
//		return err
//	}
//	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
//
// or, to run every job on one elected scheduler:
//
//	seat, err := election.New(dlockClient, "scheduler")
//	if err != nil {
//		return err
//	}
//	elector := dlockgocron.NewElector(seat, hostname)
//	defer elector.Close()
//	s, err := gocron.NewScheduler(gocron.WithDistributedElector(elector))
//
// # Locker
//
// gocron's lockers usually take a lock named after the job, run it, and
// delete the lock: a scheduler whose clock is a little late then finds the
// lock free and runs the job again. Locker keys each run by its schedule
// slot (package jobs), and Unlock marks the slot done instead of freeing
// it, so every other scheduler skips the slot, however late it fires
// within the period by its clock. The period is the Locker's: use one
// Locker per period, per job with gocron.WithDistributedJobLocker if
// periods differ.
//
// # Elector
//
// Elector campaigns in the background (package election), and IsLeader
// answers from what it knows locally, without a round trip: a scheduler
// that loses the leadership stops running jobs the moment its lease is
// lost, and another one takes over when it runs out (or at once after
// Close).
//
// The module is separate from dlock's, so that dlock does not depend on
// gocron.
package dlockgocron
