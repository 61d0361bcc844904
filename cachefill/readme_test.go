package cachefill_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/cachefill"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
)

// productPage returns a product's page from the cache, or renders it once
// across every instance of the service when it is missing. (docs/packages.md
// shows this function; the package's own examples are in example_test.go.)
func productPage(ctx context.Context, cache *cachefill.Cache, id string) ([]byte, error) {
	return cache.Get(ctx, "product:"+id, 10*time.Minute, func(ctx context.Context) ([]byte, error) {
		page, err := renderProduct(ctx, id) // the slow query
		if errors.Is(err, sql.ErrNoRows) {
			return nil, cachefill.ErrNotFound // remembered for 30s: no query per request
		}
		return page, err
	})
}

// renderings counts the calls of renderProduct, a stand-in for a slow
// query.
var renderings atomic.Int32

func renderProduct(_ context.Context, id string) ([]byte, error) {
	renderings.Add(1)
	time.Sleep(20 * time.Millisecond)
	if strings.HasPrefix(id, "missing") {
		return nil, sql.ErrNoRows
	}
	return []byte("<h1>product " + id + "</h1>"), nil
}

// runInstance is an instance of the service: it makes its Cache as
// docs/packages.md shows, hands it over, and keeps it until ctx ends.
func runInstance(ctx context.Context, locker *dlock.Client, serve chan<- *cachefill.Cache) error {
	cache, err := cachefill.New(locker) // one per process, on its dlock Client
	if err != nil {
		return err // cachefill.ErrNilClient or ErrInvalidOption (a Redlock Client)
	}
	defer cache.Close() // before locker.Close
	serve <- cache
	<-ctx.Done()
	return nil
}

// Twenty requests over two instances miss a product page together: it is
// rendered once. A missing product is rendered once too.
func TestReadmeProductPage(t *testing.T) {
	running, stop := context.WithCancel(t.Context())
	var instances sync.WaitGroup
	defer instances.Wait()
	defer stop()
	var caches []*cachefill.Cache
	serve := make(chan *cachefill.Cache)
	for range 2 {
		locker := lockenv.Locker(t, nil) // on a go-redis client of its own
		instances.Go(func() {
			if err := runInstance(running, locker, serve); err != nil {
				t.Error(err)
				close(serve)
			}
		})
		cache, ok := <-serve
		if !ok {
			return
		}
		caches = append(caches, cache)
	}
	renderings.Store(0)
	id := fmt.Sprintf("%s-%d", testenv.Key(t), time.Now().UnixNano())
	missing := "missing-" + id
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			page, err := productPage(t.Context(), caches[i%2], id)
			if err != nil || string(page) != "<h1>product "+id+"</h1>" {
				t.Errorf("productPage = %q, %v", page, err)
			}
		})
	}
	wg.Wait()
	if n := renderings.Load(); n != 1 {
		t.Errorf("the page was rendered %d times for 20 requests, want once", n)
	}
	for range 2 {
		if _, err := productPage(t.Context(), caches[0], missing); !errors.Is(err, cachefill.ErrNotFound) {
			t.Errorf("productPage of a missing product = %v, want ErrNotFound", err)
		}
	}
	if n := renderings.Load(); n != 2 {
		t.Errorf("%d renderings, want the missing product's once", n)
	}
}

// docCode is the code of the package's doc (doc.go), as written, so that
// it compiles; TestDocCodeIsTested checks that the two agree.
func docCode(ctx context.Context, locker *dlock.Client, db interface {
	LoadUser(ctx context.Context, id int) ([]byte, error)
}) error {
	cache, err := cachefill.New(locker) // the process's dlock.Client; one Cache per process
	if err != nil {
		return err // a nil or Redlock Client, or an invalid option
	}
	defer cache.Close() // before locker.Close

	v, err := cache.Get(ctx, "user:42", time.Minute, func(ctx context.Context) ([]byte, error) {
		return db.LoadUser(ctx, 42) // return cachefill.ErrNotFound for a missing row
	})
	_ = v
	return err
}

func TestDocCodeIsTested(t *testing.T) {
	_ = docCode
	testenv.DocCodeIsTested(t, 1)
}
