package election_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/election"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
	"github.com/dlock-go/dlock/redistest"
)

// beforeScript is a go-redis hook that calls do once, right before the
// first EVALSHA whose first key is key is sent, alone or in a pipeline,
// and keeps its script's digest.
type beforeScript struct {
	key  string
	args int // how many arguments the command has, if not 0
	do   func()
	once sync.Once
	sha  string
}

func (h *beforeScript) see(cmd redis.Cmder) {
	args := cmd.Args()
	if len(args) > 3 && fmt.Sprint(args[0]) == "evalsha" && fmt.Sprint(args[3]) == h.key &&
		(h.args == 0 || len(args) == h.args) {
		h.once.Do(func() {
			h.sha = fmt.Sprint(args[1])
			h.do()
		})
	}
}

func (h *beforeScript) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *beforeScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.see(cmd)
		return next(ctx, cmd)
	}
}

func (h *beforeScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.see(cmd)
		}
		return next(ctx, cmds)
	}
}

// pausedAt returns a server, a go-redis client of it with the default
// options, a dlock Client on it, and a hook that pauses the server for
// testenv.ResendPause when the first script call on key is about to be sent: the
// hook's paused closes then, and resumed when the server runs again.
type pausedAt struct {
	rdb             *redis.Client
	locker          *dlock.Client
	commands        *testenv.Commands
	hook            *beforeScript
	paused, resumed chan struct{}
}

// newPausedAt makes a pausedAt whose pause is armed by arm, for the first
// script call on key with args arguments (any number if 0).
func newPausedAt(t *testing.T) (p *pausedAt, arm func(key string, args int)) {
	t.Helper()
	srv := redistest.NewServer(t)
	rdb := srv.Client() // go-redis's defaults: ReadTimeout 5 s, MaxRetries 3
	p = &pausedAt{rdb: rdb, locker: lockenv.Locker(t, rdb), paused: make(chan struct{}), resumed: make(chan struct{})}
	arm = func(key string, args int) {
		testenv.WarmPool(t, rdb, 8)
		p.commands = testenv.Monitor(t, srv.Addr())
		p.hook = &beforeScript{key: key, args: args, do: func() {
			srv.Pause()
			close(p.paused)
		}}
		rdb.AddHook(p.hook)
		go func() {
			<-p.paused
			time.Sleep(testenv.ResendPause)
			srv.Resume()
			close(p.resumed)
		}()
	}
	return p, arm
}

// copies waits until MONITOR saw the paused call run twice or more: go-redis
// sent a copy (MONITOR's connection may lag behind the replies).
func (p *pausedAt) copies(t *testing.T) {
	t.Helper()
	<-p.resumed
	testenv.Eventually(t, 10*time.Second, "the paused call run twice or more: go-redis sent a copy", func() bool {
		return p.commands.Count(`"evalsha"`, `"`+p.hook.sha+`"`, `"`+p.hook.key+`"`) >= 2
	})
}

// A campaign whose request go-redis sends again while Redis is paused takes
// the seat once: it leads, in the term Redis holds, with its own token in
// the seat.
func TestResentCampaignLeadsOnce(t *testing.T) {
	t.Parallel()
	p, arm := newPausedAt(t)
	name := testenv.NewKey(t)
	e := newElection(t, p.locker, name)
	ctx := testenv.Timeout(t, time.Minute)
	l, err := e.Campaign(ctx, "warm") // the scripts in Redis's cache
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	arm(name, 0)
	if l, err = e.Campaign(ctx, "resent"); err != nil {
		t.Fatalf("Campaign across the pause = %v", err)
	}
	p.copies(t)
	if got, err := e.Leader(ctx); err != nil || got != (election.Leader{Value: "resent", Term: l.Term()}) {
		t.Errorf("Leader = %+v, %v; want the campaign's value and term %d", got, err, l.Term())
	}
	if err := l.Err(); err != nil {
		t.Errorf("the leadership after the copies ran: %v, want it led", err)
	}
	// The seat holds this campaign's token: Resign finds it.
	if err := l.Resign(ctx); err != nil {
		t.Errorf("Resign after the copies ran = %v, want nil", err)
	}
}

// A new leader's word to the observers of the empty seat (the deletion of
// the vacancy they hold), sent again by go-redis while Redis is paused,
// wakes them once Redis runs: they see the new leader. A copy that runs
// later wakes them for one more look at most.
func TestResentAnnouncementWakesObservers(t *testing.T) {
	testenv.SlowFaults(t)
	t.Parallel()
	p, arm := newPausedAt(t)
	name := testenv.NewKey(t)
	e := newElection(t, p.locker, name)
	ctx := testenv.Timeout(t, time.Minute)
	l, err := e.Campaign(ctx, "warm") // the scripts in Redis's cache
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	observing, stop := context.WithCancel(ctx)
	defer stop()
	observed := e.Observe(observing)
	if got := next(t, observed); got != (election.Leader{}) {
		t.Fatalf("Observe of an empty seat = %+v, want the zero Leader", got)
	}
	vacancy := "dlock:vacancy:" + name
	testenv.Eventually(t, 10*time.Second, "the observer holds the vacancy", func() bool {
		return p.rdb.Exists(ctx, vacancy).Val() == 1
	})
	arm(vacancy, 9) // force_release.lua: EVALSHA sha 6 keys
	if l, err = e.Campaign(ctx, "resent"); err != nil {
		t.Fatalf("Campaign across the pause = %v", err)
	}
	defer l.Resign(context.Background())
	p.copies(t)
	want := election.Leader{Value: "resent", Term: l.Term()}
	if got := next(t, observed); got != want {
		t.Errorf("Observe after the announcement = %+v, want %+v", got, want)
	}
}

// A campaign that gives up (its ctx ends) while Redis is paused, and whose
// request go-redis sent again, holds no seat once Redis runs: the seat that
// its copies took is released, long before its lease would run out, and a
// rival leads.
func TestResentCampaignThatGaveUpHoldsNoSeat(t *testing.T) {
	testenv.SlowFaults(t)
	t.Parallel()
	p, arm := newPausedAt(t)
	name := testenv.NewKey(t)
	e := newElection(t, p.locker, name, election.WithTTL(time.Hour))
	ctx := testenv.Timeout(t, time.Minute)
	l, err := e.Campaign(ctx, "warm") // the scripts in Redis's cache
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	arm(name, 0)
	giveUp, cancel := context.WithCancel(ctx)
	go func() {
		<-p.paused
		time.Sleep(testenv.ResendPause / 2) // after go-redis sent its first copy
		cancel()
	}()
	if l, err := e.Campaign(giveUp, "gave up"); err == nil {
		l.Resign(ctx)
		t.Fatal("Campaign whose ctx ended while Redis was paused led")
	} else if node := (*dlock.NodeError)(nil); !errors.As(err, &node) || !errors.Is(err, context.Canceled) {
		t.Errorf("Campaign whose ctx ended while Redis did not answer = %v, want a dlock.NodeError and context.Canceled", err)
	}
	p.copies(t)
	rival := newElection(t, p.locker, name, election.WithTTL(time.Hour))
	l, err = rival.Campaign(testenv.Timeout(t, 30*time.Second), "rival")
	if err != nil {
		t.Fatalf("a rival's Campaign after the copies ran = %v; want it to lead (the seat's lease is an hour)", err)
	}
	if err := l.Resign(ctx); err != nil {
		t.Error(err)
	}
}
