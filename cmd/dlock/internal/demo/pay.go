package demo

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/dlock-go/dlock/idempotency"
)

// The double-clicked pay button: every click is a request to the
// payment endpoint, with the Idempotency-Key the page made for this
// payment, and only one of them may charge the customer. The endpoint is a
// real HTTP server on loopback, guarded by idempotency.Middleware: the
// first click charges, a click while it runs gets 409, and a click after it
// gets the stored response replayed.
const (
	payClicks    = 5
	payProvider  = 50 * time.Millisecond // the payment provider's answer time
	payRetention = 10 * time.Second      // the demo's keys expire soon after it
	payTimeout   = 10 * time.Second      // the longest a click waits for its answer
	payKey       = `"pay-order-1001"`
)

func doubleClickPay(ctx context.Context, d *env) result {
	chargesKey := d.key("order:1001:charges")
	defer d.cleanup(ctx, chargesKey)
	store, err := idempotency.New(d.locker, idempotency.WithPrefix(d.key("idem:")), idempotency.WithRetention(payRetention))
	if err != nil {
		return failed(err)
	}
	defer func() { _ = store.Close() }()
	mux := http.NewServeMux()
	mux.Handle("POST /orders/1001/pay", store.Middleware(d.chargeHandler(chargesKey)))
	url, stop, err := serveLoopback(mux)
	if err != nil {
		return failed(err)
	}
	defer stop()
	client := &http.Client{Timeout: payTimeout, Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	url += "/orders/1001/pay"

	answers := make([]payAnswer, payClicks)
	start := make(chan struct{}) // the clicks arrive together
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			<-start
			answers[i] = click(ctx, client, url)
		})
	}
	close(start)
	wg.Wait()
	retry := click(ctx, client, url) // the customer reloads the page: a retry
	for _, a := range append(answers, retry) {
		if a.err != nil {
			return failed(a.err)
		}
	}
	charges, err := d.getInt(ctx, chargesKey)
	if err != nil {
		return failed(err)
	}
	return payVerdict(answers, retry, charges)
}

// payVerdict checks that the customer was charged once and that every click
// got the charge's response or 409.
func payVerdict(answers []payAnswer, retry payAnswer, charges int64) result {
	var charged, replayed, conflicts int
	receipt := ""
	var problems []string
	for _, a := range answers {
		switch {
		case a.status == http.StatusCreated && !a.replayed:
			charged++
			receipt = a.body
		case a.status == http.StatusCreated:
			replayed++
		case a.status == http.StatusConflict:
			conflicts++
		default:
			problems = append(problems, fmt.Sprintf("a click got %d %s", a.status, strings.TrimSpace(a.body)))
		}
	}
	for _, a := range append(answers, retry) {
		if a.status == http.StatusCreated && a.body != receipt {
			problems = append(problems, fmt.Sprintf("a click got %s, not the charge's %s", a.body, receipt))
		}
	}
	if !retry.replayed {
		problems = append(problems, fmt.Sprintf("the retry got %d, not the replayed receipt", retry.status))
	}
	if charges != 1 {
		problems = append(problems, fmt.Sprintf("the customer was charged %d times", charges))
	}
	happened := fmt.Sprintf("%d clicks over HTTP: %d charged, %d got 409", payClicks, charged, conflicts)
	if replayed > 0 {
		happened += fmt.Sprintf(", %d replayed", replayed)
	}
	happened += "\na retry after it got the receipt replayed"
	return verdict(happened, "one charge", problems)
}

// chargeHandler charges the order: it asks the provider, counts the charge,
// and answers 201 with the receipt.
func (d *env) chargeHandler(chargesKey string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := sleep(r.Context(), payProvider); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		n, err := d.rdb.Incr(r.Context(), chargesKey).Result()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"order":1001,"charge":%d}`, n)
	})
}

// payAnswer is what a click got.
type payAnswer struct {
	status   int
	replayed bool
	body     string
	err      error
}

// click sends one click: a POST with the payment's Idempotency-Key.
func click(ctx context.Context, client *http.Client, url string) payAnswer {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"amount":4200}`))
	if err != nil {
		return payAnswer{err: err}
	}
	req.Header.Set(idempotency.KeyHeader, payKey)
	resp, err := client.Do(req)
	if err != nil {
		return payAnswer{err: err}
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return payAnswer{status: resp.StatusCode, replayed: resp.Header.Get(idempotency.ReplayHeader) == "true", body: string(body), err: err}
}

// serveLoopback serves h on a free 127.0.0.1 port. stop shuts the server
// down and waits for it.
func serveLoopback(h http.Handler) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("dlock demo: cannot listen on loopback: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: payTimeout}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln) // http.ErrServerClosed, once stop shuts it down
	}()
	stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), payTimeout)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-served
	}
	return "http://" + ln.Addr().String(), stop, nil
}
