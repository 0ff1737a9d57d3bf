// Package request decodes what the function is given: a RunFunctionRequest's
// input, and its objects. Of writing a response it holds only what both
// modes share, the results and the response's size; each mode writes the
// rest of its own (internal/composition, internal/operation).
//
// An Object reads its fields straight from the request's structs when asked,
// rather than converting whole objects to maps first: manifests are large,
// and the rules need a handful of fields of each.
package request

import (
	"maps"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane-contrib/function-dependencies/internal/object"
)

// An Object is one object of a request: the composite, a composed resource,
// or a resource Crossplane fetched for the function.
type Object struct {
	s, metadata *structpb.Struct
}

// ObjectOf reads a struct of the request; nil is an Object that doesn't
// exist.
func ObjectOf(s *structpb.Struct) Object {
	return Object{s: s, metadata: value(s, "metadata").GetStructValue()}
}

// Exists tells whether there is an object.
func (o Object) Exists() bool { return o.s != nil }

// APIVersion is the object's apiVersion, as written.
func (o Object) APIVersion() string { return text(o.s, "apiVersion") }

// Kind is the object's kind.
func (o Object) Kind() string { return text(o.s, "kind") }

// Group is the API group of the object's apiVersion, and false when the
// apiVersion is invalid.
func (o Object) Group() (string, bool) {
	gv, err := schema.ParseGroupVersion(o.APIVersion())
	return gv.Group, err == nil
}

// Namespace is the object's metadata.namespace.
func (o Object) Namespace() string { return text(o.metadata, "namespace") }

// Name is the object's metadata.name.
func (o Object) Name() string { return text(o.metadata, "name") }

// UID is the object's metadata.uid.
func (o Object) UID() string { return text(o.metadata, "uid") }

// ResourceVersion is the object's metadata.resourceVersion.
func (o Object) ResourceVersion() string { return text(o.metadata, "resourceVersion") }

// Identity is the object's group, kind, namespace and name. The group of an
// invalid apiVersion is "".
func (o Object) Identity() object.Ref {
	group, _ := o.Group()
	return object.Ref{Group: group, Kind: o.Kind(), Namespace: o.Namespace(), Name: o.Name()}
}

// IsObject tells whether the object is a provider-kubernetes Object.
func (o Object) IsObject() bool {
	group, _ := o.Group()
	return object.IsObject(group, o.Kind())
}

// Finalizers are the object's metadata.finalizers.
func (o Object) Finalizers() []string { return texts(value(o.metadata, "finalizers")) }

// Deleting tells whether the object is being deleted.
func (o Object) Deleting() bool { return text(o.metadata, "deletionTimestamp") != "" }

// Label is the value of one of the object's labels, or "".
func (o Object) Label(key string) string {
	return text(value(o.metadata, "labels").GetStructValue(), key)
}

// Labels are the object's labels.
func (o Object) Labels() map[string]string { return stringMap(value(o.metadata, "labels")) }

// Annotation is the value of one of the object's annotations, or "".
func (o Object) Annotation(key string) string {
	return text(value(o.metadata, "annotations").GetStructValue(), key)
}

// Annotations are the object's annotations.
func (o Object) Annotations() map[string]string { return stringMap(value(o.metadata, "annotations")) }

// Ready tells whether the object's Ready condition is True.
func (o Object) Ready() bool {
	for _, c := range value(o.s, "status", "conditions").GetListValue().GetValues() {
		if text(c.GetStructValue(), "type") == "Ready" {
			return text(c.GetStructValue(), "status") == "True"
		}
	}
	return false
}

// NotReadySince is when the object last stopped being ready, as far as it
// says: its Ready condition's lastTransitionTime, or its creationTimestamp
// while it has no Ready condition; false when it is ready, or says neither.
func (o Object) NotReadySince() (time.Time, bool) {
	since := text(o.metadata, "creationTimestamp")
	for _, c := range value(o.s, "status", "conditions").GetListValue().GetValues() {
		if text(c.GetStructValue(), "type") == "Ready" {
			if text(c.GetStructValue(), "status") == "True" {
				return time.Time{}, false
			}
			since = text(c.GetStructValue(), "lastTransitionTime")
		}
	}
	t, err := time.Parse(time.RFC3339, since)
	return t, err == nil
}

// ControllerUID is the UID of the object's controller, or "".
func (o Object) ControllerUID() string {
	_, uid, _ := o.Controller()
	return uid
}

// Controller is what the object's controller reference names, without a
// namespace (an owner reference says none), and its UID; false where it has
// none, or one of an invalid apiVersion.
func (o Object) Controller() (object.Ref, string, bool) {
	for _, ref := range value(o.metadata, "ownerReferences").GetListValue().GetValues() {
		if r := ref.GetStructValue(); value(r, "controller").GetBoolValue() {
			c := ObjectOf(r)
			group, valid := c.Group()
			return object.Ref{APIVersion: c.APIVersion(), Group: group, Kind: c.Kind(), Name: text(r, "name")}, text(r, "uid"), valid
		}
	}
	return object.Ref{}, "", false
}

// References are the targets of an Object's spec.references, defaulted as
// provider-kubernetes defaults them for an Object of the group, and the
// problems of those that can't be read.
func (o Object) References(group string) ([]object.Target, field.ErrorList) {
	return object.ParseReferences(group, value(o.s, "spec", "references"))
}

// Manifest is what an Object's spec.forProvider.manifest names, and false
// when it names nothing valid.
func (o Object) Manifest() (object.Ref, bool) {
	m := ObjectOf(value(o.s, "spec", "forProvider", "manifest").GetStructValue())
	group, valid := m.Group()
	t := object.Ref{APIVersion: m.APIVersion(), Group: group, Kind: m.Kind(), Namespace: m.Namespace(), Name: m.Name()}
	return t, valid && t.Kind != "" && t.Name != ""
}

// Value is the value at the path of nested objects, decoded, or nil: only
// what is asked for is decoded.
func (o Object) Value(path ...string) any {
	v := value(o.s, path...)
	if v == nil {
		return nil
	}
	return v.AsInterface()
}

// Keys are the keys of the object at the path, sorted; none when it is no
// object.
func (o Object) Keys(path ...string) []string {
	s := o.s
	if len(path) > 0 {
		s = value(o.s, path...).GetStructValue()
	}
	return slices.Sorted(maps.Keys(s.GetFields()))
}

// Map is the whole object as a map.
func (o Object) Map() map[string]any { return o.s.AsMap() }

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

// stringMap is a map of strings, such as an object's labels.
func stringMap(v *structpb.Value) map[string]string {
	out := map[string]string{}
	for k, v := range v.GetStructValue().GetFields() {
		out[k] = v.GetStringValue()
	}
	return out
}
