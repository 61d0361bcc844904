package wake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/dlock-go/dlock/internal/slot"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/redistest"
)

// newTestSubscriber returns a subscriber on rdb that is closed when the test
// ends, before rdb and its server. Its channels do not linger: the last
// stop unsubscribes at once (TestSubscriberLinger tests lingering).
func newTestSubscriber(t *testing.T, rdb redis.UniversalClient, logger *slog.Logger) *Subscriber {
	t.Helper()
	s := New(rdb, logger)
	s.linger = 0
	t.Cleanup(s.Close)
	return s
}

// lingering returns a subscriber whose channels linger 300 ms, and a
// channel it has just stopped watching, which lingers.
func lingering(t *testing.T) (*redis.Client, *Subscriber, string) {
	t.Helper()
	rdb := redistest.NewServer(t).Client()
	s := newTestSubscriber(t, rdb, nil)
	s.linger = 300 * time.Millisecond
	channel := subChannel(t, "a")
	w, err := s.Watch(subCtx(t, 5*time.Second), channel, "")
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	return rdb, s, channel
}

// A channel stays subscribed a while after its last watcher left, so the
// waiters of a busy lock do not SUBSCRIBE and UNSUBSCRIBE each time; then
// it goes.
func TestSubscriberLinger(t *testing.T) {
	t.Parallel()
	rdb, s, channel := lingering(t)
	again := s.WatchIfSubscribed(channel, "")
	if again == nil {
		t.Fatal("the channel did not linger after its last watcher left")
	}
	again.Stop()
	if n := rdb.PubSubNumSub(context.Background(), channel).Val()[channel]; n != 1 {
		t.Errorf("NUMSUB while lingering = %d, want 1", n)
	}
	// The sweep runs every linger/2 of the default.
	testenv.Eventually(t, 5*time.Second, "the lingering channel unsubscribed", func() bool {
		return rdb.PubSubNumSub(context.Background(), channel).Val()[channel] == 0
	})
	if s.WatchIfSubscribed(channel, "") != nil {
		t.Error("watchIfSubscribed found the channel after it was unsubscribed")
	}
}

// Watches that were never waited on (their Obtain got the lock at once) do
// not keep a lingering channel subscribed.
func TestSubscriberLingerNotKeptByUnusedWatches(t *testing.T) {
	t.Parallel()
	_, s, channel := lingering(t)
	// The sweep runs every linger/2 of the default.
	testenv.Eventually(t, 6*time.Second, "the channel unsubscribed though unused watches come and go", func() bool {
		unused := s.WatchIfSubscribed(channel, "")
		if unused == nil {
			return true // unsubscribed
		}
		unused.StopUnused()
		return false
	})
}

// subChannel returns the release channel of a lock key unique to the test.
func subChannel(t *testing.T, suffix string) string {
	return "dlock:fence{test:" + strings.ReplaceAll(t.Name(), "/", ":") + ":" + suffix + "}"
}

// subCtx returns a context that ends after d or with the test.
func subCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// mustWatch watches channel as id, or fails the test.
func mustWatch(t *testing.T, s *Subscriber, channel, id string) *Watch {
	t.Helper()
	w, err := s.Watch(subCtx(t, 5*time.Second), channel, id)
	if err != nil {
		t.Fatalf("watch(%q, %q): %v", channel, id, err)
	}
	return w
}

// waitWake fails the test unless w is woken within d.
func waitWake(t *testing.T, w *Watch, d time.Duration, what string) {
	t.Helper()
	select {
	case <-w.C():
	case <-time.After(d):
		t.Fatalf("%s: the watcher was not woken within %v", what, d)
	}
}

// woken reports whether w has a wake pending, and takes it.
func woken(w *Watch) bool {
	select {
	case <-w.C():
		return true
	default:
		return false
	}
}

// publish publishes payload on channel and returns how many subscribers got it.
func publish(t *testing.T, rdb redis.UniversalClient, channel, payload string) int64 {
	t.Helper()
	n, err := rdb.Publish(subCtx(t, 5*time.Second), channel, payload).Result()
	if err != nil {
		t.Fatalf("PUBLISH %q: %v", channel, err)
	}
	return n
}

// numSub returns PUBSUB NUMSUB of channel.
func numSub(t *testing.T, rdb *redis.Client, channel string) int64 {
	t.Helper()
	m, err := rdb.PubSubNumSub(subCtx(t, 5*time.Second), channel).Result()
	if err != nil {
		t.Fatalf("PUBSUB NUMSUB: %v", err)
	}
	return m[channel]
}

// knownChannels returns the channels s keeps a state for, besides its own.
func knownChannels(s *Subscriber) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for name := range s.channels {
		if name != s.self {
			names = append(names, name)
		}
	}
	return names
}

func TestSubscriberWakesOnPublish(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewServer(t).Client()
	s := newTestSubscriber(t, rdb, nil)
	channel := subChannel(t, "a")

	w := mustWatch(t, s, channel, "")
	// Confirmed before watch returned: the very next PUBLISH reaches it.
	if n := publish(t, rdb, channel, ""); n != 1 {
		t.Fatalf("PUBLISH right after watch reached %d subscribers, want 1", n)
	}
	waitWake(t, w, 2*time.Second, "PUBLISH")
	if woken(w) {
		t.Error("one message woke the watcher twice")
	}
	for range 3 {
		publish(t, rdb, channel, "")
	}
	waitWake(t, w, 2*time.Second, "three PUBLISHes")
	w.Stop()
}

func TestSubscriberWakesByPayload(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewServer(t).Client()
	s := newTestSubscriber(t, rdb, nil)
	channel := subChannel(t, "a")
	watchers := map[string]*Watch{}
	for _, id := range []string{"alice", "bob", ""} {
		watchers[id] = mustWatch(t, s, channel, id)
	}

	for _, tc := range []struct {
		payload string
		wake    []string // the ids woken
	}{
		{payload: "alice", wake: []string{"alice", ""}},
		{payload: "bob", wake: []string{"bob", ""}},
		{payload: "", wake: []string{"alice", "bob", ""}},
		{payload: "carol", wake: []string{""}},
	} {
		publish(t, rdb, channel, tc.payload)
		// All watchers are woken by one message in one go, so once those
		// that should be are, the others would be too.
		for _, id := range tc.wake {
			waitWake(t, watchers[id], 2*time.Second, fmt.Sprintf("payload %q, watcher %q", tc.payload, id))
		}
		for id, w := range watchers {
			if woken(w) {
				t.Errorf("payload %q woke watcher %q", tc.payload, id)
			}
		}
	}
}

func TestSubscriberSharesOneSubscription(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewServer(t).Client()
	s := newTestSubscriber(t, rdb, nil)
	channel, other := subChannel(t, "a"), subChannel(t, "b")

	const n = 20
	watchers := make([]*Watch, n)
	var wg sync.WaitGroup
	// Longer than one call's timeout: once, in a full run of the suite on
	// two busy cores, no watch was confirmed within 5 s; a first call
	// that fails is made again, and this test is about sharing, not time.
	ctx := subCtx(t, 3*subscriberCallTimeout)
	for i := range watchers {
		wg.Go(func() {
			var err error
			if watchers[i], err = s.Watch(ctx, channel, ""); err != nil {
				t.Errorf("watch %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	mustWatch(t, s, other, "").Stop()
	if got := numSub(t, rdb, channel); got != 1 {
		t.Errorf("PUBSUB NUMSUB with %d watchers = %d, want 1", n, got)
	}
	// One call for the first watcher (with the subscriber's own channel),
	// one for the other channel, none for the other watchers.
	stats, err := rdb.Info(subCtx(t, 5*time.Second), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stats, "cmdstat_subscribe:calls=2,") {
		t.Errorf("want 2 SUBSCRIBE calls in all:\n%s", stats)
	}
	list, err := rdb.Do(subCtx(t, 5*time.Second), "CLIENT", "LIST", "TYPE", "pubsub").Text()
	if err != nil {
		t.Fatal(err)
	}
	if conns := strings.Count(strings.TrimSpace(list), "\n") + 1; conns != 1 {
		t.Errorf("the subscriber has %d Pub/Sub connections, want 1:\n%s", conns, list)
	}
	publish(t, rdb, channel, "")
	for i, w := range watchers {
		waitWake(t, w, 2*time.Second, fmt.Sprintf("watcher %d", i))
	}

	for _, w := range watchers[1:] {
		w.Stop()
		w.Stop() // idempotent
	}
	if n := publish(t, rdb, channel, ""); n != 1 {
		t.Errorf("with one watcher left, PUBLISH reached %d subscribers, want 1", n)
	}
	waitWake(t, watchers[0], 2*time.Second, "the last watcher")

	watchers[0].Stop()
	testenv.Eventually(t, 2*time.Second, "NUMSUB 0 after the last stop", func() bool {
		return numSub(t, rdb, channel) == 0 && numSub(t, rdb, other) == 0
	})
	testenv.Eventually(t, 2*time.Second, "the states dropped", func() bool { return len(knownChannels(s)) == 0 })
}

// A channel unsubscribed by its last watcher and watched again at once must
// end up subscribed, whatever order the confirmations arrive in.
func TestSubscriberRewatchRace(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewServer(t).Client()
	s := newTestSubscriber(t, rdb, nil)
	channel := subChannel(t, "a")

	for i := range 100 {
		w := mustWatch(t, s, channel, "")
		if n := publish(t, rdb, channel, "x"); n != 1 {
			t.Fatalf("round %d: PUBLISH right after watch reached %d subscribers, want 1", i, n)
		}
		w.Stop() // the UNSUBSCRIBE is on its way when the next watch comes
	}

	ctx := subCtx(t, 10*time.Second)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 30 {
				w, err := s.Watch(ctx, channel, "")
				if err != nil {
					t.Errorf("goroutine %d round %d: watch: %v", g, i, err)
					return
				}
				if n, err := rdb.Publish(ctx, channel, "x").Result(); n != 1 || err != nil {
					t.Errorf("goroutine %d round %d: PUBLISH while watched = %d, %v; want 1 subscriber", g, i, n, err)
				}
				if i%2 == 0 {
					w.Stop()
				} else {
					wg.Go(w.Stop) // also concurrently with the next watch
				}
			}
		})
	}
	wg.Wait()

	w := mustWatch(t, s, channel, "")
	if n := publish(t, rdb, channel, ""); n != 1 {
		t.Fatalf("after the race PUBLISH reached %d subscribers, want 1", n)
	}
	waitWake(t, w, 2*time.Second, "after the race")
	w.Stop()
	testenv.Eventually(t, 2*time.Second, "NUMSUB 0 after the race", func() bool { return numSub(t, rdb, channel) == 0 })
	testenv.Eventually(t, 2*time.Second, "the state dropped", func() bool { return len(knownChannels(s)) == 0 })
}

func TestSubscriberClosed(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	channel := subChannel(t, "a")

	t.Run("never started", func(t *testing.T) {
		s := New(rdb, nil)
		s.Close()
		s.Close()
		if _, err := s.Watch(context.Background(), channel, ""); !errors.Is(err, ErrClosed) {
			t.Errorf("watch after close = %v, want ErrClosed", err)
		}
	})

	t.Run("running", func(t *testing.T) {
		s := New(rdb, nil)
		defer s.Close()
		w := mustWatch(t, s, channel, "")
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(s.Close)
		}
		wg.Wait()
		if _, err := s.Watch(context.Background(), channel, ""); !errors.Is(err, ErrClosed) {
			t.Errorf("watch after close = %v, want ErrClosed", err)
		}
		if w := s.WatchIfSubscribed(channel, ""); w != nil {
			t.Error("watchIfSubscribed after close returned a watch")
		}
		w.Stop()
		w.Stop()
		testenv.Eventually(t, 2*time.Second, "NUMSUB 0 after close", func() bool { return numSub(t, rdb, channel) == 0 })
	})

	t.Run("while a watch waits", func(t *testing.T) {
		s := New(rdb, nil)
		defer s.Close()
		mustWatch(t, s, channel, "") // connected
		srv.Pause()
		defer srv.Resume()
		ctx, other := subCtx(t, 10*time.Second), subChannel(t, "b")
		errc := make(chan error, 1)
		go func() {
			_, err := s.Watch(ctx, other, "")
			errc <- err
		}()
		testenv.Eventually(t, 5*time.Second, "the watch to wait for its confirmation", func() bool {
			return slices.Contains(knownChannels(s), other)
		})
		// Redis stays paused until the test ends: Close, and the watch it
		// ends, return without it. The watch would otherwise end with its
		// context's deadline, not ErrClosed.
		closed := make(chan struct{})
		go func() {
			s.Close()
			close(closed)
		}()
		select {
		case <-closed:
		case <-time.After(10 * time.Second): // only ends a hung test
			t.Fatal("Close waits for the paused Redis")
		}
		if err := <-errc; !errors.Is(err, ErrClosed) {
			t.Errorf("waiting watch = %v, want ErrClosed", err)
		}
	})
}

// The dispatcher never blocks on a watcher that does not take its wakes.
func TestSubscriberSlowWatcher(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewServer(t).Client()
	s := newTestSubscriber(t, rdb, nil)
	channel := subChannel(t, "a")
	mustWatch(t, s, channel, "") // never reads C
	last := mustWatch(t, s, channel, "last")

	pipe := rdb.Pipeline()
	for range 2000 {
		pipe.Publish(context.Background(), channel, "x")
	}
	if _, err := pipe.Exec(subCtx(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if woken(last) {
		t.Fatal(`payload "x" woke the watcher "last"`)
	}
	publish(t, rdb, channel, "last")
	waitWake(t, last, 2*time.Second, "the message after 2000 others")
}

func TestSubscriberRedisDown(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	s := newTestSubscriber(t, rdb, nil)
	channel, later := subChannel(t, "a"), subChannel(t, "b")

	srv.Kill()
	_, err := s.Watch(subCtx(t, 300*time.Millisecond), channel, "") // how soon: TestSubscriberRedisDownDeadline
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "dlock: ") {
		t.Errorf("watch on a dead Redis = %v, want a dlock error wrapping DeadlineExceeded", err)
	}
	t.Logf("watch on a dead Redis: %v", err)

	srv.Start()
	w := mustWatch(t, s, later, "")
	if n := publish(t, rdb, later, ""); n != 1 {
		t.Errorf("PUBLISH after recovery reached %d subscribers, want 1", n)
	}
	waitWake(t, w, 2*time.Second, "PUBLISH after recovery")
	if n := numSub(t, rdb, channel); n != 0 {
		t.Errorf("the channel of the watch that gave up has %d subscribers, want 0", n)
	}
	testenv.Eventually(t, 3*time.Second, "only the live channel kept", func() bool {
		known := knownChannels(s)
		return len(known) == 1 && known[0] == later
	})
}

// A watch on a dead Redis returns at its context's deadline, to the
// nanosecond of synctest's clock: the subscriber's redials, refused at
// once, do not hold it up. (The subscriber and its client are made in the
// bubble, and no connection is ever open to block on.)
func TestSubscriberRedisDownDeadline(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	srv.Kill()
	synctest.Test(t, func(t *testing.T) {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		defer rdb.Close()
		s := New(rdb, nil)
		defer s.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := s.Watch(ctx, subChannel(t, "a"), "")
		if took := time.Since(start); took != 300*time.Millisecond {
			t.Errorf("watch with a 300ms deadline on a dead Redis took %v", took)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("watch on a dead Redis = %v, want DeadlineExceeded", err)
		}
	})
}

// logBuffer is an io.Writer for a slog handler, safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestSubscriberConnectionKilled(t *testing.T) {
	t.Parallel()
	const password = "s3cret-subscriber-pw"
	srv := redistest.NewServer(t, redistest.WithArgs("--requirepass", password))
	rdb := srv.Client(func(o *redis.Options) { o.Password = password })
	var logs logBuffer
	s := newTestSubscriber(t, rdb, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	channel, fair := subChannel(t, "a"), subChannel(t, "b")
	w := mustWatch(t, s, channel, "")
	f := mustWatch(t, s, fair, "my-token") // woken by a reconnect too

	for round := range 3 {
		woken(w) // no wake left over from the round before
		woken(f)
		killed, err := rdb.ClientKillByFilter(subCtx(t, 5*time.Second), "TYPE", "pubsub").Result()
		if err != nil || killed != 1 {
			t.Fatalf("round %d: CLIENT KILL TYPE pubsub = %d, %v; want 1 killed", round, killed, err)
		}
		waitWake(t, w, 5*time.Second, fmt.Sprintf("round %d: reconnect", round))
		waitWake(t, f, 5*time.Second, fmt.Sprintf("round %d: reconnect, fair watcher", round))
		// Woken by the new confirmation, so subscribed again (unless the
		// health check happened to reconnect once more meanwhile).
		testenv.Eventually(t, 2*time.Second, "PUBLISH after the reconnect reaches the subscriber", func() bool {
			return publish(t, rdb, channel, "") == 1
		})
		waitWake(t, w, 2*time.Second, fmt.Sprintf("round %d: PUBLISH after the reconnect", round))
	}
	if got := logs.String(); !strings.Contains(got, "re-established") {
		t.Errorf("no reconnect logged:\n%s", got)
	} else if strings.Contains(got, password) {
		t.Errorf("the log shows the password:\n%s", got)
	}
}

func TestSubscriberRedisRestarted(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	s := newTestSubscriber(t, rdb, nil)
	channel := subChannel(t, "a")
	w := mustWatch(t, s, channel, "")

	srv.Restart()
	waitWake(t, w, 5*time.Second, "restart")
	if n := publish(t, rdb, channel, ""); n != 1 {
		t.Fatalf("PUBLISH after the restart reached %d subscribers, want 1", n)
	}
	waitWake(t, w, 2*time.Second, "PUBLISH after the restart")
}

func TestSubscriberPaused(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	s := newTestSubscriber(t, rdb, nil)
	channel, other := subChannel(t, "a"), subChannel(t, "b")
	w := mustWatch(t, s, channel, "")

	srv.Pause()
	// A call to the paused Redis would end with the context's deadline.
	second, err := s.Watch(subCtx(t, time.Second), channel, "")
	if err != nil {
		t.Errorf("second watch of a confirmed channel on a paused Redis = %v, want it at once, without Redis", err)
	}
	if s.WatchIfSubscribed(other, "") != nil {
		t.Error("watchIfSubscribed of a channel never watched returned a watch")
	}
	third := s.WatchIfSubscribed(channel, "")
	if third == nil {
		t.Error("watchIfSubscribed of a confirmed channel returned nil")
	}
	start := time.Now()
	if _, err := s.Watch(subCtx(t, 200*time.Millisecond), other, ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("watch of a new channel on a paused Redis = %v, want DeadlineExceeded", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("watch with a 200ms deadline on a paused Redis took %v", took)
	}
	srv.Resume()

	publish(t, rdb, channel, "")
	for i, w := range []*Watch{w, second, third} {
		if w != nil {
			waitWake(t, w, 2*time.Second, fmt.Sprintf("watcher %d after Resume", i))
		}
	}
	late := mustWatch(t, s, other, "")
	if n := publish(t, rdb, other, ""); n != 1 {
		t.Errorf("PUBLISH after Resume reached %d subscribers, want 1", n)
	}
	waitWake(t, late, 2*time.Second, "the channel watched after Resume")
}

func TestSubscriberCluster(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.WithArgs("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"))
	admin := srv.Client()
	ctx := subCtx(t, 20*time.Second)
	if err := admin.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, slot.Count-1).Err(); err != nil {
		t.Fatalf("CLUSTER ADDSLOTSRANGE: %v", err)
	}
	testenv.Eventually(t, 10*time.Second, "cluster_state:ok", func() bool {
		info, err := admin.ClusterInfo(ctx).Result()
		return err == nil && strings.Contains(info, "cluster_state:ok")
	})
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr()}})
	t.Cleanup(func() { _ = rdb.Close() })
	s := newTestSubscriber(t, rdb, nil)

	for _, suffix := range []string{"a", "b", "{user}:1"} {
		channel := subChannel(t, suffix)
		w := mustWatch(t, s, channel, "")
		if n := publish(t, rdb, channel, ""); n != 1 {
			t.Errorf("%q: PUBLISH reached %d subscribers, want 1", channel, n)
		}
		waitWake(t, w, 2*time.Second, channel)
	}
}

func TestSubscriberSentinel(t *testing.T) {
	t.Parallel()
	primary := redistest.NewServer(t)
	sentinel := redistest.NewSentinel(t, "locks", primary)
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "locks", SentinelAddrs: []string{sentinel.Addr()}})
	t.Cleanup(func() { _ = rdb.Close() })
	s := newTestSubscriber(t, rdb, nil)
	channel := subChannel(t, "a")

	w := mustWatch(t, s, channel, "")
	if n := publish(t, rdb, channel, ""); n != 1 {
		t.Errorf("PUBLISH reached %d subscribers, want 1", n)
	}
	waitWake(t, w, 2*time.Second, "PUBLISH through Sentinel")
	if err := primary.Client().ClientKillByFilter(subCtx(t, 5*time.Second), "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	waitWake(t, w, 5*time.Second, "reconnect through Sentinel")
}

// Not parallel, so that no other test's goroutines come and go meanwhile.
func TestSubscriberCloseLeavesNoGoroutines(t *testing.T) {
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	if err := rdb.Ping(subCtx(t, 5*time.Second)).Err(); err != nil {
		t.Fatal(err)
	}
	before := goleak.IgnoreCurrent()

	s := New(rdb, nil)
	w := mustWatch(t, s, subChannel(t, "a"), "")
	mustWatch(t, s, subChannel(t, "b"), "x").Stop()
	if err := rdb.ClientKillByFilter(subCtx(t, 5*time.Second), "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	waitWake(t, w, 5*time.Second, "reconnect")
	s.Close()
	goleak.VerifyNone(t, before)
}

// The confirmations of one channel, fed by hand in the orders that calls
// racing on one connection and reconnects produce.
func TestSubscriberConfirmationOrder(t *testing.T) {
	t.Parallel()
	s := New(nil, nil)
	s.linger = 0
	ok := func(context.Context, ...string) error { return nil }
	confirm := func(kind, channel string) { s.handle(&redis.Subscription{Kind: kind, Channel: channel}) }
	// step makes the calls the subscriber wants now, all succeeding, and
	// checks them.
	step := func(what string, wantSubs, wantUnsubs []string) {
		t.Helper()
		subs, unsubs := s.plan()
		if fmt.Sprint(subs) != fmt.Sprint(wantSubs) || fmt.Sprint(unsubs) != fmt.Sprint(wantUnsubs) {
			t.Fatalf("%s: calls subscribe %v, unsubscribe %v; want %v, %v", what, subs, unsubs, wantSubs, wantUnsubs)
		}
		if len(subs) > 0 {
			s.call(context.Background(), subs, subscribeCommand, ok)
		}
		if len(unsubs) > 0 {
			s.call(context.Background(), unsubs, unsubscribeCommand, ok)
		}
	}
	add := func(channel string) (*Watch, <-chan struct{}) {
		s.mu.Lock()
		defer s.mu.Unlock()
		st := s.state(channel)
		s.markDirty(channel)
		return s.add(st, channel, "", nil), st.ready
	}
	isClosed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	s.mu.Lock()
	s.state(s.self).pinned = true
	s.markDirty(s.self)
	s.mu.Unlock()
	step("start", []string{s.self}, nil)
	confirm("subscribe", s.self)

	const c = "c"
	w1, ready1 := add(c)
	step("first watch", []string{c}, nil)
	w1.Stop()
	step("stop before the confirmation", nil, nil) // one call out at a time
	confirm("subscribe", c)
	if !isClosed(ready1) {
		t.Fatal("the confirmation did not close ready")
	}
	step("after the confirmation, with no watcher", nil, []string{c})

	w2, ready2 := add(c)
	step("watch while the UNSUBSCRIBE is out", nil, nil)
	confirm("subscribe", c) // a repeated, older confirmation
	if isClosed(ready2) {
		t.Fatal("a subscribe confirmation while the UNSUBSCRIBE is out confirmed the new watch")
	}
	confirm("unsubscribe", c)
	step("after the UNSUBSCRIBE's confirmation", []string{c}, nil)
	confirm("unsubscribe", c) // a repeated one
	if isClosed(ready2) {
		t.Fatal("an unsubscribe confirmation confirmed the watch")
	}
	confirm("subscribe", c)
	if !isClosed(ready2) {
		t.Fatal("the SUBSCRIBE's confirmation did not confirm the watch")
	}
	if woken(w2) {
		t.Fatal("the confirmation woke the watcher")
	}
	confirm("subscribe", c) // go-redis resubscribed after a reconnect
	if !woken(w2) {
		t.Fatal("a second confirmation did not wake the watcher")
	}

	// A reconnect while an UNSUBSCRIBE is out: it is sent again, as its
	// confirmation may be lost.
	w2.Stop()
	step("last stop", nil, []string{c})
	confirm("subscribe", s.self) // the subscriber's own channel, again
	step("after the reconnect", nil, []string{c})
	confirm("unsubscribe", c)
	confirm("unsubscribe", c)
	step("both confirmed", nil, nil)
	if known := knownChannels(s); len(known) != 0 {
		t.Errorf("states kept after the last UNSUBSCRIBE's confirmation: %v", known)
	}
}

func TestSubscriberNextCommand(t *testing.T) {
	t.Parallel()
	watched := map[*Watch]struct{}{{}: {}}
	for _, tc := range []struct {
		name string
		st   channelState
		want command
	}{
		{"new watcher", channelState{watchers: watched}, subscribeCommand},
		{"confirmed", channelState{watchers: watched, requested: true, confirmed: true}, noCommand},
		{"last watcher gone", channelState{requested: true, confirmed: true}, unsubscribeCommand},
		{"subscribe out, watcher gone", channelState{requested: true, inflight: subscribeCommand}, noCommand},
		{"unsubscribe out, new watcher", channelState{watchers: watched, inflight: unsubscribeCommand}, noCommand},
		{"unsubscribe out, reconnected", channelState{watchers: watched, inflight: unsubscribeCommand, retry: true}, unsubscribeCommand},
		{"subscribe out, reconnected", channelState{requested: true, inflight: subscribeCommand, retry: true}, subscribeCommand},
		{"subscribe failed", channelState{watchers: watched, requested: true, retry: true}, subscribeCommand},
		{"subscribe failed, watcher gone", channelState{requested: true, retry: true}, unsubscribeCommand},
		{"unsubscribe failed", channelState{retry: true}, unsubscribeCommand},
		{"own channel", channelState{pinned: true}, subscribeCommand},
		{"unsubscribed", channelState{}, noCommand},
	} {
		if got := tc.st.next(time.Now(), 0); got != tc.want {
			t.Errorf("%s: next() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
