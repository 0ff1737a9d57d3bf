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
}

// A Composition is what a Composition step reads of its request.
type Composition struct {
	Composite Object
	// Resources are the composed resources, desired or observed, in name
	// order: the request's maps have none.
	Resources []Composed
	// Required are the objects Crossplane fetched for the function's own
	// requirements, requirement after requirement in name order.
	Required []Object
}

// ReadComposition reads a Composition step's request.
func ReadComposition(req *fnv1.RunFunctionRequest) Composition {
	c := Composition{Composite: ObjectOf(req.GetObserved().GetComposite().GetResource())}
	desired, observed := req.GetDesired().GetResources(), req.GetObserved().GetResources()
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
		d, isDesired := desired[name]
		o, isObserved := observed[name]
		c.Resources[i] = Composed{
			Name:    name,
			Desired: ObjectOf(d.GetResource()), IsDesired: isDesired,
			Observed: ObjectOf(o.GetResource()), IsObserved: isObserved,
			Ready: d.GetReady() == fnv1.Ready_READY_TRUE,
		}
	}
	required := req.GetRequiredResources()
	if len(required) == 0 {
		return c
	}
	for _, key := range slices.Sorted(maps.Keys(required)) {
		if !protocol.IsOwnRequirement(key) {
			continue
		}
		for _, item := range required[key].GetItems() {
			c.Required = append(c.Required, ObjectOf(item.GetResource()))
		}
	}
	return c
}
