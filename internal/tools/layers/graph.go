package main

import (
	"go/token"
	"go/types"
	"path/filepath"
	"sort"
	"strings"
)

// edge is an arrow from the file that uses to the file that declares.
type edge struct{ from, to int }

// graph is the file graph of one package. Files are numbered in the order
// of their base names.
type graph struct {
	files []string
	refs  map[edge]int             // identifier references per arrow
	names map[edge]map[string]bool // identifiers each arrow uses
}

// buildGraph draws an arrow for every identifier of one file that resolves
// to an object declared in another file of the same package.
func buildGraph(p *loadedPackage) *graph {
	g := &graph{refs: make(map[edge]int), names: make(map[edge]map[string]bool)}
	index := make(map[string]int)
	for _, f := range p.files {
		name := p.fset.File(f.Pos()).Name()
		index[name] = len(g.files)
		g.files = append(g.files, name)
	}
	order := make([]int, len(g.files))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return g.files[order[a]] < g.files[order[b]] })
	renum := make([]int, len(order))
	sorted := make([]string, len(order))
	for i, old := range order {
		renum[old] = i
		sorted[i] = filepath.Base(g.files[old])
	}
	for name, i := range index {
		index[name] = renum[i]
	}
	g.files = sorted
	owners := fieldOwners(p.pkg)
	use := func(at token.Pos, obj types.Object) {
		if obj == nil || obj.Pkg() != p.pkg || !obj.Pos().IsValid() {
			return
		}
		from, ok1 := index[p.fset.File(at).Name()]
		to, ok2 := index[p.fset.File(obj.Pos()).Name()]
		if !ok1 || !ok2 || from == to {
			return
		}
		e := edge{from, to}
		g.refs[e]++
		if g.names[e] == nil {
			g.names[e] = make(map[string]bool)
		}
		g.names[e][objName(obj, owners)] = true
	}
	for id, obj := range p.info.Uses {
		use(id.Pos(), obj)
	}
	for sel, s := range p.info.Selections {
		for _, f := range embeddedPath(s) {
			use(sel.Sel.Pos(), f)
		}
	}
	return g
}

// embeddedPath returns the embedded fields a promoted selection passes
// through (not the selected field or method itself, which Uses records).
func embeddedPath(s *types.Selection) []*types.Var {
	var path []*types.Var
	t := s.Recv()
	idx := s.Index()
	for _, i := range idx[:len(idx)-1] {
		if ptr, ok := t.Underlying().(*types.Pointer); ok {
			t = ptr.Elem()
		}
		st, ok := t.Underlying().(*types.Struct)
		if !ok || i >= st.NumFields() {
			break
		}
		f := st.Field(i)
		path = append(path, f)
		t = f.Type()
	}
	return path
}

// fieldOwners names the struct type of each field declared in a named
// struct type of pkg, so fields print as T.f.
func fieldOwners(pkg *types.Package) map[*types.Var]string {
	owners := make(map[*types.Var]string)
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		tn, ok := scope.Lookup(name).(*types.TypeName)
		if !ok {
			continue
		}
		if st, ok := tn.Type().Underlying().(*types.Struct); ok {
			for i := range st.NumFields() {
				owners[st.Field(i)] = name
			}
		}
	}
	return owners
}

// objName prints an object as F, T, T.M or T.f.
func objName(obj types.Object, owners map[*types.Var]string) string {
	switch o := obj.(type) {
	case *types.Func:
		o = o.Origin()
		if recv := o.Signature().Recv(); recv != nil {
			t := recv.Type()
			if ptr, ok := t.(*types.Pointer); ok {
				t = ptr.Elem()
			}
			if n, ok := types.Unalias(t).(*types.Named); ok {
				return n.Obj().Name() + "." + o.Name()
			}
		}
		return o.Name()
	case *types.Var:
		if owner, ok := owners[o.Origin()]; ok {
			return owner + "." + o.Name()
		}
		if o.IsField() {
			return "." + o.Name()
		}
	}
	return obj.Name()
}

// sortedEdges returns the arrows ordered by file names.
func (g *graph) sortedEdges() []edge {
	edges := make([]edge, 0, len(g.refs))
	for e := range g.refs {
		edges = append(edges, e)
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].from != edges[j].from {
			return edges[i].from < edges[j].from
		}
		return edges[i].to < edges[j].to
	})
	return edges
}

// nameList prints the identifiers an arrow uses, sorted, with the number
// of references.
func (g *graph) nameList(e edge) string {
	names := make([]string, 0, len(g.names[e]))
	for n := range g.names[e] {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// matrix returns the arrows as an adjacency matrix of weight 1 per arrow.
func (g *graph) matrix() [][]int {
	w := make([][]int, len(g.files))
	for i := range w {
		w[i] = make([]int, len(g.files))
	}
	for e := range g.refs {
		w[e.from][e.to] = 1
	}
	return w
}

// lowerBound counts cycles that share no arrow, found one by one (each
// shortest at the time): every stacking has at least one back arrow in
// each, so no stacking has fewer back arrows than this.
func (g *graph) lowerBound() int { return len(g.disjointCycles()) }

// disjointCycles returns cycles of files that share no arrow, found one by
// one, each the shortest left at the time.
func (g *graph) disjointCycles() [][]int {
	w := g.matrix()
	n := len(w)
	var cycles [][]int
	for {
		best := []int(nil)
		for s := range n {
			if c := shortestCycle(w, s); c != nil && (best == nil || len(c) < len(best)) {
				best = c
			}
		}
		if best == nil {
			return cycles
		}
		for i := range best {
			w[best[i]][best[(i+1)%len(best)]] = 0
		}
		cycles = append(cycles, best)
	}
}

// shortestCycle returns the files of a shortest cycle through s, or nil.
func shortestCycle(w [][]int, s int) []int {
	n := len(w)
	prev := make([]int, n)
	for i := range prev {
		prev[i] = -1
	}
	queue := []int{s}
	seen := make([]bool, n)
	seen[s] = true
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for v := range n {
			if w[u][v] == 0 {
				continue
			}
			if v == s {
				cycle := []int{u}
				for x := u; x != s; x = prev[x] {
					cycle = append(cycle, prev[x])
				}
				// cycle holds u, ..., s backwards; reverse it to s, ..., u.
				for i, j := 0, len(cycle)-1; i < j; i, j = i+1, j-1 {
					cycle[i], cycle[j] = cycle[j], cycle[i]
				}
				return cycle
			}
			if !seen[v] {
				seen[v] = true
				prev[v] = u
				queue = append(queue, v)
			}
		}
	}
	return nil
}
