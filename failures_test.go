package dlock_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/observe"
	"github.com/dlock-go/dlock/redistest"
)

// slowToGiveUp makes go-redis dial a refused server again every 100ms for
// five seconds before it gives up, far longer than the contexts of these
// tests: their calls end by their context, while go-redis still retries.
func slowToGiveUp(o *redis.Options) {
	o.DialerRetries = 50
	o.DialerRetryTimeout = 100 * time.Millisecond
	o.MaxRetries = -1
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

// refusedAndEnded fails the test unless err matches the context's error
// and also names the refused connection.
func refusedAndEnded(t *testing.T, what string, err, ctxErr error) {
	t.Helper()
	if !errors.Is(err, ctxErr) || !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("%s = %v, want %v and the refused connection", what, err, ctxErr)
	}
	var opErr *net.OpError
	if !errors.As(err, &opErr) || opErr.Op != "dial" {
		t.Errorf("%s = %v, want errors.As to find the dial's *net.OpError", what, err)
	}
}

// A call that its context ends while go-redis still dials a Redis that
// refuses connections names the refusal, not only the context's end: the
// first call, ended as soon as the refusal is seen, and a later one, ended
// by its deadline.
func TestEndedCallNamesRefusal(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rdb := e.srv.Client(slowToGiveUp)
	rdb.AddHook(onRefused(cancel))
	locker := lockenv.Locker(t, rdb)
	e.srv.Kill()
	defer e.srv.Start() // lets the calls still dialling end before Close

	_, err := locker.TryObtain(ctx, testenv.Key(t), time.Minute)
	refusedAndEnded(t, "TryObtain cancelled at the refusal", err, context.Canceled)
	var nodeErr *dlock.NodeError
	if !errors.As(err, &nodeErr) || nodeErr.Op != "acquire" {
		t.Errorf("TryObtain = %v, want a NodeError of the acquire", err)
	}

	// The node is still failing: a call with a short deadline names it too,
	// whether or not it dialled itself by then.
	_, err = locker.Inspect(testenv.Timeout(t, 50*time.Millisecond), testenv.Key(t))
	refusedAndEnded(t, "Inspect with a 50ms deadline", err, context.DeadlineExceeded)
}

// An Obtain that waits for a held lock and is ended by its context after
// Redis went away says all three: not obtained, the context's end, and the
// refused connection. It does not tell Observers of the refusal: the call
// that met it tells of its own failure when it ends (here, still dialling,
// it has not).
func TestEndedObtainNamesRefusal(t *testing.T) {
	t.Parallel()
	e := setup(t)
	key := testenv.Key(t)
	mustObtain(t, e.locker, key, time.Minute)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answered := make(chan struct{}, 1) // the waiter's first acquire got its reply
	rdb := e.srv.Client(slowToGiveUp)
	rdb.AddHook(onRefused(cancel))
	rdb.AddHook(onReply(func() {
		select {
		case answered <- struct{}{}:
		default:
		}
	}))
	rec := &recorder{}
	waiter := lockenv.Locker(t, rdb, dlock.WithObserver(rec))
	defer e.srv.Start()

	errc := make(chan error, 1)
	go func() {
		_, err := waiter.Obtain(ctx, key, time.Minute)
		errc <- err
	}()
	<-answered // held: the waiter waits
	e.srv.Kill()
	err := <-errc
	if !errors.Is(err, dlock.ErrNotObtained) {
		t.Errorf("Obtain = %v, want ErrNotObtained", err)
	}
	refusedAndEnded(t, "Obtain ended after Redis went away", err, context.Canceled)
	for _, ev := range rec.of(key) {
		if ev.Type == observe.EventNodeError {
			t.Errorf("node error told before any call failed: %+v", ev)
		}
	}
}

// onReply is a go-redis hook that calls f after each script call that got
// its reply.
type onReply func()

func (onReply) DialHook(next redis.DialHook) redis.DialHook { return next }
func (f onReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if name := cmd.Name(); err == nil && (name == "evalsha" || name == "eval") {
			f()
		}
		return err
	}
}
func (onReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A Redlock round that its context ends names the refusal of a node that
// had not answered yet.
func TestEndedRedlockRoundNamesRefusal(t *testing.T) {
	t.Parallel()
	srvs := redistest.NewServers(t, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var rdbs []*redis.Client
	for _, s := range srvs {
		rdb := s.Client(slowToGiveUp)
		rdb.AddHook(onRefused(cancel))
		rdbs = append(rdbs, rdb)
	}
	locker := newRedlock(t, rdbs, dlock.WithNodeTimeout(time.Minute))
	for _, s := range srvs[:2] {
		s.Kill()
		defer s.Start()
	}
	_, err := locker.TryObtain(ctx, testenv.Key(t), time.Minute)
	var qe *dlock.QuorumError
	if !errors.As(err, &qe) {
		t.Errorf("TryObtain = %v, want a QuorumError", err)
	}
	refusedAndEnded(t, "TryObtain on a Redlock with 2 of 3 nodes down", err, context.Canceled)
}

// Failures are forgotten once Redis answers again: a call that then runs
// out of time, on a paused server, names no stale refusal.
func TestRecoveredNodeNamesNoFailure(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rdb := e.srv.Client(slowToGiveUp)
	rdb.AddHook(onRefused(cancel))
	locker := lockenv.Locker(t, rdb)
	e.srv.Kill()
	if _, err := locker.TryObtain(ctx, testenv.Key(t), time.Minute); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("TryObtain on a dead Redis = %v, want the refusal", err)
	}
	e.srv.Start()
	if _, err := locker.Inspect(context.Background(), testenv.Key(t)); err != nil {
		t.Fatalf("Inspect after the restart: %v", err)
	}
	e.srv.Pause()
	defer e.srv.Resume()
	_, err := locker.Inspect(testenv.Timeout(t, 50*time.Millisecond), testenv.Key(t))
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Inspect on a paused Redis = %v, want the deadline and no refusal", err)
	}
}
