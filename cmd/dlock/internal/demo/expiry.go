package demo

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/fence"
	_ "modernc.org/sqlite" // registers "sqlite": a database in a file, no C toolchain
)

// A holder that stops longer than its lock lives (a GC pause, a
// slow call): the lock expires, another holder takes it, and the first one
// comes back not knowing. Its Release must not delete the new holder's lock,
// and the resource must refuse its late write, which fencing tokens allow:
// here an SQLite database in a temporary file, written through fence.Guard.
const (
	pauseTTL   = 100 * time.Millisecond
	pauseFor   = 200 * time.Millisecond // twice the ttl
	pauseTTLB  = 10 * time.Second       // the second holder's ttl
	pauseWaitB = 2 * time.Second        // the longest the second holder waits
)

func expiredHolder(ctx context.Context, d *env) result {
	key := d.key("report:monthly")
	a, err := d.locker.TryObtain(ctx, key, pauseTTL)
	if err != nil {
		return failed(err)
	}
	fenceA := a.Fence()                          // A starts its work with its fence
	if err := sleep(ctx, pauseFor); err != nil { // A pauses
		return failed(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, pauseWaitB)
	defer cancel()
	b, err := d.locker.Obtain(waitCtx, key, pauseTTLB)
	if err != nil {
		return failed(fmt.Errorf("holder B could not take the lock %v after A took it for %v: %w", pauseFor, pauseTTL, err))
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = b.Release(ctx) // or it expires in pauseTTLB
	}()

	db, cleanup, err := openReports(ctx)
	if err != nil {
		return failed(err)
	}
	defer cleanup()
	bWrote, err := saveReport(ctx, db, key, b.Fence(), "B's report")
	if err != nil {
		return failed(err)
	}
	aWrote, err := saveReport(ctx, db, key, fenceA, "A's report") // A is back and carries on
	if err != nil {
		return failed(err)
	}
	var stored string
	if err := db.QueryRowContext(ctx, "SELECT body FROM reports WHERE id = 1").Scan(&stored); err != nil {
		return failed(fmt.Errorf("read the report: %w", err))
	}
	aReleased := a.Release(ctx)
	bTTL, err := b.TTL(ctx) // ErrNotHeld here is a broken invariant, checked below
	if err != nil && !errors.Is(err, dlock.ErrNotHeld) {
		return failed(fmt.Errorf("holder B's lock after A's release: %w", err))
	}
	holder, err := d.locker.Inspect(ctx, key)
	if err != nil {
		return failed(err)
	}

	happened := fmt.Sprintf("A paused %v, past its %v ttl; B took over\nA's release: %s; A's late write: %s\n(by SQLite through fence.Guard); stored: %s",
		pauseFor, pauseTTL, releaseOutcome(aReleased), writeOutcome(aWrote), stored)
	var problems []string
	if !errors.Is(aReleased, dlock.ErrNotHeld) {
		problems = append(problems, fmt.Sprintf("A's release returned %v, want ErrNotHeld", aReleased))
	}
	if heldByB := holder.Fingerprint == b.Fingerprint(); bTTL <= 0 || !heldByB {
		problems = append(problems, fmt.Sprintf("B's lock was touched (ttl %v, held by B: %t)", bTTL, heldByB))
	}
	if fenceA == 0 || fenceA >= b.Fence() || aWrote || !bWrote || stored != "B's report" {
		problems = append(problems, fmt.Sprintf("fence of A %d not below B's %d, or A's write kept (stored: %s)", fenceA, b.Fence(), stored))
	}
	return verdict(happened, "B's lock intact, fence A < B", problems)
}

// openReports opens an SQLite database in a new temporary directory, with
// the table of fences and a table of reports; cleanup closes and removes
// it.
func openReports(ctx context.Context) (db *sql.DB, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "dlock-demo")
	if err != nil {
		return nil, nil, err
	}
	db, err = sql.Open("sqlite", "file:"+filepath.Join(dir, "reports.db")+"?_pragma=busy_timeout(5000)")
	if err == nil {
		err = fence.CreateTable(ctx, db)
	}
	if err == nil {
		_, err = db.ExecContext(ctx, "CREATE TABLE reports (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
	}
	cleanup = func() {
		if db != nil {
			_ = db.Close()
		}
		_ = os.RemoveAll(dir) // a file in the temporary directory, at worst
	}
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("the reports' database: %w", err)
	}
	return db, cleanup, nil
}

// saveReport writes the report, guarded by fence f of the lock on key, and
// reports whether the database took it.
func saveReport(ctx context.Context, db *sql.DB, key string, f int64, body string) (bool, error) {
	err := fence.Guard(ctx, db, key, f, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT OR REPLACE INTO reports (id, body) VALUES (1, ?)", body)
		return err
	})
	if errors.Is(err, fence.ErrStale) {
		return false, nil
	}
	return err == nil, err
}

func releaseOutcome(err error) string {
	switch {
	case err == nil:
		return "deleted the key"
	case errors.Is(err, dlock.ErrNotHeld):
		return "not held"
	}
	return err.Error()
}

func writeOutcome(accepted bool) string {
	if accepted {
		return "accepted"
	}
	return "refused"
}
