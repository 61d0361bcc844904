package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Monitor counts what a server runs, through MONITOR: the requests that
// clients send, and the commands that scripts run. MONITOR slows the server
// down, so it is used for a separate short run, never while timing.
type Monitor struct {
	conn   net.Conn
	marker string
	done   chan error

	requests int64 // commands sent by clients, one round trip each unless pipelined
	scripted int64 // commands run by scripts (MONITOR shows them as "[db lua]")
}

// StartMonitor opens a MONITOR connection to addr.
func StartMonitor(ctx context.Context, addr string) (*Monitor, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	r := bufio.NewReader(conn)
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		_ = conn.Close()
		return nil, err
	}
	if line, err := r.ReadString('\n'); err != nil || line != "+OK\r\n" {
		_ = conn.Close()
		if err != nil {
			return nil, fmt.Errorf("bench: MONITOR: %w", err)
		}
		return nil, fmt.Errorf("bench: MONITOR answered %q", line)
	}
	m := &Monitor{conn: conn, marker: "bench-monitor-end-" + randomToken(), done: make(chan error, 1)}
	go func() { m.done <- m.read(r) }()
	return m, nil
}

// read counts lines until it sees the marker, or the connection fails.
func (m *Monitor) read(r *bufio.Reader) error {
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		switch {
		case strings.Contains(line, m.marker):
			return nil
		case strings.Contains(line, " lua] "):
			m.scripted++
		default:
			m.requests++
		}
	}
}

// Stop sends a marker through rdb, so that every command run before it has
// been counted, and returns the counts.
func (m *Monitor) Stop(ctx context.Context, rdb *redis.Client) (requests, scripted int64, err error) {
	defer m.conn.Close()
	if err := rdb.Echo(ctx, m.marker).Err(); err != nil {
		return 0, 0, err
	}
	select {
	case err := <-m.done:
		if err != nil {
			return 0, 0, fmt.Errorf("bench: MONITOR: %w", err)
		}
	case <-ctx.Done():
		return 0, 0, errors.Join(errors.New("bench: MONITOR: marker not seen"), ctx.Err())
	}
	return m.requests, m.scripted, nil
}
