package main

import (
	"math/bits"
	"math/rand/v2"
)

// exactMax is the largest strongly connected component ordered exactly.
const exactMax = 20

// restarts is the number of random orders improved beside the greedy one.
const restarts = 200

// stackFiles returns the files top to bottom, with as few back arrows as
// the search finds.
func stackFiles(g *graph) []int {
	return stack(g.matrix())
}

// stack orders the vertices of the graph w (w[a][b] is 1 when a uses b, 0
// otherwise) top to bottom so that few arrows run back up (from a vertex to
// one above it).
func stack(w [][]int) []int {
	var order []int
	for _, comp := range components(w) {
		switch {
		case len(comp) == 1:
			order = append(order, comp...)
		case len(comp) <= exactMax:
			order = append(order, exact(w, comp)...)
		default:
			order = append(order, search(w, comp)...)
		}
	}
	return order
}

// backWeight counts the arrows running back up in order.
func backWeight(w [][]int, order []int) int {
	sum := 0
	for i, a := range order {
		for _, b := range order[:i] {
			sum += w[a][b]
		}
	}
	return sum
}

// components returns the strongly connected components of w, stacked so
// that no arrow between two of them runs back up (Tarjan's algorithm
// completes a component after every component it reaches, so the
// components come out bottom first and are reversed).
func components(w [][]int) [][]int {
	n := len(w)
	index := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var st []int
	var comps [][]int
	next := 0
	var visit func(v int)
	visit = func(v int) {
		index[v], low[v] = next, next
		next++
		st = append(st, v)
		onStack[v] = true
		for u := range n {
			if w[v][u] == 0 {
				continue
			}
			if index[u] < 0 {
				visit(u)
				low[v] = min(low[v], low[u])
			} else if onStack[u] {
				low[v] = min(low[v], index[u])
			}
		}
		if low[v] == index[v] {
			var comp []int
			for {
				u := st[len(st)-1]
				st = st[:len(st)-1]
				onStack[u] = false
				comp = append(comp, u)
				if u == v {
					break
				}
			}
			comps = append(comps, comp)
		}
	}
	for v := range n {
		if index[v] < 0 {
			visit(v)
		}
	}
	for i, j := 0, len(comps)-1; i < j; i, j = i+1, j-1 {
		comps[i], comps[j] = comps[j], comps[i]
	}
	return comps
}

// exact orders a small component optimally: best[S] is the least back
// weight of stacking the set S of vertices at the top; a vertex placed
// next, below S, adds its arrows into S.
func exact(w [][]int, comp []int) []int {
	k := len(comp)
	out := make([]uint32, k) // out[i]: the vertices of comp that comp[i] uses
	for i, a := range comp {
		for j, b := range comp {
			if w[a][b] > 0 {
				out[i] |= 1 << j
			}
		}
	}
	best := make([]int32, 1<<k)
	last := make([]int8, 1<<k)
	for s := uint32(1); s < 1<<k; s++ {
		best[s] = -1
		for rest := s; rest != 0; rest &= rest - 1 {
			i := bits.TrailingZeros32(rest)
			prev := s &^ (1 << i)
			cost := best[prev] + int32(bits.OnesCount32(out[i]&prev))
			if best[s] < 0 || cost < best[s] {
				best[s], last[s] = cost, int8(i)
			}
		}
	}
	order := make([]int, k)
	for s, at := uint32(1<<k-1), k-1; s != 0; at-- {
		i := int(last[s])
		order[at] = comp[i]
		s &^= 1 << i
	}
	return order
}

// search orders a large component: the Eades–Lin–Smyth greedy order and
// random orders, each improved by moving single vertices, the best kept.
func search(w [][]int, comp []int) []int {
	best := improve(w, greedy(w, comp))
	bestCost := backWeight(w, best)
	rng := rand.New(rand.NewPCG(1, 2))
	for range restarts {
		order := append([]int(nil), comp...)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		order = improve(w, order)
		if c := backWeight(w, order); c < bestCost {
			best, bestCost = order, c
		}
	}
	return best
}

// greedy is Eades, Lin and Smyth's heuristic: sinks go to the bottom,
// sources to the top, and otherwise the vertex with the most weight out
// less weight in goes to the top.
func greedy(w [][]int, comp []int) []int {
	left := make(map[int]bool, len(comp))
	for _, v := range comp {
		left[v] = true
	}
	degree := func(v int) (in, out int) {
		for u := range left {
			in += w[u][v]
			out += w[v][u]
		}
		return in, out
	}
	var top, bottom []int
	for len(left) > 0 {
		sink, source, most, mostScore := -1, -1, -1, 0
		for _, v := range comp {
			if !left[v] {
				continue
			}
			in, out := degree(v)
			switch {
			case out == 0 && sink < 0:
				sink = v
			case in == 0 && source < 0:
				source = v
			case most < 0 || out-in > mostScore:
				most, mostScore = v, out-in
			}
		}
		switch {
		case sink >= 0:
			delete(left, sink)
			bottom = append([]int{sink}, bottom...)
		case source >= 0:
			delete(left, source)
			top = append(top, source)
		default:
			delete(left, most)
			top = append(top, most)
		}
	}
	return append(top, bottom...)
}

// improve moves single vertices to the place that removes the most back
// weight, until no move removes any.
func improve(w [][]int, order []int) []int {
	for moved := true; moved; {
		moved = false
		for p := range order {
			v := order[p]
			bestGain, bestAt := 0, p
			gain := 0
			for q := p - 1; q >= 0; q-- { // v moves above order[q]
				u := order[q]
				gain += w[v][u] - w[u][v]
				if gain > bestGain {
					bestGain, bestAt = gain, q
				}
			}
			gain = 0
			for q := p + 1; q < len(order); q++ { // v moves below order[q]
				u := order[q]
				gain += w[u][v] - w[v][u]
				if gain > bestGain {
					bestGain, bestAt = gain, q
				}
			}
			if bestAt != p {
				order = moveTo(order, p, bestAt)
				moved = true
			}
		}
	}
	return order
}

// moveTo moves order[from] to index to, shifting the ones between.
func moveTo(order []int, from, to int) []int {
	v := order[from]
	if from < to {
		copy(order[from:to], order[from+1:to+1])
	} else {
		copy(order[to+1:from+1], order[to:from])
	}
	order[to] = v
	return order
}
