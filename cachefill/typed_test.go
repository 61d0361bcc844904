package cachefill_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock/cachefill"
	"github.com/dlock-go/dlock/internal/testenv"
)

type user struct {
	ID   int
	Name string
}

// Typed stores values as JSON by default, and ErrNotFound as a miss of
// its own.
func TestTypedJSON(t *testing.T) {
	t.Parallel()
	rdb := testenv.Client(t)
	users := cachefill.Typed[user]{Cache: newCache(t, rdb)}
	ctx := testenv.Timeout(t, 10*time.Second)
	key := testenv.NewKey(t)
	loads := 0
	load := func(context.Context) (user, error) {
		loads++
		return user{42, "Ada"}, nil
	}
	for range 2 {
		u, err := users.Get(ctx, key, time.Minute, load)
		if err != nil || u != (user{42, "Ada"}) {
			t.Fatalf("Get = %+v, %v", u, err)
		}
	}
	if loads != 1 {
		t.Errorf("%d loads, want one", loads)
	}
	raw := rdb.HGet(ctx, cachefill.EntryKey(users.Cache, key), "v").Val()
	if want, _ := json.Marshal(user{42, "Ada"}); raw != string(want) {
		t.Errorf("stored %q, want the JSON %q", raw, want)
	}
	missing := testenv.NewKey(t)
	_, err := users.Get(ctx, missing, time.Minute, func(context.Context) (user, error) { return user{}, cachefill.ErrNotFound })
	if !errors.Is(err, cachefill.ErrNotFound) {
		t.Errorf("Get of a missing user = %v, want ErrNotFound", err)
	}
	if err := users.Invalidate(ctx, key); err != nil {
		t.Error(err)
	}
}

// upper is a Codec that fails on empty names.
type upper struct{}

func (upper) Marshal(v any) ([]byte, error) {
	s := v.(string)
	if s == "" {
		return nil, errors.New("empty")
	}
	return []byte(strings.ToUpper(s)), nil
}

func (upper) Unmarshal(data []byte, v any) error {
	*v.(*string) = string(data)
	return nil
}

// A Codec of one's own encodes; its error is returned and nothing stored.
func TestTypedCodec(t *testing.T) {
	t.Parallel()
	names := cachefill.Typed[string]{Cache: newCache(t, testenv.Client(t)), Codec: upper{}}
	ctx := testenv.Timeout(t, 10*time.Second)
	v, err := names.Get(ctx, testenv.NewKey(t), time.Minute, func(context.Context) (string, error) { return "ada", nil })
	if err != nil || v != "ADA" {
		t.Errorf("Get = %q, %v; want ADA", v, err)
	}
	key := testenv.NewKey(t)
	if _, err := names.Get(ctx, key, time.Minute, func(context.Context) (string, error) { return "", nil }); err == nil {
		t.Errorf("Get with a failing codec returned no error")
	}
	v, err = names.Get(ctx, key, time.Minute, func(context.Context) (string, error) { return "bob", nil })
	if err != nil || v != "BOB" {
		t.Errorf("Get after a codec error = %q, %v; want a new load", v, err)
	}
}
