package dlock_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/redistest"
)

// The code of docs/safety.md, "Using the fence at the protected resource".
// The SQL functions are compiled, not run: the tests have no SQL server.
// writeDoc runs against a real Redis in TestSafetyFencedWrite.

// publishReport, with buildReport and saveReport, is compiled only.
var _ = publishReport

func publishReport(ctx context.Context, locker *dlock.Client, db *sql.DB) error {
	lock, err := locker.Obtain(ctx, "report:nightly", time.Minute, dlock.WithAutoRenew(true))
	if err != nil {
		return err
	}
	defer lock.Release(context.WithoutCancel(ctx))

	body, err := buildReport(ctx) // long work; the lock may be lost meanwhile
	if err != nil {
		return err
	}
	return saveReport(ctx, db, lock.Key(), lock.Fence(), body) // the database decides
}

// buildReport stands for the long work done under the lock.
func buildReport(context.Context) (string, error) { return "the report", nil }

var ErrStaleFence = errors.New("refused: a newer lock holder has written")

func saveReport(ctx context.Context, db *sql.DB, resource string, fence int64, body string) error {
	res, err := db.ExecContext(ctx, `
		INSERT INTO reports (resource, last_fence, body) VALUES ($1, $2, $3)
		ON CONFLICT (resource) DO UPDATE
		   SET last_fence = EXCLUDED.last_fence, body = EXCLUDED.body
		 WHERE reports.last_fence < EXCLUDED.last_fence`,
		resource, fence, body)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrStaleFence
	}
	return nil
}

// fencedWrite sets the resource's body if ARGV[1] is larger than every fence
// it has seen. KEYS[1]: the resource (a hash). Returns 1 if written, 0 if refused.
// Fences are below 2^53, so Lua's numbers compare them exactly; the fence is
// stored as the string it came as.
var fencedWrite = redis.NewScript(`
local seen = tonumber(redis.call('HGET', KEYS[1], 'fence') or '0')
if tonumber(ARGV[1]) <= seen then
  return 0
end
redis.call('HSET', KEYS[1], 'fence', ARGV[1], 'body', ARGV[2])
return 1`)

func writeDoc(ctx context.Context, rdb redis.Scripter, resource string, lock *dlock.Lock, body string) error {
	ok, err := fencedWrite.Run(ctx, rdb, []string{resource}, lock.Fence(), body).Int()
	if err != nil {
		return err
	}
	if ok == 0 {
		return ErrStaleFence
	}
	return nil
}

// A holder whose lock was taken over writes after the next holder and is
// refused, and the next holder's write stays.
func TestSafetyFencedWrite(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	locker := newLocker(t, rdb)
	ctx := t.Context()
	resource := "doc:" + t.Name()

	old, err := locker.TryObtain(ctx, resource, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := locker.ForceRelease(ctx, resource); err != nil {
		t.Fatal(err)
	}
	next, err := locker.TryObtain(ctx, resource, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Release(context.WithoutCancel(ctx))

	if err := writeDoc(ctx, rdb, resource+":doc", next, "new"); err != nil {
		t.Fatalf("the holder's write: %v", err)
	}
	if err := writeDoc(ctx, rdb, resource+":doc", old, "stale"); !errors.Is(err, ErrStaleFence) {
		t.Fatalf("the old holder's write = %v, want ErrStaleFence", err)
	}
	if body := rdb.HGet(ctx, resource+":doc", "body").Val(); body != "new" {
		t.Fatalf("body = %q, want the holder's", body)
	}
}
