package lab

import (
	"slices"
	"time"
)

// Stretch is an interval [From, To) in which Node held something: a
// primary leader's answers, an exec child's run.
type Stretch struct {
	Node     int
	From, To time.Time
}

// Overlap is an interval in which stretches of two or more nodes held at
// once, and every node whose stretch held in it.
type Overlap struct {
	From, To time.Time
	Nodes    []int // sorted
}

// Overlaps sweeps stretches and returns, in time order, the intervals in
// which two or more nodes' stretches hold. The edges of one instant are
// taken together: a stretch that ends as another begins overlaps nothing.
// It is the one definition of "two primary leaders at once" that the
// end-to-end tests and the benchmarks share.
func Overlaps(stretches []Stretch) []Overlap {
	type edge struct {
		t    time.Time
		node int
		up   bool
	}
	edges := make([]edge, 0, 2*len(stretches))
	for _, s := range stretches {
		if s.To.After(s.From) {
			edges = append(edges, edge{s.From, s.Node, true}, edge{s.To, s.Node, false})
		}
	}
	slices.SortStableFunc(edges, func(a, b edge) int { return a.t.Compare(b.t) })
	active := map[int]int{}
	var out []Overlap
	var cur *Overlap
	nodes := map[int]bool{}
	for k := 0; k < len(edges); {
		at := edges[k].t
		for ; k < len(edges) && edges[k].t.Equal(at); k++ {
			e := edges[k]
			if e.up {
				active[e.node]++
			} else if active[e.node]--; active[e.node] <= 0 {
				delete(active, e.node)
			}
		}
		switch {
		case len(active) >= 2 && cur == nil:
			cur = &Overlap{From: at}
			clear(nodes)
		case len(active) < 2 && cur != nil:
			cur.To = at
			for n := range nodes {
				cur.Nodes = append(cur.Nodes, n)
			}
			slices.Sort(cur.Nodes)
			out = append(out, *cur)
			cur = nil
		}
		if cur != nil {
			for n := range active {
				nodes[n] = true
			}
		}
	}
	return out
}
