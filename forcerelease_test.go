package dlock_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
)

// TestForceReleaseHolderDeletesWhatItSaw: a force release deletes the
// holder that the operator saw, never one that came after.
func TestForceReleaseHolderDeletesWhatItSaw(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	key := testenv.Key(t)

	a := mustObtain(t, e.locker, key, time.Minute)
	seen, err := e.locker.Inspect(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	b := mustObtain(t, lockenv.Locker(t, e.rdb), key, time.Minute)
	if deleted, err := e.locker.ForceReleaseHolder(ctx, seen); err != nil || deleted {
		t.Errorf("ForceReleaseHolder of a holder gone since = %v, %v; want false", deleted, err)
	}
	if got := holderOf(t, e.rdb, key); got != b.Token() {
		t.Fatalf("after ForceReleaseHolder of the holder before, the key holds %q, want the new holder's token", got)
	}
	now, err := e.locker.Inspect(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if deleted, err := e.locker.ForceReleaseHolder(ctx, now); err != nil || !deleted {
		t.Errorf("ForceReleaseHolder of the holder now = %v, %v; want true", deleted, err)
	}
	if n := e.rdb.Exists(ctx, key).Val(); n != 0 {
		t.Error("the lock is still there")
	}
	if deleted, err := e.locker.ForceReleaseHolder(ctx, dlock.LockInfo{Key: key, Held: true}); !errors.Is(err, dlock.ErrInvalidOption) || deleted {
		t.Errorf("ForceReleaseHolder of a LockInfo made by hand = %v, %v; want ErrInvalidOption", deleted, err)
	}
	if deleted, err := e.locker.ForceReleaseHolder(ctx, dlock.LockInfo{Key: key}); err != nil || deleted {
		t.Errorf("ForceReleaseHolder of a free lock's LockInfo = %v, %v; want false", deleted, err)
	}

	// A semaphore: the permits seen go, one taken since stays.
	sem := testenv.Key(t) + ":sem"
	for range 2 {
		if _, err := e.locker.Semaphore(sem, 3).TryAcquire(ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	seen, err = e.locker.Inspect(ctx, sem)
	if err != nil || len(seen.Holders) != 2 {
		t.Fatalf("Inspect of the semaphore = %+v, %v; want 2 holders", seen, err)
	}
	later, err := lockenv.Locker(t, e.rdb).Semaphore(sem, 3).TryAcquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if deleted, err := e.locker.ForceReleaseHolder(ctx, seen); err != nil || !deleted {
		t.Errorf("ForceReleaseHolder of 2 permits = %v, %v; want true", deleted, err)
	}
	left, err := e.locker.Inspect(ctx, sem)
	if err != nil || len(left.Holders) != 1 || left.Holders[0].Fingerprint != later.Fingerprint() {
		t.Errorf("after ForceReleaseHolder: %+v, %v; want only the permit taken since", left, err)
	}
	if err := later.Release(ctx); err != nil {
		t.Errorf("the permit taken since: Release = %v", err)
	}
}

// TestForceReleaseResent pauses Redis while a force release is in flight,
// on a client with go-redis's default options: it sends the script again
// after each ReadTimeout, on other connections, and every copy runs
// when Redis comes back, in the order it arrived. A new holder's acquire
// that arrived between the first copy and the others takes the lock the
// first copy deleted: the others must leave it alone, and the answer must
// say the lock was deleted.
func TestForceReleaseResent(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	key := testenv.Key(t)
	mustObtain(t, e.locker, key, time.Minute)

	opRdb := redis.NewClient(&redis.Options{Addr: e.srv.Addr()}) // go-redis's defaults
	t.Cleanup(func() { opRdb.Close() })
	operator := lockenv.Locker(t, opRdb)
	testenv.WarmPool(t, opRdb, 4) // the copies sent again go on open connections
	mustObtain(t, e.locker, key+":warm-up", time.Minute)
	if deleted, err := operator.ForceRelease(ctx, key+":warm-up"); err != nil || !deleted { // Redis has the script
		t.Fatalf("ForceRelease = %v, %v", deleted, err)
	}
	seen, err := operator.Inspect(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	// B sends its acquire once, and waits for the reply through the pause: a
	// copy of it sent again would take the lock back after a copy of the
	// force release deleted it, and hide the deletion.
	bRdb := redis.NewClient(&redis.Options{Addr: e.srv.Addr(), MaxRetries: -1, ReadTimeout: 20 * time.Second})
	t.Cleanup(func() { bRdb.Close() })
	b := lockenv.Locker(t, bRdb)
	if _, err := b.Inspect(ctx, key); err != nil { // B's connection is open, its scripts loaded
		t.Fatal(err)
	}
	if _, err := unreadConns(e.srv.Port()); err != nil {
		t.Skipf("cannot see what waits in Redis's sockets: %v", err)
	}

	e.srv.Pause()
	resumed := false
	defer func() {
		if !resumed {
			e.srv.Resume()
		}
	}()
	type result struct {
		deleted bool
		err     error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		deleted, err := operator.ForceReleaseHolder(testenv.Timeout(t, 30*time.Second), seen)
		done <- result{deleted, err}
	}()
	waitUnread(t, e.srv.Port(), 1, "the first copy to reach Redis")
	type acquired struct {
		lock *dlock.Lock
		err  error
	}
	got := make(chan acquired, 1)
	go func() {
		lock, err := b.TryObtain(testenv.Timeout(t, 30*time.Second), key, time.Minute)
		got <- acquired{lock, err}
	}()
	waitUnread(t, e.srv.Port(), 2, "B's acquire to reach Redis")
	if took := time.Since(start); took > 2500*time.Millisecond {
		// The second copy, a ReadTimeout after the first, may have come before B's.
		e.srv.Resume()
		resumed = true
		<-done
		<-got
		t.Skipf("the machine is too busy: B's acquire reached Redis %v after the force release began", took)
	}
	time.Sleep(testenv.ResendPause - time.Since(start)) // at least one copy more, a ReadTimeout after the first
	e.srv.Resume()
	resumed = true

	r := <-done
	if r.err != nil || !r.deleted {
		t.Errorf("ForceReleaseHolder through the pause = %v, %v; want true", r.deleted, r.err)
	}
	a := <-got
	if a.err != nil {
		t.Fatalf("B's TryObtain, queued after the first copy = %v; want the lock", a.err)
	}
	if v := holderOf(t, e.rdb, key); v != a.lock.Token() {
		t.Errorf("the key holds %q after every copy ran, want B's token: a copy deleted B's lock", v)
	}
}

// waitUnread waits until n connections to the server on port have data
// that it has not read (it is paused), for up to 10s.
func waitUnread(t *testing.T, port, n int, what string) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, what, func() bool {
		got, err := unreadConns(port)
		return err == nil && got >= n
	})
}

// unreadConns counts the connections accepted by the server on port
// whose data the server has not read yet, from Linux's /proc/net/tcp
// (the receive queue of each socket).
func unreadConns(port int) (int, error) {
	n := 0
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(file)
		if err != nil {
			return 0, err
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 5 {
				continue
			}
			_, localPort, _ := strings.Cut(fields[1], ":")
			_, rxQueue, _ := strings.Cut(fields[4], ":")
			p, err1 := strconv.ParseInt(localPort, 16, 32)
			rx, err2 := strconv.ParseInt(rxQueue, 16, 64)
			if err1 == nil && err2 == nil && int(p) == port && fields[3] == "01" && rx > 0 { // 01: established
				n++
			}
		}
	}
	return n, nil
}
