// Package objectref reads the references of provider-kubernetes Objects: which
// objects an Object depends on, and the finalizer the provider puts on each of
// them on the Object's behalf.
package objectref

import (
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	// ClusterGroup is the API group of cluster-scoped Objects.
	ClusterGroup = "kubernetes.crossplane.io"
	// NamespacedGroup is the API group of namespaced Objects.
	NamespacedGroup = "kubernetes.m.crossplane.io"
	// Kind is the kind of an Object in both groups.
	Kind = "Object"

	// FinalizerPrefix starts the finalizer that provider-kubernetes puts on a
	// referenced object for each Object that references it; the Object's UID
	// follows. Namespaced Objects use the same prefix.
	FinalizerPrefix = "kubernetes.crossplane.io/referred-by-object-"

	// ObjectFinalizer is the Object's own finalizer. Declaring it for the
	// provider makes the provider skip adding reference finalizers.
	ObjectFinalizer = "finalizer.managedresource.crossplane.io"
)

// IsObject tells whether a resource of this API group and kind is a
// provider-kubernetes Object, whose references this package reads.
func IsObject(group, kind string) bool {
	return kind == Kind && (group == ClusterGroup || group == NamespacedGroup)
}

// Finalizer is the finalizer provider-kubernetes puts on every object
// referenced by the Object with this UID.
func Finalizer(uid string) string {
	return FinalizerPrefix + uid
}

// UIDOf returns the UID of the Object a reference finalizer stands for, and
// whether the finalizer is a reference finalizer at all.
func UIDOf(finalizer string) (string, bool) {
	return strings.CutPrefix(finalizer, FinalizerPrefix)
}

// A Ref names one object: by apiVersion, and by API group and kind,
// namespace and name, which are its identity.
type Ref struct {
	// APIVersion is as written, or defaulted; the identity ignores its
	// version, and Group is its group.
	APIVersion string
	Group      string
	Kind       string
	Namespace  string
	Name       string
}

// ID is the object's identity, for maps and comparison: the Ref without its
// apiVersion, since provider-kubernetes finds a referenced object by API
// group and kind in any version.
func (r Ref) ID() Ref {
	r.APIVersion = ""
	return r
}

// String names the object the way kubectl does: kind.group, then
// namespace/name.
func (r Ref) String() string {
	kind := r.Kind
	if r.Group != "" {
		kind += "." + r.Group
	}
	if r.Namespace != "" {
		return kind + " " + r.Namespace + "/" + r.Name
	}
	return kind + " " + r.Name
}

// Path names the object kind/namespace/name, leaving out what is empty, as
// the graph view names an object outside the composition.
func (r Ref) Path() string {
	return strings.Join(slices.DeleteFunc([]string{r.Kind, r.Namespace, r.Name}, func(s string) bool { return s == "" }), "/")
}

// A Target is an object that an Object references, identified as the provider
// finds it: by API group and kind (any version), namespace and name.
type Target struct {
	Ref

	// Index is the reference's place in spec.references, and Via the field
	// that names the target in it: dependsOn or patchesFrom.
	Index int
	Via   string
}

// Field is where the target is written, for messages:
// spec.references[0].dependsOn, say.
func (t Target) Field() string {
	return "spec.references[" + strconv.Itoa(t.Index) + "]." + t.Via
}

// Parse reads an Object's spec.references, as a request's struct holds it
// (nil when the Object has none), the way
// provider-kubernetes resolves them: patchesFrom when it is set, else
// dependsOn, with the CRD's defaults for apiVersion and kind (desired state
// from earlier pipeline steps has not been through the API server, so it may
// lack them) and no default for namespace. group is the Object's own API group,
// which decides the default apiVersion. It reads only the fields it needs:
// converting the references to Go maps first took a third of the function's
// time.
//
// A reference that can't be resolved is left out and described in the errors;
// every other reference is still returned. A reference that sets both
// dependsOn and patchesFrom is returned with patchesFrom's target, as the
// provider uses it, and described in the errors too.
func Parse(group string, references *structpb.Value) ([]Target, field.ErrorList) {
	if isNull(references) {
		return nil, nil
	}
	list := references.GetListValue()
	if list == nil {
		return nil, field.ErrorList{field.TypeInvalid(field.NewPath("spec", "references"), jsonType(references), "must be a list of references")}
	}
	var targets []Target
	var errs field.ErrorList
	for i, r := range list.GetValues() {
		t, err := parseReference(group, i, r)
		errs = append(errs, err...)
		if t.Via == "" {
			continue
		}
		if targets == nil {
			targets = make([]Target, 0, len(list.GetValues())-i)
		}
		targets = append(targets, t)
	}
	return targets, errs
}

// parseReference reads the reference at index i. It returns a Target without
// Via when it can't be resolved. Field paths are made only for errors.
func parseReference(group string, i int, reference *structpb.Value) (Target, field.ErrorList) {
	path := func() *field.Path { return field.NewPath("spec", "references").Index(i) }
	r := reference.GetStructValue()
	if r == nil {
		return Target{}, field.ErrorList{field.TypeInvalid(path(), jsonType(reference), "must be an object with dependsOn or patchesFrom")}
	}
	dependsOn, patchesFrom := r.GetFields()["dependsOn"], r.GetFields()["patchesFrom"]
	switch {
	case !isNull(patchesFrom) && !isNull(dependsOn):
		t, errs := parseTarget(group, i, "patchesFrom", patchesFrom)
		both := field.Invalid(path(), "dependsOn and patchesFrom", "sets both; provider-kubernetes uses patchesFrom and ignores dependsOn")
		return t, append(field.ErrorList{both}, errs...)
	case !isNull(patchesFrom):
		return parseTarget(group, i, "patchesFrom", patchesFrom)
	case !isNull(dependsOn):
		return parseTarget(group, i, "dependsOn", dependsOn)
	default:
		return Target{}, field.ErrorList{field.Required(path(), "must set dependsOn or patchesFrom")}
	}
}

func parseTarget(group string, i int, via string, target *structpb.Value) (Target, field.ErrorList) {
	path := func() *field.Path { return field.NewPath("spec", "references").Index(i).Child(via) }
	m := target.GetStructValue()
	if m == nil {
		return Target{}, field.ErrorList{field.TypeInvalid(path(), jsonType(target), "must be an object")}
	}
	var errs field.ErrorList
	// text returns the string at the key; "" when it is null, missing or
	// not a string, which is an error.
	text := func(key string) string {
		v := m.GetFields()[key]
		if s, ok := v.GetKind().(*structpb.Value_StringValue); ok {
			return s.StringValue
		}
		if !isNull(v) {
			errs = append(errs, field.TypeInvalid(path().Child(key), jsonType(v), "must be a string"))
		}
		return ""
	}
	t := Target{
		Ref: Ref{
			APIVersion: text("apiVersion"),
			Kind:       text("kind"),
			Namespace:  text("namespace"),
			Name:       text("name"),
		},
		Index: i,
		Via:   via,
	}
	if t.APIVersion == "" {
		t.APIVersion = group + "/v1alpha1"
	}
	if t.Kind == "" {
		t.Kind = Kind
	}
	if name := m.GetFields()["name"]; t.Name == "" && (isNull(name) || isString(name)) {
		errs = append(errs, field.Required(path().Child("name"), "names the referenced object"))
	}
	gv, err := schema.ParseGroupVersion(t.APIVersion)
	if err != nil {
		errs = append(errs, field.Invalid(path().Child("apiVersion"), t.APIVersion, err.Error()))
	}
	t.Group = gv.Group
	if len(errs) > 0 {
		return Target{}, errs
	}
	return t, nil
}

// isNull tells whether a value is missing or JSON null.
func isNull(v *structpb.Value) bool {
	_, null := v.GetKind().(*structpb.Value_NullValue)
	return v.GetKind() == nil || null
}

func isString(v *structpb.Value) bool {
	_, ok := v.GetKind().(*structpb.Value_StringValue)
	return ok
}

// jsonType names the JSON type of a value, for messages that must not repeat
// the value itself, which may be large.
func jsonType(v *structpb.Value) string {
	switch v.GetKind().(type) {
	case *structpb.Value_StructValue:
		return "object"
	case *structpb.Value_ListValue:
		return "list"
	case *structpb.Value_StringValue:
		return "string"
	case *structpb.Value_BoolValue:
		return "boolean"
	case *structpb.Value_NumberValue:
		return "number"
	case *structpb.Value_NullValue, nil:
		return "null"
	default:
		return "unknown"
	}
}
