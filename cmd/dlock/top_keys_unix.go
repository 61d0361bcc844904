//go:build unix

package main

import (
	"os"
	"sync"
	"syscall"
	"time"
)

// A keyReader reads the keys typed on a terminal, one byte at a time, until
// it is stopped.
//
// It reads a duplicate of the terminal's descriptor in non-blocking mode,
// through Go's poller, so that stop can interrupt a read that waits for a
// key (with a deadline) and wait for the goroutine to end. The mode belongs
// to the terminal, which the shell shares: stop sets it back.
type keyReader struct {
	fd   int
	tty  *os.File // of fd
	keys chan byte
	done chan struct{} // closed by stop
	wg   sync.WaitGroup
}

// readKeys starts reading the keys typed on the terminal in, or returns
// nil when it cannot interrupt a read of it, so would leave a goroutine
// behind.
func readKeys(in *os.File) (*keyReader, error) {
	fd, err := syscall.Dup(int(in.Fd()))
	if err != nil {
		return nil, err
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	k := &keyReader{fd: fd, tty: os.NewFile(uintptr(fd), "terminal"), keys: make(chan byte), done: make(chan struct{})}
	if err := k.tty.SetReadDeadline(time.Time{}); err != nil { // not in the poller: no deadlines
		k.release()
		return nil, nil
	}
	k.wg.Go(k.read)
	return k, nil
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

// stop stops reading, and waits until the reading goroutine has ended.
func (k *keyReader) stop() {
	close(k.done)
	k.tty.SetReadDeadline(time.Now()) // ends a read that waits
	k.wg.Wait()
	k.release()
}

// release sets the terminal back to blocking mode, which programs expect of
// a terminal, and closes the duplicate descriptor.
func (k *keyReader) release() {
	syscall.SetNonblock(k.fd, false)
	k.tty.Close()
}
