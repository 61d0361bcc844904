package round

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dlock-go/dlock/internal/owner"
	"github.com/dlock-go/dlock/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// node answers after its delay, with its name; it records what it ran.
type node struct {
	name  string
	delay time.Duration
	err   error
	mu    sync.Mutex
	ran   []string
}

func (n *node) run(_ context.Context, o string) (string, error) {
	time.Sleep(n.delay)
	n.mu.Lock()
	n.ran = append(n.ran, o)
	n.mu.Unlock()
	return n.name, n.err
}

func (n *node) seen() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.ran)
}

var errClosed = errors.New("closed")

func newPool(own *owner.Group, nodes ...*node) *Pool[*node, string, string] {
	return New(Config[*node, string, string]{
		Nodes:   nodes,
		Timeout: time.Second,
		Run:     func(n *node, ctx context.Context, o string) (string, error) { return n.run(ctx, o) },
		Failing: func(n *node) error { return n.err },
		Owner:   own,
		Closed:  errClosed,
	})
}

// A round returns as soon as decided says so; the calls it did not wait
// for still run to their end, and the node timeout ends a round whose
// nodes are too slow.
func TestRoundDecidesEarlyAndTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		own := owner.New()
		defer own.Wait()
		defer own.Close()
		fast1, fast2 := &node{name: "fast1", delay: time.Millisecond}, &node{name: "fast2", delay: 2 * time.Millisecond}
		slow := &node{name: "slow", delay: 3 * time.Second}
		p := newPool(own, fast1, fast2, slow)
		start := time.Now()
		votes, wg := p.Round(context.Background(), "op", nil, nil, func(votes []Vote[string]) bool {
			n := 0
			for _, v := range votes {
				if v.Answered {
					n++
				}
			}
			return n >= 2
		})
		if took := time.Since(start); took != 2*time.Millisecond {
			t.Errorf("round took %v, want 2ms: the second answer decides it", took)
		}
		if !votes[0].Answered || !votes[1].Answered || votes[2].Answered || votes[1].R != "fast2" {
			t.Errorf("votes %+v, want fast1 and fast2 answered, slow not", votes)
		}
		wg.Wait()
		if !slices.Equal(slow.seen(), []string{"op"}) {
			t.Errorf("slow ran %v, want the op, run to its end after the round", slow.seen())
		}
		start = time.Now()
		votes, _ = p.Round(context.Background(), "op2", nil, nil, nil)
		if took := time.Since(start); took != time.Second {
			t.Errorf("round with a slow node took %v, want the node timeout", took)
		}
		if votes[2].Answered {
			t.Errorf("slow answered %+v before the timeout", votes[2])
		}
		time.Sleep(3 * time.Second) // let slow's call end before Close
	})
}

// Only the nodes in only are asked; a node that had not answered an
// earlier round is asked only after it has (Stragglers), so a later call
// never overtakes an earlier one on it.
func TestOnlyAndStragglers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		own := owner.New()
		defer own.Wait()
		defer own.Close()
		a, b := &node{name: "a"}, &node{name: "b", delay: 2 * time.Second}
		p := newPool(own, a, b)
		votes, wg := p.Round(context.Background(), "acquire", nil, nil, nil)
		after := NewStragglers(wg, votes)
		if after == nil || after.of(0) != nil || after.of(1) == nil {
			t.Fatalf("stragglers of votes %+v: want b only", votes)
		}
		p.Round(context.Background(), "release", []bool{false, true}, after, nil)
		wg.Wait()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if got := a.seen(); !slices.Equal(got, []string{"acquire"}) {
			t.Errorf("a ran %v, want only the acquire", got)
		}
		if got := b.seen(); !slices.Equal(got, []string{"acquire", "release"}) {
			t.Errorf("b ran %v, want the acquire, then the release", got)
		}
		if NewStragglers(wg, []Vote[string]{{Answered: true}}) != nil {
			t.Error("stragglers of a round that all answered: want nil")
		}
	})
}

// A round cut by ctx returns at once, with the failure of each node that
// did not answer; after the owner closes, a round sends nothing.
func TestRoundCancelledAndClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		own := owner.New()
		down := errors.New("connection refused")
		n := &node{name: "n", delay: 500 * time.Millisecond, err: down}
		p := newPool(own, n)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		votes, wg := p.Round(ctx, "op", nil, nil, nil)
		if votes[0].Answered || !errors.Is(votes[0].Failing, down) {
			t.Errorf("vote of a round cut by ctx = %+v, want unanswered, failing with the node's failure", votes[0])
		}
		wg.Wait()
		own.Close()
		own.Wait()
		votes, _ = p.Round(context.Background(), "late", nil, nil, nil)
		if !votes[0].Answered || !errors.Is(votes[0].Err, errClosed) {
			t.Errorf("vote after Close = %+v, want the Closed error", votes[0])
		}
		if got := n.seen(); !slices.Equal(got, []string{"op"}) {
			t.Errorf("n ran %v, want nothing after Close", got)
		}
	})
}
