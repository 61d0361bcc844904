package main

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/redistest"
)

// TestHoldUntil checks the --min-hold of the run verb: the key expires when
// the hold ends, renewed no more; and a lock lost meanwhile is left alone.
func TestHoldUntil(t *testing.T) {
	t.Parallel()
	const ttl = 300 * time.Millisecond
	srv := redistest.NewServer(t)
	rdb := srv.Client()
	obtain := func() held {
		locker := dlock.New(rdb)
		t.Cleanup(func() { locker.Close() })
		lock, err := locker.TryObtain(t.Context(), "job", ttl, dlock.WithAutoRenew(true))
		if err != nil {
			t.Fatal(err)
		}
		return held{lock, time.Now()}
	}

	h := obtain()
	if err := holdUntil(t.Context(), h, time.Now().Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if pttl := srv.Client().PTTL(t.Context(), "job").Val(); pttl <= time.Second || pttl > 2*time.Second {
		t.Errorf("after the hold began the key has %v left, want about 2s", pttl)
	}
	time.Sleep(ttl) // no renewal is left to change it
	if pttl := srv.Client().PTTL(t.Context(), "job").Val(); pttl <= time.Second || pttl > 2*time.Second-ttl {
		t.Errorf("%v later the key has %v left, want about that much less than 2s", ttl, pttl)
	}

	srv.Client().Del(t.Context(), "job")
	h = obtain()
	srv.Client().Set(t.Context(), "job", "another holder", time.Minute)
	if err := holdUntil(t.Context(), h, time.Now().Add(2*time.Second)); !errors.Is(err, dlock.ErrNotHeld) {
		t.Errorf("holdUntil of a lock taken over = %v, want ErrNotHeld", err)
	}
	if pttl := srv.Client().PTTL(t.Context(), "job").Val(); pttl < 59*time.Second {
		t.Errorf("holdUntil changed another holder's lock: %v left", pttl)
	}
}

// TestLostReason checks how the run verb words a lost lock.
func TestLostReason(t *testing.T) {
	long := strings.Repeat("k", 1000)
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: %s: %s", dlock.ErrLockLost, strconv.Quote("job"), "a refresh found it gone or taken"), "a refresh found it gone or taken"},
		{fmt.Errorf("%w: %s: %s", dlock.ErrLockLost, strconv.Quote(`a": b`), "why: because"), "why: because"},
		{fmt.Errorf("%w: %s... (1000 bytes): %s", dlock.ErrLockLost, strconv.Quote(long[:100]), "it timed out"), "it timed out"},
		{fmt.Errorf("%w: something else", dlock.ErrLockLost), "lock lost: something else"},
		{errors.New("dlock: not held: refresh"), "not held: refresh"},
	}
	for _, tt := range tests {
		if got := lostReason(tt.err); got != tt.want {
			t.Errorf("lostReason(%q) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// TestLineHandler checks how -v shows what the library logs.
func TestLineHandler(t *testing.T) {
	var out bytes.Buffer
	log := slog.New(&lineHandler{w: &out})
	log.With("client", 1).WithGroup("g").Debug("dlock: refresh failed; retrying", "key", `"job"`, "error", errors.New("i/o timeout"))
	log.Warn("no attributes")
	want := "dlock: refresh failed; retrying (client: 1, key: \"job\", error: i/o timeout)\ndlock: no attributes\n"
	if out.String() != want {
		t.Errorf("wrote %q, want %q", out.String(), want)
	}
}
