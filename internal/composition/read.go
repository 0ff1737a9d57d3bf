package composition

import (
	"cmp"
	"context"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/infer"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/report"
	"github.com/crossplane-contrib/function-dependencies/internal/request"
	"github.com/crossplane-contrib/function-dependencies/internal/usage"
)

// What the step reads of its request's composed resources.
type read struct {
	// resources are the composed resources, observed or desired, in name
	// order.
	resources []composed.Resource
	// invalid are the problems of the references that could not be read.
	invalid []report.InvalidReference
	// usages are the Usages this function emitted, as observed, by
	// composition resource name: they are not composed resources of the
	// graph.
	usages map[string]map[string]any
	// lookout is what the function asks Crossplane for, read from the
	// request's own observed and desired state.
	lookout lookout
	// inferFrom is what inference reads of the composed resources, in name
	// order, when the input asks for inference.
	inferFrom []infer.Resource
	// composedUsages are the Usages the composition composes itself, not
	// this function, that it desires; bodies holds every composed resource's
	// observed and desired state, by name, to find what their selectors
	// select, when there are some.
	composedUsages []usage.Composed
	bodies         map[string][2]request.Object
	// required are what Crossplane fetched for the step's requirements.
	required []request.Object
}

// readComposed reads every composed resource of the request, observed or
// desired, in name order.
//
// With references: Ignore, problems in Objects' spec.references are not
// reported: the references are read only so that a dependency the input
// declares is not written twice. When the input declares dependencies, the
// function writes references, and reads those the observed Objects carry.
// Whole bodies are read for inference only when the input asks for it.
//
// It returns the context's error when the call is cancelled.
func readComposed(ctx context.Context, c request.Composition, in *v1beta1.Input) (read, error) {
	inferReferences, explicit, inferring := in.References == v1beta1.ReferencesInfer, len(in.Dependencies) > 0, len(in.Infer) > 0
	xrNamespace := c.Composite.Namespace()
	resources := composedOf(c)
	rd := read{resources: make([]composed.Resource, 0, len(resources)), usages: map[string]map[string]any{}, lookout: newLookout(len(resources)), required: c.Required}
	for _, cr := range resources {
		if err := ctx.Err(); err != nil {
			return read{}, err
		}
		r := composed.Resource{Name: cr.Name}
		// The composition's current intent decides what a resource is and
		// references; observed state stands in for a resource being removed.
		// Crossplane keeps an existing resource's observed name and namespace,
		// and gives a namespaced composite's resources its namespace.
		source := cr.Desired
		if cr.IsDesired {
			r.Desired = &composed.Desired{Finalizers: cr.Desired.Finalizers(), Ready: cr.Ready}
		}
		o := cr.Observed
		if cr.IsObserved {
			if !cr.IsDesired && o.Label(protocol.UsageLabel) == "true" {
				rd.usages[cr.Name] = o.Map()
				rd.lookout.usage(o)
				continue
			}
			r.Observed = &composed.Observed{
				UID:        o.UID(),
				Finalizers: o.Finalizers(),
				Deleting:   o.Deleting(),
				Ready:      o.Ready(),
				Going:      cr.going,
				InUse:      o.Label(protocol.InUseLabel) == "true",
			}
			if !source.Exists() {
				source = o
			}
		}
		r.APIVersion = source.APIVersion()
		group, valid := source.Group()
		r.Identity = object.Ref{
			Group:     group,
			Kind:      source.Kind(),
			Namespace: cmp.Or(o.Namespace(), source.Namespace(), xrNamespace),
			Name:      cmp.Or(o.Name(), source.Name()),
		}
		if !valid {
			r.Identity.Name = "" // No reference can name a resource of an invalid apiVersion.
		}
		r.IsObject = object.IsObject(r.Identity.Group, r.Identity.Kind)
		if r.Desired != nil && usage.IsUsage(r.Identity.Group, r.Identity.Kind) {
			// Crossplane's Usage controller writes what a selector selects
			// into resourceRef, which then stands: the observed Usage says
			// what it protects, once there is one.
			u := cr.Desired
			if cr.IsObserved && cr.Observed.Exists() {
				u = cr.Observed
			}
			rd.composedUsages = append(rd.composedUsages, composedUsage(u, r))
		}
		if r.IsObject {
			targets, errs := source.References(r.Identity.Group)
			r.References = targets
			for _, err := range errs {
				if inferReferences {
					rd.invalid = append(rd.invalid, report.InvalidReference{Resource: r.Name, Problem: err.Error()})
				}
			}
			if explicit && r.Observed != nil && r.Desired != nil {
				// Defaulted as the provider defaults them: by the observed
				// Object's own group.
				og, _ := o.Group()
				r.Observed.References, _ = o.References(og)
			}
		}
		// What the function asks for comes from the request alone, so that
		// it asks the same in the call that answers it.
		if inRequest := cr.IsObserved && !cr.going; inRequest || r.Desired != nil {
			rd.lookout.resource(&r, inRequest)
			if inRequest {
				rd.lookout.labels(o)
			}
			if inRequest && r.Observed != nil && r.Desired != nil {
				rd.lookout.written(r.Observed.References, r.References)
			}
		}
		rd.resources = append(rd.resources, r)
		if inferring {
			var bodies []infer.Body
			for _, o := range []request.Object{o, cr.Desired} {
				if o.Exists() {
					bodies = append(bodies, o)
				}
			}
			rd.inferFrom = append(rd.inferFrom, infer.Resource{Name: r.Name, Identity: r.Identity, Bodies: bodies})
		}
	}
	deletingUnderARemovedName(rd.resources)
	if len(rd.composedUsages) > 0 {
		rd.bodies = make(map[string][2]request.Object, len(resources))
		for _, cr := range resources {
			rd.bodies[cr.Name] = [2]request.Object{cr.Observed, cr.Desired}
		}
	}
	return rd, nil
}

// composedUsage reads a Usage the composition composes, r: its ends as
// Crossplane's Usage controller finds them. A namespaced Usage's ends are
// in its namespace, but for a spec.of that names another; a cluster-scoped
// one's have none, and its selectors look in every namespace.
func composedUsage(u request.Object, r composed.Resource) usage.Composed {
	namespaced := usage.IsNamespaced(r.Identity.Group, r.Identity.Kind)
	end := func(field string) usage.End {
		e := u.UsageEnd(field)
		out := usage.End{Group: e.Group, Kind: e.Kind, Name: e.Name, Selector: e.Name == "" && e.Selector, MatchLabels: e.MatchLabels}
		switch {
		case !namespaced:
		case field == "by":
			out.Namespace = r.Identity.Namespace
		case e.Name != "":
			out.Namespace = cmp.Or(e.Namespace, r.Identity.Namespace)
		default:
			out.Namespace = cmp.Or(e.SelectorNamespace, r.Identity.Namespace)
		}
		return out
	}
	return usage.Composed{Of: end("of"), By: end("by"), Observed: r.Observed != nil}
}

// labelsOf returns the observed and desired labels of each of the graph's
// resources, by place, for the selectors of the composition's own Usages.
func (rd read) labelsOf(g *composed.Graph) func(int) []map[string]string {
	return func(i int) []map[string]string {
		b := rd.bodies[g.Resources[i].Name]
		return []map[string]string{b[0].Labels(), b[1].Labels()}
	}
}
