package graph

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCycles(t *testing.T) {
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

			edges := make([][2]int32, len(tc.edges))
			for i, e := range tc.edges {
				edges[i] = [2]int32{int32(number(e[0])), int32(number(e[1]))}
			}
			c := fromEdges(len(names), edges).Cycles()
			var paths [][]string
			for _, p := range c.Paths {
				path := make([]string, len(p))
				for i, n := range p {
					path[i] = names[n]
				}
				paths = append(paths, path)
			}
			if diff := cmp.Diff(tc.want, paths); diff != "" {
				t.Errorf("%s\nCycles().Paths: -want, +got:\n%s", tc.reason, diff)
			}
			for _, e := range tc.on {
				if !c.Contains(number(e[0]), number(e[1])) {
					t.Errorf("%s\nContains(%q, %q) = false, want true", tc.reason, e[0], e[1])
				}
			}
			for _, e := range tc.off {
				if c.Contains(number(e[0]), number(e[1])) {
					t.Errorf("%s\nContains(%q, %q) = true, want false", tc.reason, e[0], e[1])
				}
			}
		})
	}
}

// TestLongChain proves the search needs no stack as deep as the graph, and
// no time that grows faster than it: a chain of 100,000 nodes closed into one
// cycle, and the same chain open, where every node is a component of its own.
func TestLongChain(t *testing.T) {
	const n = 100_000
	var closedEdges, openEdges [][2]int32
	for i := range int32(n) {
		closedEdges = append(closedEdges, [2]int32{i, (i + 1) % n})
		if i+1 < n {
			openEdges = append(openEdges, [2]int32{i, i + 1})
		}
	}
	closed, open := fromEdges(n, closedEdges), fromEdges(n, openEdges)
	c := closed.Cycles()
	if len(c.Paths) != 1 || len(c.Paths[0]) != n+1 {
		t.Fatalf("Cycles() found %d paths, want one of %d nodes", len(c.Paths), n+1)
	}
	if c.Paths[0][0] != 0 || c.Paths[0][n] != 0 || c.Paths[0][1] != 1 {
		t.Errorf("Cycles() path starts %v, want 0 1 …", c.Paths[0][:2])
	}
	if c := open.Cycles(); len(c.Paths) != 0 || c.Contains(0, 1) {
		t.Errorf("Cycles() of an open chain found %v, want none", c.Paths)
	}
}

// fromEdges returns the graph of nodes 0 to n-1 with the edges, given as
// [from, to] in any order.
func fromEdges(n int, edges [][2]int32) *Graph {
	edges = slices.Clone(edges)
	slices.SortFunc(edges, func(a, b [2]int32) int {
		if a[0] != b[0] {
			return int(a[0] - b[0])
		}
		return int(a[1] - b[1])
	})
	first, successors := make([]int32, n+1), make([]int32, len(edges))
	for i, e := range edges {
		first[e[0]+1]++
		successors[i] = e[1]
	}
	for v := range n {
		first[v+1] += first[v]
	}
	return New(first, successors)
}
