package demo

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// happenedWidth is the width of the WHAT HAPPENED column: a case writes
// what happened in lines of about 50 characters. A longer first line pushes
// its row's INVARIANT to the right; a longer line after it harms nothing.
const happenedWidth = 54

// A table prints the demo's table a row at a time, as each case ends. Its
// columns cannot be measured over every row first, as text/tabwriter
// does: the widths of CASE and PACKAGE come from the cases, known at the
// start, and WHAT HAPPENED has a fixed width.
type table struct {
	w         io.Writer
	name, pkg int // the widths of the CASE and PACKAGE columns
}

// newTable returns the table of cases on w, and prints its header.
func newTable(w io.Writer, cases []scenario) *table {
	t := &table{w: w, name: len("CASE"), pkg: len("PACKAGE")}
	for _, c := range cases {
		t.name = max(t.name, utf8.RuneCountInString(c.name))
		t.pkg = max(t.pkg, utf8.RuneCountInString(c.pkg))
	}
	t.line("CASE", "PACKAGE", "WHAT HAPPENED", "INVARIANT")
	return t
}

// row prints the row of case c, whose result is r: a line, and one more
// for each further line of what happened.
func (t *table) row(c scenario, r result) {
	lines := strings.Split(r.happened, "\n")
	t.line(c.name, c.pkg, lines[0], r.invariant)
	for _, line := range lines[1:] {
		t.line("", "", line, "")
	}
}

// line prints one line of the table, without the padding of empty cells
// at its end.
func (t *table) line(name, pkg, happened, invariant string) {
	s := fmt.Sprintf("%-*s  %-*s  %-*s  %s", t.name, name, t.pkg, pkg, happenedWidth, happened, invariant)
	fmt.Fprintln(t.w, strings.TrimRight(s, " "))
}
