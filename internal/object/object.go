// Package object is provider-kubernetes' Object and what it references: the
// one type that names an object (Ref), an Object's reference to one (Target)
// and how its spec.references resolve, and the finalizer the provider puts on
// each target on the Object's behalf.
package object

import (
	"slices"
	"strconv"
	"strings"
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

// Reachable tells whether provider-kubernetes may read and update objects of
// this API group and kind on the control plane with the access Crossplane
// gives every provider by default: its own kinds (Objects among them), and
// core Secrets and ConfigMaps. It resolves an Object's references, and puts
// its finalizer on each, with its own service account.
func Reachable(group, kind string) bool {
	return group == ClusterGroup || group == NamespacedGroup || (group == "" && (kind == "Secret" || kind == "ConfigMap"))
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
