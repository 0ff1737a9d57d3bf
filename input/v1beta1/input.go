// Package v1beta1 contains the input type for function-dependencies.
// +kubebuilder:object:generate=true
// +groupName=dependencies.fn.crossplane.io
// +versionName=v1beta1
package v1beta1

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// This isn't a custom resource, in the sense that its CRD is never installed.
// It is a KRM-like object, so a CRD is generated to describe its schema.

// GroupVersion is the apiVersion of the input.
const GroupVersion = "dependencies.fn.crossplane.io/v1beta1"

// Mode says whether the function changes desired state.
// +kubebuilder:validation:Enum=Enforce;Report
type Mode string

const (
	// ModeEnforce writes what the function decides into desired state.
	ModeEnforce Mode = "Enforce"
	// ModeReport computes and reports the same, but leaves desired state
	// exactly as the earlier steps left it. Use it to see what Enforce would do.
	ModeReport Mode = "Report"
)

// CyclePolicy says what happens when references form a cycle.
// +kubebuilder:validation:Enum=Fatal;Warning
type CyclePolicy string

const (
	// CycleFatal fails the pipeline with the cycle's path: nothing is applied
	// until the composition is fixed.
	CycleFatal CyclePolicy = "Fatal"
	// CycleWarning warns with the cycle's path and declares no finalizer on
	// any edge inside a cycle, so that teardown can't deadlock: each object in
	// a cycle would otherwise wait for the other to go first.
	CycleWarning CyclePolicy = "Warning"
)

// ReferencePolicy says whether Objects' spec.references make edges.
// +kubebuilder:validation:Enum=Infer;Ignore
type ReferencePolicy string

const (
	// ReferencesInfer makes an edge of every reference of every composed
	// provider-kubernetes Object.
	ReferencesInfer ReferencePolicy = "Infer"
	// ReferencesIgnore doesn't read spec.references: only the dependencies
	// listed in the input make edges.
	ReferencesIgnore ReferencePolicy = "Ignore"
)

// Protection says what protects the edges a reference finalizer can protect,
// those of a provider-kubernetes Object to another composed resource, and
// with it whether the step writes Usages at all (Input.WritesUsages).
// +kubebuilder:validation:Enum=Finalizers;Usages;Both
type Protection string

const (
	// ProtectionFinalizers declares the dependent Object's reference
	// finalizer on the resource it references: what provider-kubernetes
	// itself does, and what #371 loses.
	ProtectionFinalizers Protection = "Finalizers"
	// ProtectionUsages protects each such edge with a Usage (replayDeletion:
	// true) instead, and declares no reference finalizer: dependents then
	// skip the conflicting finalizer removals that make teardown slow. An
	// edge no Usage of the usageAPI can express keeps its finalizer, and so
	// does an edge whose Usage is not in force yet while its target carries
	// the finalizer, so that switching a live composite leaves no edge
	// unprotected.
	ProtectionUsages Protection = "Usages"
	// ProtectionBoth declares the finalizer and a Usage. provider-kubernetes
	// before v1.0 deletes an Object's remote object at once, whatever
	// reference finalizers keep the Object itself: there only a Usage orders
	// the deletion.
	ProtectionBoth Protection = "Both"
)

// UsageAPI is the API group and version of the Usages to emit.
// +kubebuilder:validation:Enum=protection.crossplane.io/v1beta1;apiextensions.crossplane.io/v1beta1
type UsageAPI string

const (
	// UsageAPIProtection is Crossplane v2's API: a namespaced Usage, or a
	// ClusterUsage between cluster-scoped resources.
	UsageAPIProtection UsageAPI = "protection.crossplane.io/v1beta1"
	// UsageAPIApiextensions is Crossplane v1's cluster-scoped Usage, between
	// cluster-scoped resources only.
	UsageAPIApiextensions UsageAPI = "apiextensions.crossplane.io/v1beta1"
)

// CreationPolicy says when a composed resource may be created.
// +kubebuilder:validation:Enum=Immediate;WaitForReady
type CreationPolicy string

const (
	// CreationImmediate creates every composed resource at once.
	CreationImmediate CreationPolicy = "Immediate"
	// CreationWaitForReady holds a resource that doesn't exist yet back from
	// desired state until every resource it depends on exists and is ready.
	// Every resource whose dependencies are ready is released in the same
	// pass, so a fan-out takes one pass, not one per resource.
	CreationWaitForReady CreationPolicy = "WaitForReady"
)

// GraphOutput says where the function writes the dependency graph.
// +kubebuilder:validation:Enum=None;Context
type GraphOutput string

const (
	// GraphNone writes the graph nowhere: the graph subcommand draws it from
	// a render's resources.
	GraphNone GraphOutput = "None"
	// GraphContext writes the graph as JSON into the pipeline context, under
	// dependencies.fn.crossplane.io/graph, for later steps and for
	// crossplane render --include-context.
	GraphContext GraphOutput = "Context"
)

// An Inference is a kind of edge the function infers from what the composed
// resources say of each other, beyond an Object's spec.references.
// +kubebuilder:validation:Enum=ProviderConfigs;Credentials;ManagedReferences
type Inference string

const (
	// InferProviderConfigs makes a composed resource depend on the composed
	// ProviderConfig of its provider that its spec.providerConfigRef names.
	InferProviderConfigs Inference = "ProviderConfigs"
	// InferCredentials makes a composed ProviderConfig depend on the composed
	// resource that writes the Secret its credentials are read from.
	InferCredentials Inference = "Credentials"
	// InferManagedReferences makes a managed resource depend on the composed
	// resources its spec.forProvider and spec.initProvider reference, by a
	// …Ref, …Refs or a resolved …Selector.
	InferManagedReferences Inference = "ManagedReferences"
)

// A Dependency says that composed resources depend on others, by
// composition resource name.
type Dependency struct {
	// Resource is the dependent: a composition resource name, or an RE2
	// pattern that must match a whole name (it is anchored).
	Resource string `json:"resource"`

	// DependsOn are the resources it depends on: composition resource names
	// or anchored RE2 patterns.
	// +kubebuilder:validation:MinItems=1
	DependsOn []string `json:"dependsOn"`
}

// Input configures function-dependencies. Every field is optional; a pipeline
// step without input gets every default.
//
// Example:
//
//	apiVersion: dependencies.fn.crossplane.io/v1beta1
//	kind: Input
//	mode: Enforce
//	onCycle: Fatal
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:categories=crossplane
type Input struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Mode is Enforce (the default) to write what the function decides into
	// desired state: in a Composition step the reference finalizers, the Usages
	// and the dependsOn references, with what may not be created yet held back;
	// in an Operation the reference finalizers live targets lack and the nudges
	// of teardowns. Report computes and reports the same (condition, results,
	// output) and leaves desired state as the earlier steps left it: what
	// Enforce would change.
	// +kubebuilder:default=Enforce
	// +optional
	Mode Mode `json:"mode,omitempty"`

	// OnCycle is Fatal (the default) to fail the pipeline when references
	// form a cycle, or Warning to warn and leave the edges inside the cycle
	// without finalizers.
	// +kubebuilder:default=Fatal
	// +optional
	OnCycle CyclePolicy `json:"onCycle,omitempty"`

	// Dependencies are edges declared here rather than in spec.references.
	// An edge whose dependent is a provider-kubernetes Object is written into
	// its spec.references as a dependsOn, so that the provider waits for the
	// dependency and the dependency declares the Object's finalizer.
	// +optional
	Dependencies []Dependency `json:"dependencies,omitempty"`

	// References is Infer (the default) to make an edge of every reference
	// of every composed Object, or Ignore to use only Dependencies.
	// +kubebuilder:default=Infer
	// +optional
	References ReferencePolicy `json:"references,omitempty"`

	// Protection is Finalizers (the default), Usages or Both: what protects
	// each edge of a provider-kubernetes Object to another composed
	// resource. Usages tears down as fast as without the function; see the
	// README's teardown table for which to choose on which stack. With
	// Usages or Both (or infer), every edge no reference finalizer protects
	// gets a Usage too: a dependency the input declares of a resource that
	// is not an Object, an inferred edge, and a reference to an object
	// outside the composite. With Finalizers and no infer, the step writes
	// no Usage.
	// +kubebuilder:default=Finalizers
	// +optional
	Protection Protection `json:"protection,omitempty"`

	// UsageAPI is the API of the Usages: protection.crossplane.io/v1beta1
	// (the default, Crossplane v2) or apiextensions.crossplane.io/v1beta1
	// (Crossplane v1).
	// +kubebuilder:default="protection.crossplane.io/v1beta1"
	// +optional
	UsageAPI UsageAPI `json:"usageAPI,omitempty"`

	// Creation is Immediate (the default), or WaitForReady to hold every
	// resource back until its dependencies are ready.
	// +kubebuilder:default=Immediate
	// +optional
	Creation CreationPolicy `json:"creation,omitempty"`

	// Graph is None (the default), or Context to write the dependency graph
	// into the pipeline context on every call. It is opt-in because every
	// response then carries it, and it grows with the edges.
	// +kubebuilder:default=None
	// +optional
	Graph GraphOutput `json:"graph,omitempty"`

	// Infer lists the kinds of edge to infer from what the composed
	// resources say: ProviderConfigs, Credentials and ManagedReferences. An
	// inferred edge orders deletion only, and a Usage protects it. None by
	// default: with none, nothing changes.
	// +listType=set
	// +optional
	Infer []Inference `json:"infer,omitempty"`

	// ObjectSelector limits an Operation's sweep to the Objects with these
	// labels, so that several CronOperations can share a cluster whose
	// Objects are too many for one. A WatchOperation filters with its own
	// spec.watch.matchLabels, and a Composition step refuses it.
	// +optional
	ObjectSelector *ObjectSelector `json:"objectSelector,omitempty"`
}

// An ObjectSelector selects provider-kubernetes Objects by their labels.
type ObjectSelector struct {
	// MatchLabels are the labels an Object must carry, every one.
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// WritesUsages tells whether the step writes Usages: protection is Usages or
// Both, or it infers edges, which only a Usage can protect. This is the one
// decision about Usages. A step that writes any protects with one every edge
// no reference finalizer protects: there the user's stack is known to take
// Usages. A step that writes none writes none at all, since a Usage would
// fail a composite where Crossplane's Usage webhook doesn't run, or the
// usageAPI names a kind the cluster doesn't serve.
func (in *Input) WritesUsages() bool {
	return in.Protection == ProtectionUsages || in.Protection == ProtectionBoth || len(in.Infer) > 0
}

// Infers tells whether the input asks for edges of the kind to be inferred.
func (in *Input) Infers(kind Inference) bool {
	return slices.Contains(in.Infer, kind)
}
