package demo

import (
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
)

// Embedded is an in-process Redis (miniredis) on a free 127.0.0.1 port whose
// keys expire in real time, as they do on a real server.
//
// miniredis counts the time to live of its keys down only when its clock is
// moved on (FastForward). Embedded moves it on by the real time elapsed just
// before each command a client sends: a key set by a command is charged from
// then on, and each command sees the keys as they are at its start. Time
// stands still during a script, as in Redis: a key cannot expire between two
// calls of one script. (Moving the clock on from a goroutine every few
// milliseconds charges a key set between two moves with the whole interval,
// so it expires up to an interval early, more on a busy machine; miniredis's
// ClockTTL moves the clock on mid-script, so a script can find a key gone
// that its previous call found.)
type Embedded struct {
	srv  *miniredis.Miniredis
	mu   sync.Mutex // serializes the moves of the clock
	last time.Time  // when the clock was last moved on
}

// StartEmbedded starts an embedded Redis on a free loopback port. Close
// stops it.
func StartEmbedded() (*Embedded, error) {
	srv := miniredis.NewMiniRedis()
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("dlock: cannot start the embedded Redis: %w; pass --redis to use a real server", err)
	}
	e := &Embedded{srv: srv, last: time.Now()}
	srv.Server().SetPreHook(e.beforeCommand)
	return e, nil
}

// Addr returns the server's address, "127.0.0.1:PORT".
func (e *Embedded) Addr() string { return e.srv.Addr() }

// Close stops the server. Clients should be closed first.
func (e *Embedded) Close() {
	e.srv.Close()
}

// beforeCommand runs before every command, those that a script calls
// included, and moves the clock on. It never stops the command.
func (e *Embedded) beforeCommand(*server.Peer, string, ...string) bool {
	// miniredis runs each command, and each script with the commands it
	// calls, holding its lock. Taken, it means this is a script's command,
	// which must not move the clock, or that another client's command runs
	// now: the clock was moved on before that one, a moment ago.
	if !e.srv.TryLock() {
		return false
	}
	e.srv.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	e.srv.FastForward(now.Sub(e.last))
	e.last = now
	return false
}
