package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlock-go/dlock"
	"github.com/dlock-go/dlock/redistest"
)

// A tmuxPane is a terminal of 120 columns by 30 lines, in a tmux server of
// the test's own, where a command runs.
type tmuxPane struct {
	socket string   // the server's -L name
	env    []string // of tmux, and of the command in the pane
	conf   string   // the server's configuration file
}

// startPane starts a tmux server running command (for sh -c) with args
// ($0, $1, ...), and kills the server at the end of the test. It skips
// the test when tmux is missing.
func startPane(t *testing.T, command string, args ...string) *tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is missing, and the terminal tests of dlock top need it: apt-get install tmux (scripts/test does)")
	}
	dir := t.TempDir()
	p := &tmuxPane{
		socket: fmt.Sprintf("dlock-top-test-%d-%d", os.Getpid(), time.Now().UnixNano()),
		conf:   filepath.Join(dir, "tmux.conf"),
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TMUX=") && !strings.HasPrefix(kv, "TMUX_TMPDIR=") { // not the tmux the tests may run in
			p.env = append(p.env, kv)
		}
	}
	p.env = append(p.env, "TMUX_TMPDIR="+dir) // the socket too is the test's
	if err := os.WriteFile(p.conf, []byte("set -g status off\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	newSession := append([]string{"new-session", "-d", "-s", "top", "-x", "120", "-y", "30", "sh", "-c", command}, args...)
	if out, err := p.tmux(newSession...); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	t.Cleanup(func() { p.tmux("kill-server") })
	return p
}

// tmux runs a command of the pane's tmux server.
func (p *tmuxPane) tmux(args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-f", p.conf, "-L", p.socket}, args...)...)
	cmd.Env = p.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// screen returns the text on the pane now.
func (p *tmuxPane) screen(t *testing.T) string {
	t.Helper()
	out, err := p.tmux("capture-pane", "-p", "-t", "top")
	if err != nil {
		t.Fatalf("tmux capture-pane: %v: %s", err, out)
	}
	return out
}

// waitScreen polls the pane until cond holds of its text, and returns the
// text; after 20s, it fails the test and shows the last.
func (p *tmuxPane) waitScreen(t *testing.T, what string, cond func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		screen := p.screen(t)
		if cond(screen) {
			return screen
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 20s for %s; the screen:\n%s", what, screen)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// press types keys, as tmux send-keys names them, in the pane.
func (p *tmuxPane) press(t *testing.T, keys ...string) {
	t.Helper()
	if out, err := p.tmux(append([]string{"send-keys", "-t", "top"}, keys...)...); err != nil {
		t.Fatalf("tmux send-keys %q: %v: %s", keys, err, out)
	}
}

// topInPane runs dlock top in a pane against srv; when it exits, the shell
// says with which status, and whether the terminal is back in its cooked
// mode (icanon, echo, isig), as stty sees it, then waits for the end of
// the test, so that the pane's state can be read (a pane whose command has
// exited shows no cursor).
const topInPane = `"$0" top --redis "$1" --interval 50ms
echo "dlock exited $?"
stty -a | tr ' ;' '\n\n' | grep -E -x -- '-?(icanon|echo|isig)' | tr '\n' ' '; echo
exec sleep 600`

// TestTopTerminal runs dlock top in a real terminal: it shows the locks,
// the keys change its order and the header says so, and q quits with
// status 0, leaving the terminal as it was.
func TestTopTerminal(t *testing.T) {
	srv := redistest.NewServer(t)
	locker := dlock.New(srv.Client())
	t.Cleanup(func() { locker.Close() })
	soon, err := locker.TryObtain(t.Context(), "job:soon", time.Minute, dlock.WithValue("host-a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := locker.TryObtain(t.Context(), "job:later", time.Hour); err != nil {
		t.Fatal(err)
	}
	p := startPane(t, topInPane, dlockBinary, srv.URL())

	screen := p.waitScreen(t, "the locks on the screen", func(s string) bool {
		return strings.Contains(s, "sort: key") && strings.Contains(s, "job:later") && strings.Contains(s, soon.Fingerprint())
	})
	for _, want := range []string{"dlock top: 2 locks matching \"*\"", "HELD FOR", "ACQ/S", "host-a"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the screen has no %q:\n%s", want, screen)
		}
	}
	// before reports whether job:soon's row is above job:later's.
	before := func(s string) bool {
		i, j := strings.Index(s, "\njob:soon "), strings.Index(s, "\njob:later ")
		return i >= 0 && j >= 0 && i < j
	}
	for _, step := range []struct {
		key, header string
		soonFirst   bool
	}{
		{"t", "sort: ttl\n", true},
		{"t", "sort: ttl, reversed\n", false},
		{"k", "sort: key\n", false}, // later < soon
		{"k", "sort: key, reversed\n", true},
	} {
		p.press(t, step.key)
		p.waitScreen(t, fmt.Sprintf("%q after %s, with job:soon first: %t", step.header, step.key, step.soonFirst), func(s string) bool {
			return strings.Contains(s, step.header) && before(s) == step.soonFirst
		})
	}

	p.press(t, "q")
	p.checkRestored(t)
}

// TestTopTerminalCtrlC checks that Ctrl-C quits dlock top as q does.
func TestTopTerminalCtrlC(t *testing.T) {
	srv, _ := heldLock(t, "job")
	p := startPane(t, topInPane, dlockBinary, srv.URL())
	p.waitScreen(t, "the lock on the screen", func(s string) bool { return strings.Contains(s, "\njob ") })
	p.press(t, "C-c")
	p.checkRestored(t)
}

// checkRestored waits for dlock top to exit, and checks that it exited 0
// and gave the terminal back: the shell's screen, without dlock top's
// text, the cursor shown, and the terminal's cooked mode.
func (p *tmuxPane) checkRestored(t *testing.T) {
	t.Helper()
	screen := p.waitScreen(t, "dlock top to exit", func(s string) bool { return strings.Contains(s, "dlock exited") })
	if !strings.Contains(screen, "dlock exited 0\n") {
		t.Errorf("dlock top did not exit 0:\n%s", screen)
	}
	if strings.Contains(screen, "sort:") {
		t.Errorf("dlock top's view is left on the screen:\n%s", screen)
	}
	screen = p.waitScreen(t, "the stty line", func(s string) bool { return strings.Contains(s, "icanon") })
	if strings.Contains(screen, "-icanon") || strings.Contains(screen, "-echo") || strings.Contains(screen, "-isig") {
		t.Errorf("the terminal is left in raw mode:\n%s", screen)
	}
	state, err := p.tmux("display-message", "-p", "-t", "top", "alternate screen #{alternate_on}, cursor shown #{cursor_flag}")
	if err != nil || strings.TrimSpace(state) != "alternate screen 0, cursor shown 1" {
		t.Errorf("after dlock top, the terminal is in %q (%v); want the main screen, and the cursor shown", state, err)
	}
}
