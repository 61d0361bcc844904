package batch_test

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/dlock-go/dlock/internal/batch"
	"github.com/dlock-go/dlock/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m)
}

// recorder is a run function that records its batches, and holds up the
// batch of any call in hold until that call's channel is closed.
type recorder struct {
	mu      sync.Mutex
	batches [][]int
	hold    map[int]chan struct{}
}

func (r *recorder) run(_ context.Context, calls []int) {
	r.mu.Lock()
	r.batches = append(r.batches, slices.Clone(calls))
	var wait []chan struct{}
	for _, c := range calls {
		if ch, ok := r.hold[c]; ok {
			wait = append(wait, ch)
		}
	}
	r.mu.Unlock()
	for _, ch := range wait {
		<-ch
	}
}

func (r *recorder) got() [][]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.batches)
}

// loneRecorder is an alone function that records its calls, and holds up
// call 0 until hold is closed.
type loneRecorder struct {
	mu    sync.Mutex
	calls []int
	hold  chan struct{}
}

func (l *loneRecorder) run(_ context.Context, call int) {
	l.mu.Lock()
	l.calls = append(l.calls, call)
	l.mu.Unlock()
	if call == 0 {
		<-l.hold
	}
}

func (l *loneRecorder) got() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// laneHeld returns a Batcher of one lane, held by call 0 (through alone)
// until lone.hold is closed, and the recorders of its functions. Call it
// in a synctest bubble.
func laneHeld() (*loneRecorder, *recorder, *batch.Batcher[int]) {
	lone, r := &loneRecorder{hold: make(chan struct{})}, &recorder{}
	b := batch.New(1, lone.run, r.run)
	go b.Do(context.Background(), 0)
	synctest.Wait()
	return lone, r, b
}

// A lone call runs at once, alone, on the caller's goroutine.
func TestLoneCall(t *testing.T) {
	var r recorder
	b := batch.New(2, nil, r.run)
	for i := range 3 {
		b.Do(context.Background(), i) // returns only once run returned
	}
	if got, want := r.got(), [][]int{{0}, {1}, {2}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("batches %v, want %v", got, want)
	}
}

// With an alone function, a call that finds a lane free goes through it,
// and only the calls that queued go through run, together.
func TestAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lone, r, b := laneHeld()
		ctx := context.Background()
		for call := 1; call < 4; call++ {
			go b.Do(ctx, call)
			synctest.Wait()
		}
		if b.Busy() != 1 || b.Queued() != 3 {
			t.Fatalf("busy %d, queued %d; want the lane busy and 3 calls queued", b.Busy(), b.Queued())
		}
		close(lone.hold)
		synctest.Wait()
		b.Do(ctx, 4) // the lane is free again: alone
		if alone, want := lone.got(), []int{0, 4}; !slices.Equal(alone, want) {
			t.Errorf("alone ran %v, want %v", alone, want)
		}
		if got, want := r.got(), [][]int{{1, 2, 3}}; !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("batches %v, want %v", got, want)
		}
	})
}

// A call that queued alone, and finds itself the whole batch when a lane
// frees, goes through alone too: a batch of one is no batch.
func TestQueuedAloneGoesAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lone, r, b := laneHeld()
		ctx := context.Background()
		done := make(chan struct{})
		go func() {
			b.Do(ctx, 1)
			close(done)
		}()
		synctest.Wait()
		if b.Queued() != 1 {
			t.Fatalf("queued %d, want 1", b.Queued())
		}
		close(lone.hold)
		<-done
		if alone, want := lone.got(), []int{0, 1}; !slices.Equal(alone, want) {
			t.Errorf("alone ran %v, want %v", alone, want)
		}
		if got := r.got(); len(got) != 0 {
			t.Errorf("batches %v, want none", got)
		}
	})
}

// Calls that find every lane busy queue, and go out together when a lane
// frees, in the order they came; each Do returns once its batch has run.
func TestQueuedCallsGoTogetherInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		first, second := make(chan struct{}), make(chan struct{})
		r := recorder{hold: map[int]chan struct{}{0: first, 1: second}}
		b := batch.New(2, nil, r.run)
		ctx := context.Background()
		var done sync.Map // call -> the batches run when its Do returned
		do := func(call int) {
			go func() {
				b.Do(ctx, call)
				done.Store(call, len(r.got()))
			}()
			synctest.Wait() // it is in its lane, or queued, before the next comes
		}
		do(0) // both lanes busy
		do(1)
		for call := 2; call < 7; call++ {
			do(call)
		}
		if got := r.got(); len(got) != 2 {
			t.Fatalf("batches %v with both lanes held, want the two lone calls only", got)
		}
		if _, ok := done.Load(2); ok {
			t.Fatal("a queued call returned before its batch ran")
		}
		close(first) // its lane goes to call 2, with the whole queue
		synctest.Wait()
		do(7) // lane 1 is held by call 1 still, lane 2 is free again
		close(second)
		synctest.Wait()

		want := [][]int{{0}, {1}, {2, 3, 4, 5, 6}, {7}}
		if got := r.got(); !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("batches %v, want %v", got, want)
		}
		for call := 2; call < 7; call++ {
			if n, ok := done.Load(call); !ok || n.(int) < 3 {
				t.Errorf("call %d returned after %v batches, want after its own (the third)", call, n)
			}
		}
	})
}

// Many callers at once: every call runs exactly once, and never more lanes
// than allowed at a time.
func TestConcurrentCalls(t *testing.T) {
	const lanes, callers, perCaller = 2, 50, 20
	var mu sync.Mutex
	running, most := 0, 0
	seen := make(map[int]int)
	b := batch.New(lanes, nil, func(_ context.Context, calls []int) {
		mu.Lock()
		running++
		most = max(most, running)
		for _, c := range calls {
			seen[c]++
		}
		mu.Unlock()
		runtime.Gosched() // let other lanes start meanwhile, if they may
		mu.Lock()
		running--
		mu.Unlock()
	})
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range perCaller {
				b.Do(context.Background(), c*perCaller+i)
			}
		})
	}
	wg.Wait()
	if len(seen) != callers*perCaller {
		t.Errorf("%d calls ran, want %d", len(seen), callers*perCaller)
	}
	for c, n := range seen {
		if n != 1 {
			t.Errorf("call %d ran %d times", c, n)
		}
	}
	if most > lanes {
		t.Errorf("%d batches ran at once, want at most %d", most, lanes)
	}
}

// Fewer than one lane is one lane.
func TestAtLeastOneLane(t *testing.T) {
	var r recorder
	b := batch.New(0, nil, r.run)
	b.Do(context.Background(), 1)
	if got := r.got(); len(got) != 1 {
		t.Errorf("batches %v, want one", got)
	}
}
