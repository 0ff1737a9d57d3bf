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
	"maps"
	"slices"

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

	// References are the objects the resource references, when it is an
	// Object: read from desired state when it is desired, else from observed.
	References []objectref.Target
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
}

// Desired is what the function needs of a desired resource.
type Desired struct {
	// Finalizers are the finalizers earlier pipeline steps declared.
	Finalizers []string
}

// Options change how the plan is made.
type Options struct {
	// BreakCycles declares no finalizer on an edge inside a cycle, so that the
	// objects in a cycle don't each wait for the other to be deleted first.
	BreakCycles bool
}

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
)

// An Edge is a reference from a dependent Object to another composed resource.
type Edge struct {
	Dependent string
	Target    string
	// Finalizer is the dependent's reference finalizer; empty while Pending.
	Finalizer string
	State     EdgeState
}

// An External edge is a reference to an object that no composed resource is.
type External struct {
	Dependent string
	Target    objectref.Target
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

	p := Plan{Resources: len(resources), Additions: map[string][]string{}}
	var g graph.Graph
	for _, name := range names {
		p.addEdges(&g, byName[name], byIdentity)
	}
	cycles := g.Cycles()
	p.Cycles = cycles.Paths

	declare := map[string][]string{}
	referencedBy := map[string]map[string]bool{}
	carried := carriedFinalizers{}
	for i := range p.Edges {
		e := &p.Edges[i]
		d, t := byName[e.Dependent], byName[e.Target]
		if d.Observed != nil && d.Observed.UID != "" {
			if referencedBy[e.Target] == nil {
				referencedBy[e.Target] = map[string]bool{}
			}
			referencedBy[e.Target][d.Observed.UID] = true
		}
		var declared bool
		e.State, e.Finalizer, declared = decide(d, t, carried.of(t), o.BreakCycles && cycles.Contains(e.Dependent, e.Target))
		if declared {
			declare[e.Target] = append(declare[e.Target], e.Finalizer)
		}
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

// addEdges adds an edge for every composed resource the dependent references,
// and an external edge for every reference that matches none.
func (p *Plan) addEdges(g *graph.Graph, d *Resource, byIdentity map[Identity][]string) {
	first := len(p.Edges)
	seen := map[string]bool{}
	external := map[Identity]bool{}
	for _, t := range d.References {
		id := Identity{Group: t.Group, Kind: t.Kind, Namespace: t.Namespace, Name: t.Name}
		targets := byIdentity[id]
		if len(targets) == 0 {
			if !external[id] {
				external[id] = true
				p.External = append(p.External, External{Dependent: d.Name, Target: t})
			}
			continue
		}
		for _, target := range targets {
			if seen[target] {
				continue
			}
			seen[target] = true
			g.AddEdge(d.Name, target)
			p.Edges = append(p.Edges, Edge{Dependent: d.Name, Target: target})
		}
	}
	// The dependent lists its references in any order; sort its edges by
	// target for a stable plan. Dependents are added in name order.
	slices.SortFunc(p.Edges[first:], func(a, b Edge) int { return cmp.Compare(a.Target, b.Target) })
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

// missingFrom returns the wanted entries that have lacks, sorted.
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
	return missing
}
