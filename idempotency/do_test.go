package idempotency_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/idempotency"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
)

// counted returns a function for Do that counts its runs and returns result.
func counted(runs *atomic.Int32, result string) func(context.Context) ([]byte, error) {
	return func(context.Context) ([]byte, error) {
		runs.Add(1)
		return []byte(result), nil
	}
}

func TestDoRunsOnceThenReplays(t *testing.T) {
	t.Parallel()
	store := newStore(t, testenv.Client(t))
	ctx := testenv.Timeout(t, 10*time.Second)
	var runs atomic.Int32

	for i, wantReplayed := range []bool{false, true, true} {
		result, replayed, err := store.Do(ctx, "order:1", []byte("amount=10"), counted(&runs, "receipt-1"))
		if err != nil || string(result) != "receipt-1" || replayed != wantReplayed {
			t.Fatalf("call %d: Do = %q, %v, %v; want receipt-1, %v, nil", i, result, replayed, err, wantReplayed)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("fn ran %d times, want 1", n)
	}
}

func TestDoMismatch(t *testing.T) {
	t.Parallel()
	store := newStore(t, testenv.Client(t))
	ctx := testenv.Timeout(t, 10*time.Second)
	var runs atomic.Int32
	if _, _, err := store.Do(ctx, "order:1", []byte("amount=10"), counted(&runs, "r")); err != nil {
		t.Fatal(err)
	}
	result, replayed, err := store.Do(ctx, "order:1", []byte("amount=99"), counted(&runs, "r"))
	if !errors.Is(err, idempotency.ErrMismatch) || result != nil || replayed {
		t.Errorf("Do with another fingerprint = %q, %v, %v; want ErrMismatch", result, replayed, err)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("fn ran %d times, want 1", n)
	}
}

// Keys of any bytes and length work; only the empty key is refused.
func TestDoKeys(t *testing.T) {
	t.Parallel()
	store := newStore(t, testenv.Client(t))
	ctx := testenv.Timeout(t, 10*time.Second)
	var runs atomic.Int32
	keys := []string{"k", "{tag}k", "\x00\xff binary", strings.Repeat("long", 10_000), "ключ"}
	for _, key := range keys {
		for range 2 {
			if _, _, err := store.Do(ctx, key, nil, counted(&runs, "r")); err != nil {
				t.Fatalf("Do(%.20q): %v", key, err)
			}
		}
	}
	if n := runs.Load(); n != int32(len(keys)) {
		t.Errorf("fn ran %d times for %d keys, want once per key", n, len(keys))
	}
	if _, _, err := store.Do(ctx, "", nil, counted(&runs, "r")); !errors.Is(err, idempotency.ErrInvalidKey) {
		t.Errorf("Do with an empty key: %v, want ErrInvalidKey", err)
	}
	if _, _, err := store.Do(ctx, "k", nil, nil); !errors.Is(err, idempotency.ErrInvalidOption) {
		t.Errorf("Do with a nil function: %v, want ErrInvalidOption", err)
	}
}

func TestDoErrorIsNotStored(t *testing.T) {
	t.Parallel()
	store := newStore(t, testenv.Client(t))
	ctx := testenv.Timeout(t, 10*time.Second)
	declined := errors.New("provider timed out")
	_, _, err := store.Do(ctx, "order:1", nil, func(context.Context) ([]byte, error) { return nil, declined })
	if !errors.Is(err, declined) {
		t.Fatalf("Do = %v, want fn's error", err)
	}
	result, replayed, err := store.Do(ctx, "order:1", nil, func(context.Context) ([]byte, error) { return []byte("ok"), nil })
	if err != nil || replayed || string(result) != "ok" {
		t.Errorf("Do after a failed call = %q, %v, %v; want fn to run again", result, replayed, err)
	}
}

func TestDoFinalErrorIsReplayed(t *testing.T) {
	t.Parallel()
	store := newStore(t, testenv.Client(t))
	ctx := testenv.Timeout(t, 10*time.Second)
	declined := errors.New("card declined")
	var runs atomic.Int32
	fn := func(context.Context) ([]byte, error) {
		runs.Add(1)
		return nil, idempotency.Final(declined)
	}
	if _, replayed, err := store.Do(ctx, "order:1", nil, fn); !errors.Is(err, declined) || replayed {
		t.Fatalf("first Do = %v, %v; want the declined error, not replayed", replayed, err)
	}
	_, replayed, err := store.Do(ctx, "order:1", nil, fn)
	var final *idempotency.FinalError
	if !errors.As(err, &final) || err.Error() != "card declined" || !replayed {
		t.Errorf("second Do = %v, %v (%T); want the replayed *FinalError %q", replayed, err, err, "card declined")
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("fn ran %d times, want 1", n)
	}
	if idempotency.Final(nil) != nil {
		t.Error("Final(nil) is not nil")
	}
}

func TestDoTooLarge(t *testing.T) {
	t.Parallel()
	store := newStore(t, testenv.Client(t), idempotency.WithMaxResult(10))
	ctx := testenv.Timeout(t, 10*time.Second)
	var runs atomic.Int32
	for range 2 {
		result, replayed, err := store.Do(ctx, "report", nil, counted(&runs, "eleven bytes"))
		if !errors.Is(err, idempotency.ErrTooLarge) || string(result) != "eleven bytes" || replayed {
			t.Fatalf("Do = %q, %v, %v; want the result and ErrTooLarge", result, replayed, err)
		}
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("fn ran %d times, want 2: a result too large is not stored", n)
	}
}

func TestDoPanicFreesTheKey(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	store := newStore(t, rdb)
	ctx := testenv.Timeout(t, 10*time.Second)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want the panic to go on", r)
			}
		}()
		store.Do(ctx, "order:1", nil, func(context.Context) ([]byte, error) { panic("boom") })
	}()
	if locks := keysOf(t, rdb, "*:lock"); len(locks) != 0 {
		t.Errorf("the lock is still there after the panic: %q", locks)
	}
	result, replayed, err := store.Do(ctx, "order:1", nil, func(context.Context) ([]byte, error) { return []byte("ok"), nil })
	if err != nil || replayed || string(result) != "ok" {
		t.Errorf("Do after a panic = %q, %v, %v; want fn to run", result, replayed, err)
	}
}

func TestDoRetention(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	const retention = 200 * time.Millisecond
	store := newStore(t, rdb, idempotency.WithRetention(retention))
	ctx := testenv.Timeout(t, 10*time.Second)
	var runs atomic.Int32
	if _, _, err := store.Do(ctx, "order:1", nil, counted(&runs, "r")); err != nil {
		t.Fatal(err)
	}
	// (The record may be gone already on a slow machine: then there is no
	// ttl to look at.)
	for _, record := range keysOf(t, rdb, "*:result") {
		if ttl := rdb.PTTL(ctx, record).Val(); ttl > retention {
			t.Errorf("the record's ttl is %v, want at most the retention, %v", ttl, retention)
		}
	}
	testenv.Eventually(t, 5*time.Second, "run again", func() bool {
		_, replayed, err := store.Do(ctx, "order:1", nil, counted(&runs, "r"))
		if err != nil {
			t.Fatal(err)
		}
		return !replayed
	})
	if n := runs.Load(); n != 2 {
		t.Errorf("fn ran %d times, want 2: once, and once after the retention", n)
	}
}

// A call that finds fn running elsewhere waits for it and gets its result;
// with WithWait(0) it gets ErrInProgress at once.
func TestDoConcurrentCalls(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	waiting := newStore(t, rdb)
	impatient := mustNew(t, rdb, idempotency.WithPrefix(prefix(t)), idempotency.WithWait(0))
	ctx := testenv.Timeout(t, 10*time.Second)

	running, finish := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, _, err := waiting.Do(ctx, "order:1", nil, func(context.Context) ([]byte, error) {
			close(running)
			<-finish
			return []byte("receipt"), nil
		})
		first <- err
	}()
	receive(t, running)

	var runs atomic.Int32
	if _, _, err := impatient.Do(ctx, "order:1", nil, counted(&runs, "again")); !errors.Is(err, idempotency.ErrInProgress) {
		t.Errorf("Do WithWait(0) while fn runs: %v, want ErrInProgress", err)
	}
	briefly := mustNew(t, rdb, idempotency.WithPrefix(prefix(t)), idempotency.WithWait(50*time.Millisecond))
	if _, _, err := briefly.Do(ctx, "order:1", nil, counted(&runs, "again")); !errors.Is(err, idempotency.ErrInProgress) {
		t.Errorf("Do WithWait(50ms) while fn runs: %v, want ErrInProgress", err)
	}
	// A context that ends first: while waiting (then the error is both) or,
	// on a slow machine, while looking up the result.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, _, err := waiting.Do(short, "order:1", nil, counted(&runs, "again")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Do whose context ends while fn runs: %v, want DeadlineExceeded", err)
	}

	const waiters = 10
	var wg sync.WaitGroup
	results := make([]string, waiters)
	errs := make([]error, waiters)
	for i := range waiters {
		wg.Go(func() {
			var result []byte
			var replayed bool
			result, replayed, errs[i] = waiting.Do(ctx, "order:1", nil, counted(&runs, "again"))
			if errs[i] == nil && !replayed {
				errs[i] = errors.New("not replayed")
			}
			results[i] = string(result)
		})
	}
	close(finish)
	wg.Wait()
	if err := receive(t, first); err != nil {
		t.Fatal(err)
	}
	for i := range waiters {
		if errs[i] != nil || results[i] != "receipt" {
			t.Errorf("waiter %d: %q, %v; want the first call's receipt", i, results[i], errs[i])
		}
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("fn ran %d more times, want 0", n)
	}
}

// A waiter whose first call fails runs fn itself.
func TestDoWaiterRunsAfterFailure(t *testing.T) {
	t.Parallel()
	store := newStore(t, testenv.Client(t))
	ctx := testenv.Timeout(t, 10*time.Second)
	running, finish := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, _, err := store.Do(ctx, "order:1", nil, func(context.Context) ([]byte, error) {
			close(running)
			<-finish
			return nil, errors.New("provider down")
		})
		first <- err
	}()
	receive(t, running)
	second := make(chan string, 1)
	go func() {
		result, _, err := store.Do(ctx, "order:1", nil, func(context.Context) ([]byte, error) { return []byte("second"), nil })
		if err != nil {
			result = []byte(err.Error())
		}
		second <- string(result)
	}()
	close(finish)
	if err := receive(t, first); err == nil {
		t.Error("the first call did not fail")
	}
	if got := receive(t, second); got != "second" {
		t.Errorf("the second call got %q, want its own fn's result", got)
	}
}

// A call whose lock is lost while fn runs sees fn's context cancelled, and
// cannot store its result over that of the call that took over.
func TestDoLostLockCannotOverwrite(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	store := newStore(t, rdb, idempotency.WithLockTTL(300*time.Millisecond), idempotency.WithWait(0))
	ctx := testenv.Timeout(t, 10*time.Second)

	running, finish := make(chan struct{}), make(chan struct{})
	type answer struct {
		result []byte
		cause  error
		err    error
	}
	first := make(chan answer, 1)
	go func() {
		var cause error
		result, _, err := store.Do(ctx, "order:1", nil, func(ctx context.Context) ([]byte, error) {
			close(running)
			<-ctx.Done() // the lock is lost
			cause = context.Cause(ctx)
			<-finish // and fn goes on, as a paused process would
			return []byte("late"), nil
		})
		first <- answer{result, cause, err}
	}()
	receive(t, running)
	locks := keysOf(t, rdb, "*:lock")
	if len(locks) != 1 {
		t.Fatalf("locks: %q, want one", locks)
	}
	rdb.Del(ctx, locks[0]) // the lock expires, or an operator removes it

	testenv.Eventually(t, 5*time.Second, "taken over", func() bool {
		_, _, err := store.Do(ctx, "order:1", nil, func(context.Context) ([]byte, error) { return []byte("second"), nil })
		return err == nil
	})
	close(finish)
	a := receive(t, first)
	if !errors.Is(a.cause, dlock.ErrLockLost) {
		t.Errorf("fn's context ended with cause %v, want dlock.ErrLockLost", a.cause)
	}
	if !errors.Is(a.err, idempotency.ErrNotStored) || string(a.result) != "late" {
		t.Errorf("the first call = %q, %v; want its result and ErrNotStored", a.result, a.err)
	}
	result, replayed, err := store.Do(ctx, "order:1", nil, func(context.Context) ([]byte, error) { return []byte("third"), nil })
	if err != nil || !replayed || string(result) != "second" {
		t.Errorf("later Do = %q, %v, %v; want the second call's result", result, replayed, err)
	}
}

func TestStoreInvalid(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	fn := func(context.Context) ([]byte, error) { return nil, nil }
	locker := lockenv.Locker(t, rdb)
	nilRedis := dlock.New(nil)
	t.Cleanup(func() { nilRedis.Close() })
	typedNilRedis := dlock.New((*redis.Client)(nil))
	t.Cleanup(func() { typedNilRedis.Close() })
	badOption := dlock.New(rdb, dlock.WithLogger(nil))
	t.Cleanup(func() { badOption.Close() })
	invalid := map[string]struct {
		locker *dlock.Client
		opts   []idempotency.Option
	}{
		"nil Client":               {nil, nil},
		"Client on nil redis":      {nilRedis, nil},
		"Client on typed nil":      {typedNilRedis, nil},
		"Client with a bad option": {badOption, nil},
		"nil option":               {locker, []idempotency.Option{nil}},
		"retention 0":              {locker, []idempotency.Option{idempotency.WithRetention(0)}},
		"negative wait":            {locker, []idempotency.Option{idempotency.WithWait(-time.Second)}},
		"max result 0":             {locker, []idempotency.Option{idempotency.WithMaxResult(0)}},
		"empty prefix":             {locker, []idempotency.Option{idempotency.WithPrefix("")}},
		"lock ttl 1µs":             {locker, []idempotency.Option{idempotency.WithLockTTL(time.Microsecond)}},
		"nil logger":               {locker, []idempotency.Option{idempotency.WithLogger(nil)}},
	}
	for name, in := range invalid {
		if store, err := idempotency.New(in.locker, in.opts...); !errors.Is(err, idempotency.ErrInvalidOption) || store != nil {
			t.Errorf("%s: New = %v, %v; want no Store and ErrInvalidOption", name, store, err)
		}
	}
	// A Store that New did not make: no panic.
	for name, store := range map[string]*idempotency.Store{"nil": nil, "zero": {}} {
		if _, _, err := store.Do(ctx, "k", nil, fn); !errors.Is(err, idempotency.ErrInvalidOption) {
			t.Errorf("%s Store: Do = %v, want ErrInvalidOption", name, err)
		}
		if err := store.Close(); err != nil {
			t.Errorf("%s Store: Close = %v", name, err)
		}
	}
	closed := mustNew(t, rdb)
	closed.Close()
	if _, _, err := closed.Do(ctx, "k", nil, fn); !errors.Is(err, idempotency.ErrClosed) {
		t.Errorf("Do after Close = %v, want ErrClosed", err)
	}
}

// Results are bytes, stored and replayed exactly.
func TestDoBinaryResult(t *testing.T) {
	t.Parallel()
	store := newStore(t, testenv.Client(t))
	ctx := testenv.Timeout(t, 10*time.Second)
	want := []byte{0, 1, 2, 0xff, '\n', 0}
	for range 2 {
		result, _, err := store.Do(ctx, "k", nil, func(context.Context) ([]byte, error) { return want, nil })
		if err != nil || !bytes.Equal(result, want) {
			t.Fatalf("Do = %q, %v; want %q", result, err, want)
		}
	}
}
