// Package usage decides the Crossplane Usages that protect edges no reference
// finalizer can protect: which edges get one, its name, its state, and which
// no Usage can express. A Usage of the dependency by the dependent keeps the
// dependency from being deleted while the dependent exists.
package usage

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/finalizer"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
	"github.com/crossplane-contrib/function-dependencies/internal/protection"
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

// An Edge is a dependency to protect.
type Edge struct {
	// Key is the composition resource name of the edge's Usage.
	Key string
	// Dependent and Dependency describe the ends for the Usage's reason.
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

// Objects says how a Usage protects the edges a finalizer can protect:
// those of a provider-kubernetes Object to another composed resource.
type Objects int

// The ways.
const (
	// Finalizers leaves them to their finalizers. A Usage observed for one
	// stays while HandOver says its finalizer doesn't hold it yet, so that
	// switching from Usages to finalizers leaves no edge unprotected.
	Finalizers Objects = iota
	// Instead protects them with a Usage, and their finalizers give way to
	// it. An edge no Usage can express is left to its finalizer, which
	// protects it: no problem to report.
	Instead
	// Too protects them with a Usage as well as their finalizers: a
	// reference finalizer keeps provider-kubernetes v0's Object, not its
	// remote object, so there only a Usage orders the deletion.
	Too
)

// Options say which Usages to write, and how.
type Options struct {
	Policy  Policy
	Objects Objects
	// HandOver says, with Finalizers, of an edge by its place in the
	// graph's edges, whether its finalizer doesn't hold it yet.
	HandOver func(edge int) bool
	// API is the apiVersion the Usages are written in.
	API API
	// Owner names the composite resource, so that the Usages of two
	// composites never share a name.
	Owner object.Ref
	// Observed are the Usages this function emitted that exist, as
	// observed, by composition resource name. One is an edge's Usage when
	// it names the edge's ends as they are now (keyOf). An edge whose Usage
	// one of them already is keeps that Usage's name when the edge's own key
	// changes: when its dependency leaves the composition, Crossplane stops
	// observing it, and the edge's key becomes that of an object outside the
	// composition.
	Observed map[string]map[string]any
	// Composed are the edges between composed resources that Usages the
	// composition composes itself protect, by their ends, and whether one
	// exists (ComposedEdges). Such an edge gets no Usage of this function
	// once one of those exists; until then an observed one of the
	// function's stays, so that no edge is unprotected in between.
	Composed map[Ends]bool
}

// keyOf returns the edge's key, or the name of the observed Usage that is
// already the edge's Usage, and not taken; and whether the edge's Usage is
// observed. An observed Usage is the edge's when it says what the edge's
// would: of and by the edge's ends as they are now, whatever its name. One
// under the edge's key that names another object is not: a dependent with a
// generated name that was deleted is created again under a new name, and
// the old Usage names the one that is gone, which Crossplane's Usage
// controller lets the Usage be deleted for at once, while the new dependent
// lives.
func (o Options) keyOf(e Edge, taken map[string]map[string]any) (string, bool) {
	if len(o.Observed) == 0 {
		return e.Key, false
	}
	u, why := write(o.API, o.Owner, e)
	if why != "" {
		return e.Key, false // No Usage can be the edge's.
	}
	if sameUsage(o.Observed[e.Key], u) {
		return e.Key, true
	}
	for _, name := range slices.Sorted(maps.Keys(o.Observed)) {
		if _, ok := taken[name]; !ok && sameUsage(o.Observed[name], u) {
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

// A Plan is the Usages that protect the graph's edges.
type Plan struct {
	// States holds the state of each composed edge a Usage protects, by its
	// place in the graph's edges; External, of each external edge, by its
	// place in the graph's external edges.
	States, External map[int]protection.State
	// Usages are the Usages to emit, by composition resource name.
	Usages map[string]map[string]any
	// Unusable are the edges a Usage would protect that none can: they are
	// not in States or External.
	Unusable []Problem
	// Unprotected are the edges the input declares that no finalizer can
	// protect and the policy (None) leaves without a Usage, in the graph's
	// order; an edge a cycle broke is not one of them.
	Unprotected []Edge
}

// Decide returns the Usages the graph's edges need. A Usage protects an edge
// that no finalizer protects, or one a finalizer does, as the options say; it
// is emitted once both ends exist, unless the target is being deleted
// already, which no Usage can undo: one observed then stays.
func Decide(g *composed.Graph, o Options) Plan {
	p := Plan{States: map[int]protection.State{}, External: map[int]protection.State{}, Usages: map[string]map[string]any{}}
	// emit writes the edge's Usage when it is due, and says whether a Usage
	// can protect it at all; report says whether to report an edge none can
	// once both its ends exist. One not reported is left out at once.
	emit := func(e Edge, state protection.State, observed, report bool) bool {
		u, why := write(o.API, o.Owner, e)
		if why != "" && !report {
			return false
		}
		if !state.Live() && state != protection.TargetDeleting { // An end doesn't exist, or the edge is broken.
			return true
		}
		if why != "" {
			p.Unusable = append(p.Unusable, Problem{Edge: e, Reason: why})
			return false
		}
		// A Usage can't undo an accepted deletion, so none is emitted for a
		// target being deleted; one already observed stays, since dropping
		// it would only have it emitted again, as the Usage of an object
		// outside the composition, once Crossplane stops observing the
		// target.
		if state != protection.TargetDeleting || observed {
			p.Usages[e.Key] = u
		}
		return true
	}
	for i, ge := range g.Edges {
		d, t := &g.Resources[ge.DependentAt], &g.Resources[ge.TargetAt]
		handOver := false
		byFinalizer := finalizer.Protects(g, ge)
		composedObserved, hasComposed := o.Composed[Ends{Dependent: ge.DependentAt, Target: ge.TargetAt}]
		switch {
		case ge.Origin == composed.FromInference:
			// Always a Usage: inference is asked for to order deletion, and
			// no finalizer protects such an edge.
		case !byFinalizer:
			if o.Policy == None && !hasComposed {
				if !ge.Broken {
					p.Unprotected = append(p.Unprotected, Edge{Key: Key(d.Name, t.Name), Dependent: d.Name, Target: t.Name, DependentRef: d.Ref(), TargetRef: t.Ref()})
				}
				continue
			}
		case o.Objects == Finalizers:
			if o.HandOver == nil || !o.HandOver(i) {
				continue
			}
			handOver = true
		}
		e := Edge{Key: Key(d.Name, t.Name), Dependent: d.Name, Target: t.Name, DependentRef: d.Ref(), TargetRef: t.Ref()}
		var observed bool
		e.Key, observed = o.keyOf(e, p.Usages)
		if handOver && !observed {
			continue
		}
		if hasComposed && (composedObserved || !observed) {
			// The composition's own Usage protects the edge, by its state.
			p.States[i] = stateOf(d, t, composedObserved, ge.Broken)
			continue
		}
		state := stateOf(d, t, observed, ge.Broken)
		if emit(e, state, observed, !byFinalizer || o.Objects == Too) {
			p.States[i] = state
		}
	}
	for i, ge := range g.External {
		if o.Policy == None && ge.Origin != composed.FromInference {
			// An inferred dependency outside the composite gets a Usage as
			// an inferred edge does.
			continue
		}
		d, t := g.Resource(ge.Dependent), ge.Target
		e := Edge{
			Key: ExternalKey(d.Name, t.Group, t.Kind, t.Namespace, t.Name), Dependent: d.Name, Target: t.String(),
			DependentRef: d.Ref(), TargetRef: t.Ref,
		}
		var observed bool
		e.Key, observed = o.keyOf(e, p.Usages)
		state := stateOf(d, nil, observed, false)
		if emit(e, state, observed, true) {
			p.External[i] = state
		}
	}
	return p
}

// stateOf is the state of an edge a Usage protects: protected once the Usage
// is observed, declared once both ends exist (t is nil for an external
// dependency, which the function can't see), else pending.
func stateOf(d, t *composed.Resource, observed, broken bool) protection.State {
	switch {
	case broken:
		return protection.Cyclic
	case d.Observed == nil || (t != nil && t.Observed == nil):
		return protection.Pending
	case t != nil && t.Observed.Deleting:
		// A Usage can't undo a deletion the API server accepted, observed
		// or not: the target goes first, as with a finalizer it can't be
		// given.
		return protection.TargetDeleting
	case observed:
		return protection.Protected
	default:
		return protection.Declared
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
