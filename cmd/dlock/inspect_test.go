package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/cmd/dlock/internal/top"
	"github.com/dlock-go/dlock/redistest"
)

// heldLock starts a server and takes a lock on it with the library, whose
// holder asks for its fence.
func heldLock(t *testing.T, key string) (*redistest.Server, *dlock.Lock) {
	t.Helper()
	srv := redistest.NewServer(t)
	locker := dlock.New(srv.Client())
	t.Cleanup(func() { locker.Close() })
	lock, err := locker.TryObtain(context.Background(), key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if lock.Fence() <= 0 {
		t.Fatalf("Fence = %d", lock.Fence())
	}
	return srv, lock
}

func TestStatus(t *testing.T) {
	srv, lock := heldLock(t, "nightly")

	code, out, errOut := runCLI(t, "status", "--redis", srv.URL(), "nightly")
	if code != exitOK || !strings.Contains(out, "yes") || !regexp.MustCompile(`(?m)^holder: +`+lock.Fingerprint()+`$`).MatchString(out) {
		t.Errorf("status of a held lock = %d, %q, %q; want a line \"holder: %s\"", code, out, errOut, lock.Fingerprint())
	}
	if strings.Contains(out, lock.Token()[:6]) {
		t.Errorf("status printed a part of the token %q: %q", lock.Token(), out)
	}
	if strings.Contains(out, "waiters") {
		t.Errorf("status of a lock nobody queues for shows waiters: %q", out)
	}
	if !regexp.MustCompile(`(?m)^summary: +held by ` + regexp.QuoteMeta(defaultHolderName()) + ` \[` + lock.Fingerprint() + `\] for \d+s, fence \d+$`).MatchString(out) {
		t.Errorf("status has no line \"summary: held by NAME [FINGERPRINT] for ..., fence ...\": %q", out)
	}

	code, out, _ = runCLI(t, "status", "nightly", "--json", "--redis", srv.URL()) // flags after KEY
	var got lockJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitOK {
		t.Fatalf("status --json = %d, %q: %v", code, out, err)
	}
	want := lockJSON{Key: "nightly", Held: true, TTLMillis: got.TTLMillis, Fence: lock.Fence(), Holder: lock.Fingerprint(), Waiters: 0, Kind: "lock",
		Name: defaultHolderName(), Since: got.Since}
	if !reflect.DeepEqual(got, want) || got.Since == "" || got.TTLMillis < 50_000 || got.TTLMillis > 60_000 {
		t.Errorf("status --json = %+v, want %+v with a ttl of about 60000", got, want)
	}
	if strings.Contains(out, lock.Token()[:6]) {
		t.Errorf("status --json printed a part of the token %q: %q", lock.Token(), out)
	}

	// A holder that has not asked for its fence has none yet.
	locker := dlock.New(srv.Client())
	t.Cleanup(func() { locker.Close() })
	if _, err := locker.TryObtain(t.Context(), "unfenced", time.Minute); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "status", "--redis", srv.URL(), "unfenced")
	if code != exitOK || !regexp.MustCompile(`(?m)^fence: +none yet$`).MatchString(out) || !regexp.MustCompile(`(?m)^summary: +held by .* for \d+s$`).MatchString(out) {
		t.Errorf("status of a lock whose holder has no fence yet = %d, %q; want \"fence: none yet\"", code, out)
	}

	code, out, _ = runCLI(t, "status", "--redis", srv.URL(), "--json", "free")
	if code != 3 || !strings.Contains(out, `"held":false`) {
		t.Errorf("status --json of a free key = %d, %q; want 3, as leader's for no leader", code, out)
	}
	code, out, _ = runCLI(t, "status", "--redis", srv.URL(), "free")
	if code != 3 || !strings.Contains(out, "held:  no") {
		t.Errorf("status of a free key = %d, %q; want 3", code, out)
	}
}

// TestStatusFairWaiters checks that status and list count the fair waiters
// of a lock, and only while they wait.
func TestStatusFairWaiters(t *testing.T) {
	srv, lock := heldLock(t, "nightly")
	locker := dlock.New(srv.Client())
	t.Cleanup(func() { locker.Close() })
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if _, err := locker.Obtain(ctx, "nightly", time.Minute, dlock.WithFair()); !errors.Is(err, context.Canceled) {
				t.Errorf("a fair waiter: %v, want it cancelled", err)
			}
		})
	}
	waitUntil(t, "two fair waiters", func() bool {
		info, err := locker.Inspect(t.Context(), "nightly")
		return err == nil && info.Waiters == 2
	})

	code, out, errOut := runCLI(t, "status", "--redis", srv.URL(), "nightly")
	if code != exitOK || !regexp.MustCompile(`(?m)^waiters: +2$`).MatchString(out) {
		t.Errorf("status with two fair waiters = %d, %q, %q; want a line \"waiters: 2\"", code, out, errOut)
	}
	code, out, _ = runCLI(t, "status", "--json", "--redis", srv.URL(), "nightly")
	var got lockJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitOK || got.Waiters != 2 || got.Fence != lock.Fence() {
		t.Errorf("status --json with two fair waiters = %d, %q (%v); want waiters 2", code, out, err)
	}
	code, out, _ = runCLI(t, "list", "--redis", srv.URL())
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != exitOK || len(lines) != 2 ||
		!strings.HasSuffix(lines[0], "WAITERS  WHAT") || !strings.HasSuffix(lines[1], " 2        -") {
		t.Errorf("list with two fair waiters = %d, %q; want a WAITERS column that says 2", code, out)
	}

	cancel()
	wg.Wait()
	waitUntil(t, "the waiters to leave", func() bool {
		_, out, _ := runCLI(t, "status", "--json", "--redis", srv.URL(), "nightly")
		return strings.Contains(out, `"waiters":0`)
	})
}

func TestList(t *testing.T) {
	srv, lock := heldLock(t, "job:a")
	locker := dlock.New(srv.Client())
	t.Cleanup(func() { locker.Close() })
	for _, key := range []string{"job:b", "other"} {
		if _, err := locker.TryObtain(context.Background(), key, time.Minute); err != nil {
			t.Fatal(err)
		}
	}

	code, out, errOut := runCLI(t, "list", "--redis", srv.URL(), "--match", "job:*")
	if code != exitOK || !strings.Contains(out, `"job:a"`) || !strings.Contains(out, `"job:b"`) || strings.Contains(out, "other") {
		t.Errorf("list --match job:* = %d, %q, %q", code, out, errOut)
	}
	if !strings.Contains(out, "HOLDER") || !strings.Contains(out, top.HolderName(defaultHolderName(), lock.Fingerprint())) || strings.Contains(out, lock.Token()[:6]) {
		t.Errorf("list = %q; want job:a's holder %s, and no part of its token", out, lock.Fingerprint())
	}
	code, out, _ = runCLI(t, "list", "--redis", srv.URL(), "--json")
	var all []lockJSON
	if err := json.Unmarshal([]byte(out), &all); err != nil || code != exitOK || len(all) != 3 {
		t.Errorf("list --json = %d, %q (%v), want 3 locks", code, out, err)
	}
	code, out, _ = runCLI(t, "list", "--redis", srv.URL(), "--json", "--match", "none:*")
	if code != exitOK || strings.TrimSpace(out) != "[]" {
		t.Errorf("list --json of nothing = %d, %q, want []", code, out)
	}
}

// The keys of one lock of several keys show kind multi and all the keys in
// status, share one line in list, and list all the keys in list --json.
func TestListMulti(t *testing.T) {
	srv, single := heldLock(t, "m:z")
	locker := dlock.New(srv.Client())
	t.Cleanup(func() { locker.Close() })
	lock, err := locker.TryObtainMulti(context.Background(), []string{"m:c", "m:a", "m:b"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runCLI(t, "status", "--redis", srv.URL(), "m:b")
	if code != exitOK || !regexp.MustCompile(`kind:\s+multi`).MatchString(out) || !regexp.MustCompile(`keys:\s+"m:a" "m:b" "m:c"`).MatchString(out) || !strings.Contains(out, lock.Fingerprint()) {
		t.Errorf("status of a key of a multi-key lock = %d, %q, %q; want kind multi, its keys and holder", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "list", "--redis", srv.URL(), "--match", "m:*")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != 3 {
		t.Fatalf("list = %d, %q, %q; want a header and two lines", code, out, errOut)
	}
	var multi, plain string
	for _, line := range lines[1:] {
		if strings.Contains(line, `"m:z"`) {
			plain = line
		} else {
			multi = line
		}
	}
	for _, key := range []string{`"m:a"`, `"m:b"`, `"m:c"`} {
		if !strings.Contains(multi, key) {
			t.Errorf("the line of the multi-key lock %q lacks %s", multi, key)
		}
	}
	if !strings.Contains(multi, "multi") || !strings.Contains(multi, lock.Fingerprint()) {
		t.Errorf("the line of the multi-key lock %q; want kind multi and holder %s", multi, lock.Fingerprint())
	}
	if !strings.Contains(plain, "lock") || !strings.Contains(plain, single.Fingerprint()) {
		t.Errorf("the line of the lock %q; want kind lock and holder %s", plain, single.Fingerprint())
	}

	code, out, _ = runCLI(t, "list", "--redis", srv.URL(), "--json", "--match", "m:*")
	var all []lockJSON
	if err := json.Unmarshal([]byte(out), &all); err != nil || code != exitOK || len(all) != 4 {
		t.Fatalf("list --json = %d, %q (%v), want 4 keys", code, out, err)
	}
	for _, j := range all {
		switch {
		case j.Key == "m:z" && (j.Kind != "lock" || j.Keys != nil):
			t.Errorf("list --json of the lock = %+v", j)
		case j.Key != "m:z" && (j.Kind != "multi" || !slices.Equal(j.Keys, []string{"m:a", "m:b", "m:c"})):
			t.Errorf("list --json of %s = %+v; want kind multi, with every key", j.Key, j)
		}
	}
}

// sha256Prefix is the fingerprint of token that status and list show: the
// first 8 hex digits of its SHA-256 (dlock.LockInfo.Fingerprint).
func sha256Prefix(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])[:8]
}

func TestReleaseNeedsForce(t *testing.T) {
	srv, lock := heldLock(t, "stuck")

	code, _, errOut := runCLI(t, "release", "--redis", srv.URL(), "stuck")
	if code != exitUsage || !strings.Contains(errOut, "--force") {
		t.Errorf("release without --force = %d, %q; want %d and a word about --force", code, errOut, exitUsage)
	}
	if ttl, err := lock.TTL(context.Background()); err != nil || ttl <= 0 {
		t.Fatalf("the lock was touched without --force: %v, %v", ttl, err)
	}

	code, out, errOut := runCLI(t, "release", "--force", "--redis", srv.URL(), "stuck")
	if code != exitOK || !strings.Contains(out, "released") {
		t.Errorf("release --force = %d, %q, %q", code, out, errOut)
	}
	if err := lock.Release(context.Background()); err == nil {
		t.Error("the lock was still held after release --force")
	}
	code, out, _ = runCLI(t, "release", "--force", "--json", "--redis", srv.URL(), "stuck")
	if code != exitOK || strings.TrimSpace(out) != `{"key":"stuck","released":false}` {
		t.Errorf("release --force of a free key = %d, %q", code, out)
	}
}

func TestInspectVerbsBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"status"}, exitUsage, "missing KEY"},
		{[]string{"status", "a", "b"}, exitUsage, `unexpected argument "b"`},
		{[]string{"status", "--redis", "redis://127.0.0.1:1/0", ""}, exitUsage, "KEY is empty"},
		{[]string{"release", "--force"}, exitUsage, "missing KEY"},
		{[]string{"list", "extra"}, exitUsage, "unexpected argument"},
		{[]string{"status", "--nope", "k"}, exitUsage, "flag provided but not defined"},
		{[]string{"status", "--redis", "http://x", "k"}, exitUsage, "bad --redis URL"},
		{[]string{"status", "--redis", "redis://a:1", "--redis", "redis://a:1/1", "k"}, exitUsage, "are the same server; the nodes of a Redlock quorum must be distinct"},
		{[]string{"status", "--redis", "redis://u:s3cret@127.0.0.1:1/0", "--redis", "redis://u:s3cret@127.0.0.1:2/0", "--redis", "redis://127.0.0.1:3/0", "k"},
			exitUnavailable, "only 0 of the 3 Redis nodes answered, and a Redlock quorum needs 2:\n  cannot reach redis at redis://u:xxxxx@127.0.0.1:1/0: "},
		{[]string{"list", "--redis", "redis://127.0.0.1:1/0", "--redis", "redis://127.0.0.1:2/0", "--timeout", "1s"}, exitUnavailable, "a Redlock quorum needs 2"},
		{[]string{"status", "--redis", "redis://user:s3cret@127.0.0.1:1/0", "--timeout", "1s", "k"}, exitUnavailable, "cannot reach redis"},
		{[]string{"list", "--redis", "redis://127.0.0.1:1/0", "--timeout", "1s"}, exitUnavailable, "cannot reach redis"},
		{[]string{"release", "--force", "--redis", "redis://127.0.0.1:1/0", "--timeout", "1s", "k"}, exitUnavailable, "cannot reach redis"},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.says) {
			t.Errorf("dlock %q = %d, %q; want %d and %q", tc.args, code, errOut, tc.code, tc.says)
		}
		if strings.Contains(out+errOut, "s3cret") {
			t.Errorf("dlock %q printed the password", tc.args)
		}
	}
}

// A key of another type is reported, not treated as a lock.
func TestStatusOfAnotherType(t *testing.T) {
	srv := redistest.NewServer(t)
	srv.Client().HSet(context.Background(), "h", "f", "v")
	code, _, errOut := runCLI(t, "status", "--redis", srv.URL(), "h")
	if code != exitUsage || !strings.Contains(errOut, "no lock") {
		t.Errorf("status of a hash = %d, %q", code, errOut)
	}
}

func TestCheck(t *testing.T) {
	loose := redistest.NewServer(t)
	code, out, errOut := runCLI(t, "check", "--redis", loose.URL())
	if code != exitFail || !strings.Contains(out, "warning:") || !strings.Contains(out, "appendonly no") {
		t.Errorf("check of a server without AOF = %d, %q, %q; want 1 and a warning", code, out, errOut)
	}
	safe := redistest.NewServer(t, redistest.WithArgs("--appendonly", "yes", "--appendfsync", "always"))
	code, out, _ = runCLI(t, "check", "--json", "--redis", safe.URL())
	if code != exitOK || strings.TrimSpace(out) != `{"warnings":[]}` {
		t.Errorf("check --json of a safe server = %d, %q", code, out)
	}
	code, _, errOut = runCLI(t, "check", "--redis", "redis://127.0.0.1:1/0", "--timeout", "1s")
	if code != exitUnavailable || !strings.Contains(errOut, "cannot reach") {
		t.Errorf("check of an unreachable server = %d, %q", code, errOut)
	}
}
