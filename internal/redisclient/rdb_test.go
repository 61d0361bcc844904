package redisclient

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestIsNil(t *testing.T) {
	var client *redis.Client
	var cluster *redis.ClusterClient
	var ring *redis.Ring
	live := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer live.Close()
	for _, tc := range []struct {
		c    redis.UniversalClient
		want bool
	}{
		{nil, true}, {client, true}, {cluster, true}, {ring, true},
		{live, false},
	} {
		if got := IsNil(tc.c); got != tc.want {
			t.Errorf("IsNil(%T) = %v, want %v", tc.c, got, tc.want)
		}
	}
}
