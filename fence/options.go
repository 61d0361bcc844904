package fence

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dlock-go/dlock/observe"
)

// DefaultTable is the name of the table of fences that Guard and
// CreateTable use unless WithTable names another.
const DefaultTable = "dlock_fences"

// A Dialect is the SQL dialect of a database: how Guard records a fence
// and how CreateTable creates the table.
type Dialect string

// The dialects Guard and CreateTable know.
const (
	// PostgreSQL (9.5 or later), through any database/sql driver, such
	// as github.com/jackc/pgx/v5/stdlib or github.com/lib/pq.
	PostgreSQL Dialect = "postgres"
	// SQLite (3.35 or later), through any database/sql driver, such as
	// modernc.org/sqlite or github.com/mattn/go-sqlite3.
	SQLite Dialect = "sqlite"
	// MySQL (8.0 or later) and MariaDB (10.3 or later), through
	// github.com/go-sql-driver/mysql. The statements are written for
	// them, but dlock's own tests do not run a MySQL server.
	MySQL Dialect = "mysql"
)

// An Option changes how Guard and CreateTable work with the database, or
// how a Redis (NewRedis) writes. WithTable and WithDialect are options of
// Guard and CreateTable, WithField of NewRedis, WithObserver of all three;
// an option given where it does not apply is an error, as is
// WithObserver(nil).
type Option func(*config)

type config struct {
	table    string
	dialect  Dialect
	field    string
	observer observe.PackageObserver
	err      error // of an option given a value it cannot use
	// set names the options given, "table", "dialect" and "field", for
	// the error of one given where it does not apply
	set []string
}

// WithTable names the table of fences, a plain SQL identifier (letters,
// digits and underscores, not starting with a digit, at most 63 bytes),
// optionally qualified by a schema as in "app.fences". Default:
// DefaultTable.
func WithTable(name string) Option {
	return func(c *config) { c.table, c.set = name, append(c.set, "WithTable") }
}

// WithDialect names the database's dialect, which Guard and CreateTable
// otherwise tell from the database/sql driver or, for a driver they do
// not know, from one probing query per call. Default: detected.
func WithDialect(d Dialect) Option {
	return func(c *config) { c.dialect, c.set = d, append(c.set, "WithDialect") }
}

// WithField names the field of a hash that holds its fence, for
// Redis.HSet: an option of NewRedis. Default: DefaultField.
func WithField(name string) Option {
	return func(c *config) { c.field, c.set = name, append(c.set, "WithField") }
}

// WithObserver makes Guard, or a Redis (NewRedis), tell o of each write
// (observe.PackageFence, with observe.OpGuard or observe.OpRedisWrite):
// written, refused as stale, failed in Guard's function, or an error. The
// Prometheus and OpenTelemetry modules' observers count them: give the
// same one as to the lock's Client (dlock.WithObserver). CreateTable
// takes it too, so that one list of options serves both, and tells
// nothing. Default: none, and no event is built.
func WithObserver(o observe.PackageObserver) Option {
	return func(c *config) {
		if o == nil {
			c.err = errors.New("fence: WithObserver(nil)")
			return
		}
		c.observer = o
	}
}

// newConfig applies opts to the defaults of Guard and CreateTable, and
// checks the result.
func newConfig(opts []Option) (config, error) {
	c := applyOptions(opts)
	if c.err != nil {
		return c, c.err
	}
	if err := c.refuse("Guard and CreateTable", "WithField"); err != nil {
		return c, err
	}
	if err := checkTable(c.table); err != nil {
		return c, err
	}
	switch c.dialect {
	case "", PostgreSQL, SQLite, MySQL:
	default:
		return c, fmt.Errorf("fence: unknown dialect %q (want %q, %q or %q)", c.dialect, PostgreSQL, SQLite, MySQL)
	}
	return c, nil
}

// applyOptions applies opts to the defaults; nil options are skipped.
func applyOptions(opts []Option) config {
	c := config{table: DefaultTable, field: DefaultField}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// refuse returns an error if one of the options named was given to what,
// where it does not apply.
func (c config) refuse(what string, names ...string) error {
	for _, name := range names {
		if slices.Contains(c.set, name) {
			return fmt.Errorf("fence: %s is no option of %s", name, what)
		}
	}
	return nil
}

// tell tells the observer, if any, of one write that started at start and
// returned err; fnFailed: Guard's function returned err.
func (c config) tell(op, key string, start time.Time, err error, fnFailed bool) {
	if c.observer == nil {
		return
	}
	outcome := observe.OutcomeWritten
	var stale *StaleError
	switch {
	case fnFailed:
		outcome = observe.OutcomeFailed
	case errors.As(err, &stale):
		outcome = observe.OutcomeStale
	case err != nil:
		outcome = observe.OutcomeError
	}
	c.observer.ObservePackage(observe.PackageEvent{Package: observe.PackageFence, Op: op, Outcome: outcome, Key: key, Duration: time.Since(start)})
}

// checkTable refuses a table name that is not one or two plain
// identifiers joined by a dot: the name goes into SQL statements as is.
func checkTable(name string) error {
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return fmt.Errorf("fence: table name %q: at most a schema and a table, joined by one dot", name)
	}
	for _, p := range parts {
		if !isIdentifier(p) {
			return fmt.Errorf("fence: table name %q: want letters, digits and underscores, not starting with a digit, 1 to 63 bytes", name)
		}
	}
	return nil
}

func isIdentifier(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
