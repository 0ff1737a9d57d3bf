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

	"github.com/crossplane-contrib/function-dependencies/internal/graph"
	"github.com/crossplane-contrib/function-dependencies/internal/objectref"
)

// Protects is true for the edges of a dependent a finalizer protects: those
// of a provider-kubernetes Object, which the provider releases when the
// Object is deleted.
func Protects(dependent *graph.Resource) bool {
	return dependent.IsObject
}

// A Stale finalizer is a reference finalizer on an observed resource that
// names no Object referencing it in this composition.
type Stale struct {
	Resource  string
	Finalizer string
}

// A Plan is the finalizers the composed resources declare.
type Plan struct {
	// States holds the state of each edge a finalizer protects, by its
	// place in the graph's edges.
	States map[int]graph.State

	// Additions holds, for each desired resource that lacks some, the
	// reference finalizers to declare after those earlier steps declared,
	// sorted.
	Additions map[string][]string

	// Declared counts the reference finalizers the desired resources declare
	// for their dependents, whether earlier steps declared them already or
	// not: finalizers, not edges, since two Objects that claim one UID share
	// one.
	Declared int

	// Stale are sorted by resource, then finalizer.
	Stale []Stale
}

// Declare decides the reference finalizers of the graph's resources.
func Declare(g *graph.Graph) Plan {
	p := Plan{States: make(map[int]graph.State, len(g.Edges)), Additions: map[string][]string{}}
	// carried holds, by resource and UID, every reference finalizer an
	// observed resource carries (a shared resource carries one for each of
	// its dependents), and whether it is the finalizer of a dependent whose
	// finalizer protects an edge to the resource: one that is not is stale.
	carried := make(map[uidOn]carriedFinalizer, len(g.Edges))
	for t, r := range g.Resources {
		if r.Observed != nil {
			for _, f := range r.Observed.Finalizers {
				if uid, ok := objectref.UIDOf(f); ok {
					carried[uidOn{t, uid}] = carriedFinalizer{finalizer: f}
				}
			}
		}
	}
	// The finalizers each target declares, by its place in the resources.
	declared := map[int][]string{}
	for i, e := range g.Edges {
		d, t := &g.Resources[e.From], &g.Resources[e.To]
		if !Protects(d) {
			continue
		}
		key := uidOn{e.To, d.UID()}
		c, on := carried[key]
		on = on && key.uid != ""
		if on {
			c.referenced = true
			carried[key] = c
		}
		state, declares := stateOf(e, d, t, on)
		p.States[i] = state
		if declares {
			f := c.finalizer // Carried already: no need to make it.
			if !on {
				f = objectref.Finalizer(d.UID())
			}
			declared[e.To] = append(declared[e.To], f)
		}
	}
	for t, fs := range declared {
		// Once each: two Objects that claim one UID would otherwise declare
		// it twice, which server-side apply rejects in a set.
		slices.Sort(fs)
		fs = slices.Compact(fs)
		p.Declared += len(fs)
		earlier := g.Resources[t].Desired.Finalizers
		fs = slices.DeleteFunc(fs, func(f string) bool { return slices.Contains(earlier, f) })
		if len(fs) > 0 {
			p.Additions[g.Resources[t].Name] = fs
		}
	}
	for t, r := range g.Resources {
		// A resource Crossplane is deleting has left the composition's
		// observed state: the finalizers on it are not the composition's to
		// report.
		if r.Observed == nil || r.Observed.Going {
			continue
		}
		var stale []string
		for _, f := range r.Observed.Finalizers {
			if uid, ok := objectref.UIDOf(f); ok && !carried[uidOn{t, uid}].referenced {
				stale = append(stale, f)
			}
		}
		slices.Sort(stale)
		for _, f := range stale {
			p.Stale = append(p.Stale, Stale{Resource: r.Name, Finalizer: f})
		}
	}
	return p
}

// uidOn is the UID of a reference finalizer on a resource, by its place in
// the graph's resources.
type uidOn struct {
	resource int
	uid      string
}

// A carriedFinalizer is a reference finalizer an observed resource carries.
type carriedFinalizer struct {
	finalizer  string
	referenced bool
}

// stateOf returns the state of the edge from d to t, and whether t declares
// d's finalizer. carried is true when the observed t carries it.
func stateOf(e graph.Edge, d, t *graph.Resource, carried bool) (graph.State, bool) {
	switch {
	case e.Broken:
		return graph.Cyclic, false
	case !managed(d):
		// It has no UID to name its finalizer by yet, or the provider would
		// not release the finalizer.
		return graph.Pending, false
	case d.Desired == nil || d.Observed.Deleting:
		// The provider removes the finalizer once the dependent is gone, and
		// declaring it again would keep the target forever: it stays
		// declared only while the target carries it.
		return graph.Releasing, t.Desired != nil && carried
	case t.Desired == nil:
		return graph.TargetRemoved, false
	case carried:
		return graph.Protected, true
	case t.Observed != nil && t.Observed.Deleting:
		// The API server lets no one add a finalizer to an object being
		// deleted.
		return graph.TargetDeleting, false
	default:
		return graph.Declared, true
	}
}

// managed is true when provider-kubernetes manages the Object: it carries
// the provider's own finalizer, which the provider adds only once every
// reference resolves. Only an Object that carries it releases its reference
// finalizers when it is deleted; a finalizer declared for one that doesn't
// would keep its target for ever.
func managed(r *graph.Resource) bool {
	return r.UID() != "" && slices.Contains(r.Observed.Finalizers, objectref.ObjectFinalizer)
}
