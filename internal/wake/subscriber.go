// Package wake is how dlock's waiters hear of releases: one Redis Pub/Sub
// connection per Client and node, shared by all its waiters, with one
// SUBSCRIBE per channel however many wait on it. It is dlock's machinery,
// not an API: see the package dlock for what users get.
package wake

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/ctxerr"
)

// A release publishes on the lock's channel (the name of its fence key, see
// lockKeys), and the subscriber is how a waiter hears it: one Redis Pub/Sub
// connection per Client, shared by all its waiters, with one SUBSCRIBE per
// channel however many wait on it.
//
// Guarantees: a watch returns only once Redis has confirmed the channel's
// subscription, so a release published after the waiter's next attempt
// reaches it. When go-redis has reconnected and resubscribed, every watcher
// is woken, as releases published meanwhile were lost.
//
// Failure modes: while Redis is down, unreachable or paused, a watch fails
// when its context ends, and the waiter sleeps on its timers only. A watcher
// of a confirmed channel is not told that the connection just died, only
// woken when it is back. A SUBSCRIBE that Redis refuses (by an ACL) is never
// confirmed: its watch fails by its context. close waits for a call in
// progress, which go-redis holds up while it dials a Redis that does not
// answer: up to its dial and read timeouts.
//
// Matching confirmations to calls: the dispatcher goroutine makes every
// SUBSCRIBE and UNSUBSCRIBE call, with at most one unconfirmed per channel.
// Redis answers a connection's commands in order, so while a SUBSCRIBE is
// out the channel's next "subscribe" confirmation is its own, and one that
// comes while an UNSUBSCRIBE is out is an older call's and is ignored; a
// channel watched again while its UNSUBSCRIBE is out is subscribed again
// once that is confirmed. Another confirmation of a confirmed channel is
// go-redis resubscribing on a new connection. The subscriber keeps a channel
// of its own, whose second confirmation thus marks a reconnect: the calls
// unconfirmed then may have died with the old connection, so they are made
// again (a repeated call is harmless: its extra confirmation is ignored as
// above, or wakes the watchers once more).

const (
	// subscriberBuffer is how many messages go-redis queues for the
	// dispatcher, which takes them at once unless a call blocks it.
	subscriberBuffer = 256
	// subscriberNeverDrop is go-redis's send timeout, after which it drops
	// a message the dispatcher did not take: never. go-redis waits instead,
	// and Redis buffers or, past its output limit, drops the connection,
	// which wakes everybody.
	subscriberNeverDrop = time.Duration(math.MaxInt64)
	// subscriberCallTimeout bounds one SUBSCRIBE or UNSUBSCRIBE call,
	// including the dial of a new connection.
	subscriberCallTimeout = 5 * time.Second
	// Failed calls are made again after a delay that doubles from
	// subscriberMinRetry to subscriberMaxRetry.
	subscriberMinRetry = 50 * time.Millisecond
	subscriberMaxRetry = 2 * time.Second
	// subscriberLinger is how long a channel stays subscribed after its
	// last watcher left: a busy lock's waiters come and go all the time,
	// and need not SUBSCRIBE and UNSUBSCRIBE each time. At most
	// subscriberMaxLingering channels linger at once.
	subscriberLinger       = 5 * time.Second
	subscriberMaxLingering = 1024
)

// Subscriber shares one go-redis PubSub among the waiters of a Client. Its
// dispatcher goroutine, started by the first watch and stopped by close,
// makes the calls and hands the messages out.
type Subscriber struct {
	rdb    redis.UniversalClient
	logger *slog.Logger
	// self is a channel of the subscriber's own: its confirmations tell a
	// reconnect (see the comment at the top), and fair handoffs come on it
	// (see handOver).
	self   string
	linger time.Duration // subscriberLinger; 0 in tests that watch channels go

	kick     chan struct{} // capacity 1: dirty has work for the dispatcher
	stopping chan struct{} // closed when the subscriber is closed
	done     chan struct{} // closed when the dispatcher has exited, or by close if it never ran

	mu       sync.Mutex
	closed   bool
	cancel   context.CancelFunc // stops the dispatcher; nil until the first watch
	channels map[string]*channelState
	dirty    map[string]struct{} // channels the dispatcher must bring in line with Redis
	byID     map[string]*Watch   // the watches with an id (waiters in a queue), by id
	lastErr  error               // of the last call, for the error of a watch that gave up
}

// command is a call the dispatcher makes for a channel.
type command uint8

const (
	noCommand command = iota
	subscribeCommand
	unsubscribeCommand
)

// channelState is what the subscriber knows of one channel. The dispatcher
// drops it when nobody watches and Redis has confirmed the UNSUBSCRIBE.
type channelState struct {
	watchers  map[*Watch]struct{}
	pinned    bool          // wanted without watchers: the subscriber's own channel
	requested bool          // the last call was Subscribe: go-redis resubscribes it on reconnect
	inflight  command       // a call Redis has not confirmed yet
	retry     bool          // make the call again: it failed, or its connection died
	confirmed bool          // subscribed and confirmed, with no Unsubscribe since
	ready     chan struct{} // closed when confirmed; replaced by Unsubscribe
	idleSince time.Time     // when the last watcher that waited left: it lingers until subscriberLinger later
}

// Watch is one watcher of a channel, until stop.
type Watch struct {
	s       *Subscriber
	channel string
	id      string
	c       chan struct{}
	stopped bool   // guarded by s.mu
	handoff string // guarded by s.mu: the fence of a lock handed over to id
	woken   bool   // guarded by s.mu: a release woke id, the first waiter of a queue, to try
}

// New returns the subscriber of one Redis deployment. It starts
// nothing until the first watch.
func New(rdb redis.UniversalClient, logger *slog.Logger) *Subscriber {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Subscriber{
		rdb:      rdb,
		logger:   logger,
		self:     "dlock:subscriber:" + randomName(),
		linger:   subscriberLinger,
		kick:     make(chan struct{}, 1),
		stopping: make(chan struct{}),
		done:     make(chan struct{}),
		channels: make(map[string]*channelState),
		dirty:    make(map[string]struct{}),
		byID:     make(map[string]*Watch),
	}
}

// Watch subscribes to channel (shared: one SUBSCRIBE per channel however
// many watchers, reference-counted) and returns once Redis has confirmed the
// subscription, or with an error when ctx ends first or the subscriber is
// closed (ErrClosed). id is the watcher's identity: a message whose payload
// is "" or equals id wakes it; other payloads do not. id "" means: woken by
// every message.
func (s *Subscriber) Watch(ctx context.Context, channel, id string) (*Watch, error) {
	return s.WatchWith(ctx, channel, id, nil)
}

// WatchWith is watch, with the watch's wake-ups sent on wake (capacity 1),
// which the watches of a Redlock waiter on several subscribers share; nil
// makes one.
func (s *Subscriber) WatchWith(ctx context.Context, channel, id string, wake chan struct{}) (*Watch, error) {
	if ctx.Err() != nil {
		return nil, s.watchError(ctx, channel)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	s.start()
	st := s.state(channel)
	w := s.add(st, channel, id, wake)
	ready, confirmed := st.ready, st.confirmed
	if !confirmed {
		s.markDirty(channel)
	}
	s.mu.Unlock()
	if confirmed {
		return w, nil
	}
	select {
	case <-ready:
		return w, nil
	case <-ctx.Done():
		w.Stop()
		return nil, s.watchError(ctx, channel)
	case <-s.stopping:
		w.Stop()
		return nil, ErrClosed
	}
}

// WatchIfSubscribed returns a watch of channel if its subscription is
// confirmed already, which costs no call to Redis, and nil otherwise (also
// when the subscriber is closed).
func (s *Subscriber) WatchIfSubscribed(channel, id string) *Watch {
	return s.WatchIfSubscribedWith(channel, id, nil)
}

// WatchIfSubscribedWith is watchIfSubscribed with a wake channel, as for
// watchWith.
func (s *Subscriber) WatchIfSubscribedWith(channel, id string, wake chan struct{}) *Watch {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.channels[channel]
	if s.closed || st == nil || !st.confirmed {
		return nil
	}
	return s.add(st, channel, id, wake)
}

// WatchQueued returns a watch of channel at once, for a waiter that joins
// the lock's queue with its next attempt, and subscribes channel in the
// background if need be. Such a waiter is woken on the subscriber's own
// channel (see release.lua), and needs the lock's channel only for the
// messages to every waiter. It returns nil, and watches nothing, unless the
// own channel is confirmed.
func (s *Subscriber) WatchQueued(channel, id string) *Watch {
	s.mu.Lock()
	defer s.mu.Unlock()
	if self := s.channels[s.self]; s.closed || self == nil || !self.confirmed {
		return nil
	}
	st := s.state(channel)
	w := s.add(st, channel, id, nil)
	if !st.confirmed {
		s.markDirty(channel)
	}
	return w
}

// C returns a channel that receives a value (buffered, capacity 1, never
// blocks the dispatcher; wakes coalesce) when a matching message arrives,
// and also after the subscriber connection was re-established (messages may
// have been lost while it was down, so every watcher is woken to try again).
func (w *Watch) C() <-chan struct{} { return w.c }

// Shared returns the channel C receives from, to give to WatchWith, so
// that a watch of another channel or Subscriber wakes the same waiter.
func (w *Watch) Shared() chan struct{} { return w.c }

// Stop ends the watch; the channel lingers subscribed after its last
// watcher stopped (see subscriberLinger). Idempotent, safe concurrently.
func (w *Watch) Stop() { w.end(true) }

// StopUnused ends a watch that was never waited on: its caller got the
// lock at once. It does not restart the channel's linger, or every
// uncontended Obtain of a lock whose channel is still subscribed would
// keep it subscribed, paying for release messages nobody waits for.
func (w *Watch) StopUnused() { w.end(false) }

func (w *Watch) end(used bool) {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.stopped {
		return
	}
	w.stopped = true
	st := s.channels[w.channel]
	delete(st.watchers, w)
	if s.byID[w.id] == w {
		delete(s.byID, w.id)
	}
	if used {
		st.idleSince = time.Now()
	}
	if len(st.watchers) == 0 {
		s.markDirty(w.channel)
	}
}

// Close stops the dispatcher goroutine, closes the PubSub, and waits for
// every goroutine to exit. Later watch calls return ErrClosed. Idempotent.
func (s *Subscriber) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stopping)
		if s.cancel != nil {
			s.cancel()
		} else {
			close(s.done)
		}
	}
	s.mu.Unlock()
	<-s.done
}

// start creates the PubSub and the dispatcher, unless done already. No call
// to Redis happens here: go-redis dials in its own goroutine. s.mu is held.
func (s *Subscriber) start() {
	if s.cancel != nil {
		return
	}
	ps := s.rdb.Subscribe(context.Background())
	msgs := ps.ChannelWithSubscriptions(
		redis.WithChannelSize(subscriberBuffer),
		redis.WithChannelSendTimeout(subscriberNeverDrop))
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.state(s.self).pinned = true
	s.markDirty(s.self)
	go s.run(ctx, ps, msgs)
}

// state returns the state of channel, created if need be. s.mu is held.
func (s *Subscriber) state(channel string) *channelState {
	st := s.channels[channel]
	if st == nil {
		st = &channelState{watchers: make(map[*Watch]struct{}), ready: make(chan struct{})}
		s.channels[channel] = st
	}
	return st
}

// add registers a new watcher of channel, whose state is st. s.mu is held.
func (s *Subscriber) add(st *channelState, channel, id string, wake chan struct{}) *Watch {
	if wake == nil {
		wake = make(chan struct{}, 1)
	}
	w := &Watch{s: s, channel: channel, id: id, c: wake}
	st.watchers[w] = struct{}{}
	if id != "" {
		s.byID[id] = w
	}
	return w
}

// markDirty has the dispatcher look at channel. s.mu is held.
func (s *Subscriber) markDirty(channel string) {
	s.dirty[channel] = struct{}{}
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// watchError is the error of a watch whose context ended first.
func (s *Subscriber) watchError(ctx context.Context, channel string) error {
	s.mu.Lock()
	last := s.lastErr
	s.mu.Unlock()
	if last != nil {
		return fmt.Errorf("dlock: subscribe to %q: %w (last error from redis: %w)", channel, ctxerr.Of(ctx), last)
	}
	return fmt.Errorf("dlock: subscribe to %q: %w", channel, ctxerr.Of(ctx))
}

// run is the dispatcher: it hands out messages and confirmations, and
// brings the subscriptions in line with the watchers. On its way out it
// closes the PubSub and drains msgs until go-redis's receiver has exited.
func (s *Subscriber) run(ctx context.Context, ps *redis.PubSub, msgs <-chan any) {
	defer close(s.done)
	defer s.shutdown()
	defer func() {
		_ = ps.Close()
		// Drain: go-redis's receiver may be blocked sending, and closes
		// msgs when it has seen the PubSub closed.
		for range msgs {
		}
	}()
	retry := time.NewTimer(subscriberMaxRetry)
	retry.Stop()
	defer retry.Stop()
	delay := subscriberMinRetry
	sweep := time.NewTicker(subscriberLinger / 2)
	defer sweep.Stop()
	for {
		select {
		case <-sweep.C:
			s.sweep()
		case <-ctx.Done():
			return
		case msg, ok := <-msgs:
			if !ok {
				return // the Redis client was closed under us
			}
			s.handle(msg)
		case <-s.kick:
		case <-retry.C:
		}
		if s.sync(ctx, ps) {
			retry.Reset(delay)
			delay = min(2*delay, subscriberMaxRetry)
		} else {
			delay = subscriberMinRetry
		}
	}
}

// shutdown makes the subscriber closed when its dispatcher exits, whatever
// the reason, so that no watch waits for it.
func (s *Subscriber) shutdown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.stopping)
	}
}

// handle takes one message or confirmation from go-redis.
func (s *Subscriber) handle(msg any) {
	s.mu.Lock()
	reconnected := false
	switch m := msg.(type) {
	case *redis.Message:
		if m.Channel == s.self {
			s.handOver(m.Payload)
		} else if st := s.channels[m.Channel]; st != nil {
			st.wake(m.Payload)
		}
	case *redis.Subscription:
		switch m.Kind {
		case "subscribe":
			reconnected = s.subscribed(m.Channel)
		case "unsubscribe":
			s.unsubscribed(m.Channel)
		}
	}
	s.mu.Unlock()
	if reconnected {
		s.logger.Warn("dlock: the connection for release messages was re-established; " +
			"waking every waiter, as releases published meanwhile were lost")
	}
}

// subscribed takes a "subscribe" confirmation, and reports whether it shows
// a reconnect. s.mu is held.
func (s *Subscriber) subscribed(channel string) (reconnected bool) {
	st := s.channels[channel]
	if st == nil || !st.requested || st.inflight == unsubscribeCommand {
		return false // of an older call, since undone
	}
	if !st.confirmed {
		st.inflight, st.retry, st.confirmed = noCommand, false, true
		close(st.ready)
		s.markDirty(channel) // the watchers may have left meanwhile
		return false
	}
	// Confirmed again: go-redis resubscribed on a new connection.
	st.wake("")
	if channel != s.self {
		return false
	}
	for name, other := range s.channels {
		if other.inflight != noCommand {
			other.retry = true // its confirmation may have died with the old connection
			s.markDirty(name)
		}
	}
	return true
}

// unsubscribed takes an "unsubscribe" confirmation. s.mu is held.
func (s *Subscriber) unsubscribed(channel string) {
	st := s.channels[channel]
	if st == nil || st.inflight != unsubscribeCommand {
		return // a repeated one
	}
	st.inflight, st.retry = noCommand, false
	s.markDirty(channel)
}

// wake wakes the watchers a message with payload is for, without blocking.
// A payload "id:fence" hands the lock over to watcher id (fair mode): it is
// kept for takeHandoff; a payload "id" wakes watcher id, the first waiter of
// a queue, to try (see takeWoken). s.mu is held.
func (st *channelState) wake(payload string) {
	for w := range st.watchers {
		switch {
		case w.id == "" || payload == "":
			w.notify()
		case w.id == payload:
			w.woken = true
			w.notify()
		case len(payload) > len(w.id) && payload[len(w.id)] == ':' && payload[:len(w.id)] == w.id:
			w.handoff = payload[len(w.id)+1:]
			w.notify()
		}
	}
}

// notify wakes the watcher, without blocking.
func (w *Watch) notify() {
	select {
	case w.c <- struct{}{}:
	default: // a wake is pending already
	}
}

// HandoffChannel returns the channel on which a fair waiter of this
// subscriber is told that the lock was handed over to it: the subscriber's
// own, which no other Client listens to, once Redis confirmed it; until
// then, and if Redis refuses it, "" (the lock's channel, which every
// waiting Client hears). A waiter keeps the one it got: it is part of its
// name in the queue.
func (s *Subscriber) HandoffChannel() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.channels[s.self]; st != nil && st.confirmed {
		return s.self
	}
	return ""
}

// handOver takes a message on the subscriber's own channel: "id:fence",
// the lock handed over to waiter id, or "id", waiter id woken to try (see
// release.lua). s.mu is held.
func (s *Subscriber) handOver(payload string) {
	id, fence, handoff := strings.Cut(payload, ":")
	w := s.byID[id]
	switch {
	case w == nil: // gone: its leave passes the lock on
	case handoff:
		w.handoff = fence
		w.notify()
	default:
		w.woken = true
		w.notify()
	}
}

// TakeWoken reports whether a message woke this watcher, the first waiter
// of a queue, to try, since the last call.
func (w *Watch) TakeWoken() bool {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	woken := w.woken
	w.woken = false
	return woken
}

// TakeHandoff returns the fence of a lock handed over to this watcher, if
// a message said so since the last call.
func (w *Watch) TakeHandoff() (string, bool) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	h := w.handoff
	w.handoff = ""
	return h, h != ""
}

// sweep has the dispatcher look at the channels that linger, to
// unsubscribe those that have lingered long enough.
func (s *Subscriber) sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for channel, st := range s.channels {
		if len(st.watchers) == 0 && st.requested && !st.pinned {
			s.markDirty(channel)
		}
	}
}

// next is the call to make for the channel now, if any. A channel nobody
// watches stays subscribed until linger after its last watcher left.
func (st *channelState) next(now time.Time, linger time.Duration) command {
	want := st.pinned || len(st.watchers) > 0 ||
		(st.requested && now.Sub(st.idleSince) < linger)
	switch {
	case st.inflight != noCommand:
		if st.retry {
			return st.inflight // after a reconnect: once more
		}
		return noCommand // one unconfirmed call at a time
	case want != st.requested, st.retry:
		if want {
			return subscribeCommand
		}
		return unsubscribeCommand
	}
	return noCommand
}

// idle reports whether the state can be dropped: nobody watches and Redis
// has confirmed that the channel is unsubscribed.
func (st *channelState) idle() bool {
	return !st.pinned && len(st.watchers) == 0 && !st.requested && st.inflight == noCommand && !st.retry
}

// sync makes the calls the dirty channels need, and reports whether one
// failed.
func (s *Subscriber) sync(ctx context.Context, ps *redis.PubSub) (failed bool) {
	subs, unsubs := s.plan()
	if len(subs) > 0 && !s.call(ctx, subs, subscribeCommand, ps.Subscribe) {
		failed = true
	}
	if len(unsubs) > 0 && !s.call(ctx, unsubs, unsubscribeCommand, ps.Unsubscribe) {
		failed = true
	}
	return failed
}

// plan takes the dirty channels and returns those to subscribe and to
// unsubscribe, and drops the idle ones. The state changes before the calls,
// so that no watch finds a channel confirmed that is being unsubscribed.
func (s *Subscriber) plan() (subs, unsubs []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	lingering := 0
	for _, st := range s.channels {
		if len(st.watchers) == 0 && st.requested && !st.pinned {
			lingering++
		}
	}
	linger := s.linger
	if lingering > subscriberMaxLingering {
		linger = 0
	}
	for channel := range s.dirty {
		delete(s.dirty, channel)
		st := s.channels[channel]
		if st == nil {
			continue
		}
		switch st.next(now, linger) {
		case subscribeCommand:
			st.requested = true
			subs = append(subs, channel)
		case unsubscribeCommand:
			st.requested = false
			if st.confirmed {
				st.confirmed, st.ready = false, make(chan struct{})
			}
			unsubs = append(unsubs, channel)
		default:
			if st.idle() {
				delete(s.channels, channel)
			}
		}
	}
	// Our own channel first: Redis confirms a SUBSCRIBE's channels in
	// order, so once a lock's channel is confirmed, so is ours, and a fair
	// waiter can name it (handoffChannel).
	if i := slices.Index(subs, s.self); i > 0 {
		subs[0], subs[i] = subs[i], subs[0]
	}
	return subs, unsubs
}

// call makes one Subscribe or Unsubscribe call for channels, and reports
// whether it succeeded. go-redis changes its own list of channels, which it
// resubscribes on reconnect, whether or not the call succeeds.
func (s *Subscriber) call(ctx context.Context, channels []string, cmd command, fn func(context.Context, ...string) error) bool {
	ctx, cancel := context.WithTimeout(ctx, subscriberCallTimeout)
	err := fn(ctx, channels...)
	cancel()
	s.mu.Lock()
	s.lastErr = err
	for _, channel := range channels {
		st := s.channels[channel] // never dropped while a call is out
		if err != nil {
			st.retry = true
			s.dirty[channel] = struct{}{} // for the retry timer
		} else {
			st.inflight, st.retry = cmd, false
		}
	}
	s.mu.Unlock()
	if err != nil {
		s.logger.Debug("dlock: a call for release messages failed; retrying",
			"command", cmd.String(), "channels", len(channels), "error", err)
	}
	return err == nil
}

var commandNames = [...]string{noCommand: "none", subscribeCommand: "subscribe", unsubscribeCommand: "unsubscribe"}

func (c command) String() string { return commandNames[c] }

// ErrClosed is the error of a watch on a closed Subscriber.
var ErrClosed = errors.New("dlock: client closed")

// randomName returns 128 random bits from crypto/rand, URL-safe base64:
// the Subscriber's own channel is named with it.
func randomName() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails: it crashes the program instead
	return base64.RawURLEncoding.EncodeToString(b[:])
}
