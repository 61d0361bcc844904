package faults_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	_ "modernc.org/sqlite"             // registers "sqlite"

	"github.com/dlock-go/dlock/fence"
	"github.com/dlock-go/dlock/internal/testenv/pgtest"
)

// The fenced-resource checker with a real database behind the register:
// every write with a fence goes through fence.Guard to PostgreSQL or
// SQLite as well, which must accept exactly what the register accepts, and
// whose own log of committed writes must never see a fence go down.

// A database is the resource of a checker run: the table of fences, and a
// log of the committed writes, numbered in commit order.
type database struct {
	db *sql.DB
	pg bool
}

// sqliteResource opens a SQLite database in a temporary file.
func sqliteResource(t *testing.T) *database {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "checked.db")+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return newDatabase(t, db, false)
}

// postgresResource starts a PostgreSQL server of the test's own (pgtest;
// skipped where PostgreSQL is missing, unless CI is set).
func postgresResource(t *testing.T) *database {
	t.Helper()
	srv := pgtest.New(t)
	db, err := sql.Open("pgx", srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return newDatabase(t, db, true)
}

func newDatabase(t *testing.T, db *sql.DB, pg bool) *database {
	t.Helper()
	ctx := context.Background()
	if err := fence.CreateTable(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE writes (seq BIGINT PRIMARY KEY, fence BIGINT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	return &database{db: db, pg: pg}
}

// write is one guarded write with fence f; it reports whether the
// database committed it (false for ErrStale).
func (d *database) write(f int64) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	insert := "INSERT INTO writes (seq, fence) SELECT COALESCE(MAX(seq), 0) + 1, ? FROM writes"
	if d.pg {
		insert = "INSERT INTO writes (seq, fence) SELECT COALESCE(MAX(seq), 0) + 1, $1 FROM writes"
	}
	err := fence.Guard(ctx, d.db, checkKey, f, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, insert, f)
		return err
	})
	if errors.Is(err, fence.ErrStale) {
		return false, nil
	}
	return err == nil, err
}

// check fails the test if the committed writes' fences ever go down in
// commit order (a stale write committed), or if their number is not what
// the checker counted as accepted.
func (d *database) check(t *testing.T, v verdict) {
	t.Helper()
	rows, err := d.db.Query("SELECT fence FROM writes ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var fences []int64
	for rows.Next() {
		var f int64
		if err := rows.Scan(&f); err != nil {
			t.Fatal(err)
		}
		fences = append(fences, f)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(fences) {
		t.Errorf("the database committed a stale write: fences in commit order %v", fences)
	}
	if len(fences) != v.accepted {
		t.Errorf("the database committed %d writes, the checker counted %d accepted", len(fences), v.accepted)
	}
	t.Logf("the database committed %d writes, fences never going down", len(fences))
}

// A holder paused past its ttl, as in TestCheckerPausedHolder, writing to
// PostgreSQL through fence.Guard: the database refuses its late writes.
func TestCheckerPausedHolderPostgres(t *testing.T) {
	d := postgresResource(t)
	c, _, proxies := singleChecker(t)
	c.h.store = d.write
	d.check(t, runPausedHolder(t, c, proxies))
}

// As TestCheckerPausedHolderPostgres, on SQLite.
func TestCheckerPausedHolderSQLite(t *testing.T) {
	d := sqliteResource(t)
	c, _, proxies := singleChecker(t)
	c.h.store = d.write
	d.check(t, runPausedHolder(t, c, proxies))
}

// Redis restarted without persistence, as in TestCheckerRestartedRedis,
// with holders writing to PostgreSQL through fence.Guard: holders may
// overlap after a restart, but the database commits no stale write.
func TestCheckerRestartedRedisPostgres(t *testing.T) {
	d := postgresResource(t)
	c, srv, _ := singleChecker(t)
	c.h.store = d.write
	d.check(t, runRestartedRedis(t, c, srv))
}

// As TestCheckerRestartedRedisPostgres, on SQLite.
func TestCheckerRestartedRedisSQLite(t *testing.T) {
	d := sqliteResource(t)
	c, srv, _ := singleChecker(t)
	c.h.store = d.write
	d.check(t, runRestartedRedis(t, c, srv))
}
