package jobs_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/jobs"
)

// host returns the Runner of a simulated host, on a Client of its own.
func host(t testing.TB, name string, opts ...jobs.Option) *jobs.Runner {
	t.Helper()
	return newRunner(t, lockenv.Locker(t, nil), append([]jobs.Option{jobs.WithHost(name)}, opts...)...)
}

// newRunner returns a Runner on locker, and fails the test if New fails.
func newRunner(t testing.TB, locker *dlock.Client, opts ...jobs.Option) *jobs.Runner {
	t.Helper()
	r, err := jobs.New(locker, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Three hosts fire the job by their own clocks at the start of each of
// five periods: one a moment early, one on time, one a few seconds late.
// Then a host fires it late in each period (by hand, after a late boot).
// Each slot runs once.
func TestRunOncePerSlot(t *testing.T) {
	t.Parallel()
	name := testenv.NewKey(t)
	every := time.Hour
	hosts := []*jobs.Runner{host(t, "a"), host(t, "b"), host(t, "c")}
	fired := []time.Duration{-500 * time.Millisecond, 0, 3 * time.Second} // after the period starts
	start := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		period := start.Add(time.Duration(i) * every)
		var ran atomic.Int32
		var wg sync.WaitGroup
		outcomes := make([]jobs.Outcome, len(hosts))
		for h, runner := range hosts {
			wg.Go(func() {
				slot := jobs.Slot(period.Add(fired[h]), every)
				var err error
				outcomes[h], err = runner.Run(t.Context(), name, slot, func(context.Context) error {
					ran.Add(1)
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		late := host(t, "late")
		outcome, err := late.Run(t.Context(), name, jobs.Slot(period.Add(every-2*time.Minute), every), func(context.Context) error {
			ran.Add(1)
			return nil
		})
		if err != nil || outcome != jobs.AlreadyDone {
			t.Errorf("slot %d: the late host got %v, %v; want already done", i, outcome, err)
		}
		if n := ran.Load(); n != 1 {
			t.Errorf("slot %d ran %d times (outcomes %v), want once", i, n, outcomes)
		}
	}
}

// While a host runs the slot, the others are told it runs elsewhere.
func TestRunningElsewhere(t *testing.T) {
	t.Parallel()
	name, slot := testenv.NewKey(t), time.Now()
	a, b := host(t, "a"), host(t, "b")
	started, finish := make(chan struct{}), make(chan struct{})
	done := make(chan jobs.Outcome, 1)
	go func() {
		outcome, err := a.Run(t.Context(), name, slot, func(context.Context) error {
			close(started)
			<-finish
			return nil
		})
		if err != nil {
			t.Error(err)
		}
		done <- outcome
	}()
	<-started
	if outcome, err := b.Run(t.Context(), name, slot, func(context.Context) error { return nil }); outcome != jobs.RunningElsewhere || err != nil {
		t.Errorf("Run while another host runs = %v, %v; want running elsewhere", outcome, err)
	}
	if _, err := b.Begin(t.Context(), name, slot); !errors.Is(err, jobs.ErrRunningElsewhere) {
		t.Errorf("Begin while another host runs = %v, want ErrRunningElsewhere", err)
	}
	close(finish)
	if outcome := <-done; outcome != jobs.Ran {
		t.Errorf("the running host's outcome %v, want ran", outcome)
	}
	if _, err := b.Begin(t.Context(), name, slot); !errors.Is(err, jobs.ErrAlreadyDone) {
		t.Errorf("Begin once done = %v, want ErrAlreadyDone", err)
	}
}

// A failed run is retried by another host in the same slot, up to the
// attempts allowed; without WithAttempts, it is not.
func TestAttempts(t *testing.T) {
	t.Parallel()
	failed := errors.New("disk full")
	fail := func(context.Context) error { return failed }
	succeed := func(context.Context) error { return nil }
	for _, c := range []struct {
		attempts int
		runs     []func(context.Context) error
		want     []jobs.Outcome
	}{
		{1, []func(context.Context) error{fail, succeed}, []jobs.Outcome{jobs.RanAndFailed, jobs.NoAttemptsLeft}},
		{2, []func(context.Context) error{fail, succeed, succeed}, []jobs.Outcome{jobs.RanAndFailed, jobs.Ran, jobs.AlreadyDone}},
		{3, []func(context.Context) error{fail, fail, fail, succeed}, []jobs.Outcome{jobs.RanAndFailed, jobs.RanAndFailed, jobs.RanAndFailed, jobs.NoAttemptsLeft}},
	} {
		name, slot := testenv.NewKey(t), time.Now()
		for i, fn := range c.runs {
			runner := host(t, string(rune('a'+i)), jobs.WithAttempts(c.attempts))
			outcome, err := runner.Run(t.Context(), name, slot, fn)
			if outcome != c.want[i] {
				t.Errorf("attempts %d, run %d: %v, want %v", c.attempts, i, outcome, c.want[i])
			}
			if (outcome == jobs.RanAndFailed) != errors.Is(err, failed) || outcome != jobs.RanAndFailed && err != nil {
				t.Errorf("attempts %d, run %d: error %v", c.attempts, i, err)
			}
		}
	}
}

// A panic is recorded as a failure, then goes on up.
func TestPanicIsRecorded(t *testing.T) {
	t.Parallel()
	name, slot := testenv.NewKey(t), time.Now()
	runner := host(t, "a")
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("recovered %v, want the job's panic", p)
			}
		}()
		runner.Run(t.Context(), name, slot, func(context.Context) error { panic("boom") })
	}()
	records, err := runner.History(t.Context(), name)
	if err != nil || len(records) != 1 || records[0].Status != jobs.Failed || records[0].Error != "panic: boom" {
		t.Fatalf("History after a panic = %+v, %v", records, err)
	}
	if outcome, _ := runner.Run(t.Context(), name, slot, func(context.Context) error { return nil }); outcome != jobs.NoAttemptsLeft {
		t.Errorf("Run after the panic = %v, want no attempts left", outcome)
	}
}

// A job whose lease is lost is told through its context, and fails.
func TestLostLease(t *testing.T) {
	t.Parallel()
	name, slot := testenv.NewKey(t), time.Now()
	locker := lockenv.Locker(t, nil)
	runner := newRunner(t, locker, jobs.WithTTL(300*time.Millisecond))
	outcome, err := runner.Run(t.Context(), name, slot, func(ctx context.Context) error {
		if _, err := locker.ForceRelease(ctx, "dlock:job:"+name+"@"+slot.UTC().Format(time.RFC3339Nano)+"/run"); err != nil {
			t.Error(err)
		}
		<-ctx.Done()
		if !errors.Is(context.Cause(ctx), dlock.ErrLockLost) {
			t.Errorf("the job's context ended with %v, want ErrLockLost", context.Cause(ctx))
		}
		return nil
	})
	if outcome != jobs.RanAndFailed || !errors.Is(err, dlock.ErrLockLost) {
		t.Errorf("Run that lost its lease = %v, %v; want failed with ErrLockLost", outcome, err)
	}
}

// A host that dies while it runs the job leaves an abandoned attempt; the
// next host runs the slot once the lease ran out, if attempts are left.
func TestHostDiesWhileRunning(t *testing.T) {
	t.Parallel()
	name, slot := testenv.NewKey(t), time.Now()
	dying := lockenv.Locker(t, nil)
	a, err := newRunner(t, dying, jobs.WithHost("dying"), jobs.WithTTL(300*time.Millisecond)).Begin(t.Context(), name, slot)
	if err != nil {
		t.Fatal(err)
	}
	if a.Number() != 1 {
		t.Errorf("first attempt numbered %d", a.Number())
	}
	next := host(t, "next", jobs.WithAttempts(2))
	if records, err := next.History(t.Context(), name); err != nil || len(records) != 1 || records[0].Status != jobs.Running || records[0].Host != "dying" {
		t.Errorf("History while it runs = %+v, %v", records, err)
	}
	dying.Close() // the process dies: no Finish
	<-a.Context().Done()
	var outcome jobs.Outcome
	testenv.Eventually(t, 10*time.Second, "the next host runs the slot", func() bool {
		outcome, err = next.Run(t.Context(), name, slot, func(context.Context) error { return nil })
		return outcome != jobs.RunningElsewhere
	})
	if outcome != jobs.Ran || err != nil {
		t.Fatalf("Run after the host died = %v, %v", outcome, err)
	}
	records, err := next.History(t.Context(), name)
	if err != nil || len(records) != 2 {
		t.Fatalf("History = %+v, %v", records, err)
	}
	if r := records[0]; r.Attempt != 2 || r.Status != jobs.Succeeded || r.Host != "next" || r.End.Before(r.Start) {
		t.Errorf("latest record %+v", r)
	}
	if r := records[1]; r.Attempt != 1 || r.Status != jobs.Abandoned || r.Host != "dying" || !r.End.IsZero() {
		t.Errorf("first record %+v", r)
	}
}

// History lists the latest slot first, and only the job's records.
func TestHistory(t *testing.T) {
	t.Parallel()
	name := testenv.NewKey(t)
	runner := host(t, "a")
	other := host(t, "b")
	start := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		runner.Run(t.Context(), name, start.Add(time.Duration(i)*time.Hour), func(context.Context) error {
			if i == 1 {
				return errors.New(strings.Repeat("x", 1000))
			}
			return nil
		})
		other.Run(t.Context(), name+"-other", start, func(context.Context) error { return nil })
	}
	records, err := other.History(t.Context(), name)
	if err != nil || len(records) != 3 {
		t.Fatalf("History = %+v, %v", records, err)
	}
	for i, r := range records {
		slot := start.Add(time.Duration(2-i) * time.Hour)
		want := jobs.Succeeded
		if i == 1 {
			want = jobs.Failed
		}
		if r.Job != name || !r.Slot.Equal(slot) || r.Status != want || r.Host != "a" || r.Attempt != 1 {
			t.Errorf("record %d = %+v, want slot %v %s", i, r, slot, want)
		}
	}
	if e := records[1].Error; len(e) > 300 || !strings.HasPrefix(e, "xxx") {
		t.Errorf("a long error recorded as %q, want it cut short", e)
	}
}

// Once the records expire (WithRetention), the slot runs again.
func TestRetention(t *testing.T) {
	t.Parallel()
	name, slot := testenv.NewKey(t), time.Now()
	runner := host(t, "a", jobs.WithRetention(200*time.Millisecond))
	if outcome, err := runner.Run(t.Context(), name, slot, func(context.Context) error { return nil }); outcome != jobs.Ran || err != nil {
		t.Fatalf("first Run = %v, %v", outcome, err)
	}
	testenv.Eventually(t, 10*time.Second, "the slot runs again once its records expired", func() bool {
		outcome, err := runner.Run(t.Context(), name, slot, func(context.Context) error { return nil })
		return outcome == jobs.Ran && err == nil
	})
}

// WithPeriod keeps a slot's records RetentionPeriods periods, unless
// WithRetention says otherwise.
func TestPeriodSetsTheRetention(t *testing.T) {
	t.Parallel()
	locker := lockenv.Locker(t, nil)
	for _, c := range []struct {
		opts []jobs.Option
		want time.Duration
	}{
		{[]jobs.Option{jobs.WithPeriod(time.Hour)}, jobs.RetentionPeriods * time.Hour},
		{[]jobs.Option{jobs.WithPeriod(time.Hour), jobs.WithRetention(5 * time.Hour)}, 5 * time.Hour},
		{nil, jobs.DefaultRetention},
	} {
		name := testenv.NewKey(t)
		runner := newRunner(t, locker, c.opts...)
		if _, err := runner.Run(t.Context(), name, time.Now(), func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
		var ttl time.Duration
		for info, err := range locker.Scan(t.Context(), "dlock:job:"+name+"@*/done") {
			if err != nil {
				t.Fatal(err)
			}
			ttl = info.TTL
		}
		if ttl <= c.want-time.Minute || ttl > c.want {
			t.Errorf("with %d options the done record lives %v, want about %v", len(c.opts), ttl, c.want)
		}
	}
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	locker := lockenv.Locker(t, nil)
	ctx, slot := t.Context(), time.Now()
	for what, opts := range map[string][]jobs.Option{
		"zero ttl":       {jobs.WithTTL(0)},
		"zero retention": {jobs.WithRetention(0)},
		"zero period":    {jobs.WithPeriod(0)},
		"zero attempts":  {jobs.WithAttempts(0)},
		"nil option":     {nil},
		"bad then valid": {jobs.WithTTL(0), jobs.WithTTL(time.Second)},
	} {
		if r, err := jobs.New(locker, opts...); r != nil || !errors.Is(err, jobs.ErrInvalid) {
			t.Errorf("%s: New = %v, %v; want nil, ErrInvalid", what, r, err)
		}
	}
	if r, err := jobs.New(nil); r != nil || !errors.Is(err, jobs.ErrInvalid) {
		t.Errorf("New(nil) = %v, %v; want nil, ErrInvalid", r, err)
	}

	ok := func(context.Context) error { return nil }
	valid := newRunner(t, locker)
	for what, c := range map[string]struct {
		r    *jobs.Runner
		name string
		slot time.Time
		fn   func(context.Context) error
	}{
		"not made by New": {new(jobs.Runner), "job", slot, ok},
		"empty name":      {valid, "", slot, ok},
		"long name":       {valid, strings.Repeat("j", 201), slot, ok},
		"zero slot":       {valid, "job", time.Time{}, ok},
		"year 10000":      {valid, "job", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), ok},
		"nil function":    {valid, "job", slot, nil},
	} {
		if outcome, err := c.r.Run(ctx, c.name, c.slot, c.fn); outcome != 0 || !errors.Is(err, jobs.ErrInvalid) {
			t.Errorf("%s: Run = %v, %v; want ErrInvalid", what, outcome, err)
		}
	}
	if _, err := new(jobs.Runner).History(ctx, "job"); !errors.Is(err, jobs.ErrInvalid) {
		t.Errorf("History of a Runner not made by New = %v, want ErrInvalid", err)
	}
	a, err := valid.Begin(ctx, testenv.NewKey(t), slot)
	if err != nil {
		t.Fatal(err)
	}
	if outcome, err := a.Finish(ctx, nil); outcome != jobs.Ran || err != nil {
		t.Errorf("Finish = %v, %v", outcome, err)
	}
	if _, err := a.Finish(ctx, nil); !errors.Is(err, jobs.ErrInvalid) {
		t.Errorf("a second Finish = %v, want ErrInvalid", err)
	}
}

// History tells a run whose attempt record expired before its done
// record: written at its start, the attempt record goes first.
func TestHistoryAfterTheAttemptRecordExpired(t *testing.T) {
	t.Parallel()
	name, slot := testenv.NewKey(t), time.Date(2026, 11, 21, 21, 0, 0, 0, time.UTC)
	runner := host(t, "a")
	if outcome, err := runner.Run(t.Context(), name, slot, func(context.Context) error { return nil }); outcome != jobs.Ran || err != nil {
		t.Fatalf("Run = %v, %v", outcome, err)
	}
	if n, err := testenv.Client(t).Del(t.Context(), "dlock:job:"+name+"@2026-11-21T21:00:00Z/attempt/1").Result(); n != 1 || err != nil {
		t.Fatalf("DEL of the attempt record: %d, %v", n, err)
	}
	records, err := runner.History(t.Context(), name)
	if err != nil || len(records) != 1 || records[0].Status != jobs.Succeeded || records[0].Attempt != 1 || records[0].Host != "a" {
		t.Errorf("History = %+v, %v; want the succeeded attempt", records, err)
	}
}
