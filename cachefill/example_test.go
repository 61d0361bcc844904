package cachefill_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/cachefill"
)

// A hot key missed by 20 requests at once: one load runs, and every
// request gets its value.
func Example() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb) // the Client of the process's locks
	defer locker.Close()     // after the Cache: deferred calls run last first

	cache, err := cachefill.New(locker) // one per process: safe for concurrent use
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cache.Close()
	ctx := context.Background()
	defer rdb.Del(ctx, "cachefill{example:hot}:value") // the entry's key: the example runs again

	var loads atomic.Int32
	loadProduct := func(context.Context) ([]byte, error) {
		loads.Add(1)
		time.Sleep(50 * time.Millisecond) // a slow query
		return []byte(`{"id":7,"name":"console"}`), nil
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			v, err := cache.Get(ctx, "example:hot", time.Minute, loadProduct)
			if err != nil || string(v) != `{"id":7,"name":"console"}` {
				fmt.Println(string(v), err)
			}
		})
	}
	wg.Wait()
	fmt.Println("loads:", loads.Load())
	// Output:
	// loads: 1
}

type product struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

// Typed caches values of a Go type, as JSON by default; a load that finds
// no row returns ErrNotFound, which is cached for a short while too.
func ExampleTyped() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()
	cache, err := cachefill.New(locker)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cache.Close()
	products := cachefill.Typed[product]{Cache: cache}
	ctx := context.Background()

	db := map[int]product{7: {7, "console"}}
	load := func(id int) func(context.Context) (product, error) {
		return func(context.Context) (product, error) {
			p, ok := db[id]
			if !ok {
				return product{}, cachefill.ErrNotFound
			}
			return p, nil
		}
	}
	for _, id := range []int{7, 8} {
		key := fmt.Sprintf("example:product:%d", id)
		p, err := products.Get(ctx, key, time.Minute, load(id))
		switch {
		case errors.Is(err, cachefill.ErrNotFound):
			fmt.Println(id, "no such product")
		case err != nil:
			fmt.Println(err)
		default:
			fmt.Printf("%d %+v\n", id, p)
		}
		defer rdb.Del(ctx, "cachefill{"+key+"}:value")
	}
	// Output:
	// 7 {ID:7 Name:console}
	// 8 no such product
}

// A writer that changed the source invalidates the entry: readers keep
// getting the old value while one of them loads the new one.
func ExampleCache_Invalidate() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()
	cache, err := cachefill.New(locker)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cache.Close()
	ctx := context.Background()
	defer rdb.Del(ctx, "cachefill{example:price}:value")

	var mu sync.Mutex
	price := "100"
	load := func(context.Context) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		return []byte(price), nil
	}
	v, _ := cache.Get(ctx, "example:price", time.Minute, load)
	fmt.Println("before:", string(v))

	mu.Lock()
	price = "90" // the writer changes the source ...
	mu.Unlock()
	_ = cache.Invalidate(ctx, "example:price") // ... then invalidates

	for {
		v, _ = cache.Get(ctx, "example:price", time.Minute, load) // "100" until the reload is stored
		if string(v) == "90" {
			break
		}
		time.Sleep(time.Millisecond)
	}
	fmt.Println("after:", string(v))
	// Output:
	// before: 100
	// after: 90
}
