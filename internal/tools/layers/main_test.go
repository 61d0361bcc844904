package main

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// graphOf builds an adjacency matrix of n vertices from arrows "a>b".
func graphOf(n int, arrows ...string) [][]int {
	w := make([][]int, n)
	for i := range w {
		w[i] = make([]int, n)
	}
	for _, a := range arrows {
		w[a[0]-'a'][a[2]-'a'] = 1
	}
	return w
}

func TestStack(t *testing.T) {
	tests := []struct {
		name   string
		n      int
		arrows []string
		back   int
	}{
		{"chain", 4, []string{"a>b", "b>c", "c>d"}, 0},
		{"chain upside down", 4, []string{"d>c", "c>b", "b>a"}, 0},
		{"two-cycle", 2, []string{"a>b", "b>a"}, 1},
		{"triangle", 3, []string{"a>b", "b>c", "c>a"}, 1},
		{"two triangles sharing an arrow", 4, []string{"a>b", "b>c", "c>a", "b>d", "d>a"}, 1},
		{"tournament of 4 with one cycle", 4, []string{"a>b", "a>c", "a>d", "b>c", "c>d", "d>b"}, 1},
		{"disjoint cycles", 6, []string{"a>b", "b>a", "c>d", "d>c", "e>f", "f>e", "a>c", "c>e"}, 3},
		{"complete both ways", 4, []string{"a>b", "b>a", "a>c", "c>a", "a>d", "d>a", "b>c", "c>b", "b>d", "d>b", "c>d", "d>c"}, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := graphOf(tt.n, tt.arrows...)
			order := stack(w)
			if got := sortedCopy(order); !slices.Equal(got, identity(tt.n)) {
				t.Fatalf("stack = %v, not a permutation of %d vertices", order, tt.n)
			}
			if got := backWeight(w, order); got != tt.back {
				t.Errorf("stack = %v: %d back arrows, want %d", order, got, tt.back)
			}
		})
	}
}

// TestSearchMatchesExact checks the heuristic for large components against
// the exact order on random graphs small enough for both.
func TestSearchMatchesExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 30 {
		n := 6 + rng.IntN(7)
		w := make([][]int, n)
		for i := range w {
			w[i] = make([]int, n)
			for j := range w[i] {
				if i != j && rng.IntN(3) == 0 {
					w[i][j] = 1
				}
			}
		}
		comp := identity(n)
		want := backWeight(w, exact(w, comp))
		got := backWeight(w, search(w, comp))
		if got != want {
			t.Errorf("graph %v: search finds %d back arrows, exact %d", w, got, want)
		}
		if greedy := backWeight(w, greedy(w, comp)); greedy < want {
			t.Errorf("graph %v: greedy %d beats exact %d", w, greedy, want)
		}
	}
}

func TestLowerBound(t *testing.T) {
	g := &graph{files: []string{"a.go", "b.go", "c.go", "d.go"}, refs: map[edge]int{
		{0, 1}: 1, {1, 0}: 1, {2, 3}: 1, {3, 2}: 1, {1, 2}: 1,
	}}
	if got := g.lowerBound(); got != 2 {
		t.Errorf("lowerBound = %d, want 2", got)
	}
}

// TestRun loads this package itself, so it needs the go command.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-v", "-trace", "run:args", "."}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"internal/tools/layers:", "main.go", "back arrows", "climbs back up"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	err := run([]string{"-trace", "noSuchFunc:x", "."}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "noSuchFunc") {
		t.Errorf("run with an unknown trace function: err = %v, want it named", err)
	}
	if err := run(nil, &bytes.Buffer{}); err == nil {
		t.Error("run without a package: no error")
	}
}

func identity(n int) []int {
	v := make([]int, n)
	for i := range v {
		v[i] = i
	}
	return v
}

func sortedCopy(v []int) []int {
	c := slices.Clone(v)
	slices.Sort(c)
	return c
}
