package fence_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"modernc.org/sqlite"

	"github.com/dlock-go/dlock/fence"
	"github.com/dlock-go/dlock/internal/testenv"
)

// opaqueDriver hides a driver's type, as a wrapper (for tracing, say)
// does: Guard must then tell the dialect by probing.
type opaqueDriver struct{ driver.Driver }

type opaqueConnector struct {
	dsn string
	d   opaqueDriver
}

func (c opaqueConnector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }
func (c opaqueConnector) Driver() driver.Driver                        { return c.d }

// Guard and CreateTable tell PostgreSQL and SQLite apart behind a driver
// whose type names neither, by probing.
func TestDialectProbed(t *testing.T) {
	ctx := testenv.Timeout(t, time.Minute)
	open := map[string]func(t *testing.T) *sql.DB{
		"sqlite": func(t *testing.T) *sql.DB {
			dsn := "file:" + filepath.Join(t.TempDir(), "probe.db") + "?_pragma=busy_timeout(5000)"
			return sql.OpenDB(opaqueConnector{dsn, opaqueDriver{&sqlite.Driver{}}})
		},
		"postgres": func(t *testing.T) *sql.DB {
			return sql.OpenDB(opaqueConnector{postgres.Server(t).DSN(), opaqueDriver{stdlib.GetDefaultDriver()}})
		},
	}
	for name, open := range open {
		t.Run(name, func(t *testing.T) {
			db := open(t)
			t.Cleanup(func() { db.Close() })
			table := fence.WithTable("probed_" + name)
			if err := fence.CreateTable(ctx, db, table); err != nil {
				t.Fatal(err)
			}
			noop := func(*sql.Tx) error { return nil }
			if err := fence.Guard(ctx, db, "p", 5, noop, table); err != nil {
				t.Fatal(err)
			}
			if err := fence.Guard(ctx, db, "p", 4, noop, table); !errors.Is(err, fence.ErrStale) {
				t.Errorf("Guard with fence 4 after 5 = %v; want ErrStale", err)
			}
		})
	}
}

// SQLite without a busy timeout: a writer that finds another's transaction
// open gets SQLITE_BUSY from Guard at once, an error, neither ErrStale nor
// a write; with one, it waits (TestGuardWaitsForOpenWriter).
func TestGuardSQLiteBusy(t *testing.T) {
	ctx := testenv.Timeout(t, time.Minute)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "busy.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := fence.CreateTable(ctx, db); err != nil {
		t.Fatal(err)
	}
	inside, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- fence.Guard(ctx, db, "b", 2, func(*sql.Tx) error {
			close(inside)
			<-release
			return nil
		})
	}()
	<-inside
	ran := false
	err = fence.Guard(ctx, db, "b", 3, func(*sql.Tx) error { ran = true; return nil })
	close(release)
	if err == nil || ran || errors.Is(err, fence.ErrStale) || !strings.Contains(err.Error(), "database is locked") {
		t.Errorf("Guard while another writer's transaction is open = %v (ran %t); want SQLITE_BUSY", err, ran)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}
