package protection

// The finalizer rule: which reference finalizers each composed resource must
// declare so that no referenced object is deleted before the Objects that
// reference it.
//
// provider-kubernetes adds these finalizers itself, but loses them in a race
// (provider-kubernetes #371). Computing them from the whole composition at
// once and declaring them in desired state makes them level-triggered
// instead: every reconcile of the composite declares the complete set again.

import (
	"slices"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/explicit"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
)

// finalizerCan is true for the edges a finalizer can protect: those of a
// provider-kubernetes Object that its spec.references make, whose finalizers
// the provider releases when the Object is deleted, and those the input
// declares between two Objects, which are written into them (explicit.Writes).
// It would release none for an inferred edge, and keep the target for ever.
func finalizerCan(g *composed.Graph, e composed.Edge) bool {
	switch e.Origin {
	case composed.FromReference:
		return g.Resources[e.DependentAt].IsObject
	case composed.FromInput:
		return explicit.Writes(g, e)
	default:
		return false
	}
}

// A Stale finalizer is a reference finalizer on an observed resource that
// names no Object referencing it in this composition.
type Stale struct {
	Resource  string
	Finalizer string
	// Unseen is true when it names no resource of the composition at all:
	// its Object is gone, outside the composition, or one Crossplane is
	// deleting that the function can't see.
	Unseen bool
}

// Yield says whether an edge's finalizer gives way to a Usage.
type Yield uint8

// The ways a finalizer gives way.
const (
	// Keep: the finalizer protects the edge.
	Keep Yield = iota
	// HandOver: a Usage is to protect the edge, but is not in force yet.
	// A finalizer the target carries stays declared until it is, so that
	// the edge is never unprotected in between; none is added.
	HandOver
	// Yielded: a Usage protects the edge, and no finalizer is declared for
	// it.
	Yielded
)

// finalizers is the finalizer rule's part of a decision: what it reads of
// the graph once, and the finalizers it declares, edge by edge.
type finalizers struct {
	g *composed.Graph
	// carried holds, for each edge, its dependent's finalizer when the
	// observed target carries it.
	carried []string
	// declared holds the finalizers each target declares, by its place in
	// the resources.
	declared map[int][]string
	// stale are sorted by resource, then finalizer.
	stale []Stale
}

// newFinalizers reads the reference finalizers the observed resources
// carry: each edge's, and the stale ones. Each carried finalizer is read
// once, from the resource that carries it, and finds its Objects through a
// map of UIDs and its edge among the dependent's sorted edges.
func newFinalizers(g *composed.Graph) *finalizers {
	f := &finalizers{g: g, carried: make([]string, len(g.Edges)), declared: map[int][]string{}}
	// The Objects a reference finalizer can name, by UID: first holds the
	// first of each UID, and next[d] the next after d, or -1, since two
	// Objects may claim one.
	first := make(map[string]int, len(g.Resources))
	next := make([]int, len(g.Resources))
	for d := len(g.Resources) - 1; d >= 0; d-- {
		next[d] = -1
		if r := &g.Resources[d]; r.IsObject && r.UID() != "" {
			if n, ok := first[r.UID()]; ok {
				next[d] = n
			}
			first[r.UID()] = d
		}
	}
	seen := make(map[string]bool, len(g.Resources))
	for _, r := range g.Resources {
		seen[r.UID()] = true
	}
	for t, r := range g.Resources {
		if r.Observed == nil {
			continue
		}
		stale := f.carry(t, first, next)
		// A resource Crossplane is deleting has left the composition's
		// observed state: the finalizers on it are not the composition's to
		// report.
		if r.Observed.Going {
			continue
		}
		slices.Sort(stale)
		for _, fin := range stale {
			uid, _ := object.UIDOf(fin)
			f.stale = append(f.stale, Stale{Resource: r.Name, Finalizer: fin, Unseen: !seen[uid]})
		}
	}
	return f
}

// carry records the reference finalizers the observed resource at t
// carries on their edges, and returns those that are no edge's.
func (f *finalizers) carry(t int, first map[string]int, next []int) []string {
	var stale []string
	for _, fin := range f.g.Resources[t].Observed.Finalizers {
		uid, ok := object.UIDOf(fin)
		if !ok {
			continue
		}
		referenced := false
		for d, ok := first[uid]; ok && d >= 0; d = next[d] {
			if i, ok := f.g.Edge(d, t); ok {
				f.carried[i], referenced = fin, true
			}
		}
		if !referenced {
			stale = append(stale, fin)
		}
	}
	return stale
}

// edge decides the finalizer of the edge at i, one a finalizer can protect,
// as it gives way (y): its state, and false when no finalizer protects it.
func (f *finalizers) edge(i int, y Yield) (State, bool) {
	carried := f.carried[i]
	if y == Yielded || (y == HandOver && carried == "") {
		return Exposed, false
	}
	e := f.g.Edges[i]
	d := &f.g.Resources[e.DependentAt]
	state, declares := finalizerState(e, d, &f.g.Resources[e.TargetAt], carried != "")
	if declares {
		fin := carried // Carried already: no need to make it.
		if fin == "" {
			fin = object.Finalizer(d.UID())
		}
		f.declared[e.TargetAt] = append(f.declared[e.TargetAt], fin)
	}
	return state, true
}

// finish returns, for each desired resource that lacks some, the reference
// finalizers to declare after those earlier steps declared, sorted; how
// many the desired resources declare for their dependents, whether earlier
// steps declared them already or not: finalizers, not edges, since two
// Objects that claim one UID share one; and how many of those the observed
// resources don't carry yet: what this call adds.
func (f *finalizers) finish() (additions map[string][]string, declared, added int) {
	additions = map[string][]string{}
	for t, fs := range f.declared {
		// Once each: two Objects that claim one UID would otherwise declare
		// it twice, which server-side apply rejects in a set.
		slices.Sort(fs)
		fs = slices.Compact(fs)
		declared += len(fs)
		r := &f.g.Resources[t]
		for _, fin := range fs {
			if r.Observed == nil || !slices.Contains(r.Observed.Finalizers, fin) {
				added++
			}
		}
		earlier := r.Desired.Finalizers
		fs = slices.DeleteFunc(fs, func(fin string) bool { return slices.Contains(earlier, fin) })
		if len(fs) > 0 {
			additions[r.Name] = fs
		}
	}
	return additions, declared, added
}

// finalizerState returns the state of the edge from d to t, and whether t
// declares d's finalizer. carried is true when the observed t carries it.
func finalizerState(e composed.Edge, d, t *composed.Resource, carried bool) (State, bool) {
	switch {
	case e.Broken:
		return Cyclic, false
	case !managed(d):
		// It has no UID to name its finalizer by yet, or the provider would
		// not release the finalizer.
		return Pending, false
	case d.Desired == nil || d.Observed.Deleting:
		// The provider removes the finalizer once the dependent is gone, and
		// declaring it again would keep the target forever: it stays
		// declared only while the target carries it.
		return Releasing, t.Desired != nil && carried
	case t.Desired == nil:
		return TargetRemoved, false
	case carried:
		return Protected, true
	case t.Observed != nil && t.Observed.Deleting:
		// The API server lets no one add a finalizer to an object being
		// deleted.
		return TargetDeleting, false
	default:
		return Declared, true
	}
}

// managed is true when provider-kubernetes manages the Object: it carries
// the provider's own finalizer, which the provider adds only once every
// reference resolves. Only an Object that carries it releases its reference
// finalizers when it is deleted; a finalizer declared for one that doesn't
// would keep its target for ever.
func managed(r *composed.Resource) bool {
	return r.UID() != "" && slices.Contains(r.Observed.Finalizers, object.ObjectFinalizer)
}
