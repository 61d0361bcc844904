package bench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteMarkdown writes a markdown table for each measurement in res:
// medians over the rounds for the benchmarks, one line per row for the
// others.
func (res *Results) WriteMarkdown(w io.Writer) {
	if libs := res.subNames("Uncontended", "lib"); len(libs) > 0 {
		fmt.Fprintf(w, "### (a) Uncontended obtain + release\n\n")
		fmt.Fprintf(w, "Free keys, one per goroutine, all goroutines sharing one client; g goroutines. "+
			"time/op is wall time divided by cycles (so it falls as g grows while Redis keeps up); "+
			"p50 and p99 are the latency of one cycle. Medians over %s.\n\n", res.rounds("Uncontended"))
		res.writeCycles(w, "Uncontended", libs)
	}
	if libs := res.subNames("Handoff", "lib"); len(libs) > 0 {
		fmt.Fprintf(w, "### (b) Handoff to a blocked waiter\n\n")
		fmt.Fprintf(w, "From the holder's release call to the waiter's blocking obtain returning, "+
			"after the waiter waited 5 to 15 ms; the waiter has its own connections. A poller with a fixed "+
			"interval longer than that wait shows about the interval less the wait. "+
			"Medians over %s of each percentile.\n\n", res.rounds("Handoff"))
		fmt.Fprintf(w, "| row | p50 | p99 | handoffs per round |\n|---|--:|--:|--:|\n")
		for _, lib := range libs {
			name := "Handoff/lib=" + lib
			p50, _ := res.Median(name, "p50-ns")
			p99, _ := res.Median(name, "p99-ns")
			n, _ := res.Median(name, "iterations")
			fmt.Fprintf(w, "| %s | %s | %s | %.0f |\n", lib, fmtNs(p50), fmtNs(p99), n)
		}
		fmt.Fprintln(w)
	}
	if libs := res.subNames("Redlock", "lib"); len(libs) > 0 {
		fmt.Fprintf(w, "### (e) Redlock on 5 nodes\n\n")
		fmt.Fprintf(w, "As (a), over 5 independent redis-server processes on loopback, a quorum of 3. "+
			"Medians over %s.\n\n", res.rounds("Redlock"))
		res.writeCycles(w, "Redlock", libs)
	}
	if len(res.HotKey) > 0 {
		writeHotKey(w, res.HotKey)
	}
	if len(res.Renew) > 0 {
		writeRenew(w, res.Renew)
	}
}

// writeCycles writes the table of (a) or (e), comparing every row with the
// first one.
func (res *Results) writeCycles(w io.Writer, top string, libs []string) {
	gs := res.subNames(top, "g")
	fmt.Fprintf(w, "| row | g | time/op | vs %s | allocs/op | p50 | p99 |\n|---|--:|--:|--:|--:|--:|--:|\n", libs[0])
	for _, lib := range libs {
		for _, g := range gs {
			name := top + "/lib=" + lib + "/g=" + g
			t, n := res.Median(name, "ns/op")
			if n == 0 {
				continue
			}
			base, _ := res.Median(top+"/lib="+libs[0]+"/g="+g, "ns/op")
			allocs, _ := res.Median(name, "allocs/op")
			p50, _ := res.Median(name, "p50-ns")
			p99, _ := res.Median(name, "p99-ns")
			fmt.Fprintf(w, "| %s | %s | %s | %s | %.0f | %s | %s |\n",
				lib, g, fmtNs(t), fmtRatio(t, base), allocs, fmtNs(p50), fmtNs(p99))
		}
	}
	fmt.Fprintln(w)
}

// rounds says how many runs the benchmarks under top have, at most:
// "10 rounds".
func (res *Results) rounds(top string) string {
	n := 0
	for _, name := range res.Names {
		if strings.HasPrefix(name, top+"/") {
			n = max(n, len(res.Bench[name]))
		}
	}
	if n == 1 {
		return "1 round"
	}
	return strconv.Itoa(n) + " rounds"
}

func writeHotKey(w io.Writer, rows []HotKeyResult) {
	r0 := rows[0]
	fmt.Fprintf(w, "### (c) Hot key\n\n")
	fmt.Fprintf(w, "%d clients, each with its own connections, loop for %s: obtain one shared key (blocking), "+
		"hold it %s (ttl %s), release, want it again at once. *same client*: share of acquisitions won by the client "+
		"that had just released (1/%d would be a fair draw, 0 a strict queue). Waits run from wanting the lock "+
		"to holding it. *cmds/acq*: INFO commandstats calls per acquisition, commands inside scripts included; "+
		"*round trips/acq*: writes on the clients' connections; *MONITOR*: requests / commands run by scripts, "+
		"per acquisition, from a separate short run under MONITOR. *gave up*: blocking obtains that returned an "+
		"error before the run ended (the client called again). *overlaps* must be 0.\n\n",
		r0.Clients, fmtSeconds(r0.Seconds), fmtNs(r0.HoldMs*1e6), fmtNs(r0.TTLMs*1e6), r0.Clients)
	fmt.Fprintf(w, "| row | acq/s | same client | per client min–max | mean wait | max wait | cmds/acq | round trips/acq | MONITOR | gave up | overlaps |\n")
	fmt.Fprintf(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range rows {
		monitor := "–"
		if r.MonitorRequestsPerAcq > 0 {
			monitor = fmt.Sprintf("%.2f / %.2f", r.MonitorRequestsPerAcq, r.MonitorScriptedPerAcq)
		}
		fmt.Fprintf(w, "| %s | %.0f | %.0f%% | %d–%d | %s | %s | %.2f | %.2f | %s | %d | %d |\n",
			r.Lib, r.PerSecond, 100*r.SameClient, r.MinPerClient, r.MaxPerClient,
			fmtNs(r.MeanWaitMs*1e6), fmtNs(r.MaxWaitMs*1e6), r.CommandsPerAcq, r.RoundTripsPerAcq,
			monitor, r.GaveUp, r.Overlaps)
	}
	fmt.Fprintf(w, "\nCommands per acquisition, by command (INFO commandstats):\n\n| row | commands |\n|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s |\n", r.Lib, r.Commands)
	}
	fmt.Fprintln(w)
}

func writeRenew(w io.Writer, rows []RenewResult) {
	r0 := rows[0]
	fmt.Fprintf(w, "### (d) %s locks held and renewed\n\n", fmtCount(r0.Locks))
	fmt.Fprintf(w, "One client obtains %s locks with a ttl of %s and holds them for %s. The counters cover the hold only: "+
		"*client CPU* is this process's user+system time (getrusage) as a share of one core; *server CPU* is "+
		"redis-server's (INFO); *commands/s* is INFO total_commands_processed, which counts commands inside "+
		"scripts; *round trips/s* counts the client's writes (a large pipeline can take several); *goroutines* are the process's, mid-hold. *held at end*: locks the holder still believes it "+
		"has / locks whose keys Redis still has.\n\n",
		fmtCount(r0.Locks), fmtSeconds(r0.TTLSeconds), fmtSeconds(r0.HoldSeconds))
	fmt.Fprintf(w, "| row | obtain all | client CPU | server CPU | commands/s | round trips/s | goroutines | held at end |\n")
	fmt.Fprintf(w, "|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %.1f%% | %.2f s | %.0f | %.0f | %d | %d / %d |\n",
			r.Lib, fmtSeconds(r.ObtainSeconds), r.ClientCPUPercent, r.ServerCPUSeconds,
			r.CommandsPerSecond, r.RoundTripsPerSecond, r.Goroutines, r.HeldByLibrary, r.HeldInRedis)
	}
	fmt.Fprintln(w)
}

// WriteRows writes the rows of every measurement and how each is
// configured, as markdown tables.
func WriteRows(w io.Writer) {
	for _, set := range []struct {
		title string
		rows  []Row
	}{
		{"(a) uncontended", UncontendedRows()},
		{"(b) handoff and (c) hot key", WaitingRows()},
		{"(d) renewed locks", RenewRows()},
		{"(e) Redlock, 5 nodes", RedlockRows()},
	} {
		fmt.Fprintf(w, "| %s | configuration |\n|---|---|\n", set.title)
		for _, r := range set.rows {
			fmt.Fprintf(w, "| `%s` | %s |\n", r.Name, r.Note)
		}
		fmt.Fprintln(w)
	}
}

// fmtNs formats nanoseconds with three significant digits.
func fmtNs(ns float64) string {
	switch {
	case ns == 0:
		return "–"
	case ns < 1e3:
		return fmt.Sprintf("%.0f ns", ns)
	case ns < 1e6:
		return sig3(ns/1e3) + " µs"
	case ns < 1e9:
		return sig3(ns/1e6) + " ms"
	}
	return sig3(ns/1e9) + " s"
}

func fmtSeconds(s float64) string { return fmtNs(s * 1e9) }

// sig3 formats v (1 <= v < 1000) with three significant digits.
func sig3(v float64) string {
	switch {
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

func fmtRatio(v, base float64) string {
	if base == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", v/base)
}

// fmtCount writes n with thousands separated by commas.
func fmtCount(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
