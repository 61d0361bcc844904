// Package redisclient holds what dlock's packages need to know of the go-redis
// clients they are given.
package redisclient

import "github.com/redis/go-redis/v9"

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
