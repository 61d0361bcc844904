package demo

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/cachefill"
)

// The hot cache key that expires: every request misses at once,
// and without care every one of them queries the database. Package
// cachefill lets one of them load it, across instances, and wakes the
// others when its value is stored.
const (
	hotInstances = 5
	hotRequests  = 50 // over the instances
	hotLoad      = 200 * time.Millisecond
	hotTTL       = time.Minute
)

func hotKeyMiss(ctx context.Context, d *env) result {
	prefix := d.key("cache")
	const key = "product:42"
	defer d.cleanup(ctx, prefix+"{"+key+"}:value") // the entry's key (package cachefill's doc)
	caches := make([]*cachefill.Cache, hotInstances)
	for i := range caches {
		// A generous Redis timeout: on a busy machine, a slow answer of the
		// embedded Redis must not count as Redis down (a direct load).
		locker := dlock.New(d.rdb) // an instance's own Client
		defer func() { _ = locker.Close() }()
		cache, err := cachefill.New(locker, cachefill.WithPrefix(prefix), cachefill.WithRedisTimeout(10*time.Second))
		if err != nil {
			return failed(err)
		}
		caches[i] = cache
		defer func() { _ = cache.Close() }()
	}

	var loads atomic.Int32
	load := func(ctx context.Context) ([]byte, error) {
		loads.Add(1)
		if err := sleep(ctx, hotLoad); err != nil { // the slow query
			return nil, err
		}
		return []byte("the product page"), nil
	}
	start := time.Now()
	took := make([]time.Duration, hotRequests)
	err := together(hotRequests, func(i int) error {
		v, err := caches[i%hotInstances].Get(ctx, key, hotTTL, load)
		if err == nil && string(v) != "the product page" {
			err = fmt.Errorf("request %d got %q", i, v)
		}
		took[i] = time.Since(start)
		return err
	})
	if err != nil {
		return failed(err)
	}
	slowest := time.Duration(0)
	for _, d := range took {
		slowest = max(slowest, d)
	}
	happened := fmt.Sprintf("%d requests on %d instances miss a key whose\nload takes %v: %d load; all served within %v",
		hotRequests, hotInstances, hotLoad, loads.Load(), slowest.Round(time.Millisecond))
	var problems []string
	if n := loads.Load(); n != 1 {
		problems = append(problems, fmt.Sprintf("the key was loaded %d times", n))
	}
	return verdict(happened, "one load", problems)
}
