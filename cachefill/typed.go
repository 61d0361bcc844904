package cachefill

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Codec turns values into the bytes a Cache stores, and back.
type Codec interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// JSON is the Codec of encoding/json, the default of Typed.
type JSON struct{}

// Marshal returns the JSON encoding of v.
func (JSON) Marshal(v any) ([]byte, error) { return json.Marshal(v) }

// Unmarshal decodes JSON data into v.
func (JSON) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// Typed is a Cache of values of type T, encoded by Codec (JSON when nil):
//
//	users := cachefill.Typed[User]{Cache: cache}
//	u, err := users.Get(ctx, "user:42", time.Minute, loadUser)
//
// It is a small value; copy it freely.
type Typed[T any] struct {
	Cache *Cache
	Codec Codec
}

// Get returns the value cached for key, decoded, or fills the cache with
// what load returns, encoded, as Cache.Get does. An error of the codec is
// returned and nothing is stored.
func (t Typed[T]) Get(ctx context.Context, key string, ttl time.Duration, load func(ctx context.Context) (T, error)) (T, error) {
	var v T
	if t.Cache == nil {
		return v, fmt.Errorf("%w: a Typed without a Cache", ErrNilClient)
	}
	if load == nil {
		return v, fmt.Errorf("%w: for %q", ErrNilLoad, key)
	}
	codec := t.codec()
	data, err := t.Cache.Get(ctx, key, ttl, func(ctx context.Context) ([]byte, error) {
		v, err := load(ctx)
		if err != nil {
			return nil, err
		}
		data, err := codec.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("cachefill: encode the value of %q: %w", key, err)
		}
		return data, nil
	})
	if err != nil {
		return v, err
	}
	if err := codec.Unmarshal(data, &v); err != nil {
		return v, fmt.Errorf("cachefill: decode the value of %q: %w", key, err)
	}
	return v, nil
}

// Invalidate marks the entry of key as to be loaded again, as
// Cache.Invalidate does.
func (t Typed[T]) Invalidate(ctx context.Context, key string) error {
	if t.Cache == nil {
		return fmt.Errorf("%w: a Typed without a Cache", ErrNilClient)
	}
	return t.Cache.Invalidate(ctx, key)
}

func (t Typed[T]) codec() Codec {
	if t.Codec == nil {
		return JSON{}
	}
	return t.Codec
}
