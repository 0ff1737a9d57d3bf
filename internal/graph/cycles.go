// Package graph is a directed graph of numbered nodes, each node's
// successors in ascending order: where its edges form cycles, the shortest
// path of each, and the cycle an edge closes. It knows nothing of what the
// nodes are, so that its answers depend only on the numbers, and are the same
// on every call.
package graph

import (
	"slices"
)

// Cycles finds where the edges form cycles, deterministically: out[v] holds
// the successors of node v, in ascending order. It returns one path through
// each group of nodes that reach each other, ordered by their first node: the
// shortest cycle from that node back to it, so that it ends where it starts
// ([0 1 2 0], or [3 3] for an edge from a node to itself); and a test of
// whether an edge lies on a cycle, that is whether both ends are in the same
// group.
func Cycles(out [][]int) ([][]int, func(from, to int) bool) {
	return CyclesOf(out, CyclicComponents(out))
}

// CyclesOf is Cycles, given the groups CyclicComponents found.
func CyclesOf(out [][]int, groups [][]int) ([][]int, func(from, to int) bool) {
	if len(groups) == 0 {
		return nil, func(int, int) bool { return false }
	}
	groups = slices.Clone(groups)
	slices.SortFunc(groups, func(a, b []int) int { return slices.Min(a) - slices.Min(b) })
	component := ComponentOf(len(out), groups)
	paths := make([][]int, len(groups))
	for i, members := range groups {
		paths[i] = shortestCycle(out, slices.Min(members), component)
	}
	return paths, func(from, to int) bool { return component[from] >= 0 && component[from] == component[to] }
}

// ComponentOf returns, for each of n nodes, the place of its group among
// the groups, or -1 when it is in none.
func ComponentOf(n int, groups [][]int) []int {
	component := make([]int, n)
	for i := range component {
		component[i] = -1
	}
	for i, members := range groups {
		for _, m := range members {
			component[m] = i
		}
	}
	return component
}

// Closes returns the cycle the edge from → to closes: the edge, then the
// shortest way from its target back to its dependent (so [0 1 2 0] for the
// edge 0 → 1), by the successors out and the groups' places component; nil
// for an edge whose ends are in different groups, which closes none.
func Closes(out [][]int, component []int, from, to int) []int {
	if component[from] < 0 || component[from] != component[to] {
		return nil
	}
	parent, _ := breadthFirst(out, to, component)
	return append([]int{from}, pathTo(parent, to, from)...)
}

// CyclicComponents returns the strongly connected components that hold a
// cycle: of more than one node, or of one with an edge to itself (Tarjan's
// algorithm, iterative so that a long chain can't exhaust the stack).
func CyclicComponents(out [][]int) [][]int {
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
// start's component: the way to the first node, breadth first, with an edge
// back to start, then start.
func shortestCycle(out [][]int, start int, component []int) []int {
	parent, order := breadthFirst(out, start, component)
	for _, v := range order {
		if _, back := slices.BinarySearch(out[v], start); back {
			return append(pathTo(parent, start, v), start)
		}
	}
	panic("graph: a strongly connected component has no cycle through its first node")
}

// breadthFirst searches start's component from start, visiting successors
// in ascending order, so that the way to each node is the shortest, and the
// smallest by place among equally short ones. It returns the node each was
// reached from, and the nodes in the order reached, start first.
func breadthFirst(out [][]int, start int, component []int) (map[int]int, []int) {
	parent := map[int]int{start: start}
	order := []int{start}
	for next := 0; next < len(order); next++ {
		v := order[next]
		for _, w := range out[v] {
			if _, seen := parent[w]; seen || component[w] != component[start] {
				continue
			}
			parent[w] = v
			order = append(order, w)
		}
	}
	return parent, order
}

// pathTo returns the nodes from start to last through parent links.
func pathTo(parent map[int]int, start, last int) []int {
	path := []int{last}
	for v := last; v != start; {
		v = parent[v]
		path = append(path, v)
	}
	slices.Reverse(path)
	return path
}
