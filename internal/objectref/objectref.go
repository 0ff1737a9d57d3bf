// Package objectref reads the references of provider-kubernetes Objects: which
// objects an Object depends on, and the finalizer the provider puts on each of
// them on the Object's behalf.
package objectref

import (
	"strings"

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

// A Target is an object that an Object references, identified as the provider
// finds it: by API group and kind (any version), namespace and name.
type Target struct {
	// APIVersion is as written, or defaulted; matching ignores its version.
	APIVersion string
	Group      string
	Kind       string
	Namespace  string
	Name       string

	// Field is where the reference is written, for messages.
	Field string
}

// Parse reads an Object's spec.references, given as decoded JSON, the way
// provider-kubernetes resolves them: patchesFrom when it is set, else
// dependsOn, with the CRD's defaults for apiVersion and kind (desired state
// from earlier pipeline steps has not been through the API server, so it may
// lack them) and no default for namespace. group is the Object's own API group,
// which decides the default apiVersion.
//
// A reference that can't be resolved is left out and described in the errors;
// every other reference is still returned. A reference that sets both
// dependsOn and patchesFrom is returned with patchesFrom's target, as the
// provider uses it, and described in the errors too.
func Parse(group string, references any) ([]Target, field.ErrorList) {
	path := field.NewPath("spec", "references")
	if references == nil {
		return nil, nil
	}
	list, ok := references.([]any)
	if !ok {
		return nil, field.ErrorList{field.TypeInvalid(path, jsonType(references), "must be a list of references")}
	}
	var targets []Target
	var errs field.ErrorList
	for i, r := range list {
		t, err := parseReference(group, path.Index(i), r)
		errs = append(errs, err...)
		if t != nil {
			targets = append(targets, *t)
		}
	}
	return targets, errs
}

func parseReference(group string, path *field.Path, reference any) (*Target, field.ErrorList) {
	r, ok := reference.(map[string]any)
	if !ok {
		return nil, field.ErrorList{field.TypeInvalid(path, jsonType(reference), "must be an object with dependsOn or patchesFrom")}
	}
	dependsOn, patchesFrom := r["dependsOn"], r["patchesFrom"]
	switch {
	case patchesFrom != nil && dependsOn != nil:
		t, errs := parseTarget(group, path.Child("patchesFrom"), patchesFrom)
		both := field.Invalid(path, "dependsOn and patchesFrom", "sets both; provider-kubernetes uses patchesFrom and ignores dependsOn")
		return t, append(field.ErrorList{both}, errs...)
	case patchesFrom != nil:
		return parseTarget(group, path.Child("patchesFrom"), patchesFrom)
	case dependsOn != nil:
		return parseTarget(group, path.Child("dependsOn"), dependsOn)
	default:
		return nil, field.ErrorList{field.Required(path, "must set dependsOn or patchesFrom")}
	}
}

func parseTarget(group string, path *field.Path, target any) (*Target, field.ErrorList) {
	m, ok := target.(map[string]any)
	if !ok {
		return nil, field.ErrorList{field.TypeInvalid(path, jsonType(target), "must be an object")}
	}
	var errs field.ErrorList
	text := func(key, fallback string) string {
		switch v := m[key].(type) {
		case nil:
			return fallback
		case string:
			if v == "" {
				return fallback
			}
			return v
		default:
			errs = append(errs, field.TypeInvalid(path.Child(key), jsonType(v), "must be a string"))
			return ""
		}
	}
	apiVersion := text("apiVersion", group+"/v1alpha1")
	t := &Target{
		APIVersion: apiVersion,
		Kind:       text("kind", Kind),
		Namespace:  text("namespace", ""),
		Name:       text("name", ""),
		Field:      path.String(),
	}
	if _, isString := m["name"].(string); t.Name == "" && (isString || m["name"] == nil) {
		errs = append(errs, field.Required(path.Child("name"), "names the referenced object"))
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		errs = append(errs, field.Invalid(path.Child("apiVersion"), apiVersion, err.Error()))
	}
	t.Group = gv.Group
	if len(errs) > 0 {
		return nil, errs
	}
	return t, nil
}

// jsonType names the JSON type of a decoded value, for messages that must not
// repeat the value itself, which may be large.
func jsonType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64, int64, int, int32:
		return "number"
	case nil:
		return "null"
	default:
		return "unknown"
	}
}
