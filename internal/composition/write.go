package composition

// Writing desired state: the function changes a response's desired composed
// resources only where its rules say.

import (
	"context"
	"maps"
	"slices"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/errors"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/input/v1beta1"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
	"github.com/crossplane-contrib/function-dependencies/internal/report"
	"github.com/crossplane-contrib/function-dependencies/internal/request"
)

// write changes desired state as the plan says: it holds resources back,
// writes the references Objects need, declares finalizers, adds Usages and
// labels the dependents. A resource it can't change without damaging it is
// left as it is, with a warning. It stops with the context's error when the
// call is cancelled.
func (p Plan) write(ctx context.Context, desired desiredState, log logging.Logger) ([]report.Result, error) {
	var warnings []report.Result
	warn := func(err error) {
		warnings = append(warnings, report.Result{Severity: report.Warning, Reason: report.ReasonInvalidResource, Message: err.Error()})
	}
	for _, name := range slices.Sorted(maps.Keys(p.HeldBack)) {
		desired.Remove(name)
		log.Debug("Held back", "composed-resource-name", name, "reason", p.HeldBack[name])
	}
	// A held-back resource is written when it is released.
	for _, name := range slices.Sorted(maps.Keys(p.References.Write)) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if p.HeldBack[name] != "" {
			continue
		}
		if err := desired.WriteReferences(name, p.References.Write[name]); err != nil {
			warn(errors.Wrapf(err, "cannot write the references of composed resource %q", name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.Protection.Additions)) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if p.HeldBack[name] != "" {
			continue
		}
		if err := desired.DeclareFinalizers(name, p.Protection.Additions[name]); err != nil {
			warn(errors.Wrapf(err, "cannot declare reference finalizers on composed resource %q", name))
			continue
		}
		log.Debug("Declared reference finalizers", "composed-resource-name", name, "finalizers", p.Protection.Additions[name])
	}
	for _, name := range slices.Sorted(maps.Keys(p.Protection.Usages)) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := desired.Add(name, p.Protection.Usages[name]); err != nil {
			warn(errors.Wrapf(err, "cannot add the Usage %q", name))
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, err := range p.labelDependents(desired) {
		warn(err)
	}
	return warnings, nil
}

// labelDependents labels every desired Object that depends on another, held
// back or not, with the composite's UID (protocol.DependentLabel), and every
// desired resource an Object of another group than the composite's own
// depends on with protocol.DependentGroupLabel. A resource it can't label is
// an error of its own: the others are labelled all the same. With
// protection: Usages, every Object with an edge to another composed resource
// gets protocol.ProtectionLabel too.
func (p Plan) labelDependents(desired desiredState) []error {
	if p.xr.UID == "" {
		return nil
	}
	byUsages := p.input.Protection == v1beta1.ProtectionUsages
	own := protocol.OwnObjectGroup(p.xr.Namespace != "")
	labels := map[string]map[string]string{}
	label := func(name, key, value string) {
		if labels[name] == nil {
			labels[name] = map[string]string{}
		}
		labels[name][key] = value
	}
	for _, e := range p.Graph.Edges {
		label(e.Dependent, protocol.DependentLabel, p.xr.UID)
		d := p.Graph.Resource(e.Dependent)
		if d.IsObject && d.Identity.Group != own {
			label(e.Target, protocol.DependentGroupLabel, d.Identity.Group)
		}
		if d.IsObject && byUsages {
			label(e.Dependent, protocol.ProtectionLabel, protocol.ProtectedByUsages)
		}
	}
	for _, e := range p.Graph.External {
		label(e.Dependent, protocol.DependentLabel, p.xr.UID)
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(labels)) {
		r := desired.Object(name)
		if !desired.Has(name) {
			continue
		}
		for _, key := range slices.Sorted(maps.Keys(labels[name])) {
			v := labels[name][key]
			if (key == protocol.DependentLabel && !r.IsObject()) || r.Label(key) == v {
				continue
			}
			if err := desired.SetLabel(name, key, v); err != nil {
				errs = append(errs, errors.Wrapf(err, "cannot label composed resource %q", name))
				break
			}
		}
	}
	return errs
}

// desiredState is a response's desired composed resources, which the function
// changes only where its rules say: every other field and entry stays as
// the earlier steps left it.
type desiredState struct{ s *fnv1.State }

// desiredStateOf is the desired state of a response.
func desiredStateOf(s *fnv1.State) desiredState { return desiredState{s: s} }

// Object is the desired resource of the name; it may not exist.
func (d desiredState) Object(name string) request.Object {
	return request.ObjectOf(d.s.GetResources()[name].GetResource())
}

// Remove removes the desired resource of the name.
func (d desiredState) Remove(name string) { delete(d.s.GetResources(), name) }

// DeclareFinalizers appends finalizers to a desired resource's
// metadata.finalizers, creating the list and metadata as needed and keeping
// every entry already there.
func (d desiredState) DeclareFinalizers(name string, finalizers []string) error {
	values := make([]*structpb.Value, len(finalizers))
	for i, f := range finalizers {
		values[i] = structpb.NewStringValue(f)
	}
	return appendTo(d.s.GetResources()[name], "metadata", "finalizers", values)
}

// WriteReferences appends dependsOn references to an Object's desired
// spec.references.
func (d desiredState) WriteReferences(name string, refs []object.Ref) error {
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
	return appendTo(d.s.GetResources()[name], "spec", "references", values)
}

// Add adds a resource to desired state, ready, unless an earlier step
// desires another resource of the same composition resource name.
func (d desiredState) Add(name string, u map[string]any) error {
	if _, taken := d.s.GetResources()[name]; taken {
		return errors.New("an earlier step desires a resource of the name this function gives the Usage it needs")
	}
	s, err := structpb.NewStruct(u)
	if err != nil {
		return errors.Wrap(err, "cannot encode the Usage")
	}
	if d.s.Resources == nil {
		d.s.Resources = map[string]*fnv1.Resource{}
	}
	d.s.Resources[name] = &fnv1.Resource{Resource: s, Ready: fnv1.Ready_READY_TRUE}
	return nil
}

// SetLabel sets a label of a desired resource, creating the labels and
// metadata as needed and keeping every other label.
func (d desiredState) SetLabel(name, key, value string) error {
	r := d.s.GetResources()[name]
	if r.GetResource() == nil {
		r.Resource = &structpb.Struct{}
	}
	o := ensure(r.GetResource(), "metadata", structpb.NewStructValue(&structpb.Struct{})).GetStructValue()
	if o == nil {
		return errNotA("metadata", "an object")
	}
	m := ensure(o, "labels", structpb.NewStructValue(&structpb.Struct{})).GetStructValue()
	if m == nil {
		return errNotA("metadata.labels", "an object")
	}
	if m.Fields == nil {
		m.Fields = map[string]*structpb.Value{}
	}
	m.Fields[key] = structpb.NewStringValue(value)
	return nil
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

func errNotA(field, what string) error {
	return errors.Errorf("%s is not %s", field, what)
}

// Has tells whether there is a desired resource of the name.
func (d desiredState) Has(name string) bool { return d.s.GetResources()[name] != nil }
