package cachefill_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dlock-go/dlock/cachefill"
	"github.com/dlock-go/dlock/internal/testenv"
)

// ErrNotFound from load is remembered for the not-found ttl: the next Gets
// return it without calling load.
func TestNotFoundIsCached(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	cache := newCache(t, rdb, cachefill.WithNotFoundTTL(time.Minute))
	key := testenv.NewKey(t)
	var loads int
	load := func(context.Context) ([]byte, error) {
		loads++
		return nil, cachefill.ErrNotFound
	}
	ctx := testenv.Timeout(t, 10*time.Second)
	for range 3 {
		if v, err := cache.Get(ctx, key, time.Hour, load); !errors.Is(err, cachefill.ErrNotFound) || v != nil {
			t.Fatalf("Get of a missing row = %q, %v; want ErrNotFound", v, err)
		}
	}
	if loads != 1 {
		t.Errorf("load ran %d times for three Gets of a missing row, want once", loads)
	}
	if ttl := rdb.PTTL(ctx, cachefill.EntryKey(cache, key)).Val(); ttl > time.Minute || ttl <= 0 {
		t.Errorf("not found stored for %v, want the not-found ttl, not the Get's", ttl)
	}
}

// WithNotFoundTTL(0) returns ErrNotFound without remembering it, and a
// wrapped ErrNotFound counts as well.
func TestNotFoundNotCached(t *testing.T) {
	t.Parallel()
	cache := newCache(t, testenv.Client(t), cachefill.WithNotFoundTTL(0))
	key := testenv.NewKey(t)
	var loads int
	load := func(context.Context) ([]byte, error) {
		loads++
		return nil, fmtNotFound(key)
	}
	ctx := testenv.Timeout(t, 10*time.Second)
	for range 2 {
		if _, err := cache.Get(ctx, key, time.Hour, load); !errors.Is(err, cachefill.ErrNotFound) {
			t.Fatalf("Get of a missing row = %v; want ErrNotFound", err)
		}
	}
	if loads != 2 {
		t.Errorf("load ran %d times, want twice: nothing remembered", loads)
	}
}

func fmtNotFound(key string) error {
	return errors.Join(errors.New("no row for "+key), cachefill.ErrNotFound)
}
