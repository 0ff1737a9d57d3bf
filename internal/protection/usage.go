package protection

// The Usage rule: the Crossplane Usages that protect edges, which edges get
// one, its name, its state, and which no Usage can express. A Usage of the
// dependency by the dependent keeps the dependency from being deleted while
// the dependent exists.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
)

// Key is the composition resource name of the Usage of the edge from one
// composed resource to another. The dependent's length comes first so that
// no two edges share a key: a → b-c and a-b → c would otherwise both be
// usage-a-b-c.
func Key(dependent, dependency string) string {
	return fmt.Sprintf("usage-%d-%s-%s", len(dependent), dependent, dependency)
}

// ExternalKey is the composition resource name of the Usage of the edge from
// a composed resource to an object this composite doesn't compose. The "x"
// after the length sets it apart from every Key; the object is named by kind,
// group, namespace and name, none of which can hold a "/", and a kind no ".".
func ExternalKey(dependent, group, kind, namespace, name string) string {
	return fmt.Sprintf("usage-%dx-%s-%s.%s/%s/%s", len(dependent), dependent, strings.ToLower(kind), group, namespace, name)
}

// maxName is the longest name a Usage gets: a label's length, so that the
// name is valid wherever Kubernetes puts it.
const maxName = 63

// An Edge is a dependency a Usage would protect.
type Edge struct {
	// Key is the composition resource name of the edge's Usage.
	Key string
	// Dependent and Target describe the ends for the Usage's reason.
	Dependent, Target string
	// By uses Of: Of can't be deleted while By exists.
	DependentRef, TargetRef object.Ref
}

// A Problem is an edge no Usage of the API can protect, and why.
type Problem struct {
	Edge   Edge
	Reason string
}

// Policy says which of the edges no finalizer protects a Usage protects.
// An inferred edge gets one whatever it says.
type Policy int

// The policies.
const (
	// None protects no edge with a Usage but the inferred ones. The edges
	// the input declares that no finalizer can protect are left
	// unprotected, and listed (Plan.Unprotected).
	None Policy = iota
	// Every protects every edge no finalizer protects: those the input
	// declares that no finalizer can, and those to objects outside the
	// composition.
	Every
)

// alongside says, of an edge, how a Usage stands to its finalizer: the
// mode's choice (Decide) for an edge a finalizer can protect.
type alongside uint8

const (
	// noFinalizer: no finalizer can protect the edge; the policy says
	// whether a Usage does.
	noFinalizer alongside = iota
	// finalizerHolds: with finalizers, the edge's finalizer is in place,
	// and no Usage is kept.
	finalizerHolds
	// handingOver: with finalizers, the edge's finalizer is not in place
	// yet: the Usage observed for it stays until it is, so that switching
	// from Usages to finalizers leaves no edge unprotected. None is made.
	handingOver
	// instead: a Usage protects the edge, and its finalizer gives way to
	// it. An edge no Usage can express is left to its finalizer, which
	// protects it: no problem to report.
	instead
	// too: a Usage protects the edge as well as its finalizer: a reference
	// finalizer keeps provider-kubernetes v0's Object, not its remote
	// object, so there only a Usage orders the deletion.
	too
)

// usageOptions are what the Usage rule reads besides the graph.
type usageOptions struct {
	policy Policy
	// api is the apiVersion the Usages are written in.
	api API
	// owner names the composite resource, so that the Usages of two
	// composites never share a name.
	owner object.Ref
	// observed are the Usages this function emitted that exist, as
	// observed, by composition resource name (Options.Observed).
	observed map[string]map[string]any
	// composed are the edges between composed resources that Usages the
	// composition composes itself protect, by their ends, and whether one
	// exists (ComposedEdges). Such an edge gets no Usage of this function
	// once one of those exists; until then an observed one of the
	// function's stays, so that no edge is unprotected in between.
	composed map[Ends]bool
}

// usages is the Usage rule's part of a decision: the Usages it emits, edge
// by edge, in the graph's order, and what it can't protect.
type usages struct {
	g *composed.Graph
	o usageOptions
	// emitted are the Usages to emit, by composition resource name.
	emitted map[string]map[string]any
	// unusable are the edges a Usage would protect that none can.
	unusable []Problem
	// unprotected are the edges the input declares that no finalizer can
	// protect and the policy (None) leaves without a Usage, in the graph's
	// order; an edge a cycle broke is not one of them.
	unprotected []Edge
}

func newUsages(g *composed.Graph, o usageOptions) *usages {
	return &usages{g: g, o: o, emitted: map[string]map[string]any{}}
}

// edge decides the Usage of the edge at i, as it stands to the edge's
// finalizer (a): its state, why, and false when no Usage protects it. A
// Usage is emitted once both ends exist, unless the target is being
// deleted already, which no Usage can undo: one observed then stays.
func (u *usages) edge(i int, a alongside) (State, Why, bool) {
	if a == finalizerHolds || (a == handingOver && len(u.o.observed) == 0) {
		return Exposed, WhyFinalizers, false // No Usage to hand over.
	}
	ge := u.g.Edges[i]
	d, t := &u.g.Resources[ge.DependentAt], &u.g.Resources[ge.TargetAt]
	composedObserved, hasComposed := u.o.composed[Ends{Dependent: ge.DependentAt, Target: ge.TargetAt}]
	if a == noFinalizer && ge.Origin != composed.FromInference && u.o.policy == None && !hasComposed {
		// An inferred edge always gets a Usage: inference is asked for to
		// order deletion, and no finalizer protects such an edge.
		if !ge.Broken {
			u.unprotected = append(u.unprotected, Edge{Key: Key(d.Name, t.Name), Dependent: d.Name, Target: t.Name, DependentRef: d.Ref(), TargetRef: t.Ref()})
		}
		return Exposed, WhyNotAsked, false
	}
	e := Edge{Key: Key(d.Name, t.Name), Dependent: d.Name, Target: t.Name, DependentRef: d.Ref(), TargetRef: t.Ref()}
	var observed bool
	e.Key, observed = u.keyOf(e)
	if a == handingOver && !observed {
		return Exposed, WhyFinalizers, false
	}
	if hasComposed && (composedObserved || !observed) {
		// The composition's own Usage protects the edge, by its state.
		return usageState(d, t, composedObserved, ge.Broken), WhyComposedUsage, true
	}
	state := usageState(d, t, observed, ge.Broken)
	if u.emit(e, state, observed, a == noFinalizer || a == too) {
		return state, WhyNoFinalizer, true
	}
	return Exposed, WhyNoUsage, false
}

// external decides the Usage of the external edge at i: its state, why, and
// false when no Usage protects it.
func (u *usages) external(i int) (State, Why, bool) {
	ge := u.g.External[i]
	if u.o.policy == None && ge.Origin != composed.FromInference {
		// An inferred dependency outside the composite gets a Usage as an
		// inferred edge does.
		return Exposed, WhyNotAsked, false
	}
	d, t := u.g.Resource(ge.Dependent), ge.Target
	e := Edge{
		Key: ExternalKey(d.Name, t.Group, t.Kind, t.Namespace, t.Name), Dependent: d.Name, Target: t.String(),
		DependentRef: d.Ref(), TargetRef: t.Ref,
	}
	var observed bool
	e.Key, observed = u.keyOf(e)
	state := usageState(d, nil, observed, false)
	// One no Usage can express is left unprotected without a warning: a
	// reference outside the composite is no problem by itself, and the
	// summary counts it unprotected.
	if u.emit(e, state, observed, false) {
		return state, WhyNoFinalizer, true
	}
	return Exposed, WhyNoUsage, false
}

// emit writes the edge's Usage when it is due, and says whether a Usage can
// protect it at all; report says whether to report an edge none can once
// both its ends exist. One not reported is left out at once.
func (u *usages) emit(e Edge, state State, observed, report bool) bool {
	w, why := write(u.o.api, u.o.owner, e)
	if why != "" && !report {
		return false
	}
	if !state.Live() && state != TargetDeleting { // An end doesn't exist, or the edge is broken.
		return true
	}
	if why != "" {
		u.unusable = append(u.unusable, Problem{Edge: e, Reason: why})
		return false
	}
	// A Usage can't undo an accepted deletion, so none is emitted for a
	// target being deleted; one already observed stays, since dropping it
	// would only have it emitted again, as the Usage of an object outside
	// the composition, once Crossplane stops observing the target.
	if state != TargetDeleting || observed {
		u.emitted[e.Key] = w
	}
	return true
}

// keyOf returns the edge's key, or the name of the observed Usage that is
// already the edge's Usage, and not emitted yet; and whether the edge's
// Usage is observed. An observed Usage is the edge's when it says what the
// edge's would: of and by the edge's ends as they are now, whatever its
// name. One under the edge's key that names another object is not: a
// dependent with a generated name that was deleted is created again under
// a new name, and the old Usage names the one that is gone, which
// Crossplane's Usage controller lets the Usage be deleted for at once,
// while the new dependent lives. An edge whose Usage one of them already is
// keeps that Usage's name when the edge's own key changes: when its
// dependency leaves the composition, Crossplane stops observing it, and the
// edge's key becomes that of an object outside the composition.
func (u *usages) keyOf(e Edge) (string, bool) {
	if len(u.o.observed) == 0 {
		return e.Key, false
	}
	w, why := write(u.o.api, u.o.owner, e)
	if why != "" {
		return e.Key, false // No Usage can be the edge's.
	}
	if sameUsage(u.o.observed[e.Key], w) {
		return e.Key, true
	}
	for _, name := range slices.Sorted(maps.Keys(u.o.observed)) {
		if _, ok := u.emitted[name]; !ok && sameUsage(u.o.observed[name], w) {
			return name, true
		}
	}
	return e.Key, false
}

// sameUsage tells whether two Usages are one: of the same kind, in the same
// namespace, of and by the same resources.
func sameUsage(a, b map[string]any) bool {
	field := func(m map[string]any, path ...string) any {
		var v any = m
		for _, k := range path {
			mm, _ := v.(map[string]any)
			v = mm[k]
		}
		return v
	}
	for _, path := range [][]string{{"apiVersion"}, {"kind"}, {"metadata", "namespace"}, {"spec", "of"}, {"spec", "by"}} {
		if !reflect.DeepEqual(field(a, path...), field(b, path...)) {
			return false
		}
	}
	return true
}

// usageState is the state of an edge a Usage protects: protected once the Usage
// is observed, declared once both ends exist (t is nil for an external
// dependency, which the function can't see), else pending.
func usageState(d, t *composed.Resource, observed, broken bool) State {
	switch {
	case broken:
		return Cyclic
	case d.Observed == nil || (t != nil && t.Observed == nil):
		return Pending
	case t != nil && t.Observed.Deleting:
		// A Usage can't undo a deletion the API server accepted, observed
		// or not: the target goes first, as with a finalizer it can't be
		// given.
		return TargetDeleting
	case observed:
		return Protected
	default:
		return Declared
	}
}

func write(api API, owner object.Ref, e Edge) (map[string]any, string) {
	byScoped, ofScoped := e.DependentRef.Namespace != "", e.TargetRef.Namespace != ""
	kind := "Usage"
	metadata := map[string]any{"name": name(owner, e.Key), "labels": map[string]any{protocol.UsageLabel: "true"}}
	of := ref(e.TargetRef, false)
	switch {
	case api == Apiextensions && (byScoped || ofScoped):
		return nil, string(Apiextensions) + " Usages protect cluster-scoped resources only"
	case api == Apiextensions:
	case byScoped && ofScoped:
		metadata["namespace"] = e.DependentRef.Namespace
		// A Usage's references are in its own namespace unless they say
		// otherwise, which only the used resource may.
		of = ref(e.TargetRef, e.TargetRef.Namespace != e.DependentRef.Namespace)
	case !byScoped && !ofScoped:
		kind = "ClusterUsage"
	case byScoped:
		return nil, fmt.Sprintf("the dependent is namespaced and the dependency is cluster-scoped: a namespaced Usage can't refer to a cluster-scoped %s, and a ClusterUsage can't refer to a namespaced %s", e.TargetRef.Kind, e.DependentRef.Kind)
	default:
		return nil, fmt.Sprintf("the dependent is cluster-scoped and the dependency is namespaced: a ClusterUsage can't refer to a namespaced %s, and a namespaced Usage can't be used by a cluster-scoped %s", e.TargetRef.Kind, e.DependentRef.Kind)
	}
	return map[string]any{
		"apiVersion": string(api),
		"kind":       kind,
		"metadata":   metadata,
		"spec": map[string]any{
			"of":             of,
			"by":             ref(e.DependentRef, false),
			"reason":         fmt.Sprintf("%s depends on %s (function-dependencies)", e.Dependent, e.Target),
			"replayDeletion": true,
		},
	}, ""
}

func ref(r object.Ref, withNamespace bool) map[string]any {
	resourceRef := map[string]any{"name": r.Name}
	if withNamespace {
		resourceRef["namespace"] = r.Namespace
	}
	return map[string]any{"apiVersion": r.APIVersion, "kind": r.Kind, "resourceRef": resourceRef}
}

// name is the Usage's name: readable from its key, and unique by a hash of
// the owner and the key, within maxName characters.
func name(owner object.Ref, key string) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{owner.APIVersion, owner.Kind, owner.Namespace, owner.Name, key}, "/")))
	suffix := "-" + hex.EncodeToString(sum[:])[:8]
	var b strings.Builder
	for _, c := range strings.ToLower(key) {
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	readable := strings.Trim(b.String(), "-")
	if len(readable) > maxName-len(suffix) {
		readable = strings.TrimRight(readable[:maxName-len(suffix)], "-")
	}
	return readable + suffix
}
