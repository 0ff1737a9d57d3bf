// Package protection decides which reference finalizers each composed resource
// must declare so that no referenced object is deleted before the Objects that
// reference it.
//
// provider-kubernetes adds these finalizers itself, but loses them in a race
// (provider-kubernetes #371). Computing them from the whole composition at once
// and declaring them in desired state makes them level-triggered instead: every
// reconcile of the composite declares the complete set again.
package protection

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/crossplane-contrib/function-dependencies/internal/graph"
	"github.com/crossplane-contrib/function-dependencies/internal/objectref"
)

// A Resource is one composed resource, as observed and as desired.
type Resource struct {
	// Name is the composition resource name.
	Name string

	// Identity is how a reference finds the resource.
	Identity Identity

	// Observed is nil when the resource doesn't exist yet.
	Observed *Observed

	// Desired is nil when no pipeline step asks for the resource, that is
	// when the composition is removing it.
	Desired *Desired

	// APIVersion is the resource's apiVersion, for the references written to
	// its dependents.
	APIVersion string

	// IsObject is true for a provider-kubernetes Object, whose dependencies
	// declare its reference finalizer.
	IsObject bool

	// References are the objects the resource references, when it is an
	// Object: read from desired state when it is desired, else from observed.
	References []objectref.Target

	// DependsOn are the composed resources the input says it depends on, by
	// composition resource name.
	DependsOn []string
}

// Identity is how provider-kubernetes finds a referenced object: API group
// and kind (any version), namespace and name.
type Identity struct {
	Group     string
	Kind      string
	Namespace string
	Name      string
}

// Observed is what the function needs of an observed resource.
type Observed struct {
	UID        string
	Finalizers []string
	Deleting   bool
	// Ready is true when the resource's Ready condition is True.
	Ready bool
}

// Desired is what the function needs of a desired resource.
type Desired struct {
	// Finalizers are the finalizers earlier pipeline steps declared.
	Finalizers []string
	// Ready is true when an earlier step said the resource is ready.
	Ready bool
}

// Options change how the plan is made.
type Options struct {
	// BreakCycles declares no finalizer on an edge inside a cycle, so that the
	// objects in a cycle don't each wait for the other to be deleted first.
	BreakCycles bool

	// Usages says which edges that no finalizer protects a Usage protects.
	Usages UsagePolicy

	// WaitForReady holds back every resource that doesn't exist yet until
	// its dependencies are ready.
	WaitForReady bool
}

// UsagePolicy says which edges a Usage protects.
type UsagePolicy int

// The usage policies.
const (
	// NoUsages protects no edge with a Usage.
	NoUsages UsagePolicy = iota
	// ExternalUsages protects edges to objects outside the composition.
	ExternalUsages
	// AllUsages protects every edge that no finalizer protects.
	AllUsages
)

// Origin says where an edge comes from.
type Origin int

// The origins of edges.
const (
	// FromReference: an Object's spec.references.
	FromReference Origin = iota
	// FromInput: the function's input. An Object gets a reference for it.
	FromInput
)

// Protection says what keeps an edge's dependency from being deleted first.
type Protection int

// The protections of edges.
const (
	// ByFinalizer: the dependency declares the dependent's reference
	// finalizer.
	ByFinalizer Protection = iota
	// ByUsage: a Crossplane Usage of the dependency by the dependent.
	ByUsage
	// Unprotected: nothing; the function can't, or wasn't asked to.
	Unprotected
)

// EdgeState says how, and whether, an edge is protected.
type EdgeState int

// The states of an edge.
const (
	// Protected: the observed target carries the dependent's finalizer, and
	// it is declared.
	Protected EdgeState = iota
	// Declared: the dependent's finalizer is declared now, but the observed
	// target doesn't carry it yet.
	Declared
	// Pending: the dependent doesn't exist yet, so it has no UID to name
	// its finalizer by.
	Pending
	// Releasing: the dependent is being deleted or removed from the
	// composition. Its finalizer is declared only while the observed target
	// still carries it: the provider removes it once the dependent is gone,
	// and declaring it again would keep the target forever.
	Releasing
	// TargetRemoved: the composition no longer desires the target while a
	// live dependent still references it, so it may be deleted first.
	TargetRemoved
	// TargetDeleting: the target is being deleted without the dependent's
	// finalizer, which the API server no longer lets anyone add.
	TargetDeleting
	// Cyclic: the edge lies on a cycle and cycles are broken, so its
	// finalizer isn't declared.
	Cyclic
	// Exposed: nothing protects the edge (see Protection).
	Exposed
)

// An Edge is a reference from a dependent Object to another composed resource.
type Edge struct {
	Dependent  string
	Target     string
	Origin     Origin
	Protection Protection
	// Finalizer is the dependent's reference finalizer; empty while Pending
	// and for edges a finalizer doesn't protect.
	Finalizer string
	// Usage is the composition resource name of the Usage that protects the
	// edge, when one does.
	Usage string
	State EdgeState
}

// An External edge is a reference to an object that no composed resource is.
type External struct {
	Dependent  string
	Target     objectref.Target
	Protection Protection
	// Usage and State are set when a Usage protects the edge.
	Usage string
	State EdgeState
}

// A Reference is a dependsOn the function writes into an Object's desired
// spec.references, for a dependency the input declares.
type Reference struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
}

// A Stale finalizer is a reference finalizer on an observed resource that
// names no Object referencing it in this composition.
type Stale struct {
	Resource  string
	Finalizer string
}

// A Plan is what the function decided, sorted by composition resource name.
type Plan struct {
	Resources int
	Edges     []Edge
	External  []External
	Stale     []Stale
	// Cycles are paths such as [a b a], as graph.Cycles describes them.
	Cycles [][]string

	// Additions holds, for each desired resource that lacks some, the
	// reference finalizers to declare after those earlier steps declared,
	// sorted.
	Additions map[string][]string

	// Declared counts the reference finalizers the desired resources declare
	// for their dependents, whether earlier steps declared them already or not.
	Declared int

	// References holds, for each desired Object, the references to write
	// into its spec.references for the dependencies the input declares.
	References map[string][]Reference

	// HeldBack holds the desired resources that must not be created yet,
	// with the reason.
	HeldBack map[string]string
}

// Make decides, for every reference between composed resources, which
// finalizer the referenced resource must declare.
func Make(resources []Resource, o Options) Plan {
	byName := make(map[string]*Resource, len(resources))
	byIdentity := make(map[Identity][]string, len(resources))
	for i := range resources {
		r := &resources[i]
		byName[r.Name] = r
		if r.Identity.Name != "" {
			byIdentity[r.Identity] = append(byIdentity[r.Identity], r.Name)
		}
	}
	names := slices.Sorted(maps.Keys(byName))

	p := Plan{Resources: len(resources), Additions: map[string][]string{}, References: map[string][]Reference{}, HeldBack: map[string]string{}}
	// Most references and dependencies are an edge each: allocate for them
	// at once rather than grow the slice edge by edge.
	edges := 0
	for i := range resources {
		edges += len(resources[i].References) + len(resources[i].DependsOn)
	}
	if edges > 0 {
		p.Edges = make([]Edge, 0, edges)
	}
	var g graph.Graph
	for _, name := range names {
		p.addEdges(&g, byName[name], byName, byIdentity, o)
	}
	if len(p.Edges) == 0 {
		p.Edges = nil // As without the allocation.
	}
	cycles := g.Cycles()
	p.Cycles = cycles.Paths

	declare := map[string][]string{}
	referencedBy := map[string]map[string]bool{}
	carried := carriedFinalizers{}
	for i := range p.Edges {
		e := &p.Edges[i]
		d, t := byName[e.Dependent], byName[e.Target]
		breakCycle := o.BreakCycles && cycles.Contains(e.Dependent, e.Target)
		switch e.Protection {
		case ByFinalizer:
			if d.Observed != nil && d.Observed.UID != "" {
				if referencedBy[e.Target] == nil {
					referencedBy[e.Target] = map[string]bool{}
				}
				referencedBy[e.Target][d.Observed.UID] = true
			}
			var declared bool
			e.State, e.Finalizer, declared = decide(d, t, carried.of(t), breakCycle)
			if declared {
				declare[e.Target] = append(declare[e.Target], e.Finalizer)
			}
		case ByUsage:
			e.State = usageState(d, t, byName[e.Usage], breakCycle)
		case Unprotected:
			e.State = Exposed
			if breakCycle {
				e.State = Cyclic
			}
		}
	}
	for i := range p.External {
		e := &p.External[i]
		if e.Protection == ByUsage {
			e.State = usageState(byName[e.Dependent], nil, byName[e.Usage], false)
		}
	}
	if o.WaitForReady {
		p.holdUntilReady(byName)
	}

	for _, name := range names {
		r := byName[name]
		p.Stale = append(p.Stale, staleFinalizers(r, referencedBy[name])...)
		if r.Desired == nil || len(declare[name]) == 0 {
			continue
		}
		missing := missingFrom(r.Desired.Finalizers, declare[name])
		p.Declared += len(declare[name])
		if len(missing) > 0 {
			p.Additions[name] = missing
		}
	}
	return p
}

// Unprotect marks the edges the Usage of this composition resource name
// would protect as unprotected: no Usage can express them.
func (p *Plan) Unprotect(usage string) {
	for i := range p.Edges {
		if p.Edges[i].Usage == usage {
			p.Edges[i].Protection, p.Edges[i].State = Unprotected, Exposed
		}
	}
	for i := range p.External {
		if p.External[i].Usage == usage {
			p.External[i].Protection, p.External[i].State = Unprotected, Exposed
		}
	}
}

// addEdges adds an edge for every composed resource the dependent references
// or depends on, and an external edge for every reference that matches none.
func (p *Plan) addEdges(g *graph.Graph, d *Resource, byName map[string]*Resource, byIdentity map[Identity][]string, o Options) {
	first := len(p.Edges)
	seen := map[string]bool{}
	external := map[Identity]bool{}
	for _, t := range d.References {
		id := Identity{Group: t.Group, Kind: t.Kind, Namespace: t.Namespace, Name: t.Name}
		targets := byIdentity[id]
		if len(targets) == 0 {
			if !external[id] {
				external[id] = true
				e := External{Dependent: d.Name, Target: t, Protection: Unprotected, State: Exposed}
				if o.Usages != NoUsages {
					parts := slices.DeleteFunc([]string{t.Kind, t.Namespace, t.Name}, func(s string) bool { return s == "" })
					e.Protection, e.Usage = ByUsage, usageKey(d.Name, strings.ToLower(strings.Join(parts, "-")))
				}
				p.External = append(p.External, e)
			}
			continue
		}
		for _, target := range targets {
			if seen[target] {
				continue
			}
			seen[target] = true
			g.AddEdge(d.Name, target)
			p.Edges = append(p.Edges, Edge{Dependent: d.Name, Target: target, Origin: FromReference, Protection: ByFinalizer})
		}
	}
	for _, target := range d.DependsOn {
		t, ok := byName[target]
		if !ok || seen[target] || target == d.Name {
			continue // Unknown, already referenced, or itself.
		}
		seen[target] = true
		g.AddEdge(d.Name, target)
		e := Edge{Dependent: d.Name, Target: target, Origin: FromInput, Protection: Unprotected}
		switch {
		case d.IsObject:
			e.Protection = ByFinalizer
			p.writeReference(d, t)
		case o.Usages == AllUsages:
			e.Protection, e.Usage = ByUsage, usageKey(d.Name, target)
		}
		p.Edges = append(p.Edges, e)
	}
	// The dependent lists its references in any order; sort its edges by
	// target for a stable plan. Dependents are added in name order.
	slices.SortFunc(p.Edges[first:], func(a, b Edge) int { return cmp.Compare(a.Target, b.Target) })
}

// writeReference plans the reference an Object needs for a dependency the
// input declares. While the dependency has no name yet, an Object that
// doesn't exist yet is held back: created without the reference, it would
// not wait for its dependency.
func (p *Plan) writeReference(d, t *Resource) {
	if d.Desired == nil {
		return
	}
	if t.Identity.Name == "" {
		if d.Observed == nil {
			p.HeldBack[d.Name] = fmt.Sprintf("waits for %s to be named, to reference it", t.Name)
		}
		return
	}
	p.References[d.Name] = append(p.References[d.Name], Reference{
		APIVersion: t.APIVersion, Kind: t.Identity.Kind, Namespace: t.Identity.Namespace, Name: t.Identity.Name,
	})
}

// holdUntilReady holds back every desired resource that doesn't exist yet
// while one of its dependencies isn't ready. All of them are decided in the
// same pass, so every resource whose dependencies are ready is created at once.
func (p *Plan) holdUntilReady(byName map[string]*Resource) {
	waiting := map[string][]string{}
	for _, e := range p.Edges {
		d, t := byName[e.Dependent], byName[e.Target]
		if d.Observed != nil || d.Desired == nil || e.State == Cyclic || t.ready() {
			continue
		}
		waiting[d.Name] = append(waiting[d.Name], t.Name)
	}
	for name, targets := range waiting {
		if _, held := p.HeldBack[name]; !held {
			p.HeldBack[name] = "waits for " + strings.Join(targets, ", ") + " to be ready"
		}
	}
}

// ready is true when the resource exists and it, or an earlier step, says
// it's ready.
func (r *Resource) ready() bool {
	return r.Observed != nil && (r.Observed.Ready || (r.Desired != nil && r.Desired.Ready))
}

// usageState is the state of an edge a Usage protects: protected once the
// Usage is observed, declared once both ends exist (t is nil for an external
// dependency, which the function can't see), else pending.
func usageState(d, t, usage *Resource, breakCycle bool) EdgeState {
	switch {
	case breakCycle:
		return Cyclic
	case d.Observed == nil || (t != nil && t.Observed == nil):
		return Pending
	case usage != nil && usage.Observed != nil:
		return Protected
	default:
		return Declared
	}
}

// usageKey is the composition resource name of the Usage of an edge.
func usageKey(dependent, dependency string) string {
	return "usage-" + dependent + "-" + dependency
}

// decide returns the state of the edge from d to t, d's finalizer, and
// whether t declares it. onTarget holds the finalizers observed on t.
func decide(d, t *Resource, onTarget map[string]bool, breakCycle bool) (EdgeState, string, bool) {
	if d.Observed == nil || d.Observed.UID == "" {
		if breakCycle {
			return Cyclic, "", false
		}
		return Pending, "", false
	}
	f := objectref.Finalizer(d.Observed.UID)
	switch {
	case breakCycle:
		return Cyclic, f, false
	case d.Desired == nil || d.Observed.Deleting:
		return Releasing, f, t.Desired != nil && onTarget[f]
	case t.Desired == nil:
		return TargetRemoved, f, false
	case onTarget[f]:
		return Protected, f, true
	case t.Observed != nil && t.Observed.Deleting:
		return TargetDeleting, f, false
	default:
		return Declared, f, true
	}
}

// carriedFinalizers holds the observed finalizers of each edge target as a
// set, built once: a shared target may carry thousands.
type carriedFinalizers map[string]map[string]bool

func (c carriedFinalizers) of(r *Resource) map[string]bool {
	if set, ok := c[r.Name]; ok {
		return set
	}
	var set map[string]bool
	if r.Observed != nil {
		set = make(map[string]bool, len(r.Observed.Finalizers))
		for _, f := range r.Observed.Finalizers {
			set[f] = true
		}
	}
	c[r.Name] = set
	return set
}

// staleFinalizers returns the reference finalizers on the observed resource
// whose UID is not one of the Objects that reference it.
func staleFinalizers(r *Resource, referencedBy map[string]bool) []Stale {
	if r.Observed == nil {
		return nil
	}
	var stale []Stale
	for _, f := range r.Observed.Finalizers {
		if uid, ok := objectref.UIDOf(f); ok && !referencedBy[uid] {
			stale = append(stale, Stale{Resource: r.Name, Finalizer: f})
		}
	}
	slices.SortFunc(stale, func(a, b Stale) int { return cmp.Compare(a.Finalizer, b.Finalizer) })
	return stale
}

// missingFrom returns the wanted entries that have lacks, sorted, each once:
// two Objects with one UID would otherwise declare it twice, which
// server-side apply rejects in a set.
func missingFrom(have, want []string) []string {
	present := make(map[string]bool, len(have))
	for _, h := range have {
		present[h] = true
	}
	var missing []string
	for _, w := range want {
		if !present[w] {
			missing = append(missing, w)
		}
	}
	slices.Sort(missing)
	return slices.Compact(missing)
}
