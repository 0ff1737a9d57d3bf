// Package protocol holds the facts of the protocols the function speaks, each
// written once: the names Crossplane gives what a function asks for and
// reads, the apiVersions provider-kubernetes stores Objects at, the labels
// and annotations the function and Crossplane put on objects, and how long a
// list Crossplane stores may be.
package protocol

import (
	"strings"

	"github.com/crossplane-contrib/function-dependencies/internal/object"
)

// CompositionResourceName is the annotation Crossplane puts on every composed
// resource: its name in the composition.
const CompositionResourceName = "crossplane.io/composition-resource-name"

// CompositeLabel is the label Crossplane puts on every composed resource: the
// name of its composite.
const CompositeLabel = "crossplane.io/composite"

// GraphContextKey is the pipeline context key under which the function
// writes the dependency graph as JSON, with graph: Context.
const GraphContextKey = "dependencies.fn.crossplane.io/graph"

// WatchedResource is the requirement under which a WatchOperation injects
// the object it watches.
const WatchedResource = "ops.crossplane.io/watched-resource"

// DependentLabel marks the Objects that depend on others with the UID of
// their composite, so that the function can ask for those Crossplane is
// deleting, which the composite's observed state lacks
// (internal/composition's deleting.go says why).
const DependentLabel = "dependencies.fn.crossplane.io/composite-uid"

// DependentGroupLabel marks a resource that Objects of the composition
// depend on with their API group, when it is not the one of the composite's
// scope. The function asks for the Objects of the groups the composition
// composes and always of the composite's own, never of a group whose CRD may
// not be installed: provider-kubernetes v0.x serves only the cluster-scoped
// group, and Crossplane fails a reconcile that asks for a kind the cluster
// doesn't serve. So when a cluster-scoped composite's last namespaced Object
// leaves the composition, this label, on what it depends on, is what says
// to ask for its group while it is deleted. The label stays while an Object
// of the group depends on the resource, which the function sees from the
// Objects it asks for: it never changes while one is deleted.
const DependentGroupLabel = "dependencies.fn.crossplane.io/dependent-group"

// UsageLabel marks, set to "true", the Usages the function emits, so that it
// can tell them from the composition's own resources when it observes them:
// they are never part of the graph, or a pattern such as ".*" would give each
// Usage a Usage of its own, one more on every reconcile.
const UsageLabel = "dependencies.fn.crossplane.io/usage"

// ProtectionLabel marks, set to ProtectedByUsages, each Object whose edges
// to other composed resources the Composition step protects with Usages
// instead of reference finalizers (protection: Usages), so that an
// Operation's sweep doesn't put back the finalizers it left out.
const ProtectionLabel = "dependencies.fn.crossplane.io/protection"

// ProtectedByUsages is ProtectionLabel's value.
const ProtectedByUsages = "Usages"

// InUseLabel is the label Crossplane's Usage controller puts on a used
// resource. Its webhook sees the deletions of labelled resources only, so a
// Usage is in force once it exists and its resource carries the label.
const InUseLabel = "crossplane.io/in-use"

// The teardown nudges' label and annotations (internal/operation's
// teardown.go says what each wakes).
const (
	// TeardownTargetLabel marks a deleting target that dependents held. It
	// is a label so that an Operation can list the targets of a teardown.
	TeardownTargetLabel = "dependencies.fn.crossplane.io/teardown-target"
	// TeardownReleasedKey marks a deleting target that no dependent holds
	// any more.
	TeardownReleasedKey = "dependencies.fn.crossplane.io/teardown-released"
	// TeardownGoneKey marks a released target whose managed resource is
	// gone.
	TeardownGoneKey = "dependencies.fn.crossplane.io/teardown-gone"
)

// TeardownHolderKey is the annotation of a deleting dependent that still
// holds the target of this UID.
func TeardownHolderKey(targetUID string) string {
	return "teardown.dependencies.fn.crossplane.io/" + targetUID
}

// objectVersions holds the apiVersion of each Object API group that every
// provider-kubernetes release serving the group stores: the function lists
// and applies Objects at it. Another version is converted by the provider's
// webhook on every read and apply.
var objectVersions = map[string]string{
	object.ClusterGroup:    object.ClusterGroup + "/v1alpha2",
	object.NamespacedGroup: object.NamespacedGroup + "/v1alpha1",
}

// ObjectVersion is the apiVersion the function reads and applies Objects of
// the group at, and false for a group of no Object.
func ObjectVersion(group string) (string, bool) {
	v, ok := objectVersions[group]
	return v, ok
}

// ObjectGroups are the API groups of Objects, in order.
func ObjectGroups() []string {
	return []string{object.ClusterGroup, object.NamespacedGroup}
}

// OwnObjectGroup is the Object group of a composite's scope: a namespaced
// composite composes only namespaced Objects; a cluster-scoped one, usually
// cluster-scoped ones, whose group every provider-kubernetes release serves.
func OwnObjectGroup(namespaced bool) string {
	if namespaced {
		return object.NamespacedGroup
	}
	return object.ClusterGroup
}

// Limits are the sizes of what Crossplane reads from a function.
type Limits struct {
	// ResponseBytes is the largest response Crossplane reads: its gRPC
	// client keeps gRPC's default limit on received messages, 4 MiB, in
	// Compositions and Operations alike (core v2.4.0).
	ResponseBytes int
}

// CrossplaneLimits are Crossplane's own.
var CrossplaneLimits = Limits{ResponseBytes: 4 << 20}

// MaxListedInOutput bounds each list in an Operation's output: Crossplane
// stores the output in the Operation's status, which must fit in one etcd
// object. Counts stay complete.
const MaxListedInOutput = 100

// The names of what the function asks Crossplane for: each starts with
// prefix, and Crossplane answers under the same name.
const prefix = "dependencies.fn.crossplane.io/"

// IsOwnRequirement tells whether a required resource's name is one of the
// function's own requirements.
func IsOwnRequirement(name string) bool { return strings.HasPrefix(name, prefix) }

// CompositeObjects is the requirement of a composite's Objects of a group by
// DependentLabel.
func CompositeObjects(group string) string { return prefix + "objects-" + group }

// Named is the requirement of one resource by name, for the Composition.
func Named(apiVersion, kind, namespace, name string) string {
	return prefix + strings.Join([]string{apiVersion, kind, namespace, name}, "/")
}

// SweptObjects is the requirement of an Operation's Objects of a group.
func SweptObjects(group string) string { return prefix + "objects/" + group }

// HoldersOf is the requirement of the Objects of a group that may hold a
// watched Object being deleted.
func HoldersOf(group string) string { return prefix + "teardown/" + group }

// TeardownTargets is the requirement of the Objects of a group that are the
// targets of teardowns.
func TeardownTargets(group string) string { return prefix + "teardown-targets/" + group }

// ManifestOf is the requirement of the resource a released teardown target
// manages; object names the target.
func ManifestOf(object string) string { return prefix + "manifest/" + object }

// Target is the requirement of one target of an Operation by name; object
// names it.
func Target(object string) string { return prefix + "target/" + object }

// TargetsOfKind is the requirement of every object of a kind in a namespace,
// for an Operation's targets of that kind.
func TargetsOfKind(apiVersion, kind, namespace string) string {
	return prefix + "targets/" + apiVersion + "/" + kind + "/" + namespace
}
