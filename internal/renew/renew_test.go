package renew

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dlock-go/dlock/internal/owner"
	"github.com/dlock-go/dlock/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// holding is a Holding whose validity is kept as a lock's: sent + ttl.
type holding struct {
	name  string
	state State
	mu    sync.Mutex
	ttl   time.Duration
	until time.Time
	gone  bool
}

func newHolding(name string, ttl time.Duration) *holding {
	return &holding{name: name, ttl: ttl, until: time.Now().Add(ttl)}
}

func (h *holding) Renewal() *State { return &h.state }
func (h *holding) Until() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.until
}
func (h *holding) TTL() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ttl
}
func (h *holding) SetTTL(ttl time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ttl = ttl
}
func (h *holding) Extend(sent time.Time, ttl time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.until = sent.Add(ttl)
}
func (h *holding) Cap(sent time.Time, ttl time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if u := sent.Add(ttl); u.Before(h.until) {
		h.until = u
	}
}
func (h *holding) Gone() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gone
}

// server answers the refreshes: each holding's answer by name, held when
// none is set. It records every batch, and every holding lost.
type server struct {
	mu      sync.Mutex
	answer  map[string]Result
	block   chan struct{} // if set, a refresh waits for it (or its ctx)
	batches [][]string
	ttls    []time.Duration // the ttl each refresh sent, in order
	lost    []string        // "name", or "name (released)" when Lost was told Redis may still hold it
	closed  []string
}

func (s *server) refresh(ctx context.Context, batch []*holding, record func([]*holding, []Result)) {
	s.mu.Lock()
	var names []string
	results := make([]Result, len(batch))
	for i, h := range batch {
		names = append(names, h.name)
		s.ttls = append(s.ttls, h.Renewal().Sent())
		r, ok := s.answer[h.name]
		if !ok {
			r = Result{Held: true}
		}
		results[i] = r
	}
	s.batches = append(s.batches, names)
	block := s.block
	s.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			for i := range results {
				results[i] = Result{Err: ctx.Err()}
			}
		}
	}
	record(batch, results)
}

// lostAndClosed returns the holdings lost and those ended by Close, so far.
func (s *server) lostAndClosed() (lost, closed []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lost), slices.Clone(s.closed)
}

func (s *server) seen() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.batches)
}

func newRenewer(own *owner.Group, s *server) *Renewer[*holding] {
	r := new(Renewer[*holding])
	r.Init(Config[*holding]{
		Refresh: s.refresh,
		Timeout: func(shortest time.Duration) time.Duration { return shortest / 6 },
		Lost: func(h *holding, _ string, release bool) {
			h.mu.Lock()
			h.gone = true
			h.mu.Unlock()
			r.Remove(h)
			s.mu.Lock()
			if release {
				s.lost = append(s.lost, h.name+" (released)")
			} else {
				s.lost = append(s.lost, h.name)
			}
			s.mu.Unlock()
		},
		Closed: func(h *holding) {
			s.mu.Lock()
			s.closed = append(s.closed, h.name)
			s.mu.Unlock()
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Owner:  own,
		Key:    func(h *holding) string { return h.name },
	})
	return r
}

// Holdings due together go out in one batch; one due a little later joins
// the batch of one that is due, and each is refreshed a third of its ttl
// after its last refresh was sent.
func TestBatchesWhatIsDueTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		own := owner.New()
		s := &server{answer: map[string]Result{}}
		r := newRenewer(own, s)
		a, b := newHolding("a", 3*time.Second), newHolding("b", 3*time.Second)
		r.Add(a)
		time.Sleep(100 * time.Millisecond) // b is due 100 ms after a: within a sixth of its ttl
		r.Add(b)
		time.Sleep(time.Second - 100*time.Millisecond)
		synctest.Wait()
		if got := s.seen(); len(got) != 1 || !slices.Equal(got[0], []string{"a", "b"}) {
			t.Fatalf("batches after a's first period = %v, want one of a and b", got)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := s.seen(); len(got) != 2 || !slices.Equal(got[1], []string{"a", "b"}) {
			t.Fatalf("batches after two periods = %v, want two of a and b", got)
		}
		if want := time.Now().Add(3 * time.Second); !a.Until().Equal(want) {
			t.Errorf("a's validity ends %v, want %v (the last refresh's send + ttl)", a.Until(), want)
		}
		own.Close()
		own.Wait()
		if _, closed := s.lostAndClosed(); len(closed) != 2 {
			t.Errorf("closed %v, want both holdings ended by Close", closed)
		}
	})
}

// A refresh that says "not held" loses the holding at once; one that fails
// is retried until the validity runs out, and then the holding is lost
// and released.
func TestNotHeldAndFailing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		own := owner.New()
		defer own.Wait()
		defer own.Close()
		s := &server{answer: map[string]Result{"taken": {}, "down": {Err: errors.New("connection refused")}}}
		r := newRenewer(own, s)
		taken, down := newHolding("taken", time.Second), newHolding("down", time.Second)
		r.Add(taken)
		r.Add(down)
		time.Sleep(time.Second/3 + time.Millisecond)
		synctest.Wait()
		if lost, _ := s.lostAndClosed(); !slices.Equal(lost, []string{"taken"}) {
			t.Fatalf("lost after the first refresh: %v, want taken only", lost)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if lost, _ := s.lostAndClosed(); !slices.Equal(lost, []string{"taken", "down (released)"}) {
			t.Fatalf("lost after the validity: %v, want taken, then down, released as it may still be held", lost)
		}
		retries := 0
		for _, batch := range s.seen() {
			if slices.Contains(batch, "down") {
				retries++
			}
		}
		// One try a ttl/3 in, then one each ttl/20 until the validity ends:
		// about 13; far from a spin, and more than one.
		if retries < 5 || retries > 20 {
			t.Errorf("down was sent %d times before it was lost, want a retry every ttl/20", retries)
		}
	})
}

// A refresh of the holding's own with a new ttl, while an automatic one
// with the old ttl is on its way, caps the validity at the earlier end and
// has the new ttl sent again once the old refresh has landed.
func TestRefreshedWhileInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		own := owner.New()
		defer own.Wait()
		defer own.Close()
		s := &server{answer: map[string]Result{}, block: make(chan struct{})}
		r := newRenewer(own, s)
		h := newHolding("h", 3*time.Second)
		r.Add(h)
		time.Sleep(time.Second)
		synctest.Wait() // the automatic refresh is on its way, blocked
		r.Refreshed(h, time.Now(), 6*time.Second)
		s.mu.Lock()
		block := s.block
		s.block = nil
		s.mu.Unlock()
		close(block)
		synctest.Wait()
		s.mu.Lock()
		defer s.mu.Unlock()
		if !slices.Equal(s.ttls, []time.Duration{3 * time.Second, 6 * time.Second}) {
			t.Errorf("ttls sent %v, want the old one, then the new one at once", s.ttls)
		}
	})
}

// Pause waits for the refresh on its way; with ctx ending first it gives up
// and renews the holding again.
func TestPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		own := owner.New()
		defer own.Wait()
		defer own.Close()
		block := make(chan struct{})
		s := &server{answer: map[string]Result{}, block: block}
		r := newRenewer(own, s)
		h := newHolding("h", 3*time.Second)
		r.Add(h)
		time.Sleep(time.Second)
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		if err := r.Pause(ctx, h); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Pause with a refresh on its way and a short ctx = %v, want the ctx's error", err)
		}
		paused := make(chan error)
		go func() { paused <- r.Pause(context.Background(), h) }()
		synctest.Wait()
		select {
		case err := <-paused:
			t.Fatalf("Pause returned %v before the refresh on its way landed", err)
		default:
		}
		close(block)
		if err := <-paused; err != nil {
			t.Fatalf("Pause = %v", err)
		}
		n := len(s.seen())
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if got := len(s.seen()); got != n {
			t.Errorf("%d batches sent after Pause, want none", got-n)
		}
	})
}

// After Close, Add refuses and Resume ends the holding.
func TestClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		own := owner.New()
		s := &server{answer: map[string]Result{}}
		r := newRenewer(own, s)
		own.Close()
		own.Wait()
		h := newHolding("h", time.Second)
		if r.Add(h) {
			t.Error("Add on a closed owner succeeded")
		}
		r.Resume(h)
		if _, closed := s.lostAndClosed(); !slices.Equal(closed, []string{"h"}) {
			t.Errorf("closed %v, want h ended by Resume", closed)
		}
	})
}
