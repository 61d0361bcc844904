package faults_test

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
)

// A dlock call that its context ends while the proxy is cut names the
// refused connection as well as the context's end. The context ends as
// soon as a dial is refused, while go-redis would go on dialling for
// seconds.
func TestEndedCallNamesCut(t *testing.T) {
	t.Parallel()
	_, p := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rdb := p.Client(func(o *redis.Options) {
		o.DialerRetries = 50 // every 100ms: five seconds
	})
	rdb.AddHook(onRefused(cancel)) // before dlock's hook: it runs after it
	locker := dlock.New(rdb)
	defer locker.Close()

	p.Cut()
	defer p.Restore() // the call still dialling ends before Close
	_, err := locker.TryObtain(ctx, "job", time.Minute)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("TryObtain through a cut proxy = %v, want context canceled and connection refused", err)
	}
}

// With connections reset, go-redis retries after a pause; a call whose
// deadline ends first names the reset that an earlier call met.
func TestEndedCallNamesReset(t *testing.T) {
	t.Parallel()
	_, p := setup(t)
	rdb := p.Client(func(o *redis.Options) {
		o.MaxRetries = 1
		o.MinRetryBackoff = 500 * time.Millisecond // a call takes that long at least
		o.MaxRetryBackoff = 500 * time.Millisecond
	})
	locker := dlock.New(rdb)
	defer locker.Close()
	mustPing(t, rdb, "before ResetPeer")

	defer p.ResetPeer()()
	_, err := locker.TryObtain(context.Background(), "job", time.Minute)
	if !isConnError(err) {
		t.Fatalf("TryObtain with connections reset = %v, want a connection error", err)
	}
	_, err = locker.TryObtain(timeout(t, 20*time.Millisecond), "job", time.Minute)
	if !errors.Is(err, context.DeadlineExceeded) || !isConnError(err) {
		t.Errorf("TryObtain with a deadline, connections reset = %v, want the deadline and the connection error", err)
	}
}

// onRefused is a go-redis hook that calls f when a dial is refused. Added
// to a client before dlock.New, it runs after dlock's own hook has seen the
// refusal: go-redis runs the hook added first outermost.
type onRefused func()

func (f onRefused) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if errors.Is(err, syscall.ECONNREFUSED) {
			f()
		}
		return conn, err
	}
}
func (onRefused) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (onRefused) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
