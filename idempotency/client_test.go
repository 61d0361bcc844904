package idempotency_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/idempotency"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/observe"
)

// recorder is an observe.Observer that keeps the events it is told.
type recorder struct {
	mu     sync.Mutex
	events []observe.Event
}

func (r *recorder) Observe(e observe.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// seen returns the types of the events told so far of keys with prefix.
func (r *recorder) seen(prefix string) []observe.EventType {
	r.mu.Lock()
	defer r.mu.Unlock()
	var types []observe.EventType
	for _, e := range r.events {
		if strings.HasPrefix(e.Key, prefix) {
			types = append(types, e.Type)
		}
	}
	return types
}

// A Store takes its locks on the caller's Client: the Client's observer
// sees them, its holder name names them, and the Store reports to its
// logger.
func TestStoreOnCallersClient(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	rec := &recorder{}
	logs := &testenv.Logs{}
	locker := lockenv.Locker(t, rdb, dlock.WithObserver(rec), dlock.WithHolderName("billing-7"), dlock.WithLogger(slog.New(logs)))
	store, err := idempotency.New(locker, idempotency.WithPrefix(prefix(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := testenv.Timeout(t, 10*time.Second)

	var holder dlock.LockInfo
	_, _, err = store.Do(ctx, "order:1", nil, func(context.Context) ([]byte, error) {
		locks := keysOf(t, rdb, "*:lock")
		if len(locks) != 1 {
			return nil, errors.New("no lock held")
		}
		var err error
		holder, err = locker.Inspect(ctx, locks[0])
		return []byte("charged"), err
	})
	if err != nil {
		t.Fatal(err)
	}
	if holder.HolderName != "billing-7" {
		t.Errorf("the key's lock is held by %q, want the Client's holder name", holder.HolderName)
	}
	if _, replayed, err := store.Do(ctx, "order:1", nil, func(context.Context) ([]byte, error) {
		return nil, errors.New("ran again")
	}); err != nil || !replayed {
		t.Fatalf("second Do: replayed %v, %v; want the stored result", replayed, err)
	}
	got := rec.seen(prefix(t))
	want := []observe.EventType{observe.EventObtain, observe.EventRelease, observe.EventObtain}
	if len(got) != len(want) {
		t.Fatalf("the observer saw %v of the Store's keys, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("the observer saw %v of the Store's keys, want %v", got, want)
		}
	}

	// The Store's own reports go to the Client's logger.
	store.Middleware(nil)
	if len(logs.Matching(slog.LevelError, "idempotency: the middleware answers every guarded request with 500")) != 1 {
		t.Error("a Middleware of a nil handler was not reported to the Client's logger")
	}
}

// A Redlock Client cannot keep a key's outcome with its lock: New refuses
// it, and says why.
func TestNewRefusesRedlock(t *testing.T) {
	t.Parallel()
	quorum := lockenv.Redlock(t, 3)
	store, err := idempotency.New(quorum)
	if !errors.Is(err, idempotency.ErrInvalidOption) || store != nil || !strings.Contains(err.Error(), "Redlock") {
		t.Fatalf("New(a Redlock Client) = %v, %v; want no Store and ErrInvalidOption that names Redlock", store, err)
	}
}

// Closing the Store leaves the caller's Client working: the caller closes
// it, after the Store.
func TestCloseLeavesTheClient(t *testing.T) {
	t.Parallel()
	locker := lockenv.Locker(t, nil)
	store, err := idempotency.New(locker, idempotency.WithPrefix(prefix(t)))
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	ctx := testenv.Timeout(t, 10*time.Second)
	lock, err := locker.TryObtain(ctx, testenv.Key(t), time.Minute)
	if err != nil {
		t.Fatalf("the Client after the Store's Close: %v", err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A call running when its Store closes stores its outcome on the Client,
// still open; one running when the Client closes cannot store it, and its
// key stays blocked.
func TestCallRunningAcrossClose(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	ctx := testenv.Timeout(t, 10*time.Second)
	for _, closeClient := range []bool{false, true} {
		locker := dlock.New(rdb)
		store, err := idempotency.New(locker, idempotency.WithPrefix(prefix(t)))
		if err != nil {
			t.Fatal(err)
		}
		key := "order:" + strconv.FormatBool(closeClient)
		running, proceed := make(chan struct{}), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			_, _, err := store.Do(ctx, key, nil, func(context.Context) ([]byte, error) {
				close(running)
				<-proceed
				return []byte("charged"), nil
			})
			done <- err
		}()
		receive(t, running)
		store.Close()
		if closeClient {
			locker.Close()
		}
		close(proceed)
		err = receive(t, done)
		locker.Close()
		if closeClient != errors.Is(err, idempotency.ErrNotStored) || (!closeClient && err != nil) {
			t.Fatalf("closed the Client too: %v; the running call's Do = %v", closeClient, err)
		}
		// The outcome is replayed; or, not stored, the key stays blocked
		// until the lock's time to live runs out.
		later := newStore(t, rdb, idempotency.WithWait(0))
		_, replayed, err := later.Do(ctx, key, nil, func(context.Context) ([]byte, error) { return []byte("again"), nil })
		if (closeClient && !errors.Is(err, idempotency.ErrInProgress)) || (!closeClient && (err != nil || !replayed)) {
			t.Errorf("closed the Client too: %v; a later Do replayed %v, %v", closeClient, replayed, err)
		}
	}
}
