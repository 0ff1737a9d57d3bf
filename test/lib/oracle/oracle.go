// Package oracle works out what function-dependencies must answer to one
// request, from the rules its README states and from nothing of the
// function's own: it reads the request as plain Go values (resources as
// decoded JSON, the input's fields as strings) and imports none of the
// function's packages. Every test tier checks the function against it: the
// unit tests' property test, the end-to-end render tests, the reference
// parser's fuzz test and the reconcile-loop tier. A rule is written here
// once; a tier that needs it asks the oracle.
//
// # One reconcile
//
// The entry point is [Expect]. Give it one reconcile's request-like state, or
// build that from a request with [FromRequest]:
//
//	p := oracle.Expect(oracle.State{
//		Observed: observed, // composed resources by composition resource name
//		Desired:  desired,  // what the steps before the function desire
//		XR:       xr,       // the observed composite
//		Input:    oracle.Input{Protection: "Usages", Dependencies: deps},
//	})
//	p.Finalizers["shared"] // the metadata.finalizers the answer's desired "shared" must carry
//	p.Condition.Status     // whether DeletionOrdered must be True
//	p.Condition.Reason     // and its reason
//
// [Plan.Finalizers] holds, for every desired resource the answer keeps, its
// metadata.finalizers exactly as the function must leave them: the earlier
// steps' own, in their order, then the missing reference finalizers, sorted
// (none added in Report mode or when a cycle fails the step). A fixed point
// of a reconcile loop is reached when those are applied and the condition is
// True; [Plan.Declare] is the set of reference finalizers each resource must
// declare whatever the mode, for checks of the fixed point.
//
// # Inferred edges
//
// With the input's infer, edges no spec.references entry and no dependencies
// entry names are found in the composed resources' bodies (infer.go): an
// edge's Origin says what made it, and a Usage always protects an inferred
// one. An inferred edge that would close a cycle is left out of the graph
// before cycles are found ([Plan.LeftOut]): infer never fails a step.
//
// # What it does not model
//
// An input the function rejects (the oracle assumes a valid one), a desired
// resource whose metadata or finalizers aren't of their type (the function
// warns InvalidResource and leaves it), the exact wording of results other
// than the condition, and the composition resource names and metadata.name of
// the Usages the function emits. The oracle finds an edge's observed Usage by
// what it says (its ends), not by the key the README gives it, so that a tier
// can check that each edge gets a name of its own and keeps it (see
// [Usage.ObservedAs]) without the oracle restating how the name is made.
package oracle

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane-contrib/function-dependencies/test/lib/harness"
)

// What provider-kubernetes and Crossplane define, and the function's input
// means.
const (
	// FinalizerPrefix starts the finalizer provider-kubernetes puts on each
	// object an Object references; the Object's UID follows.
	FinalizerPrefix = "kubernetes.crossplane.io/referred-by-object-"
	// ObjectFinalizer is the Object's own finalizer, never declared: the
	// provider skips its reference finalizers when it finds it declared.
	ObjectFinalizer = "finalizer.managedresource.crossplane.io"

	// ClusterObjectGroup and NamespacedObjectGroup are the API groups of
	// provider-kubernetes's cluster-scoped and namespaced Objects.
	ClusterObjectGroup    = "kubernetes.crossplane.io"
	NamespacedObjectGroup = "kubernetes.m.crossplane.io"
	// ObjectKind is the kind of an Object in both groups, and the default
	// kind of a reference.
	ObjectKind = "Object"
	// DefaultReferenceVersion is, after the Object's own group, the CRD's
	// default apiVersion of a reference.
	DefaultReferenceVersion = "v1alpha1"

	// ProtectionAPI is Crossplane v2's Usage API, the default; ApiextensionsAPI
	// is Crossplane v1's.
	ProtectionAPI    = "protection.crossplane.io/v1beta1"
	ApiextensionsAPI = "apiextensions.crossplane.io/v1beta1"

	// UsageLabel, set to "true", marks the Usages the function emits. The
	// function can tell its own Usages from the composition's resources only
	// by what it wrote into them, and the oracle must tell them the same way:
	// they are never part of the user's graph.
	UsageLabel = "dependencies.fn.crossplane.io/usage"

	// InUseLabel, set to "true" by Crossplane's Usage controller on a used
	// resource, is what its webhook selects: a Usage is in force once it
	// exists and its resource carries the label.
	InUseLabel = "crossplane.io/in-use"

	// DependentLabel, set to the composite's UID, marks every desired Object
	// that depends on another, when the function writes desired state and
	// the composite has a UID. Crossplane strips its own composite label
	// from a resource it deletes for leaving the composition; this one stays,
	// and it is what the function asks for the composite's Objects by.
	DependentLabel = "dependencies.fn.crossplane.io/composite-uid"

	// ProtectionLabel, set to "Usages" with protection: Usages, marks every
	// desired Object with an edge to another composed resource: an
	// Operation's sweep leaves the finalizers of its edges out.
	ProtectionLabel = "dependencies.fn.crossplane.io/protection"
	// DependentGroupLabel, on every desired resource an Object of another
	// group than the composite's scope depends on (a namespaced Object of a
	// cluster-scoped composite), names that group, so that the function asks
	// for the Objects of it while one of them is deleted: it asks for the
	// groups the composition composes or this label names, and always the
	// composite's own, never another.
	DependentGroupLabel = "dependencies.fn.crossplane.io/dependent-group"

	// maxListed is how many items a message names before it counts the rest.
	maxListed = 10
)

// Input is the function's input, each field as the YAML says it; "" is the
// default.
type Input struct {
	Mode, OnCycle, References, Protection, UsageAPI, Creation, Graph string
	Dependencies                                                     []Dependency
	// Infer names the inference rules to apply (see infer.go); none by
	// default.
	Infer []string
}

// ObjectEdges is what protects the edges of an Object to another composed
// resource: Finalizers, Usages or Both.
func (in Input) ObjectEdges() string {
	return cmp.Or(in.Protection, "Finalizers")
}

// WritesUsages tells whether the step writes Usages at all: it infers edges,
// or protects Objects' edges with Usages. Only then does a Usage protect an
// edge no finalizer protects (a dependency the input declares of a resource
// that is not an Object, a reference outside the composite): a user's stack
// that takes none would fail the composite.
func (in Input) WritesUsages() bool {
	return len(in.Infer) > 0 || in.ObjectEdges() == "Usages" || in.ObjectEdges() == "Both"
}

// A Dependency is one entry of the input's dependencies: composition resource
// names or anchored RE2 patterns.
type Dependency struct {
	Resource  string
	DependsOn []string
}

// withDefaults is the input with every field the README's defaults give an
// empty one.
func (in Input) withDefaults() Input {
	def := func(s *string, d string) {
		if *s == "" {
			*s = d
		}
	}
	def(&in.Mode, "Enforce")
	def(&in.OnCycle, "Fatal")
	def(&in.References, "Infer")
	def(&in.Protection, "Finalizers")
	def(&in.UsageAPI, ProtectionAPI)
	def(&in.Creation, "Immediate")
	def(&in.Graph, "None")
	return in
}

// ReadInput reads the input as decoded JSON (nil for a step without input).
// Fields of another type than the input's are left at their default: the
// oracle models valid inputs only.
func ReadInput(m map[string]any) Input {
	in := Input{
		Mode: harness.String(m, "mode"), OnCycle: harness.String(m, "onCycle"), References: harness.String(m, "references"),
		Protection: harness.String(m, "protection"), UsageAPI: harness.String(m, "usageAPI"), Creation: harness.String(m, "creation"),
		Graph: harness.String(m, "graph"), Infer: harness.Strings(m, "infer"),
	}
	deps, _ := m["dependencies"].([]any)
	for _, d := range deps {
		dm, _ := d.(map[string]any)
		in.Dependencies = append(in.Dependencies, Dependency{Resource: harness.String(dm, "resource"), DependsOn: harness.Strings(dm, "dependsOn")})
	}
	return in
}

// State is what one call of the function sees: the composed resources
// observed and desired by the steps before it, by composition resource name,
// as decoded JSON; which of the desired ones an earlier step said are ready;
// the observed composite; the input; and the required resources Crossplane
// answered the function's requirements with.
type State struct {
	Observed     map[string]map[string]any
	Desired      map[string]map[string]any
	DesiredReady map[string]bool
	XR           map[string]any
	Input        Input
	// Required are the composite's Objects the function asked for. Crossplane
	// drops a composed resource from observed state in the reconcile that
	// deletes it; a required one whose composition resource name observed
	// state lacks is read as observed, so that a dependent being deleted is
	// one, not a stale finalizer.
	Required []map[string]any
	// Now is when the function reads the request: a resource held back
	// behind a dependency that has not been ready for longer than MaxWait
	// by then is named (WaitingTooLong). Zero: never.
	Now time.Time
}

// CompositionResourceName is the annotation that ties a resource to its
// composition resource name.
const CompositionResourceName = "crossplane.io/composition-resource-name"

// FromRequest reads a request into a State.
func FromRequest(req *fnv1.RunFunctionRequest) State {
	s := State{
		Observed:     map[string]map[string]any{},
		Desired:      map[string]map[string]any{},
		DesiredReady: map[string]bool{},
		XR:           req.GetObserved().GetComposite().GetResource().AsMap(),
		Input:        ReadInput(req.GetInput().AsMap()),
	}
	for name, r := range req.GetObserved().GetResources() {
		s.Observed[name] = r.GetResource().AsMap()
	}
	for name, r := range req.GetDesired().GetResources() {
		s.Desired[name] = r.GetResource().AsMap()
		s.DesiredReady[name] = r.GetReady() == fnv1.Ready_READY_TRUE
	}
	for _, key := range slices.Sorted(maps.Keys(req.GetRequiredResources())) {
		for _, item := range req.GetRequiredResources()[key].GetItems() {
			s.Required = append(s.Required, item.GetResource().AsMap())
		}
	}
	return s
}

// Identity is how provider-kubernetes finds a referenced object: API group
// and kind (any version), namespace and name. A composed resource whose name
// is empty (not named yet, or of an invalid apiVersion) matches no reference.
type Identity struct{ Group, Kind, Namespace, Name string }

// Describe names an object as kubectl does, and as the function's messages
// do: kind.group, then namespace/name.
func (id Identity) Describe() string {
	kind := id.Kind
	if id.Group != "" {
		kind += "." + id.Group
	}
	if id.Namespace != "" {
		return kind + " " + id.Namespace + "/" + id.Name
	}
	return kind + " " + id.Name
}

// A Node is one composed resource of the graph.
type Node struct {
	Name              string // composition resource name
	Desired, Observed bool
	// APIVersion, Identity and Object are read from desired state when the
	// resource is desired (the composition's current intent), else from
	// observed; the name and namespace from observed state first, as
	// Crossplane keeps them.
	APIVersion string
	Identity   Identity
	// Object is true for a provider-kubernetes Object, whose references make
	// edges.
	Object bool
	// Manages is what an Object's manifest names.
	Manages Identity
	// References are the Object's valid references, read from the same state
	// as its identity. With references: Ignore they make no edge, but an
	// explicit dependency equal to one is not written again.
	References []Target
	// ObservedReferences are an observed Object's valid references, read
	// from observed state.
	ObservedReferences []Target
	// UID, Deleting, ObservedFinalizers: observed state's.
	UID                string
	Deleting           bool
	ObservedFinalizers []string
	// InUse: observed labelled in use by Crossplane's Usage controller,
	// whose webhook then refuses its deletion while a Usage of it exists.
	InUse bool
	// DesiredFinalizers are those the earlier steps declared, in their order.
	DesiredFinalizers []string
	// Ready: observed, and Ready=True or an earlier step said ready: True.
	Ready bool
	// NotReadySince: observed and not Ready=True, its Ready condition's
	// lastTransitionTime, else its creationTimestamp; zero if neither.
	NotReadySince time.Time
	// observedBody and desiredBody are the resource as each state has it,
	// nil when that state lacks it: the inference rules read both.
	observedBody, desiredBody map[string]any
}

// Finalizer is the reference finalizer provider-kubernetes puts on what the
// Object references: "" while it has no UID.
func (n *Node) Finalizer() string {
	if n.UID == "" {
		return ""
	}
	return FinalizerPrefix + n.UID
}

// Live is true for a dependent that exists, is not being deleted and is
// still desired: its finalizer must be on what it references.
func (n *Node) Live() bool { return n.UID != "" && n.Desired && !n.Deleting }

// Carries tells whether the observed resource carries the finalizer.
func (n *Node) Carries(finalizer string) bool {
	return finalizer != "" && slices.Contains(n.ObservedFinalizers, finalizer)
}

// A Target is what one spec.references entry names, as provider-kubernetes
// resolves it.
type Target struct {
	Identity
	// APIVersion is as written, or the CRD's default.
	APIVersion string
	// Index is the entry's place in spec.references, and Via the field that
	// names the target: patchesFrom or dependsOn.
	Index int
	Via   string
}

// Field is where the reference is: spec.references[0].dependsOn, say.
func (t Target) Field() string { return fmt.Sprintf("spec.references[%d].%s", t.Index, t.Via) }

// A Problem is a spec.references entry, or the whole list, that can't be
// read, or sets both dependsOn and patchesFrom (Both: it is followed through
// patchesFrom all the same).
type Problem struct {
	Resource string
	Field    string // spec.references or spec.references[i]
	Both     bool
}

// ReadReferences reads an Object's spec.references (nil when it has none) of
// an Object of the API group: the valid targets, in order, and the problems.
func ReadReferences(objectGroup string, references any) ([]Target, []Problem) {
	if references == nil {
		return nil, nil
	}
	list, ok := references.([]any)
	if !ok {
		return nil, []Problem{{Field: "spec.references"}}
	}
	var targets []Target
	var problems []Problem
	for i, r := range list {
		t, ok, both := ReadReference(objectGroup, i, r)
		field := fmt.Sprintf("spec.references[%d]", i)
		if both {
			problems = append(problems, Problem{Field: field, Both: true})
		}
		if !ok {
			problems = append(problems, Problem{Field: field})
			continue
		}
		targets = append(targets, t)
	}
	return targets, problems
}

// ReadReference reads the spec.references entry at index of an Object of the
// API group the way provider-kubernetes resolves it: through patchesFrom if
// set, else dependsOn; the target must be an object whose apiVersion, kind,
// namespace and name are strings or absent, with a name; apiVersion defaults
// to the Object's group's v1alpha1 and kind to Object, as the CRD does (earlier
// steps' output has not been through the API server); the namespace is not
// defaulted, as the provider doesn't. It returns the target, whether the entry
// is valid, and whether it sets both dependsOn and patchesFrom.
func ReadReference(objectGroup string, index int, entry any) (Target, bool, bool) {
	m, ok := entry.(map[string]any)
	if !ok {
		return Target{}, false, false
	}
	both := m["dependsOn"] != nil && m["patchesFrom"] != nil
	via, target := "patchesFrom", m["patchesFrom"]
	if target == nil {
		via, target = "dependsOn", m["dependsOn"]
	}
	tm, ok := target.(map[string]any)
	if !ok {
		return Target{}, false, both
	}
	fields := map[string]string{"apiVersion": objectGroup + "/" + DefaultReferenceVersion, "kind": ObjectKind, "namespace": "", "name": ""}
	for k := range fields {
		switch v := tm[k].(type) {
		case nil:
		case string:
			if v != "" {
				fields[k] = v
			}
		default:
			return Target{}, false, both
		}
	}
	group, ok := GroupOf(fields["apiVersion"])
	if !ok || fields["name"] == "" {
		return Target{}, false, both
	}
	return Target{
		Identity:   Identity{Group: group, Kind: fields["kind"], Namespace: fields["namespace"], Name: fields["name"]},
		APIVersion: fields["apiVersion"], Index: index, Via: via,
	}, true, both
}

// GroupOf is the API group of an apiVersion (group/version, or a version
// alone for the core group), and whether it is one.
func GroupOf(apiVersion string) (string, bool) {
	switch strings.Count(apiVersion, "/") {
	case 0:
		return "", true
	case 1:
		g, _, _ := strings.Cut(apiVersion, "/")
		return g, true
	default:
		return "", false
	}
}

// IsObject tells whether a resource of the apiVersion and kind is a
// provider-kubernetes Object, of either group and any version.
func IsObject(apiVersion, kind string) bool {
	g, _ := GroupOf(apiVersion)
	return kind == ObjectKind && (g == ClusterObjectGroup || g == NamespacedObjectGroup)
}

// Protection says what keeps an edge's dependency from being deleted first.
type Protection int

// The protections.
const (
	// ByFinalizer: the dependency declares the dependent Object's reference
	// finalizer.
	ByFinalizer Protection = iota
	// ByUsage: a Usage of the dependency by the dependent. With usages:
	// Every an Object's edge is ByUsage wherever a Usage can express it,
	// and its finalizer is declared all the same.
	ByUsage
	// Unprotected: nothing can, or the input didn't ask for a Usage.
	Unprotected
)

// EdgeState is how, and whether, an edge is protected.
type EdgeState int

// The states of an edge, as the README's finalizer rules and Usages decide
// them.
const (
	// Protected: the observed dependency carries the dependent's finalizer
	// (declared), or the edge's Usage is observed.
	Protected EdgeState = iota
	// Declared: the finalizer is declared, or the Usage emitted, but not
	// observed yet.
	Declared
	// Pending: the dependent doesn't exist yet (no UID), or for a Usage one
	// of the ends doesn't.
	Pending
	// Releasing: the dependent is being deleted or no longer desired; its
	// finalizer is declared only while the observed dependency still carries
	// it.
	Releasing
	// TargetRemoved: a live dependent references a resource the composition
	// no longer desires.
	TargetRemoved
	// TargetDeleting: the dependency is being deleted without the live
	// dependent's finalizer, which the API server no longer lets anyone add.
	TargetDeleting
	// Cyclic: the edge is inside a cycle and onCycle is Warning: nothing is
	// declared on it, so that teardown can't deadlock.
	Cyclic
	// Exposed: nothing protects the edge.
	Exposed
)

// States are all the edge states, in order.
var States = []EdgeState{Protected, Declared, Pending, Releasing, TargetRemoved, TargetDeleting, Cyclic, Exposed}

// String names the state as the property test's statistics do.
func (s EdgeState) String() string {
	return [...]string{"protected", "declared", "pending", "releasing", "target removed", "target deleting", "cyclic", "exposed"}[s]
}

// An Edge is a dependency of one composed resource on another.
type Edge struct {
	Dependent, Target string
	// Origin is what makes the edge: OriginReference (an Object's
	// spec.references), OriginExplicit (only the input's dependencies) or
	// OriginInferred (only an inference rule, whose field Via names).
	Origin, Via string
	Protection  Protection
	State       EdgeState
	// Finalizer is the dependent's reference finalizer, "" while it has no
	// UID; Declared is true when the target must declare it.
	Finalizer string
	Declared  bool
}

// String names the edge as the function's messages do: dependent → target.
func (e Edge) String() string { return e.Dependent + " → " + e.Target }

// An External edge is a reference to an object no composed resource is; one
// per dependent and object.
type External struct {
	Dependent  string
	Target     Target
	Protection Protection
	State      EdgeState
	// Inferred is true for the composite of a ProviderConfig outside the
	// composite (inferOutside).
	Inferred bool
}

// A LeftOut edge is an inferred edge that would close a cycle, with the
// cycle: the edge, then the fewest edges back from its target to its
// dependent, the smallest by name of those ways, as [d t … d].
type LeftOut struct {
	Edge  Edge
	Cycle []string
}

// A Stale finalizer is a reference finalizer on an observed resource that
// names no Object referencing the resource in this composition.
type Stale struct{ Resource, Finalizer string }

// A Reference is a dependsOn the function writes into a desired Object's
// spec.references for a dependency the input declares.
type Reference struct{ APIVersion, Kind, Namespace, Name string }

// DependsOn is the reference as spec.references holds it.
func (r Reference) DependsOn() map[string]any {
	ref := map[string]any{"apiVersion": r.APIVersion, "kind": r.Kind, "name": r.Name}
	if r.Namespace != "" {
		ref["namespace"] = r.Namespace
	}
	return map[string]any{"dependsOn": ref}
}

// A Hold is why a desired resource that doesn't exist yet is left out of
// desired state.
type Hold struct {
	// Unnamed are the dependencies an Object must reference that have no
	// name yet.
	Unnamed []string
	// NotReady are, with creation: WaitForReady, the dependencies that are
	// not observed and ready.
	NotReady []string
}

// String is the reason, as the HeldBack result gives it.
func (h Hold) String() string {
	if len(h.Unnamed) > 0 {
		return fmt.Sprintf("waits for %s to be named, to reference it", strings.Join(h.Unnamed, ", "))
	}
	return fmt.Sprintf("waits for %s to be ready", strings.Join(h.NotReady, ", "))
}

// A Ref names one end of a Usage.
type Ref struct{ APIVersion, Kind, Namespace, Name string }

// A Usage is the Usage an edge needs: of the dependency, by the dependent.
type Usage struct {
	Dependent string
	// Target is the dependency's composition resource name, "" for an
	// object outside the composition; Dependency names it for the reason.
	Target, Dependency string
	// Of and By are the ends.
	Of, By Ref
	// APIVersion, Kind and Namespace are the Usage's own.
	APIVersion, Kind, Namespace string
	// Impossible says why no Usage of the API can express the edge; such an
	// edge is warned about (UsageImpossible) and left unprotected.
	Impossible string
	// ObservedAs is the composition resource name of the observed Usage the
	// function emitted for this edge, "" while there is none: the function
	// must keep emitting it under that name.
	ObservedAs string
}

// Manifest is the Usage as the function emits it, without metadata.name and
// labels, which are the function's to choose.
func (u Usage) Manifest() map[string]any {
	md := map[string]any{}
	if u.Namespace != "" {
		md["namespace"] = u.Namespace
	}
	return map[string]any{
		"apiVersion": u.APIVersion,
		"kind":       u.Kind,
		"metadata":   md,
		"spec": map[string]any{
			"of":             u.ofRef(),
			"by":             map[string]any{"apiVersion": u.By.APIVersion, "kind": u.By.Kind, "resourceRef": map[string]any{"name": u.By.Name}},
			"reason":         fmt.Sprintf("%s depends on %s (function-dependencies)", u.Dependent, u.Dependency),
			"replayDeletion": true,
		},
	}
}

// ofRef is the used object's reference: a namespaced Usage's references are
// in its own namespace unless they say otherwise, which only `of` may.
func (u Usage) ofRef() map[string]any {
	ref := map[string]any{"name": u.Of.Name}
	if u.Namespace != "" && u.Of.Namespace != u.Namespace {
		ref["namespace"] = u.Of.Namespace
	}
	return map[string]any{"apiVersion": u.Of.APIVersion, "kind": u.Of.Kind, "resourceRef": ref}
}

// An Unmatched entry of the input's dependencies matches no composed
// resource: a warning.
type Unmatched struct{ Field, Entry string }

// A Result is one result the step must report, by severity and reason.
type Result struct{ Severity, Reason string }

// The severities of results.
const (
	Normal  = "Normal"
	Warning = "Warning"
	Fatal   = "Fatal"
)

// Summary holds the counts of the Normal Summary result.
type Summary struct {
	// Resources are the composed resources of the graph; References the
	// edges between them; External the references to objects outside.
	Resources, References, External int
	// Declared counts finalizers, not edges: two Objects that claim one UID
	// share one.
	Declared int
	// Pending counts the edges a finalizer protects whose dependent Object
	// doesn't exist yet, or isn't managed yet: the summary says "pending
	// until their Object exists", which a Usage waiting for an end is not.
	Pending int
	// Added counts the declared finalizers their observed target doesn't
	// carry, and UsagesAdded the Usages declared and not observed: what
	// the call adds.
	Added, UsagesAdded int
}

// Condition is the composite's DeletionOrdered condition.
type Condition struct {
	Status bool
	// Reason is Protected, Cycle, UnprotectedEdges, or for edges whose
	// protection is on its way, FinalizersPending, UsagesPending or, when
	// some are finalizers and some Usages, ProtectionPending.
	Reason string
	// Edges are the edges the message names, state after state in edge order:
	// removed, deleting, exposed and (Report mode) declared ones for
	// UnprotectedEdges; (Enforce mode) declared, then pending ones for the
	// pending reasons. Where not one protection protects them all (Mixed),
	// each is followed by its own: " (finalizer)", " (Usage)" or
	// " (unprotected)".
	Edges []string
	// By is what protects every edge Edges names, unless Mixed.
	By    Protection
	Mixed bool
	// Cycles are the cycles' paths, for Cycle.
	Cycles []string
}

// Prefix is the message up to the list of edges it names: the whole message
// for Cycle and Protected. It says what protects the edges: a message never
// speaks of finalizers for an edge a Usage protects, or that nothing does.
func (c Condition) Prefix() string {
	switch {
	case c.Reason == "Cycle":
		return "references form a cycle: " + List(c.Cycles)
	case c.Reason == "UnprotectedEdges" && c.Mixed:
		return "referenced resources lack what keeps them from being deleted before their dependents: "
	case c.Reason == "UnprotectedEdges" && c.By == ByFinalizer:
		return "referenced resources lack their dependents' finalizers: "
	case c.Reason == "UnprotectedEdges" && c.By == ByUsage:
		return "referenced resources lack their dependents' Usages: "
	case c.Reason == "UnprotectedEdges":
		return "nothing keeps referenced resources from being deleted before their dependents: "
	case c.Reason == "FinalizersPending":
		return "finalizers are declared but not yet applied, or wait for their Object to exist: "
	case c.Reason == "UsagesPending":
		return "Usages are declared but not yet in force, or wait for both their ends to exist: "
	case c.Reason == "ProtectionPending":
		return "finalizers and Usages are declared but not yet in force, or wait for what they protect to exist: "
	default:
		return "every live reference between composed resources is protected"
	}
}

// Message is the condition's message.
func (c Condition) Message() string {
	if c.Edges == nil {
		return c.Prefix()
	}
	return c.Prefix() + List(c.Edges)
}

// List joins items as the function's messages do: all of them up to ten,
// else the first ten and how many more.
func List(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:maxListed], ", "), len(items)-maxListed)
}

// A Plan is what the function must answer to one request.
type Plan struct {
	// Input is the request's, with the defaults applied.
	Input Input
	// Nodes are the graph's composed resources, by composition resource
	// name; Names are their names, sorted.
	Nodes map[string]*Node
	Names []string
	// Own are the observed Usages the function emitted, by composition
	// resource name: never part of the graph.
	Own map[string]map[string]any
	// Composed holds the edges, dependent and target, that a Usage the
	// composition desires itself protects, and whether such a Usage
	// exists: the function writes those edges no Usage of its own.
	Composed map[[2]string]bool

	// Edges are sorted by dependent, then target.
	Edges    []Edge
	External []External
	Problems []Problem
	Stale    []Stale
	// Cycles are paths such as [a b a]: one per group of resources that
	// reach each other, from its smallest name, the shortest way back to it,
	// the smallest by name among equally short ones; in the order of their
	// smallest names.
	Cycles  [][]string
	cycleOf map[string]int
	// referencedFor holds, beside References, the composed resource each
	// reference is written for.
	referencedFor map[string][]string
	// LeftOut are the inferred edges that would close a cycle, in edge
	// order: none of them is in Edges. See leaveOutInferredCycles.
	LeftOut   []LeftOut
	Unmatched []Unmatched
	// Shared are the names of the composed resources that are one object,
	// a list for each such object.
	Shared [][]string
	// notInferred are the reference fields inference found no single
	// target for, as "dependent path", each with its candidates: see
	// inferManagedReferences.
	notInferred map[string][]string
	// Unseen are the UIDs that reference finalizers on observed resources
	// name and no observed resource has, read from observed state alone.
	// ObjectGroups are the API groups of the Objects the composition uses,
	// sorted. See AsksForObjects.
	Unseen, ObjectGroups []string
	// Asks are the resource selectors the function's requirements must hold,
	// sorted: see readAsks.
	Asks []Ask
	// Labels holds, for each desired resource the answer keeps, the labels
	// the function adds: DependentLabel on each Object with an edge, and
	// DependentGroupLabel on each resource an Object of another group than
	// the composite's own depends on.
	Labels map[string]map[string]string
	// XRUID is the composite's UID; xrNamespaced tells whether it is
	// namespaced.
	XRUID        string
	xrNamespaced bool
	// going are the resources read from the required ones: those
	// Crossplane is deleting.
	going []string
	// required are what Crossplane fetched for the step.
	required []map[string]any

	// Declare holds, for each desired resource that must declare some, every
	// reference finalizer it must declare, sorted, whether earlier steps
	// declared it or not, and whatever the mode.
	Declare map[string][]string
	// Missing holds those of Declare the earlier steps didn't declare,
	// sorted: what the function adds in Enforce mode.
	Missing map[string][]string
	// Finalizers holds, for every desired resource the answer keeps, the
	// metadata.finalizers it must carry (nil for none).
	Finalizers map[string][]string
	// References holds the dependsOn references to append to each desired
	// Object that is not held back, in the order of its edges; written only
	// when the plan writes.
	References map[string][]Reference
	// HeldBack holds the desired resources that must not be created yet;
	// left out of desired state only when the plan writes.
	HeldBack map[string]Hold
	// Waiting are the held back resources whose existing dependency has
	// not been ready for longer than MaxWait at the state's Now, in the
	// order of the edges.
	Waiting []Waiting
	now     time.Time
	// Usages are the Usages the edges need now that both ends exist (written
	// only when the plan writes); Impossible those no Usage can express.
	Usages, Impossible []Usage

	Condition Condition
}

// WritesGraph tells whether the function writes the graph into the context.
func (p *Plan) WritesGraph() bool { return p.Input.Graph == "Context" }

// Enforce is false in Report mode.
func (p *Plan) Enforce() bool { return p.Input.Mode != "Report" }

// CyclesFatal is true when a cycle fails the step.
func (p *Plan) CyclesFatal() bool { return p.Input.OnCycle != "Warning" }

// Writes tells whether the function changes desired state: in Enforce mode,
// unless a cycle fails the step.
func (p *Plan) Writes() bool { return p.Enforce() && (!p.CyclesFatal() || len(p.Cycles) == 0) }

// AsksForObjects tells whether the function must ask Crossplane for
// anything (Asks): when a reference finalizer names an Object observed state
// lacks, the composite's Objects, one selector per group of ObjectGroups;
// and by name what its own Usages are used by and what the references it
// wrote depend on, when observed state lacks them. Each may be a resource
// Crossplane is deleting. It asks from observed state alone, so that the call
// that answers it asks the same.
func (p *Plan) AsksForObjects() bool { return len(p.Asks) > 0 }

// SameCycle tells whether both resources are in one cycle.
func (p *Plan) SameCycle(a, b string) bool {
	ca, okA := p.cycleOf[a]
	cb, okB := p.cycleOf[b]
	return okA && okB && ca == cb
}

// Count counts the edges between composed resources in the state.
func (p *Plan) Count(s EdgeState) int {
	n := 0
	for _, e := range p.Edges {
		if e.State == s {
			n++
		}
	}
	return n
}

// Summary is the Summary result's counts.
func (p *Plan) Summary() Summary {
	declared, added := 0, 0
	for target, fs := range p.Declare {
		declared += len(fs)
		for _, f := range fs {
			if !p.Nodes[target].Observed || !slices.Contains(p.Nodes[target].ObservedFinalizers, f) {
				added++
			}
		}
	}
	pending, usagesAdded := 0, 0
	for _, e := range p.Edges {
		if e.State == Pending && e.Protection == ByFinalizer {
			pending++
		}
		if e.State == Declared && e.Protection == ByUsage {
			usagesAdded++
		}
	}
	for _, e := range p.External {
		if e.State == Declared && e.Protection == ByUsage {
			usagesAdded++
		}
	}
	return Summary{Resources: len(p.Nodes), References: len(p.Edges), External: len(p.External), Declared: declared, Pending: pending, Added: added, UsagesAdded: usagesAdded}
}

// SummaryMessage is the summary the condition's message ends with, and the
// Summary result says.
func (p *Plan) SummaryMessage() string {
	s := p.Summary()
	// n of a thing, singular for one.
	count := func(n int, thing string) string {
		if n == 1 {
			return "1 " + thing
		}
		return fmt.Sprintf("%d %ss", n, thing)
	}
	// References to external objects are counted, with those no Usage
	// protects: they are no problem by themselves, so no result names them.
	externals := "none to external objects"
	if s.External > 0 {
		n := 0
		for _, e := range p.External {
			if e.Protection == Unprotected || (!p.Writes() && e.State == Declared) {
				n++
			}
		}
		externals = fmt.Sprintf("%d to external objects, %d of them unprotected", s.External, n)
		if s.External == 1 {
			externals = fmt.Sprintf("1 to an external object, %d of them unprotected", n)
		}
	}
	// Where inference found some references between composed resources,
	// or Usages protect some, the summary says how many: "(2 of them
	// inferred, 3 by Usages)", each part only when there are some.
	var parts []string
	if n := len(slices.DeleteFunc(slices.Clone(p.Edges), func(e Edge) bool { return e.Origin != OriginInferred })); n > 0 {
		parts = append(parts, fmt.Sprintf("%d inferred", n))
	}
	if n := len(slices.DeleteFunc(slices.Clone(p.Edges), func(e Edge) bool { return e.Protection != ByUsage })); n > 0 {
		parts = append(parts, fmt.Sprintf("%d by Usages", n))
	}
	byUsages := ""
	if len(parts) > 0 {
		n, rest, _ := strings.Cut(strings.Join(parts, ", "), " ")
		byUsages = " (" + n + " of them " + rest + ")"
	}
	// What the call adds to what is observed.
	verb := "added"
	switch {
	case !p.Enforce():
		verb = "to add (Report mode: desired state left unchanged)"
	case p.CyclesFatal() && len(p.Cycles) > 0:
		verb = "to add (the cycle failed the step: desired state left unchanged)"
	}
	var adds []string
	if s.Added > 0 {
		adds = append(adds, count(s.Added, "reference finalizer"))
	}
	if s.UsagesAdded > 0 {
		adds = append(adds, count(s.UsagesAdded, "Usage"))
	}
	changes := "nothing " + verb
	if len(adds) > 0 {
		changes = strings.Join(adds, " and ") + " " + verb
	}
	switch {
	case s.Pending == 1:
		changes += ", 1 finalizer pending until its Object exists"
	case s.Pending > 1:
		changes += fmt.Sprintf(", %d finalizers pending until their Objects exist", s.Pending)
	}
	// The reference fields inference leaves out, where there are some.
	if n := len(p.notInferred); n > 0 {
		changes += "; " + count(n, "reference") + " not inferred: nothing singles out their target"
	}
	return fmt.Sprintf("%s, %s between them%s and %s; %s", count(s.Resources, "composed resource"), count(s.References, "reference"), byUsages, externals, changes)
}

// ConditionMessage is the condition's whole message: what it says, then
// the summary.
func (p *Plan) ConditionMessage() string {
	return p.Condition.Message() + ". " + p.SummaryMessage()
}

// Changes tells whether the function changes what is observed, or in Report
// mode would: whether an edge's finalizer or Usage is declared but not
// observed, or a reference is written that the observed Object lacks. Only
// then does it report a Normal Summary result.
func (p *Plan) Changes() bool {
	if slices.ContainsFunc(p.Edges, func(e Edge) bool { return e.State == Declared }) ||
		slices.ContainsFunc(p.External, func(e External) bool { return e.State == Declared }) {
		return true
	}
	for name, refs := range p.References {
		observed := p.Nodes[name].ObservedReferences
		for _, r := range refs {
			group, _ := GroupOf(r.APIVersion)
			id := Identity{Group: group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
			if !slices.ContainsFunc(observed, func(t Target) bool { return t.Identity == id }) {
				return true
			}
		}
	}
	return false
}

// UnprotectedDependencies are the edges only the input declares that no
// finalizer protects (their dependent is no Object, or their target one the
// provider can't reach), which nothing protects since the step writes no
// Usage, as the warning names them: all but those a broken cycle holds.
func (p *Plan) UnprotectedDependencies() []string {
	var out []string
	for _, e := range p.Edges {
		byFinalizer := p.Nodes[e.Dependent].Object && ProviderReaches(p.Nodes[e.Target].Identity)
		if e.Origin == OriginExplicit && !byFinalizer && !p.Input.WritesUsages() && !p.composes(e.Dependent, e.Target) && e.State != Cyclic {
			out = append(out, e.String())
		}
	}
	return out
}

// composes tells whether a Usage the composition desires itself protects the
// edge.
func (p *Plan) composes(dependent, target string) bool {
	_, ok := p.Composed[[2]string{dependent, target}]
	return ok
}

// CyclePaths are the cycles as messages name them: a → b → a.
func (p *Plan) CyclePaths() []string {
	out := make([]string, len(p.Cycles))
	for i, c := range p.Cycles {
		out[i] = strings.Join(c, " → ")
	}
	return out
}

// Results are the results the step must report, each once, sorted by
// severity and reason.
func (p *Plan) Results() []Result {
	var rs []Result
	add := func(cond bool, severity, reason string) {
		if cond {
			rs = append(rs, Result{severity, reason})
		}
	}
	add(p.Changes(), Normal, "Summary")
	add(len(p.Cycles) > 0 && p.CyclesFatal(), Fatal, "Cycle")
	add(len(p.Cycles) > 0 && !p.CyclesFatal(), Warning, "Cycle")
	add(len(p.LeftOut) > 0, Warning, "InferredCycle")
	add(len(p.Shared) > 0, Warning, "SharedObject")
	add(len(p.Stale) > 0, Warning, "StaleFinalizer")
	add(len(p.Problems) > 0, Warning, "InvalidReference")
	add(p.Count(TargetRemoved) > 0, Warning, "ReferencedResourceRemoved")
	add(p.Count(TargetDeleting) > 0, Warning, "ReferencedResourceDeleting")
	add(len(p.HeldBack) > 0, Normal, "HeldBack")
	add(len(p.Unmatched) > 0, Warning, "UnmatchedDependency")
	add(len(p.Impossible) > 0, Warning, "UsageImpossible")
	add(len(p.UnprotectedDependencies()) > 0, Warning, "UnprotectedDependencies")
	add(len(p.SuspectReferences()) > 0, Warning, "SuspectReference")
	add(len(p.Waiting) > 0, Warning, "WaitingTooLong")
	slices.SortFunc(rs, func(a, b Result) int { return strings.Compare(a.Severity+"/"+a.Reason, b.Severity+"/"+b.Reason) })
	return rs
}

// Expect works out, from the rules of docs/rules.md, what the function must answer
// to one call.
func Expect(s State) *Plan {
	p := &Plan{
		Input: s.Input.withDefaults(), Nodes: map[string]*Node{}, Own: map[string]map[string]any{}, cycleOf: map[string]int{}, referencedFor: map[string][]string{},
		Declare: map[string][]string{}, Missing: map[string][]string{}, Finalizers: map[string][]string{},
		References: map[string][]Reference{}, HeldBack: map[string]Hold{}, Labels: map[string]map[string]string{},
		XRUID: harness.String(s.XR, "metadata", "uid"), xrNamespaced: harness.String(s.XR, "metadata", "namespace") != "", now: s.Now,
	}
	p.readNodes(s)
	p.askForOutsideConfigs()
	p.readComposedUsages()
	p.findShared()
	p.addEdges()
	p.inferOutside()
	p.leaveOutInferredCycles()
	p.findCycles()
	p.writeNoReferenceOnACycle()
	p.decide()
	p.decideUsages()
	p.findStale()
	if p.Input.Creation == "WaitForReady" {
		p.holdUntilReady()
	}
	p.condition()
	p.writeFinalizers()
	return p
}

// findShared finds the composed resources that are one object: two desired
// with the same identity that a reference can name (docs/rules.md). One the
// composition removed is a rename under way, which Crossplane finishes.
func (p *Plan) findShared() {
	names := map[Identity][]string{}
	for _, n := range slices.Sorted(maps.Keys(p.Nodes)) {
		if id := p.Nodes[n].Identity; id.Name != "" && p.Nodes[n].desiredBody != nil {
			names[id] = append(names[id], n)
		}
	}
	for _, id := range slices.SortedFunc(maps.Keys(names), func(a, b Identity) int { return strings.Compare(names[a][0], names[b][0]) }) {
		if len(names[id]) > 1 {
			p.Shared = append(p.Shared, names[id])
		}
	}
}

// readNodes reads the graph's nodes: every composed resource observed or
// desired but the function's own Usages.
func (p *Plan) readNodes(s State) {
	xrNamespace := harness.String(s.XR, "metadata", "namespace")
	p.readAsks(s)
	p.required = s.Required
	s.Observed = p.observedAndGoing(s)
	p.readNames(s)
	for _, name := range p.Names {
		p.Nodes[name] = p.readNode(s, name, xrNamespace)
	}
	p.removedGoFirst()
}

// observedAndGoing is the observed state and, fetched by name, what the
// composite controls that is no longer observed: resources being deleted.
func (p *Plan) observedAndGoing(s State) map[string]map[string]any {
	observed := maps.Clone(s.Observed)
	if observed == nil {
		observed = map[string]map[string]any{}
	}
	for _, r := range s.Required {
		// Only what the composite controls: a resource fetched by name may
		// be another composite's, under a name this one uses too.
		if name := harness.String(r, "metadata", "annotations", CompositionResourceName); name != "" && observed[name] == nil && p.XRUID != "" && controllerUID(r) == p.XRUID {
			observed[name] = r
			p.going = append(p.going, name)
		}
	}
	return observed
}

// readNames reads the function's own Usages and the names of every other
// composed resource, sorted.
func (p *Plan) readNames(s State) {
	for name, o := range s.Observed {
		// Only what no earlier step desires can be the function's: a
		// resource an earlier step desires is the composition's.
		if _, desired := s.Desired[name]; !desired && harness.String(o, "metadata", "labels", UsageLabel) == "true" {
			p.Own[name] = o
		}
	}
	for name := range s.Desired {
		p.Names = append(p.Names, name)
	}
	for name := range s.Observed {
		if _, desired := s.Desired[name]; !desired && p.Own[name] == nil {
			p.Names = append(p.Names, name)
		}
	}
	slices.Sort(p.Names)
}

// readNode reads the composed resource of the name, observed, desired or
// both.
func (p *Plan) readNode(s State, name, xrNamespace string) *Node {
	n := &Node{Name: name}
	o, observed := s.Observed[name]
	d, desired := s.Desired[name]
	src := o
	if desired {
		src = d
	}
	n.Desired, n.Observed = desired, observed
	if observed {
		readObserved(n, o, s.DesiredReady[name])
	}
	if desired {
		n.DesiredFinalizers = harness.Strings(d, "metadata", "finalizers")
		n.desiredBody = d
	}
	n.APIVersion = harness.String(src, "apiVersion")
	group, ok := GroupOf(n.APIVersion)
	// A namespaced composite's resources get its namespace when desired
	// state omits it, as Crossplane does.
	n.Identity = Identity{
		Group:     group,
		Kind:      harness.String(src, "kind"),
		Namespace: cmp.Or(harness.String(o, "metadata", "namespace"), harness.String(d, "metadata", "namespace"), xrNamespace),
		Name:      cmp.Or(harness.String(o, "metadata", "name"), harness.String(d, "metadata", "name")),
	}
	if !ok || n.Identity.Kind == "" {
		n.Identity.Name = "" // No reference can name it.
	}
	n.Object = IsObject(n.APIVersion, n.Identity.Kind)
	if n.Object {
		p.readObject(n, src, group)
	}
	return n
}

// readObserved reads what the node's observed state says; desiredReady is
// whether an earlier step says it is ready.
func readObserved(n *Node, o map[string]any, desiredReady bool) {
	n.observedBody = o
	n.UID = harness.String(o, "metadata", "uid")
	n.Deleting = harness.String(o, "metadata", "deletionTimestamp") != ""
	n.ObservedFinalizers = harness.Strings(o, "metadata", "finalizers")
	n.InUse = harness.String(o, "metadata", "labels", InUseLabel) == "true"
	n.Ready = readyCondition(o) || desiredReady
	n.NotReadySince = notReadySince(o)
	if g, ok := GroupOf(harness.String(o, "apiVersion")); ok && IsObject(harness.String(o, "apiVersion"), harness.String(o, "kind")) {
		n.ObservedReferences, _ = ReadReferences(g, harness.Lookup(o, "spec", "references"))
	}
}

// readObject reads what an Object of the group manages and its references,
// from src, the body the node is read from, and notes the references that
// can't be read, unless the input ignores references.
func (p *Plan) readObject(n *Node, src map[string]any, group string) {
	m, _ := harness.Lookup(src, "spec", "forProvider", "manifest").(map[string]any)
	if g, ok := GroupOf(harness.String(m, "apiVersion")); ok {
		n.Manages = Identity{Group: g, Kind: harness.String(m, "kind"), Namespace: harness.String(m, "metadata", "namespace"), Name: harness.String(m, "metadata", "name")}
		if group == "kubernetes.m.crossplane.io" && n.Manages.Namespace == "" {
			n.Manages.Namespace = n.Identity.Namespace // The Object's own, unless it says another.
		}
	}
	refs, problems := ReadReferences(group, harness.Lookup(src, "spec", "references"))
	n.References = refs
	if p.Input.References != "Ignore" {
		for _, pr := range problems {
			pr.Resource = n.Name
			p.Problems = append(p.Problems, pr)
		}
	}
}

// removedGoFirst marks deleting every object the composition still desires
// under another name than one it removed: Crossplane deletes what the
// composition removes before it applies the rest, so the object goes in
// this reconcile, and the API server refuses a new finalizer on it.
func (p *Plan) removedGoFirst() {
	removed := map[string]bool{}
	for _, n := range p.Nodes {
		if n.Observed && !n.Desired && n.UID != "" {
			removed[n.UID] = true
		}
	}
	for _, n := range p.Nodes {
		if n.Observed && n.Desired && removed[n.UID] {
			n.Deleting = true
		}
	}
}

// readComposedUsages reads the Usages the composition desires itself (not
// the function's, which are no nodes): each protects the edge from what its
// spec.by names to what its spec.of names, both composed resources.
func (p *Plan) readComposedUsages() {
	p.Composed = map[[2]string]bool{}
	for _, name := range p.Names {
		u := p.Nodes[name]
		g, k := u.Identity.Group, u.Identity.Kind
		usage := g == "protection.crossplane.io" && (k == "Usage" || k == "ClusterUsage") || g == "apiextensions.crossplane.io" && k == "Usage"
		if !u.Desired || !usage {
			continue
		}
		// Only Crossplane v2's Usage is namespaced: its ends are in its
		// namespace, but for a spec.of that says another. A cluster-scoped
		// one's names are of cluster-scoped resources, and its selectors
		// select in any namespace.
		ns := ""
		if g == "protection.crossplane.io" && k == "Usage" {
			ns = u.Identity.Namespace
		}
		// What a selector selected Crossplane writes into resourceRef, which
		// stands from then on: the observed Usage says what it protects.
		body := u.desiredBody
		if u.Observed {
			body = u.observedBody
		}
		for _, by := range p.usageNames(body, "by", ns) {
			for _, of := range p.usageNames(body, "of", ns) {
				if by != of {
					key := [2]string{by, of}
					p.Composed[key] = p.Composed[key] || u.Observed
				}
			}
		}
	}
}

// usageNames are the composed resources a Usage's spec.of or spec.by names,
// as Crossplane's Usage controller finds them: every one of the identity its
// resourceRef names, or else the one resource of the kind whose labels,
// observed or desired, hold its resourceSelector's matchLabels. Crossplane
// picks one of several the function can't tell: no name then.
func (p *Plan) usageNames(body map[string]any, field, ns string) []string {
	end, _ := harness.Lookup(body, "spec", field).(map[string]any)
	group, ok := GroupOf(harness.String(end, "apiVersion"))
	kind := harness.String(end, "kind")
	if !ok || end == nil {
		return nil
	}
	var out []string
	if name := harness.String(end, "resourceRef", "name"); name != "" {
		if field == "of" && ns != "" {
			ns = cmp.Or(harness.String(end, "resourceRef", "namespace"), ns)
		}
		for _, n := range p.Names {
			if p.Nodes[n].Identity == (Identity{Group: group, Kind: kind, Namespace: ns, Name: name}) {
				out = append(out, n)
			}
		}
		return out
	}
	selector, ok := end["resourceSelector"].(map[string]any)
	if !ok {
		return nil
	}
	if field == "of" && ns != "" {
		ns = cmp.Or(harness.String(selector, "namespace"), ns)
	}
	want, _ := selector["matchLabels"].(map[string]any)
	holds := func(body map[string]any) bool {
		if body == nil {
			return false
		}
		for k, v := range want {
			if harness.String(body, "metadata", "labels", k) != v || harness.Lookup(body, "metadata", "labels", k) == nil {
				return false
			}
		}
		return true
	}
	for _, n := range p.Names {
		node := p.Nodes[n]
		if node.Identity.Group == group && node.Identity.Kind == kind && (ns == "" || node.Identity.Namespace == ns) && (holds(node.observedBody) || holds(node.desiredBody)) {
			out = append(out, n)
		}
	}
	if len(out) != 1 {
		return nil
	}
	return out
}

// composedUsage tells whether a Usage the composition composes takes the
// edge, and whether it exists: it does once it exists, and before while
// the function's own Usage of the edge doesn't, so that no edge is
// unprotected in between.
func (p *Plan) composedUsage(e *Edge, own Usage) (takes, observed bool) {
	observed, ok := p.Composed[[2]string{e.Dependent, e.Target}]
	return ok && (observed || own.ObservedAs == ""), observed
}

// controllerUID is the UID of the resource's controller, or "".
func controllerUID(r map[string]any) string {
	_, uid := controllerOf(r)
	return uid
}

// controllerOf is the resource's controller reference and its UID, or nil.
func controllerOf(r map[string]any) (map[string]any, string) {
	refs, _ := harness.Lookup(r, "metadata", "ownerReferences").([]any)
	for _, ref := range refs {
		if m, _ := ref.(map[string]any); m["controller"] == true {
			s, _ := m["uid"].(string)
			return m, s
		}
	}
	return nil, ""
}

// readAsks finds, in the request's observed and desired state alone, what
// the function asks Crossplane for.
func (p *Plan) readAsks(s State) {
	xrNamespace := harness.String(s.XR, "metadata", "namespace")
	own, uids, seen := ownAndSeen(s, xrNamespace)
	p.readUnseen(s, own, uids)
	// The Object groups the composition composes, and always the composite's
	// own: the Object it composed may have been the last of its group.
	p.ObjectGroups = []string{ClusterObjectGroup}
	if xrNamespace != "" {
		p.ObjectGroups = []string{NamespacedObjectGroup}
	}
	for name, r := range s.Desired {
		p.addObjectGroup(r)
		if o := s.Observed[name]; o != nil && len(p.Input.Dependencies) > 0 && IsObject(harness.String(r, "apiVersion"), harness.String(r, "kind")) {
			p.askWritten(r, o, seen)
		}
	}
	for name, o := range s.Observed {
		if !slices.Contains(own, name) {
			p.addObjectGroup(o)
			if g := harness.String(o, "metadata", "labels", DependentGroupLabel); IsObject(g+"/v1", ObjectKind) {
				p.ObjectGroups = append(p.ObjectGroups, g)
			}
		}
	}
	slices.Sort(p.ObjectGroups)
	p.ObjectGroups = slices.Compact(p.ObjectGroups)
	for _, name := range own {
		u := s.Observed[name]
		by := Ask{APIVersion: harness.String(u, "spec", "by", "apiVersion"), Kind: harness.String(u, "spec", "by", "kind"), Namespace: harness.String(u, "metadata", "namespace"), Name: harness.String(u, "spec", "by", "resourceRef", "name")}
		if group, ok := GroupOf(by.APIVersion); ok && by.Name != "" && !seen[Identity{Group: group, Kind: by.Kind, Namespace: by.Namespace, Name: by.Name}] {
			p.addAsk(by)
		}
	}
	if uid := harness.String(s.XR, "metadata", "uid"); uid != "" && len(p.Unseen) > 0 {
		for _, g := range p.ObjectGroups {
			a := Ask{Group: g, Kind: ObjectKind, Label: uid}
			if g == NamespacedObjectGroup {
				a.Namespace = xrNamespace
			}
			p.addAsk(a)
		}
	}
	slices.SortFunc(p.Asks, func(a, b Ask) int { return strings.Compare(a.String(), b.String()) })
}

// ownAndSeen reads the observed state: the names of the function's own
// Usages, and the UIDs and identities of every other resource.
func ownAndSeen(s State, xrNamespace string) (own []string, uids map[string]bool, seen map[Identity]bool) {
	uids, seen = map[string]bool{}, map[Identity]bool{}
	for name, o := range s.Observed {
		d := s.Desired[name]
		if d == nil && harness.String(o, "metadata", "labels", UsageLabel) == "true" {
			own = append(own, name)
			continue
		}
		uids[harness.String(o, "metadata", "uid")] = true
		group, _ := GroupOf(harness.String(o, "apiVersion"))
		if d != nil {
			group, _ = GroupOf(harness.String(d, "apiVersion"))
		}
		kind := harness.String(o, "kind")
		if d != nil {
			kind = harness.String(d, "kind")
		}
		seen[Identity{Group: group, Kind: kind, Namespace: cmp.Or(harness.String(o, "metadata", "namespace"), harness.String(d, "metadata", "namespace"), xrNamespace),
			Name: cmp.Or(harness.String(o, "metadata", "name"), harness.String(d, "metadata", "name"))}] = true
	}
	return own, uids, seen
}

// readUnseen reads the UIDs that the reference finalizers of what is
// observed name and no observed resource has: p.Unseen, sorted.
func (p *Plan) readUnseen(s State, own []string, uids map[string]bool) {
	for name, o := range s.Observed {
		if slices.Contains(own, name) {
			continue
		}
		for _, f := range harness.Strings(o, "metadata", "finalizers") {
			if uid, ok := strings.CutPrefix(f, FinalizerPrefix); ok && !uids[uid] && !slices.Contains(p.Unseen, uid) {
				p.Unseen = append(p.Unseen, uid)
			}
		}
	}
	slices.Sort(p.Unseen)
}

// askWritten asks for the targets of the references the observed Object o
// carries and its desired state r lacks, which are not seen: those the
// function wrote, kept while their dependency exists.
func (p *Plan) askWritten(r, o map[string]any, seen map[Identity]bool) {
	group, _ := GroupOf(harness.String(r, "apiVersion"))
	written, _ := ReadReferences(group, harness.Lookup(o, "spec", "references"))
	desired, _ := ReadReferences(group, harness.Lookup(r, "spec", "references"))
	for _, t := range written {
		if !slices.ContainsFunc(desired, func(d Target) bool { return d.Identity == t.Identity }) && !seen[t.Identity] {
			p.addAsk(Ask{APIVersion: t.APIVersion, Kind: t.Kind, Namespace: t.Namespace, Name: t.Name})
		}
	}
}

func (p *Plan) addObjectGroup(r map[string]any) {
	if g, _ := GroupOf(harness.String(r, "apiVersion")); IsObject(harness.String(r, "apiVersion"), harness.String(r, "kind")) {
		p.ObjectGroups = append(p.ObjectGroups, g)
	}
}

func (p *Plan) addAsk(a Ask) {
	if !slices.Contains(p.Asks, a) {
		p.Asks = append(p.Asks, a)
	}
}

// An Ask is one resource selector the function's requirements hold: by
// name, the resource of that apiVersion, kind, namespace and name; or by the
// label DependentLabel=Label, the Objects of the API group Group (in any
// version the composition uses) in the namespace ("" for all).
type Ask struct {
	APIVersion, Group, Kind, Namespace, Name, Label string
}

func (a Ask) String() string {
	if a.Label != "" {
		return fmt.Sprintf("%s %s in %q labelled %s=%s", a.Group, a.Kind, a.Namespace, DependentLabel, a.Label)
	}
	return fmt.Sprintf("%s %s %s/%s", a.APIVersion, a.Kind, a.Namespace, a.Name)
}

// addEdges makes the edges: every reference of every Object to every composed
// resource of its identity (a reference that matches none is external), then
// every pair the input's dependencies name that no reference makes.
func (p *Plan) addEdges() {
	byIdentity := map[Identity][]string{}
	for _, name := range p.Names {
		if id := p.Nodes[name].Identity; id.Name != "" {
			byIdentity[id] = append(byIdentity[id], name)
		}
	}
	explicit := p.resolveDependencies()
	inferred := p.inferEdges()
	for _, name := range p.Names {
		n := p.Nodes[name]
		targets := map[string]*Edge{}
		if n.Object && p.Input.References != "Ignore" {
			p.addReferenceEdges(n, byIdentity, targets)
		}
		p.addExplicitEdges(n, explicit[name], targets)
		// An inferred edge adds only what the others lack; whatever
		// usages and protection say, a Usage protects it.
		for _, i := range inferred[name] {
			if targets[i.target] == nil {
				targets[i.target] = &Edge{Dependent: name, Target: i.target, Origin: OriginInferred, Via: i.via, Protection: ByUsage}
			}
		}
		for _, t := range slices.Sorted(maps.Keys(targets)) {
			p.Edges = append(p.Edges, *targets[t])
		}
	}
}

// addReferenceEdges adds to targets the edges of the Object n's references
// to every composed resource of their identity, and makes a reference that
// matches none an external edge, once for each identity.
func (p *Plan) addReferenceEdges(n *Node, byIdentity map[Identity][]string, targets map[string]*Edge) {
	external := map[Identity]bool{}
	for _, ref := range n.References {
		matches := byIdentity[ref.Identity]
		for _, t := range matches {
			if targets[t] == nil {
				targets[t] = &Edge{Dependent: n.Name, Target: t, Origin: OriginReference, Protection: ByFinalizer}
			}
		}
		if len(matches) == 0 && !external[ref.Identity] {
			external[ref.Identity] = true
			e := External{Dependent: n.Name, Target: ref, Protection: Unprotected, State: Exposed}
			if p.Input.WritesUsages() {
				e.Protection = ByUsage
			}
			p.External = append(p.External, e)
		}
	}
}

// addExplicitEdges adds to targets the edges to n's dependencies that the
// input names and no reference makes, and writes their dependsOn where the
// provider reaches the dependency.
func (p *Plan) addExplicitEdges(n *Node, dependencies []string, targets map[string]*Edge) {
	var written []Identity
	for _, t := range dependencies {
		if targets[t] != nil {
			continue // A reference makes the edge already.
		}
		e := &Edge{Dependent: n.Name, Target: t, Origin: OriginExplicit, Protection: Unprotected}
		reachable := n.Object && ProviderReaches(p.Nodes[t].Identity)
		switch {
		case reachable:
			e.Protection = ByFinalizer
		case p.Input.WritesUsages() || p.composes(n.Name, t):
			e.Protection = ByUsage
		}
		targets[t] = e
		if reachable && n.Desired {
			written = p.writeDependsOn(n, t, written)
		}
	}
}

// writeDependsOn gives the Object n a dependsOn to its dependency t, unless
// an equal reference is there or was written (written, which it returns
// with t's); one without a name can't be referenced yet, so an Object that
// doesn't exist waits.
func (p *Plan) writeDependsOn(n *Node, t string, written []Identity) []Identity {
	tn := p.Nodes[t]
	id := tn.Identity
	switch {
	case id.Name == "":
		if !n.Observed {
			h := p.HeldBack[n.Name]
			h.Unnamed = append(h.Unnamed, t)
			p.HeldBack[n.Name] = h
		}
	case slices.ContainsFunc(n.References, func(r Target) bool { return r.Identity == id }) || slices.Contains(written, id):
	default:
		written = append(written, id)
		p.References[n.Name] = append(p.References[n.Name], Reference{APIVersion: tn.APIVersion, Kind: id.Kind, Namespace: id.Namespace, Name: id.Name})
		p.referencedFor[n.Name] = append(p.referencedFor[n.Name], t)
	}
	return written
}

// ProviderReaches tells whether provider-kubernetes may read and update an
// object of the identity with the access Crossplane gives every provider:
// its own kinds, and core Secrets and ConfigMaps. Only on those is a
// dependency the input declares written as an Object's dependsOn; the
// provider would need more for any other, a Release say.
func ProviderReaches(id Identity) bool {
	return id.Group == "kubernetes.crossplane.io" || id.Group == "kubernetes.m.crossplane.io" || (id.Group == "" && (id.Kind == "Secret" || id.Kind == "ConfigMap"))
}

// writeNoReferenceOnACycle drops the dependsOn of every declared edge inside
// a cycle with onCycle: Warning, and what waits to write one: the provider
// would wait on both sides of the cycle to create. What stays held back has
// its references written when it is released.
func (p *Plan) writeNoReferenceOnACycle() {
	cyclic := func(name, t string) bool { return !p.CyclesFatal() && p.SameCycle(name, t) }
	for name, refs := range p.References {
		kept, keptFor := []Reference(nil), []string(nil)
		for i, r := range refs {
			if t := p.referencedFor[name][i]; !cyclic(name, t) {
				kept, keptFor = append(kept, r), append(keptFor, t)
			}
		}
		p.References[name], p.referencedFor[name] = kept, keptFor
		if len(kept) == 0 {
			delete(p.References, name)
		}
	}
	for name, h := range p.HeldBack {
		h.Unnamed = slices.DeleteFunc(h.Unnamed, func(t string) bool { return cyclic(name, t) })
		p.HeldBack[name] = h
		if len(h.Unnamed) == 0 && len(h.NotReady) == 0 {
			delete(p.HeldBack, name)
		}
	}
	for name := range p.HeldBack {
		delete(p.References, name) // Written when it is released.
	}
}

// Matching returns the names an entry of the input's dependencies matches:
// the name itself when it is one, else every name the RE2 pattern matches
// whole.
func Matching(entry string, names []string) []string {
	if slices.Contains(names, entry) {
		return []string{entry}
	}
	re, err := regexp.Compile(`^(?:` + entry + `)$`)
	if err != nil {
		return nil
	}
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return !re.MatchString(n) })
}

// resolveDependencies returns, for each dependent, the resources the input
// says it depends on, sorted, without itself. An entry that is a composition
// resource name means that name; else it is an RE2 pattern that must match a
// whole name. The function's own Usages are no names: a pattern such as ".*"
// must not give each Usage a Usage of its own.
func (p *Plan) resolveDependencies() map[string][]string {
	match := func(field, entry string) []string {
		out := Matching(entry, p.Names)
		if len(out) == 0 {
			p.Unmatched = append(p.Unmatched, Unmatched{Field: field, Entry: entry})
		}
		return out
	}
	out := map[string][]string{}
	for i, d := range p.Input.Dependencies {
		dependents := match(fmt.Sprintf("dependencies[%d].resource", i), d.Resource)
		var targets []string
		for j, entry := range d.DependsOn {
			targets = append(targets, match(fmt.Sprintf("dependencies[%d].dependsOn[%d]", i, j), entry)...)
		}
		for _, dependent := range dependents {
			for _, t := range targets {
				if t != dependent && !slices.Contains(out[dependent], t) {
					out[dependent] = append(out[dependent], t)
				}
			}
		}
	}
	for _, ts := range out {
		slices.Sort(ts)
	}
	return out
}

// decide decides the state of every edge a finalizer protects, and what each
// target declares, by the README's finalizer rules for an edge from Object D
// to composed resource R.
func (p *Plan) decide() {
	declare := map[string]map[string]bool{}
	for i := range p.Edges {
		e := &p.Edges[i]
		d, t := p.Nodes[e.Dependent], p.Nodes[e.Target]
		e.Finalizer = d.Finalizer()
		cyclic := !p.CyclesFatal() && p.SameCycle(e.Dependent, e.Target)
		if p.usagesInstead(e) {
			// protection: Usages: the finalizer gives way to the edge's
			// Usage once it is in force, and is not added before; one the
			// target carries stays declared until then, so that no edge is
			// unprotected in between.
			u := p.usage(d, refOf(t), t.Name, t.Name)
			_, composedObserved := p.composedUsage(e, u)
			inForce := (u.ObservedAs != "" || composedObserved) && d.Observed && t.Observed && !t.Deleting && t.InUse && !cyclic
			if inForce || !t.Carries(e.Finalizer) {
				continue
			}
		}
		switch {
		case e.Protection == ByUsage:
			continue // decideUsages.
		case e.Protection == Unprotected:
			e.State = Exposed
			if cyclic {
				e.State = Cyclic
			}
			continue
		case cyclic:
			e.State = Cyclic
		case d.UID == "" || !slices.Contains(d.ObservedFinalizers, ObjectFinalizer):
			// Nothing to declare yet: provider-kubernetes adds its own
			// finalizer once every reference resolves, and only an Object
			// that carries it releases its reference finalizers on deletion.
			e.State = Pending
		case !d.Desired || d.Deleting:
			// The provider removes F(D) once D is gone, and declaring it
			// again would keep R forever.
			e.State, e.Declared = Releasing, t.Desired && t.Carries(e.Finalizer)
		case !t.Desired:
			// Reported, not resurrected.
			e.State = TargetRemoved
		case t.Carries(e.Finalizer):
			e.State, e.Declared = Protected, true
		case t.Deleting:
			// The API server rejects new finalizers on it.
			e.State = TargetDeleting
		default:
			e.State, e.Declared = Declared, true
		}
		if e.Declared {
			if declare[e.Target] == nil {
				declare[e.Target] = map[string]bool{}
			}
			declare[e.Target][e.Finalizer] = true
		}
	}
	for name, set := range declare {
		all := slices.Sorted(maps.Keys(set))
		p.Declare[name] = all
		earlier := p.Nodes[name].DesiredFinalizers
		if missing := slices.DeleteFunc(slices.Clone(all), func(f string) bool { return slices.Contains(earlier, f) }); len(missing) > 0 {
			p.Missing[name] = missing
		}
	}
}

// findStale finds the reference finalizers on observed resources that name
// no Object referencing the resource: edges a finalizer protects, of
// dependents with a UID.
func (p *Plan) findStale() {
	referencing := map[string]map[string]bool{}
	for _, e := range p.Edges {
		// Every edge of an Object is a finalizer's, whatever else protects
		// it, but an inferred one: the provider puts the finalizer only on
		// what spec.references names.
		if p.Nodes[e.Dependent].Object && e.Finalizer != "" && e.Origin != OriginInferred {
			if referencing[e.Target] == nil {
				referencing[e.Target] = map[string]bool{}
			}
			referencing[e.Target][e.Finalizer] = true
		}
	}
	// Report mode labels no dependent, so it can't see one Crossplane is
	// deleting: a finalizer that names no resource it sees is no sure
	// problem there.
	seen := map[string]bool{}
	for _, n := range p.Nodes {
		seen[FinalizerPrefix+n.UID] = n.UID != ""
	}
	for _, name := range p.Names {
		// A resource read from what the function asked for is one
		// Crossplane is deleting: the function reports only on what the
		// composition observes.
		if slices.Contains(p.going, name) {
			continue
		}
		for _, f := range p.Nodes[name].ObservedFinalizers {
			if strings.HasPrefix(f, FinalizerPrefix) && !referencing[name][f] && (p.Enforce() || seen[f]) {
				p.Stale = append(p.Stale, Stale{Resource: name, Finalizer: f})
			}
		}
	}
}

// holdUntilReady holds back every desired resource that doesn't exist yet
// while one of its dependencies isn't observed and ready, all in the same
// pass, so that a fan-out is released at once. Edges inside a cycle broken by
// onCycle: Warning don't hold: nothing in the cycle could ever be created.
func (p *Plan) holdUntilReady() {
	for _, e := range p.Edges {
		d, t := p.Nodes[e.Dependent], p.Nodes[e.Target]
		// An inferred edge orders deletion only; a dependency that can't
		// say it is ready is ready once it exists.
		if !d.Desired || d.Observed || e.State == Cyclic || e.Origin == OriginInferred || (t.Observed && (t.Ready || readyOnceItExists(t.Identity))) {
			continue
		}
		h := p.HeldBack[d.Name]
		if len(h.Unnamed) > 0 {
			continue // Held back for that already.
		}
		h.NotReady = append(h.NotReady, t.Name)
		p.HeldBack[d.Name] = h
		if t.Observed && !p.now.IsZero() && !t.NotReadySince.IsZero() && p.now.Sub(t.NotReadySince) > MaxWait {
			p.Waiting = append(p.Waiting, Waiting{Resource: d.Name, Target: t.Name, Kind: t.Identity.Kind})
		}
	}
	for name := range p.HeldBack {
		delete(p.References, name)
	}
}

// MaxWait is how long a held back resource waits behind an existing
// dependency that isn't ready before it is named: ten minutes.
const MaxWait = 10 * time.Minute

// A Waiting resource waits too long for a dependency of the kind.
type Waiting struct{ Resource, Target, Kind string }

// WaitingMessage is the WaitingTooLong warning's message.
func (p *Plan) WaitingMessage() string {
	items := make([]string, len(p.Waiting))
	for i, w := range p.Waiting {
		items[i] = fmt.Sprintf("%s waits for %s (%s, not ready for over 10 minutes)", w.Resource, w.Target, w.Kind)
	}
	return "resources held back by creation: WaitForReady have waited long for dependencies that exist and are not ready, which may never come if the kind reports no Ready condition: " +
		List(items) + "; mark the dependency ready in an earlier step (patch-and-transform's readinessChecks: [{type: None}], or function-auto-ready before this step), or use creation: Immediate"
}

// readyOnceItExists tells whether a resource of the identity is ready as soon
// as it exists, having no way to say so: a ProviderConfig or
// ClusterProviderConfig of any group, and the core kinds function-auto-ready
// marks ready on sight (ConfigMap, Secret, Namespace, ServiceAccount).
func readyOnceItExists(id Identity) bool {
	switch id.Kind {
	case "ProviderConfig", "ClusterProviderConfig":
		return true
	case "ConfigMap", "Secret", "Namespace", "ServiceAccount":
		return id.Group == ""
	}
	return false
}

// usagesInstead tells whether a Usage protects the edge of an Object instead
// of its finalizer (protection: Usages): one no Usage can express stays the
// finalizer's, which protects it.
func (p *Plan) usagesInstead(e *Edge) bool {
	if p.Input.ObjectEdges() != "Usages" || e.Protection != ByFinalizer {
		return false
	}
	return p.composes(e.Dependent, e.Target) || p.usage(p.Nodes[e.Dependent], refOf(p.Nodes[e.Target]), "", "").Impossible == ""
}

// decideUsages decides the state of every edge a Usage protects, and the
// Usages: one once both ends exist, protecting once observed. An edge no
// Usage can express is left unprotected, or with protection: Both to its
// finalizer.
func (p *Plan) decideUsages() {
	for i := range p.Edges {
		e := &p.Edges[i]
		every := p.Input.ObjectEdges() == "Both" && e.Protection == ByFinalizer
		d, t := p.Nodes[e.Dependent], p.Nodes[e.Target]
		u := p.usage(d, refOf(t), t.Name, t.Name)
		// With finalizers, the Usage observed of an Object's edge stays until
		// the finalizer holds it: switching from Usages leaves no gap.
		handOver := p.Input.ObjectEdges() == "Finalizers" && e.Protection == ByFinalizer && e.State != Protected && u.ObservedAs != ""
		if e.Protection != ByUsage && !every && !handOver && !p.usagesInstead(e) {
			continue
		}
		cyclic := !p.CyclesFatal() && p.SameCycle(e.Dependent, e.Target)
		if takes, observed := p.composedUsage(e, u); takes {
			// The composition's own Usage protects it, as the function's
			// would: the function writes none.
			e.Protection = ByUsage
			switch {
			case cyclic:
				e.State = Cyclic
			case !d.Observed || !t.Observed:
				e.State = Pending
			case t.Deleting:
				e.State = TargetDeleting
			case observed:
				e.State = Protected
			default:
				e.State = Declared
			}
			continue
		}
		state, protection := p.usageState(&u, cyclic, d.Observed && t.Observed)
		if (every || handOver) && protection == Unprotected {
			continue // The finalizer's, as without Usages.
		}
		e.State, e.Protection = state, protection
		if (e.State == Declared || e.State == Protected) && t.Deleting {
			// A Usage can't undo a deletion the API server accepted, observed
			// or not: the target goes first, as with a finalizer it can't be
			// given. One no Usage can express is reported as that.
			e.State = TargetDeleting
			// One already observed stays: it protects nothing now, but
			// dropping it would only have it emitted again, as the Usage of
			// an object outside the composition, once Crossplane stops
			// observing the target.
			if u.ObservedAs == "" {
				p.Usages = slices.DeleteFunc(p.Usages, func(x Usage) bool { return reflect.DeepEqual(x, u) })
			}
		}
	}
	for i := range p.External {
		e := &p.External[i]
		if e.Protection != ByUsage {
			continue
		}
		d := p.Nodes[e.Dependent]
		of := Ref{APIVersion: e.Target.APIVersion, Kind: e.Target.Kind, Namespace: e.Target.Namespace, Name: e.Target.Name}
		u := p.usage(d, of, "", e.Target.Describe())
		if u.Impossible != "" {
			// Unprotected, counted in the summary, and no warning: a
			// reference outside the composite is no problem by itself.
			e.State, e.Protection = Exposed, Unprotected
			continue
		}
		e.State, e.Protection = p.usageState(&u, false, d.Observed)
	}
}

func (p *Plan) usageState(u *Usage, cyclic, exist bool) (EdgeState, Protection) {
	switch {
	case cyclic:
		return Cyclic, ByUsage
	case !exist:
		return Pending, ByUsage
	case u.Impossible != "":
		p.Impossible = append(p.Impossible, *u)
		return Exposed, Unprotected
	}
	p.Usages = append(p.Usages, *u)
	if u.ObservedAs != "" {
		return Protected, ByUsage
	}
	return Declared, ByUsage
}

func refOf(n *Node) Ref {
	return Ref{APIVersion: n.APIVersion, Kind: n.Identity.Kind, Namespace: n.Identity.Namespace, Name: n.Identity.Name}
}

// usage is the Usage of of by the dependent: two namespaced ends get a
// namespaced Usage in the dependent's namespace, two cluster-scoped ends a
// ClusterUsage (or Crossplane v1's Usage); no Usage can express a namespaced
// end and a cluster-scoped one, nor Crossplane v1's a namespaced end.
func (p *Plan) usage(d *Node, of Ref, target, dependency string) Usage {
	by := refOf(d)
	u := Usage{Dependent: d.Name, Target: target, Dependency: dependency, Of: of, By: by, APIVersion: p.Input.UsageAPI, Kind: "Usage"}
	byScoped, ofScoped := by.Namespace != "", of.Namespace != ""
	switch {
	case p.Input.UsageAPI == ApiextensionsAPI && (byScoped || ofScoped):
		u.Impossible = "Crossplane v1's Usages protect cluster-scoped resources only"
	case p.Input.UsageAPI == ApiextensionsAPI:
	case byScoped && ofScoped:
		u.Namespace = by.Namespace
	case !byScoped && !ofScoped:
		u.Kind = "ClusterUsage"
	case byScoped:
		u.Impossible = "a namespaced dependent can't use a cluster-scoped dependency"
	default:
		u.Impossible = "a cluster-scoped dependent can't use a namespaced dependency"
	}
	if u.Impossible == "" {
		u.ObservedAs = p.observedUsage(u)
	}
	return u
}

// observedUsage finds the function's observed Usage of the edge by what it
// says, not by its name, whose form is the function's to choose.
func (p *Plan) observedUsage(u Usage) string {
	want := u.Manifest()
	for _, name := range slices.Sorted(maps.Keys(p.Own)) {
		o := p.Own[name]
		if harness.String(o, "apiVersion") == u.APIVersion && harness.String(o, "kind") == u.Kind && harness.String(o, "metadata", "namespace") == u.Namespace &&
			reflect.DeepEqual(harness.Lookup(o, "spec", "of"), harness.Lookup(want, "spec", "of")) && reflect.DeepEqual(harness.Lookup(o, "spec", "by"), harness.Lookup(want, "spec", "by")) {
			return name
		}
	}
	return ""
}

// condition is the DeletionOrdered condition: False for the worst problem, a
// cycle, then edges nothing protects, then edges whose protection is on its
// way; else True.
func (p *Plan) condition() {
	if len(p.Cycles) > 0 {
		p.Condition = Condition{Reason: "Cycle", Cycles: p.CyclePaths()}
		return
	}
	// list names the edges in the states, and what protects them: one
	// protection, or mixed, each edge then labelled with its own.
	list := func(states ...EdgeState) ([]string, Protection, bool) {
		// The composites of ProviderConfigs outside the composite are
		// listed after the edges, as edges.
		edges := slices.Clone(p.Edges)
		for _, e := range p.External {
			if e.Inferred {
				edges = append(edges, Edge{Dependent: e.Dependent, Target: e.Target.Describe(), Protection: e.Protection, State: e.State})
			}
		}
		var in []Edge
		for _, s := range states {
			for _, e := range edges {
				if e.State == s {
					in = append(in, e)
				}
			}
		}
		mixed := slices.ContainsFunc(in, func(e Edge) bool { return e.Protection != in[0].Protection })
		var out []string
		for _, e := range in {
			name := e.String()
			if mixed {
				name += " (" + map[Protection]string{ByFinalizer: "finalizer", ByUsage: "Usage", Unprotected: "unprotected"}[e.Protection] + ")"
			}
			out = append(out, name)
		}
		if len(in) == 0 {
			return nil, 0, false
		}
		return out, in[0].Protection, mixed
	}
	unprotected := []EdgeState{TargetRemoved, TargetDeleting, Exposed}
	pending := []EdgeState{Pending}
	if p.Enforce() {
		pending = append([]EdgeState{Declared}, pending...)
	} else {
		// Report mode declares nothing: a missing finalizer stays missing.
		unprotected = append(unprotected, Declared)
	}
	if edges, by, mixed := list(unprotected...); len(edges) > 0 {
		p.Condition = Condition{Reason: "UnprotectedEdges", Edges: edges, By: by, Mixed: mixed}
		return
	}
	if edges, by, mixed := list(pending...); len(edges) > 0 {
		reason := map[Protection]string{ByFinalizer: "FinalizersPending", ByUsage: "UsagesPending"}[by]
		if mixed {
			reason = "ProtectionPending"
		}
		p.Condition = Condition{Reason: reason, Edges: edges, By: by, Mixed: mixed}
		return
	}
	p.Condition = Condition{Status: true, Reason: "Protected"}
}

// writeFinalizers works out every kept desired resource's metadata.finalizers:
// the earlier steps' in their order, then, when the plan writes, the missing
// reference finalizers, sorted.
func (p *Plan) writeFinalizers() {
	for _, name := range p.Names {
		n := p.Nodes[name]
		if !n.Desired {
			continue
		}
		if _, held := p.HeldBack[name]; held && p.Writes() {
			continue
		}
		fs := slices.Clone(n.DesiredFinalizers)
		if p.Writes() {
			fs = append(fs, p.Missing[name]...)
		}
		p.Finalizers[name] = fs
		if !p.Writes() || p.XRUID == "" {
			continue
		}
		labels := map[string]string{}
		if n.Object && p.dependent(name) {
			labels[DependentLabel] = p.XRUID
		}
		if n.Object && p.Input.ObjectEdges() == "Usages" && slices.ContainsFunc(p.Edges, func(e Edge) bool { return e.Dependent == name }) {
			labels[ProtectionLabel] = "Usages"
		}
		own := ClusterObjectGroup
		if p.xrNamespaced {
			own = NamespacedObjectGroup
		}
		for _, e := range p.Edges {
			if d := p.Nodes[e.Dependent]; e.Target == name && d.Object && d.Identity.Group != own {
				labels[DependentGroupLabel] = d.Identity.Group
			}
		}
		if len(labels) > 0 {
			p.Labels[name] = labels
		}
	}
}

// dependent tells whether the resource has an edge to another, composed or
// not.
func (p *Plan) dependent(name string) bool {
	return slices.ContainsFunc(p.Edges, func(e Edge) bool { return e.Dependent == name }) ||
		slices.ContainsFunc(p.External, func(e External) bool { return e.Dependent == name })
}

// leaveOutInferredCycles leaves out of the graph every inferred edge whose
// target reaches its dependent through the edges, inferred or not: it would
// close a cycle. Inference guesses, the user's edges are the user's word:
// such an edge is never protected nor judged by onCycle, and a Warning names
// it (InferredCycle), so that turning infer on never fails a step that
// passes without it.
func (p *Plan) leaveOutInferredCycles() {
	if !slices.ContainsFunc(p.Edges, func(e Edge) bool { return e.Origin == OriginInferred }) {
		return
	}
	out := p.successors()
	dist := p.distances(out)
	var kept []Edge
	for _, e := range p.Edges {
		if _, back := dist[e.Target][e.Dependent]; e.Origin == OriginInferred && back {
			p.LeftOut = append(p.LeftOut, LeftOut{Edge: e, Cycle: append([]string{e.Dependent}, way(out, dist, e.Target, e.Dependent)...)})
			continue
		}
		kept = append(kept, e)
	}
	p.Edges = kept
}

// successors are each name's edges' targets, in name order.
func (p *Plan) successors() map[string][]string {
	out := map[string][]string{}
	for _, e := range p.Edges {
		out[e.Dependent] = append(out[e.Dependent], e.Target) // Sorted: edges are.
	}
	return out
}

// distances returns, for each pair of names a and w, the fewest edges, at
// least one, from a to w, when there is a way; breadth first from every
// name.
func (p *Plan) distances(out map[string][]string) map[string]map[string]int {
	dist := map[string]map[string]int{}
	for _, a := range p.Names {
		d := map[string]int{}
		frontier := []string{a}
		for step := 1; len(frontier) > 0; step++ {
			var next []string
			for _, v := range frontier {
				for _, w := range out[v] {
					if _, ok := d[w]; !ok {
						d[w] = step
						next = append(next, w)
					}
				}
			}
			frontier = next
		}
		dist[a] = d
	}
	return dist
}

// way returns the shortest way from one name to another (itself, for a
// cycle), the smallest by name of those: from each name, the smallest next
// one from which the rest is still the fewest edges.
func way(out map[string][]string, dist map[string]map[string]int, from, to string) []string {
	left := func(w string) (int, bool) {
		if w == to {
			return 0, true
		}
		d, ok := dist[w][to]
		return d, ok
	}
	path := []string{from}
	cur := from
	for remaining := dist[from][to]; remaining > 0; remaining-- {
		for _, w := range out[cur] {
			if n, ok := left(w); ok && n == remaining-1 {
				cur = w
				break
			}
		}
		path = append(path, cur)
	}
	return path
}

// findCycles finds every group of nodes that reach each other through edges
// and, for each, the path the README promises. It works from reachability,
// breadth first from every node: slow, and plainly right.
func (p *Plan) findCycles() {
	out := p.successors()
	dist := p.distances(out)
	reaches := func(a, b string) bool { _, ok := dist[a][b]; return ok }
	for _, a := range p.Names {
		if _, done := p.cycleOf[a]; done || !reaches(a, a) {
			continue
		}
		i := len(p.Cycles)
		for _, b := range p.Names {
			if a == b || (reaches(a, b) && reaches(b, a)) {
				p.cycleOf[b] = i
			}
		}
		// a is the group's smallest name: names are sorted.
		p.Cycles = append(p.Cycles, way(out, dist, a, a))
	}
}

// readyCondition is true when the resource's Ready condition is True.
// notReadySince is when an object last stopped being ready: its Ready
// condition's lastTransitionTime while that is not True, else its
// creationTimestamp; zero when ready or unknown.
func notReadySince(r map[string]any) time.Time {
	since := harness.String(r, "metadata", "creationTimestamp")
	conditions, _ := harness.Lookup(r, "status", "conditions").([]any)
	for _, c := range conditions {
		if cm, _ := c.(map[string]any); harness.String(cm, "type") == "Ready" {
			if harness.String(cm, "status") == "True" {
				return time.Time{}
			}
			since = harness.String(cm, "lastTransitionTime")
		}
	}
	t, _ := time.Parse(time.RFC3339, since)
	return t
}

func readyCondition(r map[string]any) bool {
	conditions, _ := harness.Lookup(r, "status", "conditions").([]any)
	for _, c := range conditions {
		if cm, _ := c.(map[string]any); harness.String(cm, "type") == "Ready" {
			return harness.String(cm, "status") == "True"
		}
	}
	return false
}

// SuspectReferences are the references outside the composite that can't be
// what was meant, as the SuspectReference warning names them: the object a
// composed Object's manifest names, rather than the Object; a namespaced
// kind without a namespace (a kind the composition composes in a namespace,
// one of Kubernetes' own namespaced kinds, or a kind of a .m. API group but
// its Cluster kinds), or a reference within a typo of a named composed
// resource: its group, kind, namespace and name together at most two
// letters off (one for a name under eight letters), both with a namespace
// or both without.
func (p *Plan) SuspectReferences() []string {
	var out []string
	for _, e := range p.External {
		t := e.Target.Identity
		if e.Inferred || t.Name == "" {
			continue
		}
		if slices.ContainsFunc(slices.Collect(maps.Values(p.Nodes)), func(n *Node) bool { return n.Object && n.Manages.Name != "" && n.Manages == t }) {
			out = append(out, e.Dependent+" "+t.Describe()+": what an Object manages")
			continue
		}
		if t.Namespace == "" && p.namespaced(t.Group, t.Kind) {
			out = append(out, e.Dependent+" "+t.Describe()+": no namespace")
			continue
		}
		most := 2
		if len(t.Name) < 8 {
			most = 1
		}
		for _, name := range slices.Sorted(maps.Keys(p.Nodes)) {
			id := p.Nodes[name].Identity
			if id.Name == "" || (id.Namespace == "") != (t.Namespace == "") {
				continue
			}
			if d := editDistance(t.Group, id.Group) + editDistance(t.Kind, id.Kind) + editDistance(t.Namespace, id.Namespace) + editDistance(t.Name, id.Name); d <= most {
				out = append(out, e.Dependent+" "+t.Describe()+": a typo of "+name)
				break
			}
		}
	}
	return out
}

func (p *Plan) namespaced(group, kind string) bool {
	for _, n := range p.Nodes {
		if n.Identity.Group == group && n.Identity.Kind == kind && n.Identity.Namespace != "" {
			return true
		}
	}
	switch {
	case strings.Contains(group, ".m."):
		return !strings.HasPrefix(kind, "Cluster")
	case group == "":
		return slices.Contains([]string{"ConfigMap", "Secret", "Service", "ServiceAccount", "PersistentVolumeClaim", "Pod"}, kind)
	}
	return slices.Contains([]string{"apps/Deployment", "apps/StatefulSet", "apps/DaemonSet", "batch/Job", "batch/CronJob",
		"networking.k8s.io/Ingress", "rbac.authorization.k8s.io/Role", "rbac.authorization.k8s.io/RoleBinding"}, group+"/"+kind)
}

// editDistance counts the letters to insert, delete or replace to turn a
// into b, by recursion over the shorter prefixes, remembered.
func editDistance(a, b string) int {
	memo := map[[2]int]int{}
	var d func(i, j int) int
	d = func(i, j int) int {
		if i == 0 || j == 0 {
			return i + j
		}
		if v, ok := memo[[2]int{i, j}]; ok {
			return v
		}
		v := min(d(i-1, j)+1, d(i, j-1)+1)
		if a[i-1] == b[j-1] {
			v = min(v, d(i-1, j-1))
		} else {
			v = min(v, d(i-1, j-1)+1)
		}
		memo[[2]int{i, j}] = v
		return v
	}
	return d(len(a), len(b))
}
