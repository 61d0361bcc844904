package fence_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	_ "modernc.org/sqlite"             // registers "sqlite"

	"github.com/dlock-go/dlock/fence"
	"github.com/dlock-go/dlock/internal/testenv/pgtest"
)

// A store is a database for one test: a table of fences of its own, and a
// table of data that the guarded writes change.
type store struct {
	db      *sql.DB
	dialect fence.Dialect
	fences  string // the table of fences
	data    string // resource, value: what the writes leave
	log     string // seq, resource, fence: every committed write, in commit order
}

// tables numbers the tables of the tests, unique within a server.
var tables atomic.Int64

// sqliteDB opens a new SQLite database in a temporary file, with a busy
// timeout so that concurrent writers wait for each other.
func sqliteDB(t testing.TB) *sql.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fence.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// postgresDB opens the shared PostgreSQL server (pgtest), or the one given.
func postgresDB(t testing.TB, srv *pgtest.Server) *sql.DB {
	t.Helper()
	if srv == nil {
		srv = postgres.Server(t)
	}
	db, err := sql.Open("pgx", srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// newStore makes the tables of a store in db.
func newStore(t testing.TB, db *sql.DB, d fence.Dialect) *store {
	t.Helper()
	n := strconv.FormatInt(tables.Add(1), 10)
	s := &store{db: db, dialect: d, fences: "fences_" + n, data: "data_" + n, log: "log_" + n}
	ctx := context.Background()
	if err := fence.CreateTable(ctx, db, fence.WithTable(s.fences)); err != nil {
		t.Fatal(err)
	}
	for _, ddl := range []string{
		"CREATE TABLE " + s.data + " (resource TEXT PRIMARY KEY, value TEXT NOT NULL)",
		"CREATE TABLE " + s.log + " (seq BIGINT PRIMARY KEY, resource TEXT NOT NULL, fence BIGINT NOT NULL)",
	} {
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// dialects runs test on a store of each dialect: SQLite, and PostgreSQL
// (skipped where PostgreSQL is missing, unless CI is set).
func dialects(t *testing.T, test func(t *testing.T, s *store)) {
	t.Run("sqlite", func(t *testing.T) { test(t, newStore(t, sqliteDB(t), fence.SQLite)) })
	t.Run("postgres", func(t *testing.T) { test(t, newStore(t, postgresDB(t, nil), fence.PostgreSQL)) })
}

// q rewrites the ? placeholders of query for the store's dialect.
func (s *store) q(query string) string {
	if s.dialect != fence.PostgreSQL {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// write sets resource's value with fence f through Guard, and logs the
// write; ran tells whether Guard called its function.
func (s *store) write(ctx context.Context, resource string, f int64, value string) (ran bool, err error) {
	err = fence.Guard(ctx, s.db, resource, f, func(tx *sql.Tx) error {
		ran = true
		return s.put(ctx, tx, resource, f, value)
	}, fence.WithTable(s.fences))
	return ran, err
}

// put is the guarded write: the value, and a line in the log, numbered
// after the last one (the fence's row lock serializes the writers).
func (s *store) put(ctx context.Context, tx *sql.Tx, resource string, f int64, value string) error {
	if _, err := tx.ExecContext(ctx, s.q("INSERT INTO "+s.data+" (resource, value) VALUES (?, ?) "+
		"ON CONFLICT (resource) DO UPDATE SET value = excluded.value"), resource, value); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, s.q("INSERT INTO "+s.log+" (seq, resource, fence) "+
		"SELECT COALESCE(MAX(seq), 0) + 1, ?, ? FROM "+s.log), resource, f)
	return err
}

// value returns resource's value, "" if none.
func (s *store) value(t testing.TB, resource string) string {
	t.Helper()
	var v string
	err := s.db.QueryRow(s.q("SELECT value FROM "+s.data+" WHERE resource = ?"), resource).Scan(&v)
	if err != nil && err != sql.ErrNoRows {
		t.Fatal(err)
	}
	return v
}

// recorded returns the fence recorded for resource, 0 if none.
func (s *store) recorded(t testing.TB, resource string) int64 {
	t.Helper()
	var f int64
	err := s.db.QueryRow(s.q("SELECT fence FROM "+s.fences+" WHERE resource = ?"), resource).Scan(&f)
	if err != nil && err != sql.ErrNoRows {
		t.Fatal(err)
	}
	return f
}

// logged returns the fences of resource's committed writes, in commit order.
func (s *store) logged(t testing.TB, resource string) []int64 {
	t.Helper()
	rows, err := s.db.Query(s.q("SELECT fence FROM "+s.log+" WHERE resource = ? ORDER BY seq"), resource)
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
	return fences
}
