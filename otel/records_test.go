package dlockotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/election"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/jobs"
)

// Records count in dlock.records only, and locks kept after the work are
// released: successful and failed jobs, ReleaseAfter, WithMinHold and an
// election leave no lock held and none lost. A lock taken away from its
// holder is lost.
func TestRecordsAndKeptLocks(t *testing.T) {
	t.Parallel()
	tm := setup(t)
	open := &lockenv.Holds{}
	locker := dlock.New(tm.srv.Client(), dlock.WithObserver(tm.observe), dlock.WithObserver(open))
	t.Cleanup(func() { locker.Close() })
	ctx := context.Background()
	const keep = 300 * time.Millisecond

	runner, err := jobs.New(locker, jobs.WithRetention(keep), jobs.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Truncate(time.Minute)
	if out, err := runner.Run(ctx, "report", slot, func(context.Context) error { return nil }); out != jobs.Ran || err != nil {
		t.Fatalf("run: %v, %v", out, err)
	}
	failed := errors.New("the job failed")
	if out, err := runner.Run(ctx, "flaky", slot, func(context.Context) error { return failed }); out != jobs.RanAndFailed || !errors.Is(err, failed) {
		t.Fatalf("failed run: %v, %v", out, err)
	}
	kept, err := locker.TryObtain(ctx, "kept", time.Second, dlock.WithAutoRenew(true))
	if err != nil {
		t.Fatal(err)
	}
	if err := kept.ReleaseAfter(ctx, keep); err != nil {
		t.Fatal(err)
	}
	if err := locker.Do(ctx, "cron", time.Second, func(context.Context) error { return nil }, dlock.WithMinHold(keep)); err != nil {
		t.Fatal(err)
	}
	seat, err := election.New(locker, "leader", election.WithTTL(keep))
	if err != nil {
		t.Fatal(err)
	}
	watch, stop := context.WithCancel(ctx)
	leaders := seat.Observe(watch)
	next(t, leaders) // the empty seat; the observer takes the vacancy note
	lead, err := seat.Campaign(ctx, "host-a")
	if err != nil {
		t.Fatal(err)
	}
	if err := lead.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	stop()
	for range leaders {
	}
	eventually(t, 10*time.Second, "every hold's end told", open.Ended)
	eventually(t, 10*time.Second, "every key expired", func() bool { return testenv.OnlyMarkersLeft(ctx, tm.srv.Client()) })

	if n := tm.sum(t, "dlock.lost"); n != 0 {
		t.Errorf("%d locks lost, want none", n)
	}
	if n := tm.sum(t, "dlock.locks.held"); n != 0 {
		t.Errorf("%d locks held, want none", n)
	}
	// Two records a run: its attempt, and its done or failed record.
	if n := tm.sum(t, "dlock.records", attribute.String("dlock.result", "obtained")); n < 4 {
		t.Errorf("%d records obtained, want at least 4", n)
	}
	// The runs' leases, the kept locks and the leader's seat are locks.
	if n := tm.count(t, "dlock.hold.duration"); n != 5 {
		t.Errorf("%d holds of locks, want 5", n)
	}

	taken, err := locker.TryObtain(ctx, "taken", 300*time.Millisecond, dlock.WithAutoRenew(true))
	if err != nil {
		t.Fatal(err)
	}
	tm.srv.Client().Del(ctx, "taken")
	<-taken.Done()
	eventually(t, 10*time.Second, "the loss told", open.Ended)
	if n := tm.sum(t, "dlock.lost", attribute.String("dlock.lost.reason", "not_held")); n != 1 {
		t.Errorf("%d locks lost not held, want 1", n)
	}
}

// The span of a record's call says it is one.
func TestRecordSpan(t *testing.T) {
	t.Parallel()
	tm := setup(t)
	if _, err := tm.locker.TryObtain(context.Background(), "note", time.Minute, dlock.AsRecord()); err != nil {
		t.Fatal(err)
	}
	if v := attr(tm.only(t, "dlock obtain"), "dlock.record"); !v.AsBool() {
		t.Errorf("dlock.record of a record's obtain span: %v, want true", v.String())
	}
	if _, err := tm.locker.TryObtain(context.Background(), "lock", time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, s := range tm.ended("dlock obtain") {
		if v := attr(s, "dlock.record"); attr(s, "dlock.key").AsString() == "lock" && v.Type() != attribute.EMPTY {
			t.Errorf("a lock's obtain span has dlock.record %v", v.String())
		}
	}
}

// next returns the next leader that leaders tells, within 10 seconds.
func next(t *testing.T, leaders <-chan election.Leader) election.Leader {
	t.Helper()
	select {
	case l := <-leaders:
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no word from Observe within 10s")
	}
	return election.Leader{}
}
