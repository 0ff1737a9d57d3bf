package composition

import (
	"slices"
	"strings"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/request"
)

// What Crossplane is deleting.
//
// Crossplane drops a composed resource from the composite's observed state
// in the reconcile that deletes it. A dependent removed from the composition
// may still be being deleted then: the finalizer it holds on what it
// references would name no Object of the composition, and look stale; and
// the Usage that protects what it references would no longer be emitted, so
// Crossplane would delete it and replay the deletion it held back while the
// dependent still exists. So:
//
//   - the function labels every dependent Object with its composite's UID,
//     protocol.DependentLabel (labelDependents): Crossplane strips its own
//     crossplane.io/composite label from a resource it deletes for leaving
//     the composition, and that label names the composite by name, not UID;
//   - when a reference finalizer, or one of the function's own Usages, names
//     an Object that observed state lacks, the function asks Crossplane for
//     the Objects of that label (the response's requirements, lookout.go),
//     and Crossplane calls it again in the same reconcile with them as
//     required resources;
//   - the function reads those observed state lacks as observed, and as
//     going (composedOf; composed.Observed.Going). A dependent being deleted is
//     then one: its finalizer stays declared while the target carries it,
//     its Usage stays, and no finalizer of it is stale.
//
// Ordinary reconciles, where every such finalizer and Usage names an
// observed Object, ask for nothing.

// A composed resource of the composite: one of the request, or one that
// Crossplane is deleting, which observed state lacks.
type member struct {
	request.Composed
	// going is true for a resource Crossplane is deleting, read from the
	// resources the function required.
	going bool
}

// composedOf returns the composite's composed resources, in name order: the
// request's, and those Crossplane is deleting, read as observed under their
// composition resource names from the function's own required resources
// that observed state lacks.
//
// Only a resource the composite controls is one of them. What is fetched by
// name (what a Usage is used by, the dependency of a written reference) may
// now be another composite's, under a composition resource name this one
// uses too. The controller reference says whose it is: Crossplane sets it on
// every resource it composes and keeps it while deleting one, and it is what
// Crossplane itself checks before it deletes one; the function's label is on
// dependent Objects only.
func composedOf(c request.Composition) []member {
	out := make([]member, len(c.Resources))
	for i, r := range c.Resources {
		out[i].Composed = r
	}
	xrUID := c.Composite.UID()
	if xrUID == "" {
		return out
	}
	for _, o := range c.Required {
		name := o.Annotation(protocol.CompositionResourceName)
		if name == "" || o.ControllerUID() != xrUID {
			continue
		}
		i, found := slices.BinarySearchFunc(out, name, func(r member, name string) int { return strings.Compare(r.Name, name) })
		switch {
		case !found:
			out = slices.Insert(out, i, member{Composed: request.Composed{Name: name, Observed: o, IsObserved: true}, going: true})
		case out[i].IsObserved && !out[i].going:
			// Observed state has it: Crossplane is not deleting it.
		default:
			out[i].Observed, out[i].IsObserved, out[i].going = o, true, true
		}
	}
	return out
}

// deletingUnderARemovedName marks as being deleted every resource the
// composition desires whose object it also observes under a name it removes
// (one object under two names): Crossplane deletes what the composition
// removes before it applies the rest, and the API server refuses a new
// finalizer on an object being deleted.
func deletingUnderARemovedName(resources []composed.Resource) {
	removed := map[string]bool{}
	for _, r := range resources {
		if r.Desired == nil && r.Observed != nil && r.Observed.UID != "" {
			removed[r.Observed.UID] = true
		}
	}
	for _, r := range resources {
		if r.Desired != nil && r.Observed != nil && removed[r.Observed.UID] {
			r.Observed.Deleting = true
		}
	}
}
