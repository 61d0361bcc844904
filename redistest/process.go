package redistest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/dlock-go/dlock/internal/childproc"
)

const (
	// readyTimeout bounds how long a server may take to answer PING.
	readyTimeout = 10 * time.Second
	// pollInterval is the pause between two readiness probes.
	pollInterval = 5 * time.Millisecond
	// probeTimeout bounds one readiness probe: dial, write and read.
	probeTimeout = 250 * time.Millisecond
)

// errAddrInUse marks a server that exited because its port was taken.
var errAddrInUse = errors.New("address already in use")

// process is one run of redis-server. The goroutine that started it (see
// spawn and childproc.Start) is the only caller of cmd.Wait; reaped closes
// done when the process has exited.
// Whoever holds the process waits for done (kill does), so the reaper never
// outlives its owner.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // result of cmd.Wait, read only after done is closed
}

// spawn starts bin with args in dir, its standard output and error appended
// to logPath (where redis-server reports bad arguments before it opens its
// own log), and returns the process with the log's size before the start.
func spawn(bin string, args []string, dir, logPath string) (*process, int64, error) {
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, 0, fmt.Errorf("redistest: %w", err)
	}
	defer logFile.Close() // the child has its own copy
	info, err := logFile.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("redistest: %w", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	p := &process{cmd: cmd, done: make(chan struct{})}
	// From a thread kept until the server exits: the parent-death signal
	// (see sysProcAttr) follows the thread that started it.
	if err := childproc.Start(cmd, p.reaped); err != nil {
		return nil, 0, fmt.Errorf("redistest: start %s: %w", bin, err)
	}
	return p, info.Size(), nil
}

// reaped records that the process exited, with the error of its Wait.
func (p *process) reaped(err error) {
	p.err = err
	close(p.done)
}

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill kills the process, paused or not, and waits until it has exited.
// Errors are ignored: they only mean that the process has already exited.
func (p *process) kill() {
	_ = continueProcess(p.cmd.Process) // harmless, and lets nothing wait on a stopped process
	_ = p.cmd.Process.Kill()
	<-p.done
}

// waitReady waits until the server at addr answers and says that it is p.
// If p exits first, the error wraps errAddrInUse when the log written since
// logOffset says that the port was taken.
func waitReady(p *process, addr, logPath string, logOffset int64) error {
	deadline := time.Now().Add(readyTimeout)
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	var lastErr error
	for {
		pid, err := probe(addr)
		switch {
		case err != nil:
			lastErr = err
		case pid == 0 || pid == p.cmd.Process.Pid:
			// pid 0: a password is set, so the server does not say who it is;
			// it answers, and p has not exited, which is the best we know.
			if !p.exited() {
				return nil
			}
		default:
			// Another server took the port; p is about to exit.
			lastErr = fmt.Errorf("%s is served by process %d, not by %d", addr, pid, p.cmd.Process.Pid)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: redis-server did not answer PING on %s within %v: %w",
				addr, readyTimeout, lastErr)
		}
		select {
		case <-p.done:
			return exitError(p, addr, logPath, logOffset)
		case <-ticker.C:
		}
	}
}

// exitError describes a process that exited during startup.
func exitError(p *process, addr, logPath string, logOffset int64) error {
	err := fmt.Errorf("redistest: redis-server exited while starting on %s (%w)", addr, p.err)
	if logContains(logPath, logOffset, "Address already in use") {
		return fmt.Errorf("%w: %w", err, errAddrInUse)
	}
	return err
}

// logContains reports whether the log, from offset on, contains s.
func logContains(logPath string, offset int64, s string) bool {
	f, err := os.Open(logPath)
	if err != nil {
		return false
	}
	defer f.Close()
	data, err := io.ReadAll(io.NewSectionReader(f, offset, 1<<40))
	return err == nil && bytes.Contains(data, []byte(s))
}

// probe sends PING and INFO to the server at addr in raw RESP and returns the
// process id the server reports. It returns 0 and no error if the server
// requires a password, as it then answers PING with NOAUTH.
func probe(addr string) (int, error) {
	dialer := net.Dialer{Timeout: probeTimeout}
	conn, err := dialer.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(probeTimeout)); err != nil {
		return 0, err
	}
	const request = "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n"
	if _, err := io.WriteString(conn, request); err != nil {
		return 0, err
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	switch {
	case err != nil:
		return 0, err
	case strings.HasPrefix(line, "-NOAUTH"):
		return 0, nil
	case !strings.HasPrefix(line, "+PONG"):
		return 0, fmt.Errorf("PING: unexpected reply %q", strings.TrimSpace(line))
	}
	info, err := readBulk(r)
	if err != nil {
		return 0, fmt.Errorf("INFO: %w", err)
	}
	return pidFromInfo(info)
}

// readBulk reads one RESP bulk string.
func readBulk(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(line, "$") {
		return "", fmt.Errorf("unexpected reply %q", strings.TrimSpace(line))
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil || n < 0 {
		return "", fmt.Errorf("bad bulk length %q", strings.TrimSpace(line))
	}
	buf := make([]byte, n+2) // with the final CRLF
	if _, err := io.ReadFull(r, buf); err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// pidFromInfo returns the process_id field of an INFO reply.
func pidFromInfo(info string) (int, error) {
	for line := range strings.Lines(info) {
		if value, ok := strings.CutPrefix(line, "process_id:"); ok {
			return strconv.Atoi(strings.TrimSpace(value))
		}
	}
	return 0, errors.New("INFO: no process_id")
}

// freePort returns a TCP port on host that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("redistest: find a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("redistest: find a free port: %w", err)
	}
	return port, nil
}
