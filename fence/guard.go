package fence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/dlock-go/dlock/observe"
)

// Guard runs fn in a transaction of db that first records fence f for
// resource, and commits it if fn returns nil. If a fence higher than f is
// already recorded for resource, Guard returns a *StaleError (matching
// ErrStale) without calling fn: a holder that took the lock later has
// written. An equal fence passes, so that one holder may write again with
// its own fence. A fence of 0, which Lock.Fence returns to a holder that
// lost its lock before it asked for its fence, is refused as stale at once.
//
// Writers of one resource serialize on its row of the table of fences,
// from the statement that records the fence until the transaction ends:
// a writer with a lower fence that comes while a higher one's transaction
// is open waits for it, then is refused. Once a fence is committed, no
// transaction of Guard with a lower fence commits for that resource.
//
// fn must do its work through tx: a statement on db runs outside the
// transaction, unguarded (and, with a pool of one connection, waits for
// ever). If fn returns an error, or panics, Guard rolls the transaction back,
// the fence with it, and returns fn's error as is (or panics on). fn must
// neither commit nor roll back tx. If the commit fails, Guard returns its
// error: the outcome is then unknown, as with any commit whose answer is
// lost. If ctx ends before the commit, database/sql rolls the transaction
// back and Guard returns an error matching ctx's.
//
// The table of fences must exist (see CreateTable). Guard begins the
// transaction with the database's default isolation level; where that is
// REPEATABLE READ or SERIALIZABLE, PostgreSQL refuses a writer that waited
// for a concurrent one with a serialization error (SQLSTATE 40001), which
// Guard returns; under PostgreSQL's default, READ COMMITTED, the writer
// compares its fence with the committed one instead. SQLite returns
// SQLITE_BUSY ("database is locked") to a writer that finds another's
// transaction open for longer than the connection's busy timeout, which
// Guard returns too (see the package doc).
//
// resource must not be empty, f must be positive, fn and db must not be
// nil, and opts must be valid; Guard returns an error otherwise.
func Guard(ctx context.Context, db *sql.DB, resource string, f int64, fn func(tx *sql.Tx) error, opts ...Option) (err error) {
	if err := checkGuard(db, resource, f, fn); err != nil {
		return err
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return err
	}
	fnFailed := false
	if cfg.observer != nil {
		defer func(start time.Time) { cfg.tell(observe.OpGuard, resource, start, err, fnFailed) }(time.Now())
	}
	d, err := cfg.dialectOf(ctx, db)
	if err != nil {
		return err
	}
	if d == MySQL && len(resource) > maxMySQLResource {
		return fmt.Errorf("fence: resource of %d bytes: MySQL's table holds at most %d", len(resource), maxMySQLResource)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("fence: begin a transaction for %q: %w", resource, err)
	}
	done := false
	defer func() {
		if !done { // fn panicked
			_ = tx.Rollback()
		}
	}()
	got, err := record(ctx, tx, d, cfg.table, resource, f)
	if err != nil {
		done = true
		return rollback(tx, fmt.Errorf("fence: record fence %d for %q in %s: %w", f, resource, cfg.table, err))
	}
	if got > f {
		done = true
		return rollback(tx, &StaleError{Resource: resource, Fence: f, Recorded: got})
	}
	err = fn(tx)
	done = true
	if err != nil {
		fnFailed = true
		return rollback(tx, err)
	}
	if err := tx.Commit(); err != nil {
		if errors.Is(err, sql.ErrTxDone) && ctx.Err() != nil {
			// database/sql rolled tx back when ctx ended
			err = ctx.Err()
		}
		return fmt.Errorf("fence: commit the write of %q with fence %d: %w", resource, f, err)
	}
	return nil
}

// rollback rolls tx back and returns err, joined with the rollback's own
// error if it failed for another reason than tx being over already (as it
// is once ctx has ended).
func rollback(tx *sql.Tx, err error) error {
	if rerr := tx.Rollback(); rerr != nil && !errors.Is(rerr, sql.ErrTxDone) {
		return errors.Join(err, fmt.Errorf("fence: roll back: %w", rerr))
	}
	return err
}

// checkGuard checks Guard's arguments.
func checkGuard(db *sql.DB, resource string, f int64, fn func(*sql.Tx) error) error {
	switch {
	case db == nil:
		return errors.New("fence: nil *sql.DB")
	case resource == "":
		return errors.New("fence: empty resource")
	case f == 0:
		return &StaleError{Resource: resource}
	case f < 0:
		return fmt.Errorf("fence: fence %d for %q: want a positive fence, as a lock's Fence is", f, resource)
	case fn == nil:
		return errors.New("fence: nil function")
	}
	return nil
}

// CreateTable creates the table of fences in db unless it exists. Its DDL,
// for the default table name:
//
//	-- PostgreSQL
//	CREATE TABLE IF NOT EXISTS dlock_fences (resource TEXT PRIMARY KEY, fence BIGINT NOT NULL)
//	-- SQLite
//	CREATE TABLE IF NOT EXISTS dlock_fences (resource TEXT NOT NULL PRIMARY KEY, fence INTEGER NOT NULL)
//	-- MySQL
//	CREATE TABLE IF NOT EXISTS dlock_fences (resource VARCHAR(255) NOT NULL PRIMARY KEY, fence BIGINT NOT NULL)
//
// A table made otherwise (by a migration tool) works as long as resource
// is its primary key (or has a unique index) and fence holds 64-bit
// integers. A row is one resource's highest fence; Guard never deletes
// rows. db must not be nil and opts must be valid.
func CreateTable(ctx context.Context, db *sql.DB, opts ...Option) error {
	if db == nil {
		return errors.New("fence: nil *sql.DB")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return err
	}
	d, err := cfg.dialectOf(ctx, db)
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, createStatement(d, cfg.table)); err != nil {
		return fmt.Errorf("fence: create table %s: %w", cfg.table, err)
	}
	return nil
}

// dialectOf returns the dialect WithDialect named, or db's.
func (c config) dialectOf(ctx context.Context, db *sql.DB) (Dialect, error) {
	if c.dialect != "" {
		return c.dialect, nil
	}
	return detectDialect(ctx, db)
}
