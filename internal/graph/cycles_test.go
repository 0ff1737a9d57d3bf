package graph

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCyclesAreReportedFromTheFirstNameByTheShortestPath(t *testing.T) {
	cases := map[string]struct {
		reason string
		edges  [][2]string
		want   [][]string
		// on lists edges that must lie on a cycle; off, edges that must not.
		on, off [][2]string
	}{
		"Empty": {
			reason: "A graph without edges has no cycles.",
		},
		"FanIn": {
			reason: "Many dependents of one shared node form no cycle.",
			edges:  [][2]string{{"a", "shared"}, {"b", "shared"}, {"c", "shared"}},
			off:    [][2]string{{"a", "shared"}},
		},
		"SelfLoop": {
			reason: "A node that references itself is a cycle of one edge.",
			edges:  [][2]string{{"a", "a"}, {"a", "b"}},
			want:   [][]string{{"a", "a"}},
			on:     [][2]string{{"a", "a"}},
			off:    [][2]string{{"a", "b"}},
		},
		"Triangle": {
			reason: "The path starts at the smallest name, whatever order the edges came in.",
			edges:  [][2]string{{"c", "a"}, {"b", "c"}, {"a", "b"}},
			want:   [][]string{{"a", "b", "c", "a"}},
			on:     [][2]string{{"a", "b"}, {"b", "c"}, {"c", "a"}},
		},
		"ShortestThroughFirst": {
			reason: "Of two cycles through the first node, the path is the shorter; a chord inside the component is on a cycle too.",
			edges:  [][2]string{{"a", "x"}, {"x", "y"}, {"y", "a"}, {"a", "z"}, {"z", "a"}, {"x", "z"}},
			want:   [][]string{{"a", "z", "a"}},
			on:     [][2]string{{"x", "z"}, {"x", "y"}},
		},
		"TwoComponents": {
			reason: "Each group of nodes that reach each other is reported once, in name order, and an edge between groups is on no cycle.",
			edges:  [][2]string{{"q", "p"}, {"p", "q"}, {"b", "a"}, {"a", "b"}, {"b", "p"}},
			want:   [][]string{{"a", "b", "a"}, {"p", "q", "p"}},
			off:    [][2]string{{"b", "p"}},
		},
		"DuplicateEdges": {
			reason: "Adding an edge twice changes no cycle.",
			edges:  [][2]string{{"a", "b"}, {"a", "b"}, {"b", "a"}},
			want:   [][]string{{"a", "b", "a"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// Numbered in name order, as function-dependencies numbers
			// composed resources.
			var names []string
			for _, e := range slices.Concat(tc.edges, tc.on, tc.off) {
				names = append(names, e[0], e[1])
			}
			slices.Sort(names)
			names = slices.Compact(names)
			number := func(name string) int { i, _ := slices.BinarySearch(names, name); return i }

			edges := make([][2]int, len(tc.edges))
			for i, e := range tc.edges {
				edges[i] = [2]int{number(e[0]), number(e[1])}
			}
			found, onCycle := Cycles(fromEdges(len(names), edges))
			var paths [][]string
			for _, p := range found {
				path := make([]string, len(p))
				for i, n := range p {
					path[i] = names[n]
				}
				paths = append(paths, path)
			}
			if diff := cmp.Diff(tc.want, paths); diff != "" {
				t.Errorf("%s\ncycles(): -want, +got:\n%s", tc.reason, diff)
			}
			for _, e := range tc.on {
				if !onCycle(number(e[0]), number(e[1])) {
					t.Errorf("%s\nonCycle(%q, %q) = false, want true", tc.reason, e[0], e[1])
				}
			}
			for _, e := range tc.off {
				if onCycle(number(e[0]), number(e[1])) {
					t.Errorf("%s\nonCycle(%q, %q) = true, want false", tc.reason, e[0], e[1])
				}
			}
		})
	}
}

func TestAnEdgeOnACycleClosesTheShortestCycleBackThroughIt(t *testing.T) {
	// a=0 b=1 c=2 d=3 e=4 f=5: a → b → c → a, b → d → a, c → e, e → c,
	// e → f.
	out := fromEdges(6, [][2]int{{0, 1}, {1, 2}, {2, 0}, {1, 3}, {3, 0}, {2, 4}, {4, 2}, {4, 5}})
	got := closing(out, [][2]int{{0, 1}, {2, 4}, {4, 2}, {1, 2}})
	want := [][]int{
		{0, 1, 2, 0}, // Back from b by c and by d alike: c is the smaller.
		{2, 4, 2},
		{4, 2, 4},
		{1, 2, 0, 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("closing(): -want, +got:\n%s", diff)
	}
	if got := closing(out, [][2]int{{4, 5}}); got[0] != nil {
		t.Errorf("closing() of an edge out of its group = %v, want nil", got[0])
	}
}

// TestLongChain proves the search needs no stack as deep as the graph, and
// no time that grows faster than it: a chain of 100,000 nodes closed into one
// cycle, and the same chain open, where every node is a component of its own.
func TestLongChain(t *testing.T) {
	const n = 100_000
	var closedEdges, openEdges [][2]int
	for i := range n {
		closedEdges = append(closedEdges, [2]int{i, (i + 1) % n})
		if i+1 < n {
			openEdges = append(openEdges, [2]int{i, i + 1})
		}
	}
	paths, _ := Cycles(fromEdges(n, closedEdges))
	if len(paths) != 1 || len(paths[0]) != n+1 {
		t.Fatalf("Cycles() found %d paths, want one of %d nodes", len(paths), n+1)
	}
	if paths[0][0] != 0 || paths[0][n] != 0 || paths[0][1] != 1 {
		t.Errorf("Cycles() path starts %v, want 0 1 …", paths[0][:2])
	}
	if paths, onCycle := Cycles(fromEdges(n, openEdges)); len(paths) != 0 || onCycle(0, 1) {
		t.Errorf("Cycles() of an open chain found %v, want none", paths)
	}
	// The closing edge, and an edge of the chain, searched for the cycle
	// each closes: one search of the chain each.
	out := fromEdges(n, closedEdges)
	closed := closing(out, [][2]int{{n - 1, 0}, {n - 1, 0}, {0, 1}})
	if c := closed[0]; len(c) != n+1 || c[0] != n-1 || c[1] != 0 || c[n] != n-1 {
		t.Errorf("closing() of the closing edge: a path of %d nodes, want n-1 0 1 … n-1 of %d", len(c), n+1)
	}
	if c := closed[2]; len(c) != n+1 || c[0] != 0 || c[1] != 1 || c[n] != 0 {
		t.Errorf("closing() of the edge 0 → 1: a path of %d nodes, want 0 1 … 0 of %d", len(c), n+1)
	}
}

// closing returns the cycle each edge closes, as closes finds it.
func closing(out [][]int, edges [][2]int) [][]int {
	component := ComponentOf(len(out), CyclicComponents(out))
	cycles := make([][]int, len(edges))
	for i, e := range edges {
		cycles[i] = Closes(out, component, e[0], e[1])
	}
	return cycles
}

// fromEdges returns the successors of nodes 0 to n-1, sorted, of the edges
// given as [from, to] in any order.
func fromEdges(n int, edges [][2]int) [][]int {
	out := make([][]int, n)
	for _, e := range edges {
		out[e[0]] = append(out[e[0]], e[1])
	}
	for _, s := range out {
		slices.Sort(s)
	}
	return out
}
