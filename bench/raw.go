package bench

import (
	"context"
	"crypto/rand"
	"encoding/base64"

	"github.com/redis/go-redis/v9"
)

// compareAndDelete is the usual hand-written release: delete the key only
// if it still holds our token.
var compareAndDelete = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)

// rawRow is the floor: what a hand-written lock sends, with go-redis.
func rawRow() Row {
	return Row{
		Name: "raw",
		Note: "the floor: `SET key token NX PX ttl`, then a compare-and-delete script (`EVALSHA`), sent with go-redis; a random 128-bit token",
		New: func(env Env) (Locker, error) {
			return &rawLocker{rdb: newGoRedis(env, env.Nodes[0]), env: env}, nil
		},
	}
}

type rawLocker struct {
	rdb *redis.Client
	env Env
}

// Obtain makes one attempt: the floor is measured without contention only.
func (l *rawLocker) Obtain(ctx context.Context, key string) (Held, error) {
	token := randomToken()
	ok, err := l.rdb.SetNX(ctx, key, token, l.env.TTL).Result()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errNotObtained
	}
	return &rawHeld{rdb: l.rdb, key: key, token: token}, nil
}

func (l *rawLocker) Close() error { return l.rdb.Close() }

type rawHeld struct {
	rdb        *redis.Client
	key, token string
}

func (h *rawHeld) Release(ctx context.Context) error {
	n, err := compareAndDelete.Run(ctx, h.rdb, []string{h.key}, h.token).Int64()
	if err == nil && n == 0 {
		return errNotHeld
	}
	return err
}

// randomToken returns 128 random bits, as every library here uses.
func randomToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails, as documented
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// newGoRedis returns a go-redis client for addr at its defaults, dialing
// through env.Dial if set.
func newGoRedis(env Env, addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, Dialer: env.Dial})
}
