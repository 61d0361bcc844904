package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// batchEnv is a Client on one redis-server, with a hook that records the
// pipelines its Redis client sends, and the means to make calls queue: a
// batch forms only while every lane of the node is busy.
type batchEnv struct {
	srv   *redistest.Server
	rdb   *redis.Client
	c     *Engine
	n     *node
	pipes *pipeRecorder
	// laneErrOK, if set, tells an error a lane's call (occupyLanes) may
	// end with in the test.
	laneErrOK func(error) bool
}

func newBatchEnv(t *testing.T, opts ...func(*redis.Options)) *batchEnv {
	t.Helper()
	srv := redistest.NewServer(t)
	rdb := srv.Client(opts...)
	pipes := &pipeRecorder{}
	rdb.AddHook(pipes)
	c := newTestEngine(t, rdb)
	t.Cleanup(func() { c.Close() })
	return &batchEnv{srv: srv, rdb: rdb, c: c, n: c.node, pipes: pipes}
}

// occupyLanes pauses the server and has a call hang in each lane of the
// node, so that the next calls queue; Resume lets them all through. The
// returned function waits for the lanes' calls.
func (e *batchEnv) occupyLanes(t *testing.T) (wait func()) {
	t.Helper()
	return occupyLanes(t, e.c, e.srv, "", e.laneErrOK)
}

// occupyLanes pauses srv and has a call of c on a key named after prefix
// hang in each lane of c's node, which must send those keys to srv. A
// lane's call may end with an error that errOK (if not nil) accepts.
func occupyLanes(t *testing.T, c *Engine, srv *redistest.Server, prefix string, errOK func(error) bool) (wait func()) {
	t.Helper()
	srv.Pause()
	var wg sync.WaitGroup
	for i := range batchLanes {
		a := c.newAttempt(KindLock, lockKeys(prefix+"lane:"+string(rune('a'+i))), time.Minute, nil, Config{})
		wg.Go(func() {
			if _, err := c.node.run(context.Background(), a.op()); err != nil && (errOK == nil || !errOK(err)) {
				t.Errorf("a lane's call: %v", err)
			}
		})
	}
	testenv.Eventually(t, 10*time.Second, "every lane busy", func() bool { return c.node.batch.Busy() == batchLanes })
	return wg.Wait
}

// waitQueued waits until n calls are queued.
func (e *batchEnv) waitQueued(t *testing.T, n int) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, "calls queued", func() bool { return e.n.batch.Queued() == n })
}

// pipeRecorder records the names of the commands of every pipeline of
// scripts (not go-redis's own, which set up a connection).
type pipeRecorder struct {
	mu    sync.Mutex
	pipes [][]string
}

func (p *pipeRecorder) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (p *pipeRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (p *pipeRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		names := make([]string, len(cmds))
		for i, cmd := range cmds {
			names[i] = cmd.Name()
		}
		if names[0] == "eval" || names[0] == "evalsha" {
			p.mu.Lock()
			p.pipes = append(p.pipes, names)
			p.mu.Unlock()
		}
		return next(ctx, cmds)
	}
}

func (p *pipeRecorder) recorded() [][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pipes
}

// Three calls of one Lock queued in order go out as one pipeline and run
// in that order: the refresh before the TTL (which sees the refreshed ttl)
// and the release last. The server lost its scripts meanwhile, so the batch
// is sent again with EVAL, as one pipeline too.
func TestBatchCallsOfOneLock(t *testing.T) {
	t.Parallel()
	e := newBatchEnv(t)
	ctx := context.Background()
	lock, err := e.c.TryObtain(ctx, "batch:one", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	lanes := e.occupyLanes(t)
	var refreshErr, ttlErr, releaseErr error
	var ttl time.Duration
	var wg sync.WaitGroup
	wg.Go(func() { refreshErr = lock.Refresh(ctx, time.Hour) })
	e.waitQueued(t, 1)
	wg.Go(func() { ttl, ttlErr = lock.TTL(ctx) })
	e.waitQueued(t, 2)
	wg.Go(func() { releaseErr = lock.Release(ctx) })
	e.waitQueued(t, 3)
	e.srv.Resume()
	wg.Wait()
	lanes()

	if refreshErr != nil || ttlErr != nil || releaseErr != nil {
		t.Fatalf("Refresh: %v, TTL: %v, Release: %v", refreshErr, ttlErr, releaseErr)
	}
	if ttl <= 10*time.Second {
		t.Errorf("TTL = %v, want the refreshed hour: the batch ran out of order", ttl)
	}
	if n := e.rdb.Exists(ctx, "batch:one").Val(); n != 0 {
		t.Errorf("the lock's key is still there after Release")
	}
	want := [][]string{{"evalsha", "evalsha", "evalsha"}, {"eval", "eval", "eval"}}
	if got := e.pipes.recorded(); !equalPipes(got, want) {
		t.Errorf("pipelines = %v, want %v", got, want)
	}
}

// A release queued behind its own acquire, in one batch: the acquire takes
// the lock, the release then finds it ours and frees it.
func TestBatchReleaseBehindItsAcquire(t *testing.T) {
	t.Parallel()
	e := newBatchEnv(t)
	ctx := context.Background()
	a := e.c.newAttempt(KindLock, queueKeys("batch:pair"), time.Minute, nil, Config{})
	lanes := e.occupyLanes(t)
	var acq, rel reply
	var acqErr, relErr error
	var wg sync.WaitGroup
	wg.Go(func() { acq, acqErr = e.n.run(ctx, a.op()) })
	e.waitQueued(t, 1)
	wg.Go(func() { rel, relErr = e.n.run(ctx, a.undo(false)) })
	e.waitQueued(t, 2)
	e.srv.Resume()
	wg.Wait()
	lanes()

	if acqErr != nil || acq.code != acquired {
		t.Fatalf("acquire = %+v, %v; want acquired", acq, acqErr)
	}
	if relErr != nil || rel.code != ours {
		t.Fatalf("release = %+v, %v; want ours", rel, relErr)
	}
	if n := e.rdb.Exists(ctx, "batch:pair").Val(); n != 0 {
		t.Errorf("the lock's key is still there after its release")
	}
	// The lanes loaded the acquire script, not the release's.
	want := [][]string{{"evalsha", "evalsha"}, {"eval"}}
	if got := e.pipes.recorded(); !equalPipes(got, want) {
		t.Errorf("pipelines = %v, want %v", got, want)
	}
}

// A caller whose context ends while its acquire waits in the queue gets the
// context's error at once; the acquire still goes out with the batch, and
// the lock it takes is released in the background.
func TestBatchQueuedCallCancelled(t *testing.T) {
	t.Parallel()
	e := newBatchEnv(t)
	lanes := e.occupyLanes(t)
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() {
		_, err := e.c.TryObtain(ctx, "batch:cancelled", time.Minute)
		result <- err
	}()
	e.waitQueued(t, 1)
	cancel()
	if err := <-result; !errors.Is(err, context.Canceled) {
		t.Fatalf("TryObtain = %v, want context.Canceled", err)
	}
	e.srv.Resume()
	lanes()
	check := context.Background()
	testenv.Eventually(t, 10*time.Second, "the late acquire taken and released", func() bool {
		// The release marker outlives the release: it shows the acquire ran.
		marker := "dlock:freed" + sideKey(fenceKind, "batch:cancelled")[len("dlock:"+fenceKind):] + ":*"
		return len(e.rdb.Keys(check, marker).Val()) == 1 &&
			e.rdb.Exists(check, "batch:cancelled").Val() == 0
	})
}

// A batch whose connection breaks half-way: the server was killed while it
// ran the second call (a script that spins). Each call gets an error of its
// own, naming its own key and the node, that says its reply was lost, so
// that an acquire among them is taken back: go-redis gives the connection's
// error to every command of the pipeline, the first one too, although its
// reply may have come. The client does not retry, which would hide the
// break behind a refused dial.
func TestBatchConnectionBreaksMidway(t *testing.T) {
	t.Parallel()
	e := newBatchEnv(t, func(o *redis.Options) { o.MaxRetries = -1 })
	ctx := context.Background()
	admin := e.srv.Client()
	// BUSY replies after 10ms of a script tell the test that the server is
	// in the spinning script.
	if err := admin.ConfigSet(ctx, "busy-reply-threshold", "10").Err(); err != nil {
		t.Fatal(err)
	}
	spinScript := newScript("while true do end")
	if err := admin.ScriptLoad(ctx, spinScript.src).Err(); err != nil { // the batch's EVALSHA spins
		t.Fatal(err)
	}
	spin := withArgs(op{name: "spin", keys: []string{"batch:spin"}}, spinScript, nil, noArgv{})
	// A lane's call, written to its connection while the server was paused,
	// may be read only once the batch's script spins, and get BUSY.
	e.laneErrOK = func(err error) bool { return strings.Contains(err.Error(), "BUSY") }
	first := e.c.newAttempt(KindLock, lockKeys("batch:first"), time.Minute, nil, Config{})
	third := e.c.newAttempt(KindLock, lockKeys("batch:third"), time.Minute, nil, Config{})

	lanes := e.occupyLanes(t)
	type outcome struct {
		r   reply
		err error
	}
	outcomes := make([]outcome, 3)
	var wg sync.WaitGroup
	for i, o := range []op{first.op(), spin, third.op()} {
		wg.Go(func() {
			r, err := e.n.run(ctx, o)
			outcomes[i] = outcome{r, err}
		})
		e.waitQueued(t, i+1)
	}
	e.srv.Resume()
	lanes()
	testenv.Eventually(t, 10*time.Second, "the server busy in the script", func() bool {
		return redis.HasErrorPrefix(admin.Ping(ctx).Err(), "BUSY")
	})
	e.srv.Kill()
	wg.Wait()

	for i, key := range []string{"batch:first", "batch:spin", "batch:third"} {
		var nodeErr *NodeError
		if !errors.As(outcomes[i].err, &nodeErr) || nodeErr.Key != key || nodeErr.Node != e.srv.Addr() || !replyLost(outcomes[i].err) {
			t.Errorf("call %d = %+v, %v; want a lost reply, as a NodeError of %q on %s", i, outcomes[i].r, outcomes[i].err, key, e.srv.Addr())
		}
	}
}

// Many goroutines on a few keys through one Client: whatever the batches,
// a key has one holder at a time, and its fences only grow.
func TestBatchManyGoroutines(t *testing.T) {
	t.Parallel()
	manyGoroutines(t, newBatchEnv(t).c, true)
}

// The same on a Redlock of three nodes, where each node batches the
// SET NX acquires and the release scripts of the quorum's rounds.
func TestBatchManyGoroutinesRedlock(t *testing.T) {
	t.Parallel()
	var nodes []redis.UniversalClient
	for _, srv := range redistest.NewServers(t, 3) {
		nodes = append(nodes, srv.Client())
	}
	// A node timeout far above the default's 100ms: this is about who holds,
	// not about how fast, and -race on a busy machine is slow.
	c := newTestQuorum(nodes, 5*time.Second)
	t.Cleanup(c.Close)
	manyGoroutines(t, c, false)
}

// manyGoroutines has 64 goroutines take and release 4 keys through c, and
// checks that a key never has two holders at once and, if fences, that
// its fences grow.
func manyGoroutines(t *testing.T, c *Engine, fences bool) {
	ctx := context.Background()
	const keys, goroutines, cycles = 4, 64, 30
	var holders [keys]atomic.Int32
	var last [keys]int64 // written by the holder only
	var obtained atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			k := g % keys
			key := "batch:many:" + string(rune('a'+k))
			for range cycles {
				lock, err := c.TryObtain(ctx, key, time.Minute)
				if errors.Is(err, ErrNotObtained) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				if !holders[k].CompareAndSwap(0, 1) {
					t.Errorf("%s: two holders at once", key)
				}
				if fences && lock.Fence() <= last[k] {
					t.Errorf("%s: fence %d after %d", key, lock.Fence(), last[k])
				}
				last[k] = lock.Fence()
				obtained.Add(1)
				holders[k].Store(0)
				if err := lock.Release(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if obtained.Load() == 0 {
		t.Fatal("no lock obtained")
	}
}

func equalPipes(got, want [][]string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if len(got[i]) != len(want[i]) {
			return false
		}
		for j := range got[i] {
			if got[i][j] != want[i][j] {
				return false
			}
		}
	}
	return true
}

// noArgv is the ARGV of a script that takes none.
type noArgv struct{}

func (noArgv) count() int { return 0 }

func (noArgv) appendTo(args []any) []any { return args }
