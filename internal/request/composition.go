package request

import (
	"maps"
	"slices"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
)

// A Composed is one composed resource of a Composition's request.
type Composed struct {
	// Name is its composition resource name.
	Name string
	// Desired is what the composition desires of it so far, when IsDesired,
	// and Ready whether an earlier step said it is ready; Observed is what
	// exists, when IsObserved. Either may have no body.
	Desired, Observed     Object
	IsDesired, IsObserved bool
	Ready                 bool
	// InRequest is false for a resource observed state lacks, which the
	// function read among its required resources: one Crossplane deletes.
	InRequest bool
}

// A Composition is what a Composition step reads of its request.
type Composition struct {
	Composite Object
	// Resources are the composed resources, desired or observed, in name
	// order: the request's maps have none.
	Resources []Composed
}

// ReadComposition reads a Composition step's request. Observed state is the
// request's, with the function's own required resources it lacks added
// under their composition resource names: those Crossplane is deleting.
func ReadComposition(req *fnv1.RunFunctionRequest) Composition {
	c := Composition{Composite: ObjectOf(req.GetObserved().GetComposite().GetResource())}
	desired := req.GetDesired().GetResources()
	inRequest := req.GetObserved().GetResources()
	observed := withGoing(inRequest, req.GetRequiredResources(), c.Composite.UID())
	names := make([]string, 0, len(desired)+len(observed))
	for name := range desired {
		names = append(names, name)
	}
	for name := range observed {
		if _, ok := desired[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	c.Resources = make([]Composed, len(names))
	for i, name := range names {
		_, in := inRequest[name]
		d, isDesired := desired[name]
		o, isObserved := observed[name]
		c.Resources[i] = Composed{
			Name:    name,
			Desired: ObjectOf(d.GetResource()), IsDesired: isDesired,
			Observed: ObjectOf(o.GetResource()), IsObserved: isObserved,
			Ready:     d.GetReady() == fnv1.Ready_READY_TRUE,
			InRequest: in,
		}
	}
	return c
}

// withGoing returns the observed composed resources, with the required
// resources that observed state lacks added under their composition
// resource names.
//
// Only a resource the composite controls is one of them. What is fetched by
// name (what a Usage is used by, the dependency of a written reference) may
// now be another composite's, under a composition resource name this one
// uses too. The controller reference says whose it is: Crossplane sets it on
// every resource it composes and keeps it while deleting one, and it is what
// Crossplane itself checks before it deletes one; the function's label is on
// dependent Objects only, and Crossplane's crossplane.io/composite label is
// stripped from what it deletes and names the composite by name, not UID.
func withGoing(observed map[string]*fnv1.Resource, required map[string]*fnv1.Resources, xrUID string) map[string]*fnv1.Resource {
	var going map[string]*fnv1.Resource
	for key, r := range required {
		if !protocol.IsOwnRequirement(key) {
			continue
		}
		for _, item := range r.GetItems() {
			o := ObjectOf(item.GetResource())
			name := o.Annotation(protocol.CompositionResourceName)
			if _, ok := observed[name]; ok || name == "" || xrUID == "" || o.ControllerUID() != xrUID {
				continue
			}
			if going == nil {
				going = maps.Clone(observed)
				if going == nil {
					going = map[string]*fnv1.Resource{}
				}
			}
			going[name] = item
		}
	}
	if going == nil {
		return observed
	}
	return going
}
