package faults

import (
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

const (
	// labelKey is the pprof label that marks a proxy's goroutines.
	labelKey = "github.com/dlock-go/dlock/faults.Proxy"
	// stopTimeout bounds how long stopping a proxy waits for its goroutines.
	stopTimeout = 5 * time.Second
	// stopPoll is the pause between two looks at the goroutines.
	stopPoll = time.Millisecond
)

// do runs f with the proxy's pprof label. toxiproxy starts goroutines for
// its accept loop, for each connection and for each fault, and gives no way
// to wait for them; a goroutine inherits the labels of the one that starts
// it, so every call into toxiproxy that may start goroutines goes through
// do, and stop can then wait for exactly this proxy's goroutines, even
// while other proxies run in parallel tests.
func (p *Proxy) do(f func()) {
	pprof.Do(context.Background(), pprof.Labels(labelKey, p.label), func(context.Context) { f() })
}

// waitGoroutines waits until no goroutine carries the proxy's label, and
// returns an error listing those still running after timeout.
func (p *Proxy) waitGoroutines(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		n, stacks := p.goroutines()
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("faults: %d goroutines of toxiproxy still running %v after proxy %s stopped:\n%s",
				n, timeout, p.addr, stacks)
		}
		time.Sleep(stopPoll)
	}
}

// goroutines returns how many goroutines carry the proxy's label, and their
// stacks. It reads the goroutine profile in its text form (debug=1), whose
// records are separated by blank lines, each starting with "N @ addresses"
// and listing its labels as `# labels: {"key":"value", ...}`.
func (p *Proxy) goroutines() (n int, stacks string) {
	var profile bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&profile, 1); err != nil {
		return 0, "" // writing to a bytes.Buffer does not fail
	}
	label := fmt.Sprintf("%q:%q", labelKey, p.label) // as pprof prints labels
	var found []string
	for record := range strings.SplitSeq(profile.String(), "\n\n") {
		if !strings.Contains(record, "# labels: ") || !strings.Contains(record, label) {
			continue
		}
		for line := range strings.SplitSeq(record, "\n") {
			if count, _, ok := strings.Cut(line, " @ "); ok {
				if k, err := strconv.Atoi(count); err == nil {
					n += k
				}
			}
		}
		found = append(found, record)
	}
	return n, strings.Join(found, "\n\n")
}
