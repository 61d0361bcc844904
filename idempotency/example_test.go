package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/idempotency"
)

// forget deletes the keys under prefix.
func forget(rdb *redis.Client, prefix string) {
	ctx := context.Background()
	keys, _ := rdb.Keys(ctx, prefix+"*").Result()
	if len(keys) > 0 {
		rdb.Del(ctx, keys...)
	}
}

// chargeCard stands for a payment provider's API: it returns a receipt.
func chargeCard(_ context.Context, order string) ([]byte, error) {
	fmt.Println("charging", order)
	return []byte("receipt for " + order), nil
}

// Charge an order once, however often Do is called for it: the second call
// gets the stored receipt without charging again.
func ExampleStore_Do() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb) // the Client of the process's locks
	defer locker.Close()     // after the Store: deferred calls run last first
	store, err := idempotency.New(locker, idempotency.WithPrefix("example-do:"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	defer forget(rdb, "example-do:") // so that the example runs again the same
	ctx := context.Background()

	for range 2 {
		receipt, replayed, err := store.Do(ctx, "order:1001:charge", []byte(`{"amount":4200}`), func(ctx context.Context) ([]byte, error) {
			return chargeCard(ctx, "order 1001")
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s (replayed: %v)\n", receipt, replayed)
	}
	// Output:
	// charging order 1001
	// receipt for order 1001 (replayed: false)
	// receipt for order 1001 (replayed: true)
}

// A failure that a retry cannot change is stored with Final and replayed as
// an error; other errors free the key for a retry.
func ExampleFinal() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb) // the Client of the process's locks
	defer locker.Close()     // after the Store: deferred calls run last first
	store, err := idempotency.New(locker, idempotency.WithPrefix("example-final:"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	defer forget(rdb, "example-final:") // so that the example runs again the same
	ctx := context.Background()

	for range 2 {
		_, replayed, err := store.Do(ctx, "order:1002:charge", nil, func(context.Context) ([]byte, error) {
			fmt.Println("asking the provider")
			return nil, idempotency.Final(errors.New("card declined"))
		})
		var final *idempotency.FinalError
		fmt.Printf("%v (final: %v, replayed: %v)\n", err, errors.As(err, &final), replayed)
	}
	// Output:
	// asking the provider
	// card declined (final: true, replayed: false)
	// card declined (final: true, replayed: true)
}

// Guard a payment endpoint: a retried request gets the first response,
// marked as a replay, and the handler charges once.
func ExampleStore_Middleware() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := dlock.New(rdb) // the Client of the process's locks
	defer locker.Close()     // after the Store: deferred calls run last first
	store, err := idempotency.New(locker, idempotency.WithPrefix("example-middleware:"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	defer forget(rdb, "example-middleware:") // so that the example runs again the same

	charges := 0
	pay := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		charges++
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "charge %d", charges)
	})
	mux := http.NewServeMux()
	mux.Handle("POST /payments", store.Middleware(pay))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for range 2 {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/payments", strings.NewReader(`{"amount":4200}`))
		req.Header.Set("Idempotency-Key", `"8e03978e-40d5-43e8-bc93-6894a57f9324"`)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, string(body), "replayed:", resp.Header.Get(idempotency.ReplayHeader) == "true")
	}
	fmt.Println("charges:", charges)
	// Output:
	// 201 charge 1 replayed: false
	// 201 charge 1 replayed: true
	// charges: 1
}
