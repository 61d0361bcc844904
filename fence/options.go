package fence

import (
	"fmt"
	"strings"
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

// An Option changes how Guard and CreateTable work with the database.
type Option func(*config)

type config struct {
	table   string
	dialect Dialect
}

// WithTable names the table of fences, a plain SQL identifier (letters,
// digits and underscores, not starting with a digit, at most 63 bytes),
// optionally qualified by a schema as in "app.fences". Default:
// DefaultTable.
func WithTable(name string) Option {
	return func(c *config) { c.table = name }
}

// WithDialect names the database's dialect, which Guard and CreateTable
// otherwise tell from the database/sql driver or, for a driver they do
// not know, from one probing query per call. Default: detected.
func WithDialect(d Dialect) Option {
	return func(c *config) { c.dialect = d }
}

// newConfig applies opts to the defaults and checks the result.
func newConfig(opts []Option) (config, error) {
	c := config{table: DefaultTable}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
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
