package main

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/cmd/dlock/internal/top"
	"github.com/dlock-go/dlock/redistest"
	"github.com/redis/go-redis/v9"
)

// syncBuffer is a bytes.Buffer that a verb writes to while a test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// topHeader is the header of dlock top's blocks, split into its columns.
func topHeader() []string {
	return []string{"KEY", "HOLDER", "HELD FOR", "TTL", "FENCE", "WAITERS", "ACQ/S", "VALUE"}
}

// topBlocks splits what dlock top printed, not on a terminal, into its
// complete blocks: for each, its lines under the header, by key, each split
// into its columns. It fails the test if a block is malformed.
func topBlocks(t *testing.T, out string) []map[string][]string {
	t.Helper()
	var blocks []map[string][]string
	for _, text := range strings.SplitAfter(out, "\n\n") {
		if !strings.HasSuffix(text, "\n\n") {
			break // not complete yet
		}
		lines := strings.Split(strings.TrimSuffix(text, "\n\n"), "\n")
		if !strings.HasPrefix(lines[0], "# ") {
			t.Fatalf("a block of dlock top starts with %q, not a \"# \" line:\n%s", lines[0], out)
		}
		block := map[string][]string{}
		for i, line := range lines[1:] {
			cells := strings.Split(line, "\t")
			if len(cells) != len(topHeader()) || i == 0 && line != strings.Join(topHeader(), "\t") {
				t.Fatalf("dlock top printed %q in a block:\n%s", line, out)
			}
			if i > 0 {
				block[cells[0]] = cells
			}
		}
		blocks = append(blocks, block)
	}
	return blocks
}

// TestTopPiped runs dlock top for two refreshes with its output in a buffer,
// not a terminal: each refresh prints a block with the locks held.
func TestTopPiped(t *testing.T) {
	srv, other := heldLock(t, "other")
	locker := dlock.New(srv.Client())
	t.Cleanup(func() { locker.Close() })
	a, err := locker.TryObtain(t.Context(), "job:a", time.Minute, dlock.WithValue("host-b pid 4121"))
	if err != nil {
		t.Fatal(err)
	}
	fenceA := a.Fence() // b's holder asks for none: top shows "-"
	b, err := locker.TryObtain(t.Context(), "job:b", 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := locker.Obtain(ctx, "job:a", time.Minute, dlock.WithFair()); !errors.Is(err, context.Canceled) {
			t.Errorf("a waiter: %v, want it cancelled", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	waitUntil(t, "a waiter for job:a", func() bool {
		info, err := locker.Inspect(t.Context(), "job:a")
		return err == nil && info.Waiters == 1
	})

	code, out, errOut := runCLI(t, "top", "--redis", srv.URL(), "--match", "job:*", "--count", "2", "--interval", "10ms")
	blocks := topBlocks(t, out)
	if code != exitOK || len(blocks) != 2 || strings.Count(out, "\n# ") != 1 || errOut != "" {
		t.Fatalf("top --count 2 = %d, %q, %q; want 0 and 2 blocks", code, out, errOut)
	}
	for i, block := range blocks {
		for _, want := range []struct {
			lock         *dlock.Lock
			key, waiters string
			ttl          *regexp.Regexp // it changes between refreshes
			value, fence string
		}{
			{a, "job:a", "1", regexp.MustCompile(`^[0-9]+s$`), "host-b pid 4121", strconv.FormatInt(fenceA, 10)},
			{b, "job:b", "0", regexp.MustCompile(`^[0-9]+m[0-9]{2}s$`), "", "-"},
		} {
			got := block[want.key]
			if len(got) != len(topHeader()) || got[1] != top.HolderName(defaultHolderName(), want.lock.Fingerprint()) || strings.HasPrefix(got[2], ">") ||
				!want.ttl.MatchString(got[3]) || got[4] != want.fence ||
				got[5] != want.waiters || got[6] != "0" || got[7] != want.value {
				t.Errorf("block %d: %s = %q; want holder %s, held for a time the server's clock tells (no >), a ttl like %s, fence %s, %s waiters, 0 acq/s, value %q",
					i, want.key, got, want.lock.Fingerprint(), want.ttl, want.fence, want.waiters, want.value)
			}
		}
		if _, ok := block["other"]; ok || len(block) != 2 {
			t.Errorf("block %d shows %d locks, want job:a and job:b only, not other (%s)", i, len(block), other.Fingerprint())
		}
	}
}

// TestTopPipedChanges watches locks change hands: a released lock
// disappears, and a new holder shows, with a held for of its own and an
// acquisition counted.
func TestTopPipedChanges(t *testing.T) {
	srv, stays := heldLock(t, "stays")
	locker := dlock.New(srv.Client())
	t.Cleanup(func() { locker.Close() })
	goes, err := locker.TryObtain(t.Context(), "goes", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var out, errOut syncBuffer
	code := make(chan int, 1)
	go func() { code <- runTop(ctx, []string{"--redis", srv.URL(), "--interval", "20ms"}, nil, &out, &errOut) }()
	defer func() { // the test's end, however it ends, stops dlock top
		cancel()
		if c := <-code; c != exitOK {
			t.Errorf("dlock top interrupted = %d, want 0; stderr: %q", c, errOut.String())
		}
	}()

	// lastBlock returns the last complete block, once it has what want says.
	lastBlock := func(what string, want func(map[string][]string) bool) map[string][]string {
		t.Helper()
		var last map[string][]string
		waitUntil(t, what, func() bool {
			blocks := topBlocks(t, out.String())
			last = nil
			if len(blocks) > 0 {
				last = blocks[len(blocks)-1]
			}
			return last != nil && want(last)
		})
		return last
	}
	lastBlock("both locks", func(b map[string][]string) bool { return b["stays"] != nil && b["goes"] != nil })
	if err := goes.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	lastBlock("the released lock to disappear", func(b map[string][]string) bool { return b["stays"] != nil && b["goes"] == nil })
	again, err := locker.TryObtain(t.Context(), "goes", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	block := lastBlock("the new holder", func(b map[string][]string) bool { return b["goes"] != nil })
	if got := block["goes"]; !strings.HasSuffix(got[1], "["+again.Fingerprint()+"]") || strings.HasPrefix(got[2], ">") || got[6] == "0" {
		t.Errorf("the new holder shows as %q; want %s, held since top saw it (no >), and acq/s above 0", got, again.Fingerprint())
	}
	if got := block["stays"]; !strings.HasSuffix(got[1], "["+stays.Fingerprint()+"]") || strings.HasPrefix(got[2], ">") || got[6] != "0" {
		t.Errorf("the lock held all along shows as %q; want %s, held for a time its fence tells (no >), and acq/s 0", got, stays.Fingerprint())
	}
}

func TestTopBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"top", "--sort", "fence"}, exitUsage, `--sort "fence": want key, ttl`},
		{[]string{"top", "--interval", "0s"}, exitUsage, "--interval must be positive"},
		{[]string{"top", "--count", "-1"}, exitUsage, "--count not negative"},
		{[]string{"top", "job:*"}, exitUsage, `unexpected argument "job:*"`},
		{[]string{"top", "--redis", "redis://127.0.0.1:1/0", "--timeout", "1s"}, exitUnavailable, "cannot reach redis"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.says) {
			t.Errorf("dlock %q = %d, %q; want %d and %q", tc.args, code, errOut, tc.code, tc.says)
		}
	}
	code, out, _ := runCLI(t, "top", "--help")
	if code != exitOK || !strings.Contains(out, "lower bound") || !strings.Contains(out, "-interval") {
		t.Errorf("top --help = %d, %q", code, out)
	}
}

// TestTopQuorum watches a lock on a Redlock quorum of three servers.
func TestTopQuorum(t *testing.T) {
	srvs := redistest.NewServers(t, 3)
	nodes := make([]redis.UniversalClient, len(srvs))
	for i, s := range srvs {
		nodes[i] = s.Client()
	}
	locker, err := dlock.NewRedlock(nodes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { locker.Close() })
	lock, err := locker.TryObtain(t.Context(), "job:q", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"top", "--count", "1"}, quorumArgs(srvs)...)
	code, out, errOut := runCLI(t, args...)
	blocks := topBlocks(t, out)
	if code != exitOK || len(blocks) != 1 || len(blocks[0]["job:q"]) == 0 || !strings.HasSuffix(blocks[0]["job:q"][1], "["+lock.Fingerprint()+"]") {
		t.Errorf("top --count 1 on a quorum = %d, %q, %q; want job:q held by %s", code, out, errOut, lock.Fingerprint())
	}
}
