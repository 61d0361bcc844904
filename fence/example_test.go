package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"
	_ "modernc.org/sqlite"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/fence"
)

// saveReport writes the report while lock is held: the database refuses
// the write if a later holder of the lock has written.
func saveReport(ctx context.Context, db *sql.DB, key string, f int64, body string) error {
	save := func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT OR REPLACE INTO reports (id, body) VALUES (1, ?)", body)
		return err
	}
	return fence.Guard(ctx, db, key, f, save)
}

// A holder whose lock expired while it was stalled writes after the next
// holder: the database refuses its write, as the fence of its lock is
// lower.
func Example() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()
	dir, _ := os.MkdirTemp("", "fence-example")
	defer os.RemoveAll(dir)
	db, _ := sql.Open("sqlite", "file:"+filepath.Join(dir, "app.db")+"?_pragma=busy_timeout(5000)")
	defer db.Close()
	ctx := context.Background()
	_ = fence.CreateTable(ctx, db)
	_, _ = db.ExecContext(ctx, "CREATE TABLE reports (id INTEGER PRIMARY KEY, body TEXT)")

	a, err := locker.Obtain(ctx, "example:report", 100*time.Millisecond) // A, then stalled
	if err != nil {
		fmt.Println(err)
		return
	}
	fenceA := a.Fence()                                         // A asks for its fence as it starts its work
	b, err := locker.Obtain(ctx, "example:report", time.Minute) // B waits until A's lock expires
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Release(ctx)

	lock := b // B holds the lock now, and writes with its fence
	save := func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT OR REPLACE INTO reports (id, body) VALUES (1, ?)", "B's report")
		return err
	}
	fmt.Println("B:", fence.Guard(ctx, db, lock.Key(), lock.Fence(), save))
	err = saveReport(ctx, db, a.Key(), fenceA, "A's report") // A is back, and writes
	fmt.Println("A refused:", errors.Is(err, fence.ErrStale))
	// Output:
	// B: <nil>
	// A refused: true
}

// Two holders of one lock write a report: the one whose lock expired
// during a pause comes back after the next holder has written, with the
// lower fence, and the database refuses its write.
func ExampleGuard() {
	dir, _ := os.MkdirTemp("", "fence-example")
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "app.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	ctx := context.Background()
	if err := fence.CreateTable(ctx, db); err != nil {
		fmt.Println(err)
		return
	}
	_, _ = db.ExecContext(ctx, "CREATE TABLE reports (id INTEGER PRIMARY KEY, body TEXT)")

	save := func(f int64, body string) error { // f: the holder's lock.Fence()
		return fence.Guard(ctx, db, "report:nightly", f, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT OR REPLACE INTO reports (id, body) VALUES (1, ?)", body)
			return err
		})
	}
	fmt.Println("B (fence 1002):", save(1002, "B's report"))
	err = save(1001, "A's late report") // A, paused past its ttl, is back
	fmt.Println("A (fence 1001): stale:", errors.Is(err, fence.ErrStale))
	fmt.Println(err)

	var body string
	_ = db.QueryRowContext(ctx, "SELECT body FROM reports WHERE id = 1").Scan(&body)
	fmt.Println("stored:", body)
	// Output:
	// B (fence 1002): <nil>
	// A (fence 1001): stale: true
	// fence: stale fence 1001 for "report:nightly": fence 1002 is recorded
	// stored: B's report
}

// A fenced write to a Redis that holds the data: the late holder's Set is
// refused.
func ExampleRedis_Set() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	store, err := fence.NewRedis(rdb)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	defer rdb.Del(ctx, "example:price", "{example:price}:fence") // the example runs again

	fmt.Println(store.Set(ctx, "example:price", 1002, "42.00", 0)) // B, fence 1002
	err = store.Set(ctx, "example:price", 1001, "39.90", 0)        // A, back from a pause
	fmt.Println("stale:", errors.Is(err, fence.ErrStale))
	fmt.Println(rdb.Get(ctx, "example:price").Val())
	// Output:
	// <nil>
	// stale: true
	// 42.00
}

// A fenced HSet: the fence lives in a field of the hash.
func ExampleRedis_HSet() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	store, err := fence.NewRedis(rdb)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	defer rdb.Del(ctx, "example:account")

	fmt.Println(store.HSet(ctx, "example:account", 7, map[string]any{"balance": 100}))
	err = store.HSet(ctx, "example:account", 6, map[string]any{"balance": 0})
	fmt.Println(err)
	fmt.Println(rdb.HGet(ctx, "example:account", "balance").Val())
	// Output:
	// <nil>
	// fence: stale fence 6 for "example:account": fence 7 is recorded
	// 100
}
