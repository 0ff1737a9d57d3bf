package main

import (
	"cmp"
	"slices"

	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/function-sdk-go/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/internal/graph"
	"github.com/crossplane-contrib/function-dependencies/internal/objectref"
	"github.com/crossplane-contrib/function-dependencies/internal/report"
	"github.com/crossplane-contrib/function-dependencies/internal/usage"
)

// A composition is what the function reads of the request's composed
// resources.
type composition struct {
	// resources are the composed resources, observed or desired, in name
	// order.
	resources []graph.Resource
	// invalid are the problems of the references that could not be read.
	invalid []report.InvalidReference
	// usages are the Usages this function emitted, as observed, by
	// composition resource name: they are not composed resources of the
	// graph.
	usages map[string]map[string]any
	// lookout is what the function asks Crossplane for, read from the
	// request's own observed and desired state.
	lookout lookout
}

// composedResources reads every composed resource of the request, observed or
// desired, in name order.
//
// It reads the few fields it needs straight from the request's structs rather
// than converting whole resources to maps: manifests are large, and only
// metadata and the references matter here.
//
// With inferReferences false, problems in Objects' spec.references are not
// reported: the references are read only so that a dependency the input
// declares is not written twice. With explicit true, the input declares
// dependencies, so the function writes references, and reads those the
// observed Objects carry.
func composedResources(req *fnv1.RunFunctionRequest, inferReferences, explicit bool) composition {
	xrNamespace := text(req.GetObserved().GetComposite().GetResource(), "metadata", "namespace")
	desired := req.GetDesired().GetResources()
	asObserved := req.GetObserved().GetResources()
	observed := withGoingObjects(req)

	// In name order, which is the order of the graph; the request's maps
	// have none.
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
	c := composition{resources: make([]graph.Resource, 0, len(names)), usages: map[string]map[string]any{}, lookout: newLookout(len(asObserved))}
	for _, name := range names {
		r := graph.Resource{Name: name}
		// The composition's current intent decides what a resource is and
		// references; observed state stands in for a resource being removed.
		// Crossplane keeps an existing resource's observed name and namespace,
		// and gives a namespaced composite's resources its namespace.
		var o, s, om, sm *structpb.Struct // observed and source; their metadata
		if d, ok := desired[name]; ok {
			s = d.GetResource()
			sm = value(s, "metadata").GetStructValue()
			r.Desired = &graph.Desired{Finalizers: texts(value(sm, "finalizers")), Ready: d.GetReady() == fnv1.Ready_READY_TRUE}
		}
		_, fromRequest := asObserved[name]
		if ob, ok := observed[name]; ok {
			o = ob.GetResource()
			om = value(o, "metadata").GetStructValue()
			if s == nil && text(value(om, "labels").GetStructValue(), usage.Label) == "true" {
				c.usages[name] = o.AsMap()
				c.lookout.usage(o)
				continue
			}
			r.Observed = &graph.Observed{
				UID:        text(om, "uid"),
				Finalizers: texts(value(om, "finalizers")),
				Deleting:   text(om, "deletionTimestamp") != "",
				Ready:      readyCondition(o),
				Going:      !fromRequest,
				InUse:      text(value(om, "labels").GetStructValue(), usage.InUseLabel) == "true",
			}
			if s == nil {
				s, sm = o, om
			}
		}
		r.APIVersion = text(s, "apiVersion")
		gv, err := schema.ParseGroupVersion(r.APIVersion)
		r.Identity = objectref.Ref{
			Group:     gv.Group,
			Kind:      text(s, "kind"),
			Namespace: cmp.Or(text(om, "namespace"), text(sm, "namespace"), xrNamespace),
			Name:      cmp.Or(text(om, "name"), text(sm, "name")),
		}
		if err != nil {
			r.Identity.Name = "" // No reference can name a resource of an invalid apiVersion.
		}
		r.IsObject = objectref.IsObject(r.Identity.Group, r.Identity.Kind)
		if r.IsObject {
			targets, errs := objectref.Parse(r.Identity.Group, value(s, "spec", "references"))
			r.References = targets
			for _, err := range errs {
				if inferReferences {
					c.invalid = append(c.invalid, report.InvalidReference{Resource: r.Name, Problem: err.Error()})
				}
			}
			if explicit && r.Observed != nil && r.Desired != nil {
				// Defaulted as the provider defaults them: by the observed
				// Object's own group.
				og, _ := schema.ParseGroupVersion(text(o, "apiVersion"))
				r.Observed.References, _ = objectref.Parse(og.Group, value(o, "spec", "references"))
			}
		}
		// What the function asks for comes from the request alone, so that
		// it asks the same in the call that answers it.
		if fromRequest || r.Desired != nil {
			c.lookout.resource(&r, fromRequest)
			if fromRequest {
				c.lookout.labels(value(om, "labels").GetStructValue())
			}
			if fromRequest && r.Observed != nil && r.Desired != nil {
				c.lookout.written(r.Observed.References, r.References)
			}
		}
		c.resources = append(c.resources, r)
	}
	deletingUnderARemovedName(c.resources)
	return c
}

// deletingUnderARemovedName marks as being deleted every resource the composition
// desires whose object it also observes under a name it removes (one object
// under two names): Crossplane deletes what the composition removes before
// it applies the rest, and the API server refuses a new finalizer on an
// object being deleted.
func deletingUnderARemovedName(resources []graph.Resource) {
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

// readyCondition is true when the resource's Ready condition is True.
func readyCondition(s *structpb.Struct) bool {
	for _, c := range value(s, "status", "conditions").GetListValue().GetValues() {
		if text(c.GetStructValue(), "type") == "Ready" {
			return text(c.GetStructValue(), "status") == "True"
		}
	}
	return false
}

// declareFinalizers appends finalizers to a desired resource's
// metadata.finalizers, creating the list and metadata as needed and keeping
// every entry already there.
func declareFinalizers(r *fnv1.Resource, finalizers []string) error {
	values := make([]*structpb.Value, len(finalizers))
	for i, f := range finalizers {
		values[i] = structpb.NewStringValue(f)
	}
	return appendTo(r, "metadata", "finalizers", values)
}

// appendTo appends values to the list at object.list of a desired resource,
// creating the object and the list as needed and keeping every entry
// already there.
func appendTo(r *fnv1.Resource, object, list string, values []*structpb.Value) error {
	if r.GetResource() == nil {
		r.Resource = &structpb.Struct{}
	}
	o := ensure(r.GetResource(), object, structpb.NewStructValue(&structpb.Struct{})).GetStructValue()
	if o == nil {
		return errNotA(object, "an object")
	}
	l := ensure(o, list, structpb.NewListValue(&structpb.ListValue{})).GetListValue()
	if l == nil {
		return errNotA(object+"."+list, "a list")
	}
	l.Values = append(l.Values, values...)
	return nil
}

// setField sets the field key of the map at object.field of a desired
// resource, creating the object and the map as needed and keeping every
// other entry.
func setField(r *fnv1.Resource, object, field, key string, v *structpb.Value) error {
	if r.GetResource() == nil {
		r.Resource = &structpb.Struct{}
	}
	o := ensure(r.GetResource(), object, structpb.NewStructValue(&structpb.Struct{})).GetStructValue()
	if o == nil {
		return errNotA(object, "an object")
	}
	m := ensure(o, field, structpb.NewStructValue(&structpb.Struct{})).GetStructValue()
	if m == nil {
		return errNotA(object+"."+field, "an object")
	}
	if m.Fields == nil {
		m.Fields = map[string]*structpb.Value{}
	}
	m.Fields[key] = v
	return nil
}

// ensure returns the value of the field, setting it to empty first when the
// struct lacks it.
func ensure(s *structpb.Struct, key string, empty *structpb.Value) *structpb.Value {
	// A null field is as good as absent: YAML's "finalizers:" with nothing
	// after it.
	v, ok := s.GetFields()[key]
	if _, null := v.GetKind().(*structpb.Value_NullValue); ok && !null {
		return v
	}
	if s.Fields == nil {
		s.Fields = map[string]*structpb.Value{}
	}
	s.Fields[key] = empty
	return empty
}

// value returns the value at the path of fields, or nil.
func value(s *structpb.Struct, path ...string) *structpb.Value {
	var v *structpb.Value
	for _, key := range path {
		v = s.GetFields()[key]
		s = v.GetStructValue()
	}
	return v
}

// text returns the string at the path of fields, or "".
func text(s *structpb.Struct, path ...string) string {
	return value(s, path...).GetStringValue()
}

// texts returns the strings of a list value.
func texts(list *structpb.Value) []string {
	values := list.GetListValue().GetValues()
	if len(values) == 0 {
		return nil
	}
	out := make([]string, 0, len(values))
	for _, v := range values {
		if t, ok := v.GetKind().(*structpb.Value_StringValue); ok {
			out = append(out, t.StringValue)
		}
	}
	return out
}

func errNotA(field, what string) error {
	return errors.Errorf("%s is not %s", field, what)
}

// writeReferences appends dependsOn references to an Object's desired
// spec.references.
func writeReferences(r *fnv1.Resource, refs []objectref.Ref) error {
	values := make([]*structpb.Value, len(refs))
	for i, ref := range refs {
		dependsOn := map[string]any{"apiVersion": ref.APIVersion, "kind": ref.Kind, "name": ref.Name}
		if ref.Namespace != "" {
			dependsOn["namespace"] = ref.Namespace
		}
		v, err := structpb.NewValue(map[string]any{"dependsOn": dependsOn})
		if err != nil {
			return errors.Wrap(err, "cannot encode a reference")
		}
		values[i] = v
	}
	return appendTo(r, "spec", "references", values)
}

// addUsage adds a Usage to desired state, ready, unless an earlier step
// desires another resource of the same composition resource name.
func addUsage(desired *fnv1.State, name string, u map[string]any) error {
	if _, taken := desired.GetResources()[name]; taken {
		return errors.New("an earlier step desires a resource of the name this function gives the Usage it needs")
	}
	s, err := structpb.NewStruct(u)
	if err != nil {
		return errors.Wrap(err, "cannot encode the Usage")
	}
	if desired.Resources == nil {
		desired.Resources = map[string]*fnv1.Resource{}
	}
	desired.Resources[name] = &fnv1.Resource{Resource: s, Ready: fnv1.Ready_READY_TRUE}
	return nil
}

// A compositeRef names the composite: as the owner of its Usages, and by
// UID.
type compositeRef struct {
	objectref.Ref
	UID string
}

// refOf names the composite.
func refOf(s *structpb.Struct) compositeRef {
	return compositeRef{Ref: objectref.Ref{
		APIVersion: text(s, "apiVersion"),
		Kind:       text(s, "kind"),
		Namespace:  text(s, "metadata", "namespace"),
		Name:       text(s, "metadata", "name"),
	}, UID: text(s, "metadata", "uid")}
}
