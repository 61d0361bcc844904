package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dlock-go/dlock"
)

// Exit statuses of a command that did not run, as shells have them.
const (
	exitCannotExecute = 126 // found, but could not be started
	exitNotFound      = 127 // not found
)

// A child is the command running under the lock.
type child struct {
	pid    int
	exited chan *os.ProcessState // receives once, when the command has exited
}

// A lease is what a command runs under: a lock, a job's attempt, a
// leadership. Done is closed when it ends; the command is terminated if it
// ends before the command does, and Err then says why.
type lease interface {
	Done() <-chan struct{}
	Err() error
}

// held is the lock the run verb obtained, and what it was obtained with.
type held struct {
	lock     *dlock.Lock // renewed by locker until released or lost
	obtained time.Time
}

// runLocked runs the command while it holds the lock, then releases the lock
// (or keeps it for --min-hold) and returns the exit status. sigs are the
// signals dlock receives; they are passed on to the command.
func (r *runner) runLocked(ctx context.Context, h held, sigs <-chan os.Signal) int {
	c, err := r.start(lockEnv(h.lock))
	if err != nil {
		r.errorf("cannot run %s: %v", r.commandLine(), err)
		r.release(ctx, h.lock, -1)
		return startFailedStatus(err)
	}
	status, lost := r.supervise(c, h.lock, sigs)
	switch {
	case lost:
		return exitLockLost // the lock is not ours: nothing to release
	case h.lock.Err() != nil: // lost as the command exited
		r.errorf("lost the lock on %q before %s ended (it exited with status %d): %s",
			r.key, r.commandLine(), status, lostReason(h.lock.Err()))
		return exitLockLost
	}
	if lost := r.releaseOrHold(ctx, h, status); lost {
		return exitLockLost
	}
	return status
}

// startFailedStatus is the exit status of a command that could not start,
// as a shell gives it.
func startFailedStatus(err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return exitNotFound
	}
	return exitCannotExecute
}

// lockEnv is what the command learns of the lock it runs under: its key,
// token and fence.
func lockEnv(lock *dlock.Lock) []string {
	return []string{
		"DLOCK_KEY=" + lock.Key(),
		"DLOCK_TOKEN=" + lock.Token(),
		"DLOCK_FENCE=" + strconv.FormatInt(lock.Fence(), 10),
	}
}

// start starts the command in a process group of its own, with env added
// to dlock's environment, and dlock's standard streams. Where the system
// can (Linux, FreeBSD), the command is killed when dlock dies, however it
// dies (see tieToParent).
func (r *runner) start(env []string) (*child, error) {
	cmd := exec.Command(r.command[0], r.command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r.stdin, r.stdout, r.stderr
	cmd.Env = append(os.Environ(), env...)
	ownProcessGroup(cmd)
	tieToParent(cmd)
	c := &child{exited: make(chan *os.ProcessState, 1)}
	if err := startAndWait(cmd, c.exited); err != nil {
		return nil, err
	}
	c.pid = cmd.Process.Pid
	r.logf("started %s (pid %d)", r.commandLine(), c.pid)
	return c, nil
}

// startAndWait starts cmd, and once it has started waits for it in the
// background: exited receives its state when it has exited.
//
// The goroutine that starts cmd keeps its OS thread to itself until cmd has
// exited. On Linux the parent-death signal (tieToParent) is sent when the
// thread that started the child ends, not the process: Go ends a thread
// when a goroutine locked to it returns without unlocking it, so a thread
// that went back to the runtime's pool could end under some later
// goroutine, and kill cmd with dlock alive (go.dev/issue/27505). Locked to
// this goroutine, which is blocked in cmd.Wait, the thread ends only with
// dlock.
func startAndWait(cmd *exec.Cmd, exited chan<- *os.ProcessState) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread() // cmd has exited: the thread may serve others
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait() // an exit status other than 0 is not an error here; the state tells
		exited <- cmd.ProcessState
	}()
	return <-started
}

// signal sends sig to the command's process group.
func (c *child) signal(sig syscall.Signal) {
	_ = signalGroup(c.pid, sig) // fails only if the group is gone: nothing to signal
}

// supervise waits for the command to exit, passing on the signals dlock
// gets, and terminating the command if the lease is lost. It returns the
// command's exit status, and whether the lease was lost.
func (r *runner) supervise(c *child, lock lease, sigs <-chan os.Signal) (status int, lost bool) {
	lostLock := lock.Done()   // nobody ends the lease meanwhile: closed only when it is lost
	var kill <-chan time.Time // after --grace, once the lock is lost
	for {
		select {
		case state := <-c.exited:
			status := exitStatus(state)
			r.logf("%s exited with status %d", r.commandLine(), status)
			return status, lost
		case sig := <-sigs:
			r.logf("passing %s on to %s", signalName(sig), r.commandLine())
			if s, ok := sig.(syscall.Signal); ok {
				c.signal(s)
			}
		case <-lostLock:
			lostLock, lost = nil, true
			r.errorf("lost %s while %s was running: %s; terminating it",
				r.leaseName(), r.commandLine(), lostReason(lock.Err()))
			c.signal(syscall.SIGTERM)
			kill = time.After(r.grace)
		case <-kill:
			kill = nil
			r.errorf("%s did not exit within --grace %v of SIGTERM; killing it", r.commandLine(), r.grace)
			c.signal(syscall.SIGKILL)
		}
	}
}

// leaseName names what the command runs under, for messages: the lock on
// the key, unless the verb says otherwise.
func (r *runner) leaseName() string {
	if r.leaseDesc != "" {
		return r.leaseDesc
	}
	return "the lock on " + strconv.Quote(r.key)
}

// lostReason returns how a lock was lost, from its Err: the library's
// message without the "dlock: lock lost: KEY: " that the messages of the
// run verb already say in their own words.
func lostReason(err error) string {
	text := errText(err)
	rest, ok := strings.CutPrefix(text, errText(dlock.ErrLockLost)+": ")
	if !ok {
		return text
	}
	quoted, qerr := strconv.QuotedPrefix(rest) // the key, quoted and perhaps shortened
	if qerr != nil {
		return text
	}
	rest = rest[len(quoted):]
	if strings.HasPrefix(rest, "... (") { // a long key: "... (N bytes)"
		if _, after, found := strings.Cut(rest, ")"); found {
			rest = after
		}
	}
	if how, found := strings.CutPrefix(rest, ": "); found && how != "" {
		return how
	}
	return text
}

// releaseOrHold releases the lock after the command ended with status or,
// if it ended within --min-hold of obtaining the lock, leaves it to expire
// when that is over, so that a host whose cron fires a little later finds
// it taken. It reports whether it found the lock lost: deleted (dlock
// release --force), or expired and taken by another, before the command
// ended, so that the command may have run beside another holder.
func (r *runner) releaseOrHold(ctx context.Context, h held, status int) (lost bool) {
	until := h.obtained.Add(r.minHold)
	if time.Until(until) <= time.Millisecond {
		return r.release(ctx, h.lock, status)
	}
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	switch err := holdUntil(ctx, h, until); {
	case errors.Is(err, dlock.ErrNotHeld):
		r.errorf("the lock on %q was lost before %s ended (it exited with status %d): %s",
			r.key, r.commandLine(), status, errText(err))
		return true
	case err != nil:
		r.errorf("could not keep the lock on %q for --min-hold %v: %s", r.key, r.minHold, errText(err))
		return false
	}
	r.logf("keeping the lock on %q for %v more (--min-hold %v); it expires then",
		r.key, time.Until(until).Round(time.Millisecond), r.minHold)
	return false
}

// holdUntil leaves the lock to expire at until: the library stops renewing
// it and sets its expiry, if it is still ours (Lock.ReleaseAfter; on a
// Redlock quorum, on a quorum of the nodes).
func holdUntil(ctx context.Context, h held, until time.Time) error {
	return h.lock.ReleaseAfter(ctx, time.Until(until))
}

// release releases the lock, and says so if it cannot. status is the
// command's exit status, or -1 if it did not run. It reports whether the
// lock was lost before the release.
func (r *runner) release(ctx context.Context, lock *dlock.Lock, status int) (lost bool) {
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	switch err := lock.Release(ctx); {
	case errors.Is(err, dlock.ErrNotHeld) && status >= 0:
		r.errorf("the lock on %q was lost before %s ended (it exited with status %d): %s",
			r.key, r.commandLine(), status, errText(err))
		return true
	case errors.Is(err, dlock.ErrNotHeld):
		r.errorf("the lock on %q was lost before %s could start: %s", r.key, r.commandLine(), errText(err))
		return true
	case err != nil:
		r.errorf("could not release the lock on %q: %s; it expires within %v", r.key, errText(err), r.ttl)
	default:
		r.logf("released the lock on %q", r.key)
	}
	return false
}

// exitStatus returns the exit status of a command as a shell gives it:
// 128+N if signal N killed it.
func exitStatus(state *os.ProcessState) int {
	if state == nil { // not waited for: cannot happen after a successful Start
		return exitFail
	}
	if code := state.ExitCode(); code >= 0 {
		return code
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return exitFail
}

// signalName returns the name of the signals that dlock passes on, as in
// "SIGTERM", and the description of others.
func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return sig.String()
}

// signalStatus is the exit status of dlock stopped by sig, as a shell would
// report a process killed by it.
func signalStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return exitFail
}
