// Package graph finds the cycles of a directed graph whose nodes are named by
// strings, deterministically: the same edges give the same cycles, in the same
// order, however they were added.
package graph

import (
	"slices"
	"strings"
)

// A Graph is a directed graph. The zero value is empty and ready to use.
type Graph struct {
	index map[string]int
	names []string
	out   [][]int
}

// AddEdge adds an edge from one node to another, adding the nodes as needed.
// Adding an edge twice adds it once.
func (g *Graph) AddEdge(from, to string) {
	f, t := g.node(from), g.node(to)
	if !slices.Contains(g.out[f], t) {
		g.out[f] = append(g.out[f], t)
	}
}

func (g *Graph) node(name string) int {
	if i, ok := g.index[name]; ok {
		return i
	}
	if g.index == nil {
		g.index = map[string]int{}
	}
	g.index[name] = len(g.names)
	g.names = append(g.names, name)
	g.out = append(g.out, nil)
	return len(g.names) - 1
}

// Cycles describes where a graph's edges form cycles.
type Cycles struct {
	// Paths holds one cycle through each group of nodes that reach each other,
	// ordered by their first node. A path starts at the group's smallest name
	// and is the shortest cycle back to it, so it ends where it starts:
	// [a b c a], or [a a] for an edge from a node to itself.
	Paths [][]string

	component map[string]int
}

// Contains tells whether the edge from one node to another lies on a cycle:
// whether both ends are in the same group of nodes that reach each other.
func (c Cycles) Contains(from, to string) bool {
	f, fromOK := c.component[from]
	t, toOK := c.component[to]
	return fromOK && toOK && f == t
}

// Cycles finds the cycles of the graph.
func (g *Graph) Cycles() Cycles {
	type cycle struct {
		path    []string
		members []int
	}
	var found []cycle
	for _, members := range g.components() {
		if len(members) == 1 && !slices.Contains(g.out[members[0]], members[0]) {
			continue // A single node without an edge to itself is no cycle.
		}
		found = append(found, cycle{path: g.shortestCycle(members), members: members})
	}
	slices.SortFunc(found, func(a, b cycle) int { return strings.Compare(a.path[0], b.path[0]) })
	cycles := Cycles{component: map[string]int{}}
	for i, c := range found {
		cycles.Paths = append(cycles.Paths, c.path)
		for _, m := range c.members {
			cycles.component[g.names[m]] = i
		}
	}
	return cycles
}

// components returns the strongly connected components (Tarjan's algorithm,
// iterative so that a long chain can't exhaust the stack).
func (g *Graph) components() [][]int {
	const unvisited = -1
	n := len(g.names)
	order, low := make([]int, n), make([]int, n)
	onStack := make([]bool, n)
	for i := range order {
		order[i] = unvisited
	}
	var result [][]int
	var members []int
	next := 0
	type frame struct{ node, edge int }
	for root := range n {
		if order[root] != unvisited {
			continue
		}
		call := []frame{{node: root}}
		order[root], low[root] = next, next
		next++
		members = append(members, root)
		onStack[root] = true
		for len(call) > 0 {
			top := &call[len(call)-1]
			v := top.node
			if top.edge < len(g.out[v]) {
				w := g.out[v][top.edge]
				top.edge++
				switch {
				case order[w] == unvisited:
					order[w], low[w] = next, next
					next++
					members = append(members, w)
					onStack[w] = true
					call = append(call, frame{node: w})
				case onStack[w]:
					low[v] = min(low[v], order[w])
				}
				continue
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				parent := call[len(call)-1].node
				low[parent] = min(low[parent], low[v])
			}
			if low[v] != order[v] {
				continue
			}
			var component []int
			for {
				w := members[len(members)-1]
				members = members[:len(members)-1]
				onStack[w] = false
				component = append(component, w)
				if w == v {
					break
				}
			}
			result = append(result, component)
		}
	}
	return result
}

// shortestCycle returns the shortest cycle through the component's smallest
// name, found breadth first visiting neighbours in name order.
func (g *Graph) shortestCycle(component []int) []string {
	in := make(map[int]bool, len(component))
	start := component[0]
	for _, m := range component {
		in[m] = true
		if strings.Compare(g.names[m], g.names[start]) < 0 {
			start = m
		}
	}
	parent := map[int]int{}
	queue := []int{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range g.sortedOut(v) {
			if w == start {
				return g.pathTo(parent, start, v)
			}
			if _, seen := parent[w]; seen || !in[w] {
				continue
			}
			parent[w] = v
			queue = append(queue, w)
		}
	}
	panic("graph: a strongly connected component has no cycle through its first node")
}

// pathTo returns the names from start to last through parent links, followed
// by start again to close the cycle.
func (g *Graph) pathTo(parent map[int]int, start, last int) []string {
	path := []string{g.names[start]}
	for v := last; v != start; v = parent[v] {
		path = append(path, g.names[v])
	}
	slices.Reverse(path[1:])
	return append(path, g.names[start])
}

func (g *Graph) sortedOut(v int) []int {
	out := slices.Clone(g.out[v])
	slices.SortFunc(out, func(a, b int) int { return strings.Compare(g.names[a], g.names[b]) })
	return out
}
