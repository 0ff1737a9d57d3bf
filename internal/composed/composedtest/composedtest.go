// Package composedtest builds the composed.Resources the rule packages' tests
// decide: live Objects and ConfigMaps, named by convention, and the changes
// that make them otherwise.
package composedtest

import (
	"slices"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
)

// objectAPIVersion is the apiVersion of provider-kubernetes' Objects.
const objectAPIVersion = "kubernetes.crossplane.io/v1alpha2"

// Object is a live cluster-scoped Object the provider manages, whose object
// name is its composition resource name and whose UID is "uid-" and that
// name, referencing the cluster-scoped Objects of the names.
func Object(name string, references ...string) composed.Resource {
	r := composed.Resource{
		Name: name, APIVersion: objectAPIVersion, IsObject: true,
		Identity: object.Ref{Group: object.ClusterGroup, Kind: object.Kind, Name: name},
		Observed: &composed.Observed{UID: "uid-" + name, Finalizers: []string{object.ObjectFinalizer}},
		Desired:  &composed.Desired{},
	}
	var targets []object.Target
	for _, ref := range references {
		targets = append(targets, ClusterObject(ref))
	}
	Referencing(targets...)(&r)
	return r
}

// ConfigMap is a live ConfigMap in namespace team, named as its composition
// resource, whose UID is "uid-" and that name: a composed resource that is
// not an Object, depending on the composed resources by the input's word.
func ConfigMap(name string, dependsOn ...string) composed.Resource {
	return composed.Resource{
		Name: name, APIVersion: "v1", Identity: object.Ref{Kind: "ConfigMap", Namespace: "team", Name: name},
		Observed: &composed.Observed{UID: "uid-" + name}, Desired: &composed.Desired{}, DependsOn: dependsOn,
	}
}

// ClusterObject is a reference to the cluster-scoped Object of the name.
func ClusterObject(name string) object.Target {
	return object.Target{Ref: object.Ref{APIVersion: objectAPIVersion, Group: object.ClusterGroup, Kind: object.Kind, Name: name}}
}

// Finalizer is the reference finalizer of the Object of the name, which the
// resources it references carry for it.
func Finalizer(name string) string { return object.Finalizer("uid-" + name) }

// With returns a copy of the resource, changed by the functions: its observed
// and desired state are copied first, so that the changes leave the resource
// as it was.
func With(r composed.Resource, changes ...func(*composed.Resource)) composed.Resource {
	if r.Observed != nil {
		observed := *r.Observed
		r.Observed = &observed
	}
	if r.Desired != nil {
		desired := *r.Desired
		r.Desired = &desired
	}
	for _, c := range changes {
		c(&r)
	}
	return r
}

// Referencing makes the resource reference the targets, in the order of its
// spec.references, each by dependsOn.
func Referencing(targets ...object.Target) func(*composed.Resource) {
	targets = slices.Clone(targets)
	for i := range targets {
		targets[i].Index, targets[i].Via = i, "dependsOn"
	}
	return func(r *composed.Resource) { r.References = targets }
}

// CarryingReferences makes the observed Object carry references to the
// cluster-scoped Objects of the names.
func CarryingReferences(names ...string) func(*composed.Resource) {
	return func(r *composed.Resource) {
		for _, n := range names {
			r.Observed.References = append(r.Observed.References, ClusterObject(n))
		}
	}
}

// Carrying makes the observed resource carry the finalizers, and only them.
func Carrying(finalizers ...string) func(*composed.Resource) {
	return func(r *composed.Resource) { r.Observed.Finalizers = finalizers }
}

// DependingOn makes the resource depend on the composed resources of the
// names by the input's word.
func DependingOn(names ...string) func(*composed.Resource) {
	return func(r *composed.Resource) { r.DependsOn = names }
}

// Inferring makes the resource depend on those named by inference, through
// the field via.
func Inferring(via string, names ...string) func(*composed.Resource) {
	return func(r *composed.Resource) {
		for _, n := range names {
			r.Inferred = append(r.Inferred, composed.Inferred{Target: n, Via: via})
		}
	}
}

// Unnamed leaves the resource without an object name, as one whose name its
// provider generates before it is created.
func Unnamed(r *composed.Resource) { r.Identity.Name = "" }

// Deleting makes the observed resource one being deleted.
func Deleting(r *composed.Resource) { r.Observed.Deleting = true }

// NotObserved makes the resource one that doesn't exist yet.
func NotObserved(r *composed.Resource) { r.Observed = nil }

// NotDesired makes the resource one no pipeline step asks for: the
// composition is removing it.
func NotDesired(r *composed.Resource) { r.Desired = nil }
