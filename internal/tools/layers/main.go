// Command layers measures how the files of a Go package are layered.
//
// Usage:
//
//	go run ./internal/tools/layers [-v] [-test] [-trace 'Func:param'] <package>...
//
// Each argument is a package pattern as `go list` takes it ("." or
// "./internal/..."), resolved from the current directory, so a go.work at
// the root is honoured. The tool runs `go list -export -deps -json` once,
// parses each listed package's non-test .go files (GoFiles: build
// constraints applied, _test.go files left out; -test adds the package's
// own _test.go files, not those of package p_test) and type-checks them
// against the export data the go command built for their imports.
//
// # The file graph
//
// There is an arrow A → B (A ≠ B, both files of the package) when an
// identifier in A resolves (types.Info.Uses) to an object declared in B:
// a package-level name, a method, a struct field (selector or composite
// literal key), and the embedded fields a promoted selection passes through
// (types.Info.Selections). Objects of other packages do not count. Arrows
// are counted once per ordered pair of files, whatever the number of
// references; the number of identifier references is reported beside.
//
// # The stacking
//
// The files are stacked top to bottom so that each one stands above the
// files it uses: an arrow from a file to one below it runs down, an arrow
// from a file to one above it (or a file using one that uses it) runs back
// up. The tool looks for the stacking with the fewest back arrows (a
// minimum feedback arc set, NP-hard in general): the strongly connected
// components are stacked in topological order (no arrow between two
// components ever runs back up); a component of at most exactMax files is
// ordered exactly by dynamic programming over subsets; a larger one starts
// from the Eades–Lin–Smyth greedy order and from random orders, each
// improved by moving single files while that removes back arrows, and keeps
// the best. A lower bound (edge-disjoint cycles found one by one) is
// printed beside, so the distance to the optimum is known.
//
// The output gives, per package, the files, arrows, back arrows and the
// stacking; -v lists every back arrow with the identifiers it uses, and the
// cycles behind the lower bound; a last line sums the packages.
//
// # Climbs
//
// -trace 'Func:param' (Func is F, T.M or (*T).M; the flag may be
// repeated) follows the value of one parameter through the static calls
// of each package given that declares the function, in the order they
// appear in the source: within a function, a local variable or struct
// field assigned from an expression that mentions a followed value is
// followed too; a call to a function of the package whose arguments (or
// receiver) mention a followed value is entered, with the matching
// parameters followed, each function once. Every call that enters a
// function in a file standing above the caller's file in the stacking is a
// climb back up. A second count takes the files in the order the walk
// enters them and counts every step up, returns included. Both depend on
// the stacking found when several stackings have the fewest back arrows.
// Calls through interfaces and function values, and calls into other
// packages, are not followed: trace the function the value enters in the
// other package separately.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "layers:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("layers", flag.ContinueOnError)
	verbose := fs.Bool("v", false, "list the back arrows and the identifiers they use")
	tests := fs.Bool("test", false, "count the package's own _test.go files too (package p, not p_test)")
	var traces specList
	fs.Var(&traces, "trace", "follow a parameter through the calls of each package that declares the function: 'Func:param', '(*T).M:param' (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("usage: layers [-v] [-test] [-trace 'Func:param'] package [package ...]")
	}
	pkgs, err := load(fs.Args(), *tests)
	if err != nil {
		return err
	}
	var total summary
	traced := make(map[string]bool)
	for _, p := range pkgs {
		g := buildGraph(p)
		stack := stackFiles(g)
		s := report(out, p, g, stack, *verbose)
		total.add(s)
		for _, spec := range traces {
			fn, param, err := findParam(p.pkg, spec)
			if err != nil {
				continue
			}
			traced[spec] = true
			traceParam(out, p, g, stack, spec, fn, param, *verbose)
		}
	}
	for _, spec := range traces {
		if !traced[spec] {
			return fmt.Errorf("trace %q: no such function and parameter in the packages given", spec)
		}
	}
	if len(pkgs) > 1 {
		fmt.Fprintf(out, "total: %d packages, %d files, %d arrows (%d references), %d back arrows (%d references), lower bound %d\n",
			len(pkgs), total.files, total.arrows, total.refs, total.back, total.backRefs, total.bound)
	}
	return nil
}

// specList collects the values of a repeated flag.
type specList []string

func (l *specList) String() string { return strings.Join(*l, ",") }

func (l *specList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// summary holds the numbers printed for one package, or their sum.
type summary struct {
	files, arrows, refs, back, backRefs, bound int
}

func (s *summary) add(o summary) {
	s.files += o.files
	s.arrows += o.arrows
	s.refs += o.refs
	s.back += o.back
	s.backRefs += o.backRefs
	s.bound += o.bound
}

// report prints one package's numbers and stacking, and returns them.
func report(out io.Writer, p *loadedPackage, g *graph, stack []int, verbose bool) summary {
	pos := positions(stack)
	s := summary{files: len(g.files), arrows: len(g.refs), bound: g.lowerBound()}
	for e, n := range g.refs {
		s.refs += n
		if pos[e.from] > pos[e.to] {
			s.back++
			s.backRefs += n
		}
	}
	fmt.Fprintf(out, "%s: %d files, %d arrows (%d references), %d back arrows (%d references), lower bound %d\n",
		p.path, s.files, s.arrows, s.refs, s.back, s.backRefs, s.bound)
	fmt.Fprintln(out, "  stacking, top to bottom (uses / used by / back arrows out):")
	for i, f := range stack {
		uses, usedBy, backOut := 0, 0, 0
		for e := range g.refs {
			if e.from == f {
				uses++
				if pos[e.to] < i {
					backOut++
				}
			}
			if e.to == f {
				usedBy++
			}
		}
		fmt.Fprintf(out, "  %3d %-28s %3d %3d %3d\n", i+1, g.files[f], uses, usedBy, backOut)
	}
	if verbose && s.back > 0 {
		fmt.Fprintln(out, "  back arrows (file → file above it: identifiers):")
		for _, e := range g.sortedEdges() {
			if pos[e.from] > pos[e.to] {
				fmt.Fprintf(out, "    %s → %s: %s\n", g.files[e.from], g.files[e.to], g.nameList(e))
			}
		}
		fmt.Fprintln(out, "  cycles sharing no arrow (each needs a back arrow in any stacking):")
		for _, c := range g.disjointCycles() {
			names := make([]string, 0, len(c)+1)
			for _, f := range append(c, c[0]) {
				names = append(names, g.files[f])
			}
			fmt.Fprintf(out, "    %s\n", strings.Join(names, " → "))
			for i, f := range c {
				e := edge{f, c[(i+1)%len(c)]}
				fmt.Fprintf(out, "      %s → %s: %s\n", g.files[e.from], g.files[e.to], g.nameList(e))
			}
		}
	}
	return s
}

// positions maps each file to its place in the stack (0 is the top).
func positions(stack []int) []int {
	pos := make([]int, len(stack))
	for i, f := range stack {
		pos[f] = i
	}
	return pos
}
