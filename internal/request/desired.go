package request

import (
	"encoding/json"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/internal/objectref"
)

// Desired is a response's desired composed resources, which the function
// changes only where its rules say: every other field and entry stays as
// the earlier steps left it.
type Desired struct{ s *fnv1.State }

// DesiredOf is the desired state of a response.
func DesiredOf(s *fnv1.State) Desired { return Desired{s: s} }

// Object is the desired resource of the name; it may not exist.
func (d Desired) Object(name string) Object {
	return ObjectOf(d.s.GetResources()[name].GetResource())
}

// Remove removes the desired resource of the name.
func (d Desired) Remove(name string) { delete(d.s.GetResources(), name) }

// DeclareFinalizers appends finalizers to a desired resource's
// metadata.finalizers, creating the list and metadata as needed and keeping
// every entry already there.
func (d Desired) DeclareFinalizers(name string, finalizers []string) error {
	return appendTo(d.s.GetResources()[name], "metadata", "finalizers", stringList(finalizers).GetListValue().GetValues())
}

// WriteReferences appends dependsOn references to an Object's desired
// spec.references.
func (d Desired) WriteReferences(name string, refs []objectref.Ref) error {
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
func (d Desired) Add(name string, u map[string]any) error {
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
func (d Desired) SetLabel(name, key, value string) error {
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

// stringList is a list value of strings.
func stringList(items []string) *structpb.Value {
	values := make([]*structpb.Value, len(items))
	for i, s := range items {
		values[i] = structpb.NewStringValue(s)
	}
	return structpb.NewListValue(&structpb.ListValue{Values: values})
}

// Value encodes v, such as the graph, as its JSON form, for the pipeline's
// context or an Operation's output.
func Value(v any) (*structpb.Value, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, errors.Wrap(err, "cannot encode as JSON")
	}
	out := &structpb.Value{}
	if err := protojson.Unmarshal(b, out); err != nil {
		return nil, errors.Wrap(err, "cannot decode the JSON")
	}
	return out, nil
}

// Has tells whether there is a desired resource of the name.
func (d Desired) Has(name string) bool { return d.s.GetResources()[name] != nil }
