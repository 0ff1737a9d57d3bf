package graph

import (
	"slices"
	"strings"
)

// cycles finds where the edges form cycles, deterministically: out[v] holds
// the successors of node v, in ascending order. It returns one path through
// each group of nodes that reach each other, ordered by their first node: the
// shortest cycle from that node back to it, so that it ends where it starts
// ([0 1 2 0], or [3 3] for an edge from a node to itself); and a test of
// whether an edge lies on a cycle, that is whether both ends are in the same
// group.
func cycles(out [][]int) ([][]int, func(from, to int) bool) {
	groups := cyclicComponents(out)
	if len(groups) == 0 {
		return nil, func(int, int) bool { return false }
	}
	slices.SortFunc(groups, func(a, b []int) int { return slices.Min(a) - slices.Min(b) })
	component := make([]int, len(out))
	for i := range component {
		component[i] = -1
	}
	var paths [][]int
	for i, members := range groups {
		for _, m := range members {
			component[m] = i
		}
		paths = append(paths, shortestCycle(out, slices.Min(members), component))
	}
	return paths, func(from, to int) bool { return component[from] >= 0 && component[from] == component[to] }
}

// cyclicComponents returns the strongly connected components that hold a
// cycle: of more than one node, or of one with an edge to itself (Tarjan's
// algorithm, iterative so that a long chain can't exhaust the stack).
func cyclicComponents(out [][]int) [][]int {
	const unvisited = -1
	n := len(out)
	order, low := make([]int, n), make([]int, n)
	onStack := make([]bool, n)
	for i := range order {
		order[i] = unvisited
	}
	var result [][]int
	var members []int
	next := 0
	type frame struct{ node, edge int }
	var call []frame
	for root := range n {
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
			if top.edge < len(out[v]) {
				w := out[v][top.edge]
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
			if len(component) > 1 || slices.Contains(out[v], v) {
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
func shortestCycle(out [][]int, start int, component []int) []int {
	parent := map[int]int{}
	queue := []int{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range out[v] {
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
func pathTo(parent map[int]int, start, last int) []int {
	path := []int{start}
	for v := last; v != start; v = parent[v] {
		path = append(path, v)
	}
	slices.Reverse(path[1:])
	return append(path, start)
}

// Path prints a cycle as the path of its resources' names, each with an
// arrow to the next: how every message and command shows a cycle.
func Path(cycle []string) string { return strings.Join(cycle, " → ") }
