//go:build unix

package top

import (
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// A keyReader reads the keys typed on the terminal, one byte at a time,
// with the terminal in raw mode, until it is stopped.
//
// It reads the terminal through a descriptor of its own, opened on
// /dev/tty, in non-blocking mode, through Go's poller, so that stop can
// interrupt a read that waits for a key (with a deadline) and wait for the
// goroutine to end. Setting stdin's descriptor non-blocking instead would
// set stdout's too, which shares its open file on a terminal, and a write
// could then fail with EAGAIN when the terminal is slow to read.
type keyReader struct {
	tty  *os.File    // never tty.Fd, which would make it blocking again
	was  *term.State // the terminal's mode before raw mode
	keys chan byte
	done chan struct{} // closed by stop
	wg   sync.WaitGroup
}

// readKeys puts the controlling terminal in raw mode and starts reading
// the keys typed on it. It returns nil when there is no such terminal, or
// when this system cannot interrupt a read of it (macOS's kqueue takes no
// terminal): a reader that cannot be stopped would outlive dlock top.
func readKeys() (*keyReader, error) {
	tty, err := os.Open("/dev/tty")
	if err != nil {
		return nil, nil // no controlling terminal
	}
	if tty.SetReadDeadline(time.Time{}) != nil {
		tty.Close()
		return nil, nil
	}
	k := &keyReader{tty: tty, keys: make(chan byte), done: make(chan struct{})}
	if err := k.control(func(fd int) (err error) { k.was, err = term.MakeRaw(fd); return err }); err != nil {
		tty.Close()
		return nil, err
	}
	k.wg.Go(k.read)
	return k, nil
}

// control calls fn with the terminal's descriptor.
func (k *keyReader) control(fn func(fd int) error) error {
	conn, err := k.tty.SyscallConn()
	if err != nil {
		return err
	}
	var fnErr error
	if err := conn.Control(func(fd uintptr) { fnErr = fn(int(fd)) }); err != nil {
		return err
	}
	return fnErr
}

// read passes on the keys typed until stop, or until the terminal is gone.
func (k *keyReader) read() {
	buf := make([]byte, 64)
	for {
		n, err := k.tty.Read(buf)
		for _, b := range buf[:n] {
			select {
			case k.keys <- b:
			case <-k.done:
				return
			}
		}
		if err != nil { // stopped, or the terminal hung up
			return
		}
	}
}

// stop stops reading, waits until the reading goroutine has ended, and
// puts the terminal back in the mode it was in.
func (k *keyReader) stop() error {
	close(k.done)
	// This ends a read that waits. It cannot fail: readKeys checked that
	// the terminal takes deadlines.
	_ = k.tty.SetReadDeadline(time.Now())
	k.wg.Wait()
	defer k.tty.Close()
	return k.control(func(fd int) error { return term.Restore(fd, k.was) })
}
