package jobs_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/jobs"
	"github.com/dlock-go/dlock/redistest"
)

// The fault tests below pause Redis (SIGSTOP) for testenv.ResendPause while
// a record is written, with go-redis's default options: go-redis sends the
// write again on another connection when no reply came within its
// ReadTimeout, and every copy runs once Redis answers. The first runs by
// default, the others with DLOCK_SLOW_FAULTS=1 (as the package doc says).

// holdWrite is a go-redis hook that stops the first script call on a key
// ending in suffix once armed, before it is sent, until the test lets it
// go.
type holdWrite struct {
	suffix           string
	armed            atomic.Bool
	entered, release chan struct{}
	once             sync.Once
}

func newHoldWrite(suffix string) *holdWrite {
	return &holdWrite{suffix: suffix, entered: make(chan struct{}), release: make(chan struct{})}
}

func (h *holdWrite) hold(cmds ...redis.Cmder) {
	if !h.armed.Load() {
		return
	}
	for _, cmd := range cmds {
		name := strings.ToLower(cmd.Name())
		if name != "evalsha" && name != "eval" {
			continue
		}
		for _, arg := range cmd.Args() {
			if s, ok := arg.(string); ok && strings.HasSuffix(s, h.suffix) {
				h.once.Do(func() {
					close(h.entered)
					<-h.release
				})
				return
			}
		}
	}
}

func (*holdWrite) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *holdWrite) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.hold(cmd)
		return next(ctx, cmd)
	}
}
func (h *holdWrite) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.hold(cmds...)
		return next(ctx, cmds)
	}
}

// scriptCalls returns how many scripts the server ran (INFO commandstats).
func scriptCalls(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	stats, err := rdb.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for line := range strings.SplitSeq(stats, "\n") {
		for _, cmd := range []string{"cmdstat_evalsha:calls=", "cmdstat_eval:calls="} {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), cmd); ok {
				var calls int64
				for _, c := range rest {
					if c < '0' || c > '9' {
						break
					}
					calls = calls*10 + int64(c-'0')
				}
				n += calls
			}
		}
	}
	return n
}

// pausedWrite runs a job whose record of kind (a suffix of its key:
// "/run", "/attempt/1", "/done", ...) is written while Redis is paused for
// testenv.ResendPause, by a client with go-redis's default options, and returns what
// Run returned. It checks that go-redis did send the write again. The
// write held is the first on a key with that suffix, after the job ran if
// afterJob (the done and failed records; Begin reads the done record).
func pausedWrite(t *testing.T, srv *redistest.Server, name string, slot time.Time, suffix string, afterJob bool, fn func(context.Context) error) (jobs.Outcome, error) {
	t.Helper()
	rdb := srv.Client() // go-redis's defaults
	hold := newHoldWrite(suffix)
	rdb.AddHook(hold)
	hold.armed.Store(!afterJob)
	job := func(ctx context.Context) error {
		hold.armed.Store(true)
		return fn(ctx)
	}
	locker := dlock.New(rdb)
	t.Cleanup(func() { locker.Close() })
	runner := newRunner(t, locker, jobs.WithHost("a"), jobs.WithTTL(time.Minute)) // no renewal during the pause
	type result struct {
		outcome jobs.Outcome
		err     error
	}
	done := make(chan result, 1)
	go func() {
		outcome, err := runner.Run(context.Background(), name, slot, job)
		done <- result{outcome, err}
	}()
	select {
	case <-hold.entered:
	case r := <-done:
		t.Fatalf("Run ended before it wrote %s: %v, %v", suffix, r.outcome, r.err)
	}
	admin := srv.Client()
	before := scriptCalls(t, admin)
	srv.Pause()
	close(hold.release)
	time.Sleep(testenv.ResendPause) // longer than ReadTimeout: go-redis sends the write again
	srv.Resume()
	r := <-done
	if n := scriptCalls(t, admin) - before; n < 3 { // the write, sent again, and the release of the lease
		t.Errorf("the server ran %d scripts from the pause on, want the write at least twice and the release", n)
	}
	return r.outcome, r.err
}

// The done record written while Redis is paused, and sent again by
// go-redis: Run says the job ran, without error, and another host finds
// the slot done.
func TestDoneRecordSentAgain(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	name, slot := testenv.NewKey(t), time.Date(2026, 11, 21, 21, 0, 0, 0, time.UTC)
	ran := 0
	outcome, err := pausedWrite(t, srv, name, slot, "/done", true, func(context.Context) error { ran++; return nil })
	if outcome != jobs.Ran || err != nil {
		t.Errorf("Run whose done record was sent again = %v, %v; want ran, no error", outcome, err)
	}
	checkDoneOnce(t, srv, name, slot, &ran, jobs.Succeeded)
}

// checkDoneOnce checks that another host finds the slot done and does not
// run it, and that History tells one attempt of the status want.
func checkDoneOnce(t *testing.T, srv *redistest.Server, name string, slot time.Time, ran *int, want jobs.Status) {
	t.Helper()
	other := newRunner(t, lockenv.Locker(t, srv.Client()), jobs.WithHost("b"), jobs.WithAttempts(2))
	outcome, err := other.Run(t.Context(), name, slot, func(context.Context) error { *ran++; return nil })
	if want == jobs.Succeeded && (outcome != jobs.AlreadyDone || err != nil) {
		t.Errorf("another host's Run = %v, %v; want already done", outcome, err)
	}
	if *ran != 1 && want == jobs.Succeeded {
		t.Errorf("the job ran %d times, want once", *ran)
	}
	records, err := other.History(t.Context(), name)
	if err != nil || len(records) == 0 || records[len(records)-1].Status != want || records[len(records)-1].Host != "a" {
		t.Errorf("History = %+v, %v; want attempt 1 by host a %s", records, err, want)
	}
}

// The lease of the run, and the record of its attempt, written while
// Redis is paused and sent again: the job runs once, here.
func TestRunRecordsSentAgain(t *testing.T) {
	t.Parallel()
	testenv.SlowFaults(t)
	for _, suffix := range []string{"/run", "/attempt/1"} {
		t.Run(strings.TrimPrefix(suffix, "/"), func(t *testing.T) {
			t.Parallel()
			srv := redistest.NewServer(t)
			name, slot := testenv.NewKey(t), time.Date(2026, 11, 21, 21, 0, 0, 0, time.UTC)
			ran := 0
			outcome, err := pausedWrite(t, srv, name, slot, suffix, false, func(context.Context) error { ran++; return nil })
			if outcome != jobs.Ran || err != nil {
				t.Errorf("Run whose %s record was sent again = %v, %v; want ran, no error", suffix, outcome, err)
			}
			checkDoneOnce(t, srv, name, slot, &ran, jobs.Succeeded)
		})
	}
}

// The record of a failed attempt, written while Redis is paused and sent
// again: Run reports the job's own error, and the slot has a failed
// attempt, which another host tries again (WithAttempts).
func TestFailedRecordSentAgain(t *testing.T) {
	t.Parallel()
	testenv.SlowFaults(t)
	srv := redistest.NewServer(t)
	name, slot := testenv.NewKey(t), time.Date(2026, 11, 21, 21, 0, 0, 0, time.UTC)
	failure := errorString("disk full")
	outcome, err := pausedWrite(t, srv, name, slot, "/failed/1", true, func(context.Context) error { return failure })
	if outcome != jobs.RanAndFailed || !errors.Is(err, failure) || strings.Contains(err.Error(), "record") {
		t.Errorf("Run whose failed record was sent again = %v, %v; want failed with the job's error alone", outcome, err)
	}
	ran := 1
	checkDoneOnce(t, srv, name, slot, &ran, jobs.Failed)
}

type errorString string

func (e errorString) Error() string { return string(e) }
