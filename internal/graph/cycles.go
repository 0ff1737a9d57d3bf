// Package graph finds the cycles of a directed graph deterministically: the
// same edges give the same cycles, in the same order.
//
// Nodes are the numbers 0 to n-1, and their order is the order the cycles are
// reported in and start from: the caller numbers its nodes in the order it
// wants to see them, such as by name.
package graph

import "slices"

// A Graph is a directed graph of numbered nodes, in compressed form: the
// edges from node v go to successors[first[v]:first[v+1]].
type Graph struct {
	first, successors []int32
}

// New returns the graph of nodes 0 to len(first)-2 whose edges from node v
// go to successors[first[v]:first[v+1]], in ascending order; an edge may
// repeat. A caller that numbers its edges by their first node holds them in
// this form already, so New copies nothing and the search allocates only
// for what it finds.
func New(first, successors []int32) *Graph {
	return &Graph{first: first, successors: successors}
}

func (g *Graph) nodes() int { return len(g.first) - 1 }

// out returns the successors of node v, in ascending order.
func (g *Graph) out(v int32) []int32 {
	return g.successors[g.first[v]:g.first[v+1]]
}

// Cycles describes where a graph's edges form cycles.
type Cycles struct {
	// Paths holds one cycle through each group of nodes that reach each other,
	// ordered by their first node. A path starts at the group's first node
	// and is the shortest cycle back to it, so it ends where it starts:
	// [0 1 2 0], or [3 3] for an edge from a node to itself.
	Paths [][]int

	// component numbers each node's cycle, -1 for a node on none; nil when
	// the graph has no cycle.
	component []int32
}

// Contains tells whether the edge from one node to another lies on a cycle:
// whether both ends are in the same group of nodes that reach each other.
func (c Cycles) Contains(from, to int) bool {
	return c.component != nil && c.component[from] >= 0 && c.component[from] == c.component[to]
}

// Cycles finds the cycles of the graph.
func (g *Graph) Cycles() Cycles {
	var cycles Cycles
	groups := g.cyclicComponents()
	if len(groups) == 0 {
		return cycles
	}
	// Each group starts at its first node; groups don't share nodes.
	slices.SortFunc(groups, func(a, b []int32) int { return int(slices.Min(a) - slices.Min(b)) })
	cycles.component = make([]int32, g.nodes())
	for i := range cycles.component {
		cycles.component[i] = -1
	}
	for i, members := range groups {
		for _, m := range members {
			cycles.component[m] = int32(i)
		}
		cycles.Paths = append(cycles.Paths, g.shortestCycle(slices.Min(members), cycles.component))
	}
	return cycles
}

// cyclicComponents returns the strongly connected components that hold a
// cycle: of more than one node, or of one with an edge to itself (Tarjan's
// algorithm, iterative so that a long chain can't exhaust the stack).
func (g *Graph) cyclicComponents() [][]int32 {
	const unvisited = -1
	n := g.nodes()
	order, low := make([]int32, n), make([]int32, n)
	onStack := make([]bool, n)
	for i := range order {
		order[i] = unvisited
	}
	var result [][]int32
	var members []int32
	var next int32
	type frame struct{ node, edge int32 }
	var call []frame
	for root := range int32(n) {
		if order[root] != unvisited {
			continue
		}
		call = append(call[:0], frame{node: root})
		order[root], low[root] = next, next
		next++
		members = append(members, root)
		onStack[root] = true
		for len(call) > 0 {
			top := &call[len(call)-1]
			v := top.node
			if successors := g.out(v); int(top.edge) < len(successors) {
				w := successors[top.edge]
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
			// v roots a component: its members are on the stack above it.
			i := len(members) - 1
			for members[i] != v {
				i--
			}
			component := members[i:]
			for _, w := range component {
				onStack[w] = false
			}
			if len(component) > 1 || slices.Contains(g.out(v), v) {
				result = append(result, slices.Clone(component))
			}
			members = members[:i]
		}
	}
	return result
}

// shortestCycle returns the shortest cycle from start back to it within
// start's component, found breadth first visiting successors in ascending
// order.
func (g *Graph) shortestCycle(start int32, component []int32) []int {
	parent := map[int32]int32{}
	queue := []int32{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range g.out(v) {
			if w == start {
				return pathTo(parent, start, v)
			}
			if _, seen := parent[w]; seen || component[w] != component[start] {
				continue
			}
			parent[w] = v
			queue = append(queue, w)
		}
	}
	panic("graph: a strongly connected component has no cycle through its first node")
}

// pathTo returns the nodes from start to last through parent links, followed
// by start again to close the cycle.
func pathTo(parent map[int32]int32, start, last int32) []int {
	path := []int{int(start)}
	for v := last; v != start; v = parent[v] {
		path = append(path, int(v))
	}
	slices.Reverse(path[1:])
	return append(path, int(start))
}
