// Package view describes a dependency plan as a graph that machines and
// people can read: JSON for later pipeline steps, Mermaid and DOT to draw.
package view

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/crossplane-contrib/function-dependencies/internal/protection"
)

// A Graph is the dependency graph of one composite.
type Graph struct {
	Nodes []Node `json:"nodes"`
	Edges []Edge `json:"edges"`
}

// A Node is a composed resource, or an object outside the composition that
// one references.
type Node struct {
	// Name is the composition resource name, or kind/namespace/name for an
	// external object.
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Scope string `json:"scope"`
	// State is one of ready, creating (desired, not observed yet), held
	// (held back from creation), deleting, removing (no longer desired),
	// observed (exists, not ready) and external.
	State string `json:"state"`
}

// An Edge says that From depends on To.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Origin is reference (an Object's spec.references) or explicit (the
	// function's input).
	Origin string `json:"origin"`
	// Protection is finalizer, usage or none.
	Protection string `json:"protection"`
	// State is protected, pending (on its way), missing (not protected) or
	// stale (the dependent is going away; its protection is being released).
	State string `json:"state"`
}

// Of returns the graph of the plan. enforce is false in Report mode, where
// what the function would declare is missing.
func Of(p protection.Plan, resources []protection.Resource, enforce bool) Graph {
	var g Graph
	if nodes := len(resources) + len(p.External); nodes > 0 {
		g.Nodes = make([]Node, 0, nodes)
	}
	if edges := len(p.Edges) + len(p.External); edges > 0 {
		g.Edges = make([]Edge, 0, edges)
	}
	for _, r := range resources {
		g.Nodes = append(g.Nodes, Node{Name: r.Name, Kind: r.Identity.Kind, Scope: scope(r.Identity.Namespace), State: nodeState(r, p.HeldBack)})
	}
	for _, e := range p.Edges {
		g.Edges = append(g.Edges, Edge{From: e.Dependent, To: e.Target, Origin: origin(e.Origin), Protection: protectionName(e.Protection), State: edgeState(e.State, enforce)})
	}
	composedNodes, composedEdges := len(g.Nodes), len(g.Edges)
	external := map[string]bool{}
	for _, e := range p.External {
		name := strings.Join(slices.DeleteFunc([]string{e.Target.Kind, e.Target.Namespace, e.Target.Name}, func(s string) bool { return s == "" }), "/")
		if !external[name] {
			external[name] = true
			g.Nodes = append(g.Nodes, Node{Name: name, Kind: e.Target.Kind, Scope: scope(e.Target.Namespace), State: "external"})
		}
		state := edgeState(e.State, enforce)
		g.Edges = append(g.Edges, Edge{From: e.Dependent, To: name, Origin: "reference", Protection: protectionName(e.Protection), State: state})
	}
	byName := func(a, b Node) int { return strings.Compare(a.Name, b.Name) }
	byEnds := func(a, b Edge) int { return cmp.Or(strings.Compare(a.From, b.From), strings.Compare(a.To, b.To)) }
	sortWithFewAfter(g.Nodes, composedNodes, byName)
	sortWithFewAfter(g.Edges, composedEdges, byEnds)
	return g
}

// sortWithFewAfter sorts s, whose first n elements usually come sorted
// already (resources and the plan's edges are in name order) and the rest
// are few (those of external objects): it sorts each part only if it must,
// then merges the few in from the back, so that thousands of composed
// resources are compared a few times each rather than sorted again. Equal
// elements keep their order, those of the first part first.
func sortWithFewAfter[T any](s []T, n int, compare func(a, b T) int) {
	if !slices.IsSortedFunc(s[:n], compare) {
		slices.SortStableFunc(s[:n], compare)
	}
	few := slices.Clone(s[n:])
	slices.SortStableFunc(few, compare)
	// Each element goes to the back of what is left, the larger first; of
	// equal ones, those of the first part stay first.
	i, j := n-1, len(few)-1
	for back := len(s) - 1; j >= 0; back-- {
		if i >= 0 && compare(s[i], few[j]) > 0 {
			s[back] = s[i]
			i--
		} else {
			s[back] = few[j]
			j--
		}
	}
}

func scope(namespace string) string {
	if namespace == "" {
		return "Cluster"
	}
	return "Namespaced"
}

func nodeState(r protection.Resource, held map[string]string) string {
	switch {
	case held[r.Name] != "":
		return "held"
	case r.Observed == nil:
		return "creating"
	case r.Observed.Deleting:
		return "deleting"
	case r.Desired == nil:
		return "removing"
	case r.Observed.Ready || r.Desired.Ready:
		return "ready"
	default:
		return "observed"
	}
}

func origin(o protection.Origin) string {
	if o == protection.FromInput {
		return "explicit"
	}
	return "reference"
}

func protectionName(p protection.Protection) string {
	switch p {
	case protection.ByFinalizer:
		return "finalizer"
	case protection.ByUsage:
		return "usage"
	default:
		return "none"
	}
}

func edgeState(s protection.EdgeState, enforce bool) string {
	switch s {
	case protection.Protected:
		return "protected"
	case protection.Declared:
		if enforce {
			return "pending"
		}
		return "missing"
	case protection.Pending:
		return "pending"
	case protection.Releasing:
		return "stale"
	default:
		return "missing"
	}
}

// Mermaid draws the graph as a Mermaid flowchart: an arrow from each
// dependent to its dependency, solid when protected, dotted while pending,
// thick and red when missing, dashed and grey when stale.
func Mermaid(g Graph) string {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	ids := identifiers(g)
	for _, n := range g.Nodes {
		fmt.Fprintf(&b, "  %s[\"%s<br/><small>%s · %s</small>\"]:::%s\n", ids[n.Name], escape(n.Name), escape(n.Kind), n.State, n.State)
	}
	for i, e := range g.Edges {
		arrow := map[string]string{"protected": "-->", "pending": "-.->", "missing": "==>", "stale": "-.->"}[e.State]
		fmt.Fprintf(&b, "  %s %s|\"%s %s\"| %s\n", ids[e.From], arrow, e.Protection, e.State, ids[e.To])
		if style := map[string]string{"missing": "stroke:#d00,stroke-width:3px", "stale": "stroke:#999,stroke-dasharray:4"}[e.State]; style != "" {
			fmt.Fprintf(&b, "  linkStyle %d %s\n", i, style)
		}
	}
	b.WriteString("  classDef ready fill:#d8f5d8\n  classDef observed fill:#fff\n  classDef creating fill:#eef,stroke-dasharray:2\n" +
		"  classDef held fill:#ffe8a3\n  classDef external fill:#eee,stroke-dasharray:4\n  classDef deleting fill:#fbb\n  classDef removing fill:#fbb\n")
	return b.String()
}

// DOT draws the graph for Graphviz, with the same conventions as Mermaid.
func DOT(g Graph) string {
	var b strings.Builder
	b.WriteString("digraph dependencies {\n  rankdir=LR;\n  node [shape=box, style=rounded];\n")
	for _, n := range g.Nodes {
		attrs := map[string]string{"held": `, style="rounded,filled", fillcolor="#ffe8a3"`, "external": `, style="rounded,dashed"`, "deleting": `, style="rounded,filled", fillcolor="#ffbbbb"`, "removing": `, style="rounded,filled", fillcolor="#ffbbbb"`}[n.State]
		fmt.Fprintf(&b, "  %q [label=%q%s];\n", n.Name, n.Name+"\n"+n.Kind+" · "+n.State, attrs)
	}
	for _, e := range g.Edges {
		attrs := map[string]string{"pending": `, style=dotted`, "missing": `, color=red, penwidth=3, fontcolor=red`, "stale": `, style=dashed, color=grey`}[e.State]
		fmt.Fprintf(&b, "  %q -> %q [label=%q%s];\n", e.From, e.To, e.Protection+" "+e.State, attrs)
	}
	b.WriteString("}\n")
	return b.String()
}

// identifiers gives every node a Mermaid identifier: names may hold
// characters Mermaid reads as syntax.
func identifiers(g Graph) map[string]string {
	ids := make(map[string]string, len(g.Nodes))
	for i, n := range g.Nodes {
		ids[n.Name] = fmt.Sprintf("n%d", i)
	}
	return ids
}

func escape(s string) string {
	return strings.ReplaceAll(s, `"`, "#quot;")
}
