// Package composed is a composite's composed resources and the dependency
// graph between them: what each resource is, which depends on which, what
// outside the composite each depends on, and where the edges form cycles.
package composed

import (
	"slices"
	"strings"
	"time"

	"github.com/crossplane-contrib/function-dependencies/internal/graph"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
)

// A Resource is one composed resource, as observed and as desired.
type Resource struct {
	// Name is the composition resource name.
	Name string

	// Identity is how a reference finds the resource: API group and kind
	// (any version), namespace and name. Its APIVersion is unset; the
	// resource's is APIVersion.
	Identity object.Ref

	// APIVersion is the resource's apiVersion, for the references written to
	// its dependents.
	APIVersion string

	// Observed is nil when the resource doesn't exist yet.
	Observed *Observed

	// Desired is nil when no pipeline step asks for the resource, that is
	// when the composition is removing it.
	Desired *Desired

	// IsObject is true for a provider-kubernetes Object.
	IsObject bool

	// Manages is what an Object's spec.forProvider.manifest names, by
	// identity: the object it creates where its ProviderConfig points.
	Manages object.Ref

	// References are the objects the resource references, when it is an
	// Object: read from desired state when it is desired, else from observed.
	References []object.Target

	// DependsOn are the composed resources the input says it depends on, by
	// composition resource name.
	DependsOn []string

	// Inferred are the composed resources it depends on by what it says of
	// them elsewhere than spec.references.
	Inferred []Inferred

	// Outside are the objects no composed resource is that it depends on
	// by what it says elsewhere than spec.references: another composite,
	// whose ProviderConfig it uses.
	Outside []Outside
}

// An Inferred dependency is a composed resource, by composition resource
// name, and the field that says the dependent depends on it.
type Inferred struct {
	Target, Via string
}

// An Outside dependency is an object, and the fields that say the
// dependent depends on it, inferred as an Inferred one is.
type Outside struct {
	Target object.Ref
	Via    string
}

// Observed is what the function needs of an observed resource.
type Observed struct {
	UID        string
	Finalizers []string
	Deleting   bool
	// Ready is true when the resource's Ready condition is True.
	Ready bool
	// NotReadySince is when it last stopped being ready, or was created
	// while it has no Ready condition; zero when ready, or unknown.
	NotReadySince time.Time
	// Going is true for a resource Crossplane is deleting, which the
	// composite's observed state lacks: read from the resources the function
	// required.
	Going bool
	// InUse is true when Crossplane's Usage controller labelled the
	// resource in use: only then does its webhook refuse the resource's
	// deletion while a Usage of it exists.
	InUse bool
	// References are, for an Object whose input dependencies the function
	// writes, the references it carries.
	References []object.Target
}

// Desired is what the function needs of a desired resource.
type Desired struct {
	// Finalizers are the finalizers earlier pipeline steps declared.
	Finalizers []string
	// Ready is true when an earlier step said the resource is ready.
	Ready bool
}

// Ref names the resource: its identity, with its apiVersion.
func (r *Resource) Ref() object.Ref {
	ref := r.Identity
	ref.APIVersion = r.APIVersion
	return ref
}

// UID is the resource's UID, "" while it doesn't exist.
func (r *Resource) UID() string {
	if r.Observed == nil {
		return ""
	}
	return r.Observed.UID
}

// Ready is true when the resource exists and it, or an earlier step, says
// it's ready.
func (r *Resource) Ready() bool {
	return r.Observed != nil && (r.Observed.Ready || (r.Desired != nil && r.Desired.Ready))
}

// Origin says where an edge comes from.
type Origin uint8

// The origins of edges.
const (
	// FromReference: an Object's spec.references.
	FromReference Origin = iota
	// FromInput: the function's input.
	FromInput
	// FromInference: what the dependent says of the target elsewhere, such
	// as its providerConfigRef. Such an edge orders deletion only.
	FromInference
)

// An Edge says that the dependent composed resource depends on the target.
type Edge struct {
	Dependent string
	Target    string
	// DependentAt and TargetAt are the places of the dependent and the
	// target in the graph's resources.
	DependentAt, TargetAt int
	Origin                Origin
	// Via is the field an edge FromInference comes from.
	Via string
	// Broken is true when the edge lies on a cycle and the input breaks
	// cycles: nothing protects it, and nothing waits for it.
	Broken bool
}

// A LeftOut edge is an inferred edge whose ends reach each other through the
// whole graph, declared and inferred edges alike: it would close a cycle.
// Inference is a guess and the user's declared edges are not, so such an
// edge is left out of the graph before cycles are judged: no inferred edge
// can fail the step, and onCycle governs the declared edges alone.
//
// The cycle each closes is found when asked for (Graph.Closes), not kept:
// the cycles of n edges left out of one long chain hold n² names.
type LeftOut struct {
	Edge Edge
}

// A Shared object is one that several desired composed resources are:
// Crossplane applies each one's desired state to it in turn. (One the
// composition removed is a rename under way, which Crossplane finishes.)
type Shared struct {
	Identity object.Ref
	// Names are the composed resources', in order.
	Names []string
}

// An External edge is a dependency on an object that no composed resource
// is: an Object's reference (FromReference, Target says which), or one
// inferred (FromInference, by Via).
type External struct {
	Dependent string
	Target    object.Target
	Origin    Origin
	Via       string
}

// Options change how the graph is made.
type Options struct {
	// IgnoreReferences makes no edge of the Objects' references.
	IgnoreReferences bool
	// BreakCycles marks the edges on cycles broken.
	BreakCycles bool
}

// A Graph is the composed resources and their edges, all in name order.
type Graph struct {
	// Resources are in name order.
	Resources []Resource
	// Edges are sorted by dependent, then target: one for each target a
	// dependent references or depends on.
	Edges []Edge
	// External are sorted by dependent, each dependent's in the order of its
	// references: one for each object it references that no composed
	// resource is.
	External []External
	// Cycles are paths such as [a b a]: one through each group of resources
	// that depend on each other by the edges left in Edges, from its first
	// name back to it by the shortest way.
	Cycles [][]string
	// LeftOut are the inferred edges that would close a cycle, in the order
	// of Edges: none of them is in Edges.
	LeftOut []LeftOut
	// Shared are the objects that several composed resources are, by their
	// first name: a reference to one is an edge to each.
	Shared []Shared

	index map[string]int
	// whole holds the successors of each resource by every edge, those left
	// out too, and component the place of each resource's group of the
	// whole graph's cycles, or -1: the cycles left-out edges close.
	whole     [][]int
	component []int
	// edgesFrom[d] is the place of resource d's first edge, and
	// edgesFrom[d+1] follows its last.
	edgesFrom []int
}

// New returns the graph of the resources, which have unique names.
func New(resources []Resource, o Options) *Graph {
	// The graph's own copy: what later steps read of it can't change under
	// them, nor the caller's.
	resources = slices.Clone(resources)
	slices.SortFunc(resources, func(a, b Resource) int { return strings.Compare(a.Name, b.Name) })
	g := &Graph{Resources: resources, index: make(map[string]int, len(resources))}
	for i, r := range resources {
		g.index[r.Name] = i
	}
	ids := identitiesOf(resources)
	g.Shared = ids.shared(resources)
	g.addEdges(ids, o)
	g.judgeCycles(o)
	return g
}

// identities find the composed resources a reference names: first holds the
// first resource of each identity that has a name, and next[i] the next one
// after resource i with its identity, or -1: two resources may share one.
type identities struct {
	first map[object.Ref]int
	next  []int
}

func identitiesOf(resources []Resource) identities {
	ids := identities{first: make(map[object.Ref]int, len(resources)), next: make([]int, len(resources))}
	for i := len(resources) - 1; i >= 0; i-- {
		ids.next[i] = -1
		if resources[i].Identity.Name == "" {
			continue
		}
		id := resources[i].Identity.ID()
		if j, ok := ids.first[id]; ok {
			ids.next[i] = j
		}
		ids.first[id] = i
	}
	return ids
}

// shared returns the objects that several desired resources are.
func (ids identities) shared(resources []Resource) []Shared {
	var out []Shared
	for i, r := range resources {
		if r.Identity.Name == "" || ids.first[r.Identity.ID()] != i {
			continue
		}
		shared := Shared{Identity: r.Identity}
		for j := i; j >= 0; j = ids.next[j] {
			if resources[j].Desired != nil {
				shared.Names = append(shared.Names, resources[j].Name)
			}
		}
		if len(shared.Names) > 1 {
			out = append(out, shared)
		}
	}
	return out
}

// addEdges adds each resource's edges, sorted by target, and its external
// edges, in the order of its references.
func (g *Graph) addEdges(ids identities, o Options) {
	edges := 0
	for _, r := range g.Resources {
		edges += len(r.References) + len(r.DependsOn) + len(r.Inferred)
	}
	g.Edges = make([]Edge, 0, edges)
	// lastAdded[t] is 1 + the last dependent with an edge to t: a dependent
	// has one edge to each target, and may depend on every other resource.
	lastAdded := make([]int, len(g.Resources))
	for d := range g.Resources {
		g.addEdgesOf(d, ids, o, lastAdded)
	}
}

// addEdgesOf adds the edges and external edges of resource d; lastAdded is
// addEdges'.
func (g *Graph) addEdgesOf(d int, ids identities, o Options, lastAdded []int) {
	r := &g.Resources[d]
	firstEdge, firstExternal := len(g.Edges), len(g.External)
	add := func(t int, o Origin, via string) {
		if lastAdded[t] != d+1 {
			lastAdded[t] = d + 1
			g.Edges = append(g.Edges, Edge{Dependent: r.Name, Target: g.Resources[t].Name, DependentAt: d, TargetAt: t, Origin: o, Via: via})
		}
	}
	// depend adds the edges to the composed resources the object is, or
	// else its external edge, once for the dependent.
	depend := func(obj object.Target, origin Origin, via string) {
		id := obj.ID()
		t, matched := ids.first[id]
		for ; matched && t >= 0; t = ids.next[t] {
			add(t, origin, via)
		}
		if !matched && !slices.ContainsFunc(g.External[firstExternal:], func(e External) bool { return e.Target.ID() == id }) {
			g.External = append(g.External, External{Dependent: r.Name, Target: obj, Origin: origin, Via: via})
		}
	}
	if !o.IgnoreReferences {
		for _, ref := range r.References {
			depend(ref, FromReference, "")
		}
	}
	// One composed after all (a composite this one composes) is an edge
	// of the graph.
	for _, out := range r.Outside {
		depend(object.Target{Ref: out.Target}, FromInference, out.Via)
	}
	for _, name := range r.DependsOn {
		if t, ok := g.index[name]; ok && t != d {
			add(t, FromInput, "")
		}
	}
	// What a reference or the input says of a pair stands: an inferred
	// edge adds nothing to it.
	for _, in := range r.Inferred {
		if t, ok := g.index[in.Target]; ok && t != d {
			add(t, FromInference, in.Via)
		}
	}
	// Numbers are in name order.
	slices.SortFunc(g.Edges[firstEdge:], func(a, b Edge) int { return a.TargetAt - b.TargetAt })
}

// judgeCycles leaves out the inferred edges on cycles of the whole graph,
// then finds the cycles the edges left form, and breaks their edges when o
// says so.
func (g *Graph) judgeCycles(o Options) {
	out := g.successors()
	groups := graph.CyclicComponents(out)
	if len(groups) > 0 {
		// An inferred edge on a cycle of the whole graph is left out; what
		// remains may still hold cycles, of declared edges.
		g.whole, g.component = out, graph.ComponentOf(len(out), groups)
		kept := g.Edges[:0]
		for _, e := range g.Edges {
			if e.Origin == FromInference && g.component[e.DependentAt] >= 0 && g.component[e.DependentAt] == g.component[e.TargetAt] {
				g.LeftOut = append(g.LeftOut, LeftOut{Edge: e})
			} else {
				kept = append(kept, e)
			}
		}
		if len(g.LeftOut) > 0 {
			g.Edges = kept
			out = g.successors()
			groups = graph.CyclicComponents(out)
		}
	}
	paths, onCycle := graph.CyclesOf(out, groups)
	for _, p := range paths {
		g.Cycles = append(g.Cycles, g.names(p))
	}
	if o.BreakCycles {
		for i, e := range g.Edges {
			g.Edges[i].Broken = onCycle(e.DependentAt, e.TargetAt)
		}
	}
}

// successors returns the successors of each resource by the graph's edges,
// each resource's in ascending order, and indexes the edges by dependent for
// Edge.
func (g *Graph) successors() [][]int {
	g.edgesFrom = make([]int, len(g.Resources)+1)
	targets := make([]int, len(g.Edges))
	for i, e := range g.Edges {
		targets[i] = e.TargetAt
		g.edgesFrom[e.DependentAt+1] = i + 1
	}
	out := make([][]int, len(g.Resources))
	for d := range g.Resources {
		g.edgesFrom[d+1] = max(g.edgesFrom[d+1], g.edgesFrom[d])
		out[d] = targets[g.edgesFrom[d]:g.edgesFrom[d+1]:g.edgesFrom[d+1]]
	}
	return out
}

// Closes returns the cycle that a left-out edge closes, such as [a b c a]:
// the edge, then the shortest way from its target back to its dependent in
// the whole graph, the smallest by name among equally short ones.
func (g *Graph) Closes(l LeftOut) []string {
	return g.names(graph.Closes(g.whole, g.component, l.Edge.DependentAt, l.Edge.TargetAt))
}

// names returns the names of the resources at the places.
func (g *Graph) names(places []int) []string {
	names := make([]string, len(places))
	for i, n := range places {
		names[i] = g.Resources[n].Name
	}
	return names
}

// Edge returns the place of the edge from one resource to another, by their
// places, if there is one.
func (g *Graph) Edge(dependent, target int) (int, bool) {
	first, last := g.edgesFrom[dependent], g.edgesFrom[dependent+1]
	i, ok := slices.BinarySearchFunc(g.Edges[first:last], target, func(e Edge, t int) int { return e.TargetAt - t })
	return first + i, ok
}

// Resource returns the composed resource of the name, or nil.
func (g *Graph) Resource(name string) *Resource {
	if i, ok := g.index[name]; ok {
		return &g.Resources[i]
	}
	return nil
}

// Path prints a cycle as the path of its resources' names, each with an
// arrow to the next: how every message and command shows a cycle.
func Path(cycle []string) string { return strings.Join(cycle, " → ") }
