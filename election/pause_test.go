//go:build unix

package election_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/election"
	"github.com/dlock-go/dlock/internal/testenv"
	"github.com/dlock-go/dlock/internal/testenv/lockenv"
)

// fencedWrite is the protected resource: it takes a write of a term no
// lower than the highest it has seen, and refuses the others.
var fencedWrite = redis.NewScript(`
local seen = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) < seen then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1])
return 1`)

func write(ctx context.Context, rdb redis.Scripter, resource string, term int64) string {
	n, err := fencedWrite.Run(ctx, rdb, []string{resource}, term).Int()
	switch {
	case err != nil:
		return "error " + err.Error()
	case n == 1:
		return "written"
	}
	return "refused"
}

// TestHelperLeader is not a test: TestPausedLeaderIsFenced runs it in a
// process of its own, to stop it with SIGSTOP. It campaigns, says its term,
// and on a line from its stdin writes to the resource with that term, says
// how that went, then waits for its leadership to end.
func TestHelperLeader(t *testing.T) {
	addr := os.Getenv("ELECTION_TEST_ADDR")
	if addr == "" {
		t.Skip("run by TestPausedLeaderIsFenced")
	}
	name, resource := os.Getenv("ELECTION_TEST_NAME"), os.Getenv("ELECTION_TEST_RESOURCE")
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	locker := dlock.New(rdb)
	defer locker.Close()
	ctx := context.Background()
	l, err := newElection(t, locker, name, election.WithTTL(500*time.Millisecond)).Campaign(ctx, "paused")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("term %d\n", l.Term())
	bufio.NewReader(os.Stdin).ReadString('\n')
	fmt.Println(write(ctx, rdb, resource, l.Term()))
	<-l.Done()
	fmt.Println("lost:", l.Err())
}

// A leader stopped past its lease (SIGSTOP) is replaced; when it runs again,
// its writes with its old term are refused by a fenced resource, and it
// learns that it lost its leadership.
func TestPausedLeaderIsFenced(t *testing.T) {
	t.Parallel()
	name, resource := testenv.NewKey(t), testenv.NewKey(t)+":resource"
	child := exec.Command(os.Args[0], "-test.run=^TestHelperLeader$")
	child.Env = append(os.Environ(), "ELECTION_TEST_ADDR="+redisAddr, "ELECTION_TEST_NAME="+name, "ELECTION_TEST_RESOURCE="+resource)
	stdin, _ := child.StdinPipe()
	stdout, _ := child.StdoutPipe()
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		child.Process.Kill()
		child.Wait()
	}()
	lines := bufio.NewScanner(stdout)
	line := func() string {
		if !lines.Scan() {
			t.Fatalf("the paused leader's output ended: %v", lines.Err())
		}
		return lines.Text()
	}
	var pausedTerm int64
	if _, err := fmt.Sscanf(line(), "term %d", &pausedTerm); err != nil {
		t.Fatal(err)
	}
	if err := child.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	l, err := newElection(t, lockenv.Locker(t, nil), name).Campaign(testenv.Timeout(t, 10*time.Second), "next")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Resign(context.Background())
	if l.Term() <= pausedTerm {
		t.Errorf("the next leader's term %d is not above the paused one's %d", l.Term(), pausedTerm)
	}
	rdb := testenv.Client(t)
	if got := write(t.Context(), rdb, resource, l.Term()); got != "written" {
		t.Fatalf("the next leader's write: %s", got)
	}
	child.Process.Signal(syscall.SIGCONT)
	fmt.Fprintln(stdin, "write")
	if got := line(); got != "refused" {
		t.Errorf("the paused leader's write, after it ran again: %s, want refused", got)
	}
	if got := line(); !strings.HasPrefix(got, "lost:") || !strings.Contains(got, dlock.ErrLockLost.Error()) {
		t.Errorf("the paused leader says %q, want that it lost its leadership", got)
	}
}
