package demo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/redis/go-redis/v9"
)

// A worker cut off from Redis in the middle of its job (a network
// partition): its lock can no longer be renewed, and expires. The library
// ends the lock when its validity runs out (Lock.Until), which is ahead of
// the key's expiry in Redis by a drift margin, and cancels the job's context
// with ErrLockLost: the worker stops before another can take the lock.
// Should it write all the same, the fence makes the resource refuse it.
const (
	// cutTTL is the lock's ttl. A stops about the drift margin (one
	// percent of the ttl plus 2ms, as in Lock.Until), 22ms for two seconds,
	// before the key expires; on
	// a busy machine (the tests with the race detector, on two CPUs) A was
	// seen to take 10ms to notice.
	cutTTL   = 2 * time.Second
	cutWaitB = 5 * time.Second // the longest B waits for the lock
)

// errCutOff is what every command of the worker cut off from Redis gets.
var errCutOff = errors.New("demo: cut off from Redis")

// cutoff is a go-redis hook that, once cut, fails every command at once,
// as a network partition would after its timeouts.
type cutoff struct{ cut atomic.Bool }

// fencedStore stands for the resource a lock protects: it refuses a write
// whose fence is lower than one it has already accepted.
type fencedStore struct{ highest int64 }

func (s *fencedStore) write(f int64) (accepted bool) {
	if f < s.highest {
		return false
	}
	s.highest = f
	return true
}

func (c *cutoff) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if c.cut.Load() {
			return nil, errCutOff
		}
		return next(ctx, network, addr)
	}
}

func (c *cutoff) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if c.cut.Load() {
			cmd.SetErr(errCutOff)
			return errCutOff
		}
		return next(ctx, cmd)
	}
}

func (c *cutoff) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if c.cut.Load() {
			for _, cmd := range cmds {
				cmd.SetErr(errCutOff)
			}
			return errCutOff
		}
		return next(ctx, cmds)
	}
}

// takeover is worker B waiting for the lock that A holds.
type takeover struct {
	lock *dlock.Lock
	at   time.Time // when B got it
	err  error
}

func lostLock(ctx context.Context, d *env) result {
	key := d.key("job:cut-off")
	var cut cutoff
	rdbA := newClientLike(d.rdb) // A's own connections to the same Redis
	rdbA.AddHook(&cut)
	defer rdbA.Close()
	lockerA := dlock.New(rdbA)
	defer lockerA.Close() // before rdbA.Close

	var store fencedStore
	var fenceA int64
	var stoppedA time.Time // when A's job saw its context cancelled
	var cause error        // why
	b := make(chan takeover, 1)
	errA := lockerA.Do(ctx, key, cutTTL, func(work context.Context) error {
		lock, _ := dlock.LockFromContext(work)
		if fenceA = lock.Fence(); fenceA == 0 { // A starts its work with its fence
			return errors.New("worker A got no fence")
		}
		store.write(fenceA)
		cut.cut.Store(true)
		go func() { b <- d.takeOver(ctx, key) }()
		<-work.Done() // A's job goes on until told to stop
		stoppedA, cause = time.Now(), context.Cause(work)
		return nil
	})
	if fenceA == 0 {
		return failed(errA) // A did not get as far as the cut
	}
	taken := <-b
	if taken.err != nil {
		return failed(fmt.Errorf("worker B could not take the lock after A lost it: %w", taken.err))
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = taken.lock.Release(ctx)
	}()
	bWrote := store.write(taken.lock.Fence())
	aWrote := store.write(fenceA) // A writes late all the same

	lead := taken.at.Sub(stoppedA)
	happened := fmt.Sprintf("A cut off from Redis mid-job: lock lost, job\ncancelled %v before B took the lock over;\nA's late write: %s",
		lead.Round(time.Millisecond), writeOutcome(aWrote))
	var problems []string
	if !errors.Is(cause, dlock.ErrLockLost) || !errors.Is(errA, dlock.ErrLockLost) {
		problems = append(problems, fmt.Sprintf("A's job was stopped by %v, and Do returned %v; want ErrLockLost", cause, errA))
	}
	if lead <= 0 {
		problems = append(problems, fmt.Sprintf("B took the lock %v before A's job was stopped", (-lead).Round(time.Millisecond)))
	}
	if aWrote || !bWrote {
		problems = append(problems, fmt.Sprintf("fence of A %d not below B's %d", fenceA, taken.lock.Fence()))
	}
	return verdict(happened, "A stopped before B took over", problems)
}

// takeOver is worker B: it waits for the lock on key, and says when it got it.
func (d *env) takeOver(ctx context.Context, key string) takeover {
	ctx, cancel := context.WithTimeout(ctx, cutWaitB)
	defer cancel()
	lock, err := d.locker.Obtain(ctx, key, cutTTL)
	return takeover{lock: lock, at: time.Now(), err: err}
}

// newClientLike returns a new client of the server that rdb talks to, with
// connections of its own. (rdb's Options cannot be copied for that: go-redis
// keeps state of its client in them.)
func newClientLike(rdb *redis.Client) *redis.Client {
	o := rdb.Options()
	return redis.NewClient(&redis.Options{
		Network:      o.Network,
		Addr:         o.Addr,
		ClientName:   o.ClientName,
		Protocol:     o.Protocol,
		Username:     o.Username,
		Password:     o.Password,
		DB:           o.DB,
		TLSConfig:    o.TLSConfig,
		DialTimeout:  o.DialTimeout,
		ReadTimeout:  o.ReadTimeout,
		WriteTimeout: o.WriteTimeout,
	})
}
