package top

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// The text of dlock top: a screen in a terminal, or a block of plain lines
// per refresh. Both are made from a topState, and do no I/O.

// A topState is what dlock top knows after a refresh.
type topState struct {
	at   time.Time // when the last refresh ended
	rows []topRow  // the locks held, from the last refresh that worked, in sorted order
	err  error     // why the last refresh failed, or nil
	sort Sort
}

// topKeysHelp is the second line of the screen.
const topKeysHelp = "keys: k key, t ttl, w waiters, a acq/s, h held for (again: reverse), q quit"

// screenLines returns the lines of the screen, width columns by height
// lines at most, for st and the flags cfg.
func screenLines(st topState, cfg Config, width, height int) []string {
	lines := []string{
		fmt.Sprintf("dlock top: %s matching %s at %s, every %s; sort: %s",
			countLocks(len(st.rows)), strconv.Quote(cfg.Pattern), st.at.Format(time.TimeOnly), cfg.Interval, st.sort),
		topKeysHelp,
		"",
	}
	if st.err != nil {
		lines[2] = "refresh failed (showing the last locks seen): " + firstLine(st.err.Error())
	}
	rows := st.rows
	if cfg.Limit > 0 {
		rows = rows[:min(len(rows), cfg.Limit)]
	}
	if room := height - len(lines) - 1; len(rows) > room { // under the table's header
		rows = rows[:max(room-1, 0)] // and a line to say how many more
	}
	lines = append(lines, alignRows(rows)...)
	if more := len(st.rows) - len(rows); more > 0 {
		lines = append(lines, fmt.Sprintf("... and %d more", more))
	}
	for i, line := range lines {
		lines[i] = cut(line, width)
	}
	return lines[:min(len(lines), height)]
}

// alignRows returns the header and rows as lines of aligned columns.
func alignRows(rows []topRow) []string {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(topHeader(), "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r.cells(), "\t"))
	}
	tw.Flush()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	for i, line := range lines {
		lines[i] = strings.TrimRight(line, " ") // no value: no trailing blanks
	}
	return lines
}

// plainBlock returns what dlock top prints for a refresh when its output
// is no terminal: a line that starts with "#" and gives the time, then the
// header and a line per lock, with the columns separated by tabs, then an
// empty line.
func plainBlock(st topState, cfg Config) string {
	rows := st.rows
	if cfg.Limit > 0 && len(rows) > cfg.Limit {
		rows = rows[:cfg.Limit]
	}
	var b strings.Builder
	shown := countLocks(len(rows))
	if len(rows) < len(st.rows) {
		shown = fmt.Sprintf("%d of %s", len(rows), countLocks(len(st.rows)))
	}
	fmt.Fprintf(&b, "# %s: %s matching %s, sorted by %s\n", st.at.Format(time.RFC3339), shown, strconv.Quote(cfg.Pattern), st.sort)
	if len(rows) > 0 {
		b.WriteString(strings.Join(topHeader(), "\t") + "\n")
	}
	for _, r := range rows {
		b.WriteString(strings.Join(r.cells(), "\t") + "\n")
	}
	b.WriteString("\n")
	return b.String()
}

// countLocks says "1 lock", "3 locks".
func countLocks(n int) string {
	if n == 1 {
		return "1 lock"
	}
	return strconv.Itoa(n) + " locks"
}

// cut returns the first width runes of line.
func cut(line string, width int) string {
	n := 0
	for i := range line {
		if n == width {
			return line[:i]
		}
		n++
	}
	return line
}

// firstLine returns s up to its first newline: the screen has room for one
// line of an error.
func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
