package stock

import (
	"crypto/rand"
	"encoding/base64"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// go-redis sends a command again when its reply has not come within the
// client's ReadTimeout, or its connection broke: on another connection, up
// to MaxRetries times (and on a Cluster, up to MaxRedirects times over), and
// every copy that reached Redis runs. So every call that changes the stock
// carries an id, and its script, when it changes something, records its
// reply under the id (callKey) for the resend window: a later copy finds the
// record and replies the same, changing nothing.

// resendWindow returns how long a call's record is kept: the longest time
// from its first copy's send to its last one's, by the options of rdb, and
// a second more. With go-redis's defaults it is about a minute (four sends,
// each waiting at most for a connection from the pool, a dial, a write, a
// read and a backoff), four minutes on a Cluster (four redirects of four
// sends each).
func resendWindow(rdb redis.UniversalClient) time.Duration {
	switch c := rdb.(type) {
	case *redis.Client:
		o := c.Options()
		return window(o.MaxRetries+1, o.DialTimeout, o.PoolTimeout, o.WriteTimeout, o.ReadTimeout, o.MaxRetryBackoff)
	case *redis.ClusterClient:
		o := c.Options()
		return window((o.MaxRedirects+1)*(max(o.MaxRetries, 0)+1), o.DialTimeout, o.PoolTimeout, o.WriteTimeout, o.ReadTimeout, o.MaxRetryBackoff)
	case *redis.Ring:
		o := c.Options()
		return window(o.MaxRetries+1, o.DialTimeout, o.PoolTimeout, o.WriteTimeout, o.ReadTimeout, o.MaxRetryBackoff)
	}
	// Another client: go-redis's defaults, with four times the sends.
	return window(16, 5*time.Second, 4*time.Second, 3*time.Second, 3*time.Second, 512*time.Millisecond)
}

// window returns the resend window of a client that sends a command up to
// sends times, each after waiting at most the given durations (a negative
// one does not wait; an unset one waits go-redis's default).
func window(sends int, dial, pool, write, read, backoff time.Duration) time.Duration {
	or := func(d, unset time.Duration) time.Duration {
		switch {
		case d < 0:
			return 0
		case d == 0:
			return unset
		}
		return d
	}
	read = or(read, 3*time.Second)
	each := or(dial, 5*time.Second) + or(pool, read+time.Second) + or(write, read) + read + or(backoff, 512*time.Millisecond)
	return time.Duration(max(sends, 1))*each + time.Second
}

// callIDs makes the ids of the calls of one Inventory: a random part of
// its own (96 bits) and a count, so that no two calls anywhere share one.
type callIDs struct {
	base string
	n    atomic.Uint64
}

func newCallIDs() *callIDs {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return &callIDs{base: base64.RawURLEncoding.EncodeToString(b) + "."}
}

// next returns a new id: letters, digits, '-', '_' and '.'.
func (ids *callIDs) next() string {
	return ids.base + strconv.FormatUint(ids.n.Add(1), 36)
}
