package demo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dlock-go/dlock"
)

// A job that runs longer than its lock's ttl, because nobody knows in
// advance how long a job takes and a short ttl frees the lock soon after a
// crash. Client.Do renews the lock every third of its ttl while the job
// runs, so it stays the job's, and worker B, trying all the while, never
// gets in. The contrast: the same job under a lock that is not renewed,
// which B takes while the job still runs.
const (
	longTTL   = 300 * time.Millisecond
	longJob   = time.Second           // three ttls and more
	longProbe = 20 * time.Millisecond // how often B tries to take the lock
)

// A probe is worker B trying to take the lock while the job runs.
type probe struct {
	tries int
	got   time.Duration // how long after the job started B got the lock; 0: never
	err   error
}

func longRenewedJob(ctx context.Context, d *env) result {
	key := d.key("job:long")
	var b probe
	err := d.locker.Do(ctx, key, longTTL, func(work context.Context) error {
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			b = d.probe(ctx, key, time.Now(), stop)
		}()
		err := sleep(work, longJob) // the job; work is cancelled if the lock is lost
		close(stop)
		<-done
		return err
	})
	var problems []string
	switch {
	case errors.Is(err, dlock.ErrLockLost):
		problems = append(problems, "the job lost its lock: "+errText(err))
	case err != nil:
		return failed(err)
	case b.err != nil:
		return failed(b.err)
	}
	happened := fmt.Sprintf("a %v job, its lock's ttl %v, renewed by Do;\nB tried %d times meanwhile: %s",
		longJob, longTTL, b.tries, b.outcome())
	if b.got > 0 {
		problems = append(problems, fmt.Sprintf("B took the lock %v into the job", b.got.Round(time.Millisecond)))
	}
	if b.tries == 0 {
		problems = append(problems, "B never tried")
	}
	return verdict(happened, "the job kept its lock", problems)
}

// longUnrenewedJob is the contrast: the lock is not renewed, and B takes it
// while the job runs. The job ends there. It checks nothing.
func longUnrenewedJob(ctx context.Context, d *env) result {
	key := d.key("job:long-unrenewed")
	lock, err := d.locker.TryObtain(ctx, key, longTTL)
	if err != nil {
		return failed(err)
	}
	stop := make(chan struct{})
	timer := time.AfterFunc(longJob, func() { close(stop) }) // or when B got in
	defer timer.Stop()
	b := d.probe(ctx, key, time.Now(), stop)
	if b.err != nil {
		return failed(b.err)
	}
	_ = lock.Release(ctx) // ErrNotHeld once B got in
	return result{
		happened:  "same, lock not renewed: " + b.outcome(),
		invariant: "contrast: two holders",
		ok:        true,
	}
}

// probe is worker B: it tries to take the lock on key every longProbe until
// stop is closed or it got the lock, which it then releases.
func (d *env) probe(ctx context.Context, key string, start time.Time, stop <-chan struct{}) (b probe) {
	ticker := time.NewTicker(longProbe)
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			return b
		case <-ctx.Done():
			b.err = context.Cause(ctx)
			return b
		case <-ticker.C:
		}
		b.tries++
		lock, err := d.locker.TryObtain(ctx, key, longTTL)
		switch {
		case errors.Is(err, dlock.ErrNotObtained):
			continue
		case err != nil:
			b.err = err
			return b
		}
		b.got = time.Since(start)
		b.err = lock.Release(ctx)
		return b
	}
}

func (b probe) outcome() string {
	if b.got == 0 {
		return "never got in"
	}
	return fmt.Sprintf("B got in %v into the job", b.got.Round(time.Millisecond))
}
