package main

import (
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// clockTick is how often the embedded Redis's clock is moved on: its keys
// expire up to this much later than on a real server.
const clockTick = 5 * time.Millisecond

// embedded is an in-process Redis (miniredis) on a free 127.0.0.1 port whose
// keys expire in real time. miniredis expires keys only when its clock is
// moved on (FastForward); a goroutine owned by embedded does that every
// clockTick by the real time elapsed. Close stops that goroutine, waits for
// it, and stops the server.
type embedded struct {
	srv  *miniredis.Miniredis
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the clock goroutine has returned
}

func startEmbedded() (*embedded, error) {
	srv := miniredis.NewMiniRedis()
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("dlock: cannot start the embedded Redis: %w; pass --redis to use a real server", err)
	}
	e := &embedded{srv: srv, stop: make(chan struct{}), done: make(chan struct{})}
	go e.runClock()
	return e, nil
}

// Addr returns the server's address, "127.0.0.1:PORT".
func (e *embedded) Addr() string { return e.srv.Addr() }

// Close stops the clock and the server. Clients should be closed first.
func (e *embedded) Close() {
	close(e.stop)
	<-e.done
	e.srv.Close()
}

func (e *embedded) runClock() {
	defer close(e.done)
	ticker := time.NewTicker(clockTick)
	defer ticker.Stop()
	last := time.Now()
	for {
		select {
		case <-e.stop:
			return
		case <-ticker.C:
			now := time.Now()
			e.srv.FastForward(now.Sub(last))
			last = now
		}
	}
}
