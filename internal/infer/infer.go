// Package infer finds the dependencies that composed resources state without
// an Object's spec.references: a managed resource's ProviderConfig, the
// resource that writes a ProviderConfig's credentials Secret, and the
// resources a managed resource references from its spec.forProvider and
// spec.initProvider. Deleting any of them first leaves its dependents unable
// to reach their cluster or cloud, stuck for ever; nothing in Crossplane
// orders their deletion.
package infer

import (
	"context"
	"fmt"
	"slices"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
)

// A Resource is what inference reads of one composed resource.
type Resource struct {
	// Name is the composition resource name.
	Name string
	// Identity is the resource's group, kind, namespace and name.
	Identity object.Ref
	// Bodies are the resource as observed and as desired, observed first:
	// what a provider resolved (a Ref set from a Selector) is observed, and
	// what the composition asks for gives the edge before the resource
	// exists.
	Bodies []Body
}

// A Body is one state of a resource, whose fields are decoded when asked
// for: decoding whole resources would decode what no rule reads, such as
// Objects' manifests, and cost several times the rest of the step.
type Body interface {
	// Value is the decoded value at the path of nested objects, or nil.
	Value(path ...string) any
	// Keys are the keys of the object at the path, sorted; none when it is
	// no object.
	Keys(path ...string) []string
}

// Kinds say which kinds of edge to infer.
type Kinds struct {
	ProviderConfigs, Credentials, ManagedReferences bool
}

// An Edge says that the Dependent composed resource depends on the Target,
// by their composition resource names, and Via where the dependent says so.
type Edge struct {
	Dependent, Target, Via string
}

// externalName is the annotation that holds a managed resource's name in
// its provider, which a resolved reference copies into the referencing field.
const externalName = "crossplane.io/external-name"

// Found is what inference finds: the edges, the ProviderConfigs outside the
// composite, and the reference fields it can't tell the target of.
type Found struct {
	Edges []Edge
	// Outside are the ProviderConfigs the resources use that none of them
	// is, by dependent in the resources' order, each once for each.
	Outside []Outside
	// Unidentified are the …Ref, …Refs and resolved …Selector fields whose
	// candidates nothing singles out: no edge is inferred for them.
	Unidentified []Unidentified
}

// An Unidentified reference field of the Dependent, at Via: several
// composed resources may be its target and nothing says which.
type Unidentified struct {
	Dependent, Via string
}

// An Outside ProviderConfig is one the Dependent's spec.providerConfigRef
// names that no composed resource is: another composite's, or one installed
// by hand. Config has the apiVersion to ask Crossplane for it by.
type Outside struct {
	Dependent string
	Config    object.Ref
}

// MaxEdges bounds the edges inference may find in one composite. Every
// inferred edge gets a Usage, about 600 bytes of response: the 4 MiB
// Crossplane reads holds about 7,000, and a whole call that writes them
// costs about 10 KB and 50 µs an edge (20,000 edges: a peak RSS of 230 MB
// and a second). The published compositions of the corpus infer at most
// 49, about one a composed resource, and hack/bench.sh's hostile shapes
// 10,000 at most. Past it, inference stops at the edge that passes it,
// before the rest are found: without a bound, 2,000 resources that name
// 200 others each made 360,000 edges and Usages, 115 s and 3.3 GB.
const MaxEdges = 20_000

// Edges returns the edges of the kinds that the resources state, by
// dependent in the resources' order, then by rule, then in the order each
// rule reads the bodies: one for each dependent and target, never from a
// resource to itself; and the reference fields it found no single target
// for, in the same order, each once. It refuses to find more than MaxEdges,
// naming the kind, the resource and the field of the edge that passes the
// bound.
//
// It stops, with the context's error, when the call is cancelled.
func Edges(ctx context.Context, resources []Resource, k Kinds) (Found, error) {
	if !k.ProviderConfigs && !k.Credentials && !k.ManagedReferences {
		return Found{}, nil
	}
	ix := &indexed{resources: resources}
	var found Found
	d := 0
	// reported are the fields reported unidentified, by dependent: a field
	// is reported once however many of its references are.
	type report struct {
		d   int
		via string
	}
	var reported map[report]bool
	unidentified := func(via string) {
		if reported[report{d, via}] {
			return
		}
		if reported == nil {
			reported = map[report]bool{}
		}
		reported[report{d, via}] = true
		found.Unidentified = append(found.Unidentified, Unidentified{Dependent: resources[d].Name, Via: via})
	}
	e := &edges{found: &found, resources: resources}
	add := e.add
	for ; d < len(resources); d++ {
		if err := ctx.Err(); err != nil {
			return Found{}, err
		}
		e.d, e.seen = d, map[int]bool{d: true}
		if k.ProviderConfigs {
			e.kind = v1beta1.InferProviderConfigs
			var outside []object.Ref
			ix.providerConfigOf(d, add, func(c object.Ref) {
				if !slices.Contains(outside, c) {
					outside = append(outside, c)
					found.Outside = append(found.Outside, Outside{Dependent: resources[d].Name, Config: c})
				}
			})
		}
		if k.Credentials && e.over == nil {
			e.kind = v1beta1.InferCredentials
			ix.credentialsOf(d, add)
		}
		if k.ManagedReferences && e.over == nil {
			e.kind = v1beta1.InferManagedReferences
			ix.referencesOf(d, add, unidentified)
		}
		if e.over != nil {
			return Found{}, e.over
		}
	}
	return found, nil
}

// edges adds the dependent's edges to what is found, each target once, up
// to MaxEdges in all.
type edges struct {
	found     *Found
	resources []Resource
	d         int
	seen      map[int]bool
	// kind is the kind of edge being inferred, and over the error of the
	// edge past MaxEdges: no edge is added after it.
	kind v1beta1.Inference
	over error
}

func (e *edges) add(t int, via string) {
	if e.seen[t] || e.over != nil {
		return
	}
	e.seen[t] = true
	if len(e.found.Edges) == MaxEdges {
		e.over = fmt.Errorf("infer %s: inference found more than the %d dependencies one composite may have; the one past it is %s's %s (composed resource %d of %d): infer fewer kinds, or split the composite",
			e.kind, MaxEdges, e.resources[e.d].Name, via, e.d+1, len(e.resources))
		return
	}
	e.found.Edges = append(e.found.Edges, Edge{Dependent: e.resources[e.d].Name, Target: e.resources[t].Name, Via: via})
}
