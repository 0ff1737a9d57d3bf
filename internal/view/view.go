// Package view describes the dependency graph as one that machines and
// people can read: JSON for later pipeline steps, Mermaid and DOT to draw.
package view

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/report"
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

// An Edge says that Dependent depends on Target. Its JSON keys stay from and
// to: later pipeline steps read the graph in the context by them.
type Edge struct {
	Dependent string `json:"from"`
	Target    string `json:"to"`
	// Origin is reference (an Object's spec.references), explicit (the
	// function's input) or inferred (what the dependent says elsewhere).
	Origin string `json:"origin"`
	// Via is, for an inferred edge, the field of the dependent it comes
	// from, such as spec.providerConfigRef.
	Via string `json:"via,omitempty"`
	// Protection is finalizer, usage or none.
	Protection string `json:"protection"`
	// State is protected, pending (on its way), missing (not protected) or
	// stale (the dependent is going away; its protection is being released);
	// the graph command also draws Unjudged.
	State string `json:"state"`
}

// Unjudged is the state the graph command draws a finalizer's edge in when
// what it reads can't say whether the finalizer is in place: its dependent
// has no UID, as in crossplane render's output, and the finalizer names its
// Object by UID.
const Unjudged = "unjudged"

// Of returns the graph of the composed resources and their edges, as the
// report sees them. enforce is false in Report mode, where what the function
// would declare is missing.
func Of(g *composed.Graph, edges []report.Edge, external []report.External, held map[string]string, enforce bool) Graph {
	var v Graph
	for _, r := range g.Resources {
		v.Nodes = append(v.Nodes, Node{Name: r.Name, Kind: r.Identity.Kind, Scope: scope(r.Identity.Namespace), State: nodeState(r, held)})
	}
	for _, e := range edges {
		v.Edges = append(v.Edges, Edge{Dependent: e.Dependent, Target: e.Target, Origin: origin(e.Origin), Via: e.Via, Protection: protectionName(e.Protection), State: e.State.Standing(enforce).String()})
	}
	seen := map[string]bool{}
	for _, e := range external {
		name := e.Target.Path()
		if !seen[name] {
			seen[name] = true
			v.Nodes = append(v.Nodes, Node{Name: name, Kind: e.Target.Kind, Scope: scope(e.Target.Namespace), State: "external"})
		}
		v.Edges = append(v.Edges, Edge{Dependent: e.Dependent, Target: name, Origin: origin(e.Origin), Via: e.Via, Protection: protectionName(e.Protection), State: e.State.Standing(enforce).String()})
	}
	// Stable, so that an external node named like a composed resource comes
	// after it.
	slices.SortStableFunc(v.Nodes, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	slices.SortStableFunc(v.Edges, func(a, b Edge) int {
		return cmp.Or(strings.Compare(a.Dependent, b.Dependent), strings.Compare(a.Target, b.Target))
	})
	return v
}

func scope(namespace string) string {
	if namespace == "" {
		return "Cluster"
	}
	return "Namespaced"
}

func nodeState(r composed.Resource, held map[string]string) string {
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

func origin(o composed.Origin) string {
	switch o {
	case composed.FromInput:
		return "explicit"
	case composed.FromInference:
		return "inferred"
	default:
		return "reference"
	}
}

// label is what an edge's arrow says: its protection and state, and where
// an inferred edge comes from.
func label(e Edge) string {
	l := e.Protection + " " + e.State
	if e.Via != "" {
		l += " · " + e.Via
	}
	return l
}

func protectionName(p report.Protection) string {
	switch p {
	case report.ByFinalizer:
		return "finalizer"
	case report.ByUsage:
		return "usage"
	default:
		return "none"
	}
}

// Mermaid draws the graph as a Mermaid flowchart: an arrow from each
// dependent to its dependency, solid when protected, dotted while pending,
// thick and red when missing, dashed and grey when stale, grey when
// unjudged.
func Mermaid(g Graph) string {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	ids := identifiers(g)
	for _, n := range g.Nodes {
		fmt.Fprintf(&b, "  %s[\"%s<br/><small>%s · %s</small>\"]:::%s\n", ids[n.Name], escape(n.Name), escape(n.Kind), n.State, n.State)
	}
	for i, e := range g.Edges {
		arrow := map[string]string{"protected": "-->", "pending": "-.->", "missing": "==>", "stale": "-.->", Unjudged: "-->"}[e.State]
		fmt.Fprintf(&b, "  %s %s|\"%s\"| %s\n", ids[e.Dependent], arrow, escape(label(e)), ids[e.Target])
		if style := map[string]string{"missing": "stroke:#d00,stroke-width:3px", "stale": "stroke:#999,stroke-dasharray:4", Unjudged: "stroke:#999"}[e.State]; style != "" {
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
		attrs := map[string]string{"pending": `, style=dotted`, "missing": `, color=red, penwidth=3, fontcolor=red`, "stale": `, style=dashed, color=grey`, Unjudged: `, color=grey, fontcolor=grey`}[e.State]
		fmt.Fprintf(&b, "  %q -> %q [label=%q%s];\n", e.Dependent, e.Target, label(e), attrs)
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
