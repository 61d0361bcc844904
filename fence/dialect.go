package fence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// maxMySQLResource is the longest resource name the MySQL table holds: its
// column is a VARCHAR(255), and a longer name would be cut (or refused,
// depending on the server's SQL mode) rather than kept apart.
const maxMySQLResource = 255

// detectDialect tells db's dialect from the type of its driver, or, for a
// driver it does not know, from the answers to two probing queries.
func detectDialect(ctx context.Context, db *sql.DB) (Dialect, error) {
	t := reflect.TypeOf(db.Driver())
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	// Drivers' import paths are in lower case: github.com/jackc/pgx/v5/stdlib,
	// github.com/lib/pq, modernc.org/sqlite, github.com/mattn/go-sqlite3,
	// github.com/go-sql-driver/mysql.
	name := t.PkgPath()
	switch {
	case strings.Contains(name, "pgx"), strings.Contains(name, "lib/pq"), strings.Contains(name, "postgres"):
		return PostgreSQL, nil
	case strings.Contains(name, "sqlite"):
		return SQLite, nil
	case strings.Contains(name, "mysql"):
		return MySQL, nil
	}
	var version string
	if err := db.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&version); err == nil {
		return SQLite, nil
	}
	err := db.QueryRowContext(ctx, "SELECT version()").Scan(&version)
	switch {
	case err != nil && ctx.Err() != nil:
		return "", fmt.Errorf("fence: tell the database's dialect: %w", ctx.Err())
	case err != nil:
		return "", fmt.Errorf("fence: cannot tell the dialect of the database of driver %s: name it with WithDialect: %w", name+"."+t.Name(), err)
	case strings.Contains(version, "PostgreSQL"):
		return PostgreSQL, nil
	}
	return MySQL, nil // MySQL's and MariaDB's versions name neither
}

// createStatement returns the DDL of the table of fences.
func createStatement(d Dialect, table string) string {
	switch d {
	case PostgreSQL:
		return "CREATE TABLE IF NOT EXISTS " + table + " (resource TEXT PRIMARY KEY, fence BIGINT NOT NULL)"
	case MySQL:
		return "CREATE TABLE IF NOT EXISTS " + table + " (resource VARCHAR(255) NOT NULL PRIMARY KEY, fence BIGINT NOT NULL)"
	}
	return "CREATE TABLE IF NOT EXISTS " + table + " (resource TEXT NOT NULL PRIMARY KEY, fence INTEGER NOT NULL)"
}

// record records fence f for resource in tx unless a higher fence is
// recorded, and returns the fence recorded for resource afterwards: f if it
// was recorded, the higher one if not. The statement that records f locks
// the resource's row until tx ends, so that a concurrent writer of the same
// resource waits for tx and then compares its fence with what tx recorded.
func record(ctx context.Context, tx *sql.Tx, d Dialect, table, resource string, f int64) (int64, error) {
	if d == MySQL {
		// MySQL has no RETURNING: raise the fence, then read it back
		// under the row lock the INSERT took.
		if _, err := tx.ExecContext(ctx, "INSERT INTO "+table+" (resource, fence) VALUES (?, ?) "+
			"ON DUPLICATE KEY UPDATE fence = GREATEST(fence, VALUES(fence))", resource, f); err != nil {
			return 0, err
		}
		return recorded(ctx, tx, "SELECT fence FROM "+table+" WHERE resource = ?", resource)
	}
	p1, p2 := "?", "?"
	if d == PostgreSQL {
		p1, p2 = "$1", "$2"
	}
	upsert := "INSERT INTO " + table + " AS f (resource, fence) VALUES (" + p1 + ", " + p2 + ") " +
		"ON CONFLICT (resource) DO UPDATE SET fence = excluded.fence WHERE f.fence <= excluded.fence RETURNING fence"
	var got int64
	err := tx.QueryRowContext(ctx, upsert, resource, f).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) { // a higher fence is recorded, and the row locked
		return recorded(ctx, tx, "SELECT fence FROM "+table+" WHERE resource = "+p1, resource)
	}
	return got, err
}

// recorded returns the fence that query, given resource, reads.
func recorded(ctx context.Context, tx *sql.Tx, query, resource string) (int64, error) {
	var f int64
	err := tx.QueryRowContext(ctx, query, resource).Scan(&f)
	return f, err
}
