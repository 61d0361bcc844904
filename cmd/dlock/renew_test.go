package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/redistest"
	"github.com/redis/go-redis/v9"
)

// TestRenewer checks the renewer against a real server: it keeps a lock
// alive for several ttls, and reports it lost at once when the key is
// deleted, and within the ttl when Redis stops answering.
func TestRenewer(t *testing.T) {
	t.Parallel()
	const ttl = 300 * time.Millisecond
	srv := redistest.NewServer(t)
	rdb := srv.Client(func(o *redis.Options) { o.ReadTimeout = ttl / 3 })
	locker := dlock.New(rdb)
	defer locker.Close()
	quiet := func(string, ...any) {}

	lock, err := locker.TryObtain(t.Context(), "kept", ttl)
	if err != nil {
		t.Fatal(err)
	}
	r := startRenewer(t.Context(), lock, ttl, quiet)
	time.Sleep(4 * ttl)
	if n := rdb.Exists(t.Context(), "kept").Val(); n != 1 {
		t.Error("the lock expired while renewed")
	}
	r.Stop()
	if err := r.Err(); err != nil {
		t.Errorf("Err() = %v after Stop, want nil", err)
	}

	lock, err = locker.TryObtain(t.Context(), "deleted", ttl)
	if err != nil {
		t.Fatal(err)
	}
	r = startRenewer(t.Context(), lock, ttl, quiet)
	defer r.Stop()
	rdb.Del(t.Context(), "deleted")
	select {
	case <-r.Lost():
		if !errors.Is(r.Err(), dlock.ErrNotHeld) {
			t.Errorf("Err() = %v, want ErrNotHeld", r.Err())
		}
	case <-time.After(ttl):
		t.Error("the deleted lock was not reported lost within a renewal period")
	}

	lock, err = locker.TryObtain(t.Context(), "paused", ttl)
	if err != nil {
		t.Fatal(err)
	}
	r = startRenewer(t.Context(), lock, ttl, quiet)
	defer r.Stop()
	srv.Pause()
	defer srv.Resume()
	select {
	case <-r.Lost():
		if time.Now().Before(lock.Until()) {
			t.Errorf("lost before its validity ended")
		}
		if err := r.Err(); err == nil || !strings.Contains(err.Error(), "it expired, as renewing it failed: ") {
			t.Errorf("Err() = %v", err)
		}
	case <-time.After(2 * ttl):
		t.Error("the lock was not reported lost while Redis did not answer")
	}
}
