// Package redisclient holds what dlock's packages need to know of the go-redis
// clients they are given.
package redisclient

import (
	"errors"

	"github.com/redis/go-redis/v9"
)

// IsNil reports whether c is nil, also as a typed nil pointer of the
// go-redis client types, which would otherwise panic on first use.
func IsNil(c redis.UniversalClient) bool {
	switch c := c.(type) {
	case nil:
		return true
	case *redis.Client:
		return c == nil
	case *redis.ClusterClient:
		return c == nil
	case *redis.Ring:
		return c == nil
	}
	return false
}

// NoScript reports whether err is Redis's NOSCRIPT: the server does not
// have the script (it was restarted, or someone ran SCRIPT FLUSH). go-redis
// gives it as ErrNoScript from EvalSha, and as the server's error reply
// from Process and pipelines, which it matches by prefix itself
// (redis.HasErrorPrefix).
func NoScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}
