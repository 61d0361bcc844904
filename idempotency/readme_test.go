package idempotency_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/idempotency"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/redistest"
)

// docs/packages.md's section on idempotency keys shows the code of this test: the
// Middleware on a payment endpoint, and Do around a charge.
func TestReadmeChargeOnce(t *testing.T) {
	t.Parallel()
	locker := lockenv.Locker(t, redistest.NewServer(t).Client())
	var charges atomic.Int32
	payHandler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, "charge ", charges.Add(1))
	})
	accountOf := func(r *http.Request) string { return r.Header.Get("X-Account") }
	if err := readmeChargeOnce(t, locker, payHandler, accountOf, &charges); err != nil {
		t.Fatal(err)
	}
}

// readmeChargeOnce runs the code of docs/packages.md: two requests with one key, and
// two calls of Do with one key.
func readmeChargeOnce(t *testing.T, locker *dlock.Client, payHandler http.Handler, accountOf func(*http.Request) string, charges *atomic.Int32) error {
	store, err := idempotency.New(locker) // one per process, on its dlock Client
	if err != nil {
		return err // a nil or Redlock Client, or an invalid option
	}
	defer store.Close() // before locker.Close

	mux := http.NewServeMux()
	mux.Handle("POST /payments", store.Middleware(payHandler,
		idempotency.WithScope(accountOf), // whose key it is: the authenticated account
	))

	web := httptest.NewServer(mux)
	defer web.Close()
	var bodies []string
	for range 2 {
		req, _ := http.NewRequest(http.MethodPost, web.URL+"/payments", strings.NewReader(`{"amount":4200}`))
		req.Header.Set("Idempotency-Key", `"8e03978e-40d5-43e8-bc93-6894a57f9324"`)
		req.Header.Set("X-Account", "alice")
		resp, err := web.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		bodies = append(bodies, fmt.Sprint(resp.StatusCode, " ", string(b), " ", resp.Header.Get(idempotency.ReplayHeader)))
	}
	if want := []string{"201 charge 1 ", "201 charge 1 true"}; strings.Join(bodies, "|") != strings.Join(want, "|") {
		t.Errorf("two requests got %q, want %q", bodies, want)
	}

	ctx := t.Context()
	orderJSON := []byte(`{"order":1001,"amount":4200}`)
	chargeOrder := func(context.Context) ([]byte, error) { return []byte("receipt " + fmt.Sprint(charges.Add(1))), nil }
	for range 2 {
		receipt, replayed, err := store.Do(ctx, "order:1001:charge", orderJSON, func(ctx context.Context) ([]byte, error) {
			return chargeOrder(ctx) // runs once per key; its result is kept for 24 hours
		})
		if err != nil || string(receipt) != "receipt 2" {
			t.Errorf("Do = %q, %v, %v; want receipt 2", receipt, replayed, err)
		}
	}
	return nil
}

// docCode is the code of the package's doc (doc.go), as written, so that
// it compiles; TestDocCodeIsTested checks that the two agree.
func docCode(locker *dlock.Client, payHandler http.Handler) error {
	store, err := idempotency.New(locker) // locker: the process's dlock.Client
	if err != nil {
		return err
	}
	defer store.Close() // before locker.Close
	http.Handle("POST /payments", store.Middleware(payHandler))
	return nil
}

func TestDocCodeIsTested(t *testing.T) {
	_ = docCode
	testenv.DocCodeIsTested(t, 1)
}
