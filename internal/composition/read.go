package composition

import (
	"cmp"
	"context"
	"time"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/infer"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
	"github.com/crossplane-contrib/function-dependencies/internal/protection"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/report"
	"github.com/crossplane-contrib/function-dependencies/internal/request"
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
	// this function, that it desires; labels holds every composed
	// resource's observed and desired labels, by name, to find what their
	// selectors select, when there are some.
	composedUsages []protection.Composed
	labels         protection.Labels
	// required are what Crossplane fetched for the step's requirements.
	required []request.Object
	// now is when the request is read: how long a dependency has not been
	// ready is measured against it.
	now time.Time
}

// readComposed reads every composed resource of the request, observed or
// desired, in name order. Whole bodies are read for inference only when the
// input asks for it.
//
// It returns the context's error when the call is cancelled.
func readComposed(ctx context.Context, c request.Composition, in *v1beta1.Input) (read, error) {
	resources := composedOf(c)
	rd := read{resources: make([]composed.Resource, 0, len(resources)), usages: map[string]map[string]any{}, lookout: newLookout(len(resources)), required: c.Required, now: time.Now()}
	for _, cr := range resources {
		if err := ctx.Err(); err != nil {
			return read{}, err
		}
		if o := cr.Observed; cr.IsObserved && !cr.IsDesired && o.Label(protocol.UsageLabel) == "true" {
			rd.usages[cr.Name] = o.Map()
			rd.lookout.usage(o)
			continue
		}
		r, source := resourceOf(cr, c.Composite.Namespace())
		if r.Desired != nil && protection.IsUsage(r.Identity.Group, r.Identity.Kind) {
			// Crossplane's Usage controller writes what a selector selects
			// into resourceRef, which then stands: the observed Usage says
			// what it protects, once there is one.
			u := cr.Desired
			if cr.IsObserved && cr.Observed.Exists() {
				u = cr.Observed
			}
			rd.composedUsages = append(rd.composedUsages, protection.ReadComposed(u, r))
		}
		if r.IsObject {
			rd.readReferences(&r, cr, source, in)
		}
		rd.ask(&r, cr)
		rd.resources = append(rd.resources, r)
		if len(in.Infer) > 0 {
			rd.inferFrom = append(rd.inferFrom, inferenceOf(r, cr))
		}
	}
	deletingUnderARemovedName(rd.resources)
	if len(rd.composedUsages) > 0 {
		rd.labels = make(protection.Labels, len(resources))
		for _, cr := range resources {
			rd.labels[cr.Name] = []map[string]string{cr.Observed.Labels(), cr.Desired.Labels()}
		}
	}
	return rd, nil
}

// resourceOf reads what the composed resource is, and the state its
// identity and references are read from. The composition's current intent
// decides what a resource is and references; observed state stands in for
// a resource being removed. Crossplane keeps an existing resource's observed
// name and namespace, and gives a namespaced composite's resources its
// namespace.
func resourceOf(cr member, xrNamespace string) (composed.Resource, request.Object) {
	r := composed.Resource{Name: cr.Name}
	source, o := cr.Desired, cr.Observed
	if cr.IsDesired {
		r.Desired = &composed.Desired{Finalizers: cr.Desired.Finalizers(), Ready: cr.Ready}
	}
	if cr.IsObserved {
		r.Observed = &composed.Observed{
			UID:        o.UID(),
			Finalizers: o.Finalizers(),
			Deleting:   o.Deleting(),
			Ready:      o.Ready(),
			Going:      cr.going,
			InUse:      o.Label(protocol.InUseLabel) == "true",
		}
		r.Observed.NotReadySince, _ = o.NotReadySince()
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
	if m, ok := source.Manifest(); r.IsObject && ok {
		// A namespaced Object's manifest is in the Object's namespace
		// unless it says another.
		if r.Identity.Group == object.NamespacedGroup {
			m.Namespace = cmp.Or(m.Namespace, r.Identity.Namespace)
		}
		r.Manages = m.ID()
	}
	return r, source
}

// readReferences reads an Object's references from source. With references:
// Ignore, their problems are not reported: they are read only so that a
// dependency the input declares is not written twice. When the input
// declares dependencies, the function writes references, and reads those
// the observed Object carries.
func (rd *read) readReferences(r *composed.Resource, cr member, source request.Object, in *v1beta1.Input) {
	targets, errs := source.References(r.Identity.Group)
	r.References = targets
	if in.References == v1beta1.ReferencesInfer {
		for _, err := range errs {
			rd.invalid = append(rd.invalid, report.InvalidReference{Resource: r.Name, Problem: err.Error()})
		}
	}
	if len(in.Dependencies) > 0 && r.Observed != nil && r.Desired != nil {
		// Defaulted as the provider defaults them: by the observed Object's
		// own group.
		og, _ := cr.Observed.Group()
		r.Observed.References, _ = cr.Observed.References(og)
	}
}

// ask adds to the lookout what the resource needs Crossplane to fetch. What
// the function asks for comes from the request alone, so that it asks the
// same in the call that answers it.
func (rd *read) ask(r *composed.Resource, cr member) {
	inRequest := cr.IsObserved && !cr.going
	if !inRequest && r.Desired == nil {
		return
	}
	rd.lookout.resource(r, inRequest)
	if inRequest {
		rd.lookout.labels(cr.Observed)
		if r.Observed != nil && r.Desired != nil {
			rd.lookout.written(r.Observed.References, r.References)
		}
	}
}

// inferenceOf is what inference reads of the resource: its observed and
// desired bodies, those that exist.
func inferenceOf(r composed.Resource, cr member) infer.Resource {
	var bodies []infer.Body
	for _, o := range []request.Object{cr.Observed, cr.Desired} {
		if o.Exists() {
			bodies = append(bodies, o)
		}
	}
	return infer.Resource{Name: r.Name, Identity: r.Identity, Bodies: bodies}
}
