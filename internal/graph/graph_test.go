package graph

import (
	"fmt"
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
			reason: "Adding an edge twice adds it once.",
			edges:  [][2]string{{"a", "b"}, {"a", "b"}, {"b", "a"}},
			want:   [][]string{{"a", "b", "a"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var g Graph
			for _, e := range tc.edges {
				g.AddEdge(e[0], e[1])
			}
			c := g.Cycles()
			if diff := cmp.Diff(tc.want, c.Paths); diff != "" {
				t.Errorf("%s\nCycles().Paths: -want, +got:\n%s", tc.reason, diff)
			}
			for _, e := range tc.on {
				if !c.Contains(e[0], e[1]) {
					t.Errorf("%s\nContains(%q, %q) = false, want true", tc.reason, e[0], e[1])
				}
			}
			for _, e := range tc.off {
				if c.Contains(e[0], e[1]) {
					t.Errorf("%s\nContains(%q, %q) = true, want false", tc.reason, e[0], e[1])
				}
			}
		})
	}
}

// TestLongChain proves the search needs no stack as deep as the graph: a
// chain of 100,000 nodes closed into one cycle.
func TestLongChain(t *testing.T) {
	const n = 100_000
	var g Graph
	name := func(i int) string { return fmt.Sprintf("n%06d", i) }
	for i := range n {
		g.AddEdge(name(i), name((i+1)%n))
	}
	c := g.Cycles()
	if len(c.Paths) != 1 || len(c.Paths[0]) != n+1 {
		t.Fatalf("Cycles() found %d paths, want one of %d nodes", len(c.Paths), n+1)
	}
	if c.Paths[0][0] != name(0) || c.Paths[0][n] != name(0) || c.Paths[0][1] != name(1) {
		t.Errorf("Cycles() path starts %v, want n000000 n000001 …", c.Paths[0][:2])
	}
}
