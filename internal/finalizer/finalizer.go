// Package finalizer decides which reference finalizers each composed resource
// must declare so that no referenced object is deleted before the Objects that
// reference it.
//
// provider-kubernetes adds these finalizers itself, but loses them in a race
// (provider-kubernetes #371). Computing them from the whole composition at once
// and declaring them in desired state makes them level-triggered instead: every
// reconcile of the composite declares the complete set again.
package finalizer

import (
	"slices"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/explicit"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
	"github.com/crossplane-contrib/function-dependencies/internal/protection"
)

// Protects is true for the edges a finalizer protects: those of a
// provider-kubernetes Object that its spec.references make, whose finalizers
// the provider releases when the Object is deleted, and those the input
// declares between two Objects, which are written into them (explicit.Writes).
// It would release none for an inferred edge, and keep the target for ever.
func Protects(g *composed.Graph, e composed.Edge) bool {
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

// A Plan is the finalizers the composed resources declare.
type Plan struct {
	// Protected says, for each of the graph's edges by its place, whether a
	// finalizer protects it, and States its state when one does.
	Protected []bool
	States    []protection.State

	// Additions holds, for each desired resource that lacks some, the
	// reference finalizers to declare after those earlier steps declared,
	// sorted.
	Additions map[string][]string

	// Declared counts the reference finalizers the desired resources declare
	// for their dependents, whether earlier steps declared them already or
	// not: finalizers, not edges, since two Objects that claim one UID share
	// one.
	Declared int
	// Added counts those of them the observed resources don't carry yet:
	// what this call adds.
	Added int

	// Stale are sorted by resource, then finalizer.
	Stale []Stale
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
	// Yielded: a Usage in force protects the edge, and no finalizer is
	// declared for it.
	Yielded
)

// Declare decides the reference finalizers of the graph's resources. yield
// says, of each edge by its place, whether its finalizer gives way to a
// Usage; nil keeps every finalizer.
func Declare(g *composed.Graph, yield func(edge int) Yield) Plan {
	p := Plan{Protected: make([]bool, len(g.Edges)), States: make([]protection.State, len(g.Edges)), Additions: map[string][]string{}}
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
	// carried holds, for each edge, its dependent's finalizer when the
	// observed target carries it; a reference finalizer that is no edge's is
	// stale. Each carried finalizer is read once, from the resource that
	// carries it.
	carried := make([]string, len(g.Edges))
	seen := make(map[string]bool, len(g.Resources))
	for _, r := range g.Resources {
		seen[r.UID()] = true
	}
	for t, r := range g.Resources {
		if r.Observed == nil {
			continue
		}
		var stale []string
		for _, f := range r.Observed.Finalizers {
			uid, ok := object.UIDOf(f)
			if !ok {
				continue
			}
			referenced := false
			for d, ok := first[uid]; ok && d >= 0; d = next[d] {
				if i, ok := g.Edge(d, t); ok {
					carried[i], referenced = f, true
				}
			}
			if !referenced {
				stale = append(stale, f)
			}
		}
		// A resource Crossplane is deleting has left the composition's
		// observed state: the finalizers on it are not the composition's to
		// report.
		if r.Observed.Going {
			continue
		}
		slices.Sort(stale)
		for _, f := range stale {
			uid, _ := object.UIDOf(f)
			p.Stale = append(p.Stale, Stale{Resource: r.Name, Finalizer: f, Unseen: !seen[uid]})
		}
	}
	// The finalizers each target declares, by its place in the resources.
	declared := map[int][]string{}
	for i, e := range g.Edges {
		if !Protects(g, e) {
			continue
		}
		d, t := &g.Resources[e.DependentAt], &g.Resources[e.TargetAt]
		if yield != nil {
			if y := yield(i); y == Yielded || (y == HandOver && carried[i] == "") {
				continue
			}
		}
		state, declares := stateOf(e, d, t, carried[i] != "")
		p.Protected[i], p.States[i] = true, state
		if declares {
			f := carried[i] // Carried already: no need to make it.
			if f == "" {
				f = object.Finalizer(d.UID())
			}
			declared[e.TargetAt] = append(declared[e.TargetAt], f)
		}
	}
	for t, fs := range declared {
		// Once each: two Objects that claim one UID would otherwise declare
		// it twice, which server-side apply rejects in a set.
		slices.Sort(fs)
		fs = slices.Compact(fs)
		p.Declared += len(fs)
		for _, f := range fs {
			if o := g.Resources[t].Observed; o == nil || !slices.Contains(o.Finalizers, f) {
				p.Added++
			}
		}
		earlier := g.Resources[t].Desired.Finalizers
		fs = slices.DeleteFunc(fs, func(f string) bool { return slices.Contains(earlier, f) })
		if len(fs) > 0 {
			p.Additions[g.Resources[t].Name] = fs
		}
	}
	return p
}

// stateOf returns the state of the edge from d to t, and whether t declares
// d's finalizer. carried is true when the observed t carries it.
func stateOf(e composed.Edge, d, t *composed.Resource, carried bool) (protection.State, bool) {
	switch {
	case e.Broken:
		return protection.Cyclic, false
	case !managed(d):
		// It has no UID to name its finalizer by yet, or the provider would
		// not release the finalizer.
		return protection.Pending, false
	case d.Desired == nil || d.Observed.Deleting:
		// The provider removes the finalizer once the dependent is gone, and
		// declaring it again would keep the target forever: it stays
		// declared only while the target carries it.
		return protection.Releasing, t.Desired != nil && carried
	case t.Desired == nil:
		return protection.TargetRemoved, false
	case carried:
		return protection.Protected, true
	case t.Observed != nil && t.Observed.Deleting:
		// The API server lets no one add a finalizer to an object being
		// deleted.
		return protection.TargetDeleting, false
	default:
		return protection.Declared, true
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
