package object

import (
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ParseReferences reads an Object's spec.references, as a request's struct holds it
// (nil when the Object has none), the way provider-kubernetes resolves them:
// patchesFrom when it is set, else dependsOn, with the CRD's defaults for
// apiVersion and kind (desired state from earlier pipeline steps has not been
// through the API server, so it may lack them) and no default for namespace.
// group is the Object's own API group, which decides the default apiVersion.
// It reads only the fields it needs, without converting the references to
// Go maps: it runs for every Object of every call.
//
// A reference that can't be resolved is left out and described in the errors;
// every other reference is still returned. A reference that sets both
// dependsOn and patchesFrom is returned with patchesFrom's target, as the
// provider uses it, and described in the errors too.
func ParseReferences(group string, references *structpb.Value) ([]Target, field.ErrorList) {
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

// parseReference reads the reference at index i. It returns an Target without
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
