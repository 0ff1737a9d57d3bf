package protection

import (
	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
)

// A Mode is what the input asks to protect the edges a finalizer can
// protect with: those of a provider-kubernetes Object.
type Mode uint8

// The modes.
const (
	// Finalizers protects them with reference finalizers. A Usage observed
	// for one stays while its finalizer doesn't hold yet, so that switching
	// from Usages to finalizers leaves no edge unprotected.
	Finalizers Mode = iota
	// Usages protects them with Usages, and their finalizers give way once
	// the Usage is in force and the target in use; until then a finalizer
	// the target carries stays declared. An edge no Usage can express is
	// left to its finalizer.
	Usages
	// Both protects them with both: a reference finalizer keeps
	// provider-kubernetes v0's Object, not its remote object, so there only
	// a Usage orders the deletion.
	Both
)

// By says what protects an edge: a finalizer, a Usage, both, or nothing (0).
type By uint8

// What protects an edge.
const (
	ByFinalizer By = 1 << iota
	ByUsage
)

// A Verdict is what protects one edge, how, and why.
type Verdict struct {
	By By
	// State is the state of what orders the edge's deletion (Orders):
	// Exposed, or Cyclic for an edge a cycle broke, when nothing does.
	State State
	Why   Why
}

// Orders is what orders the edge's deletion, whose state the verdict says:
// the Usage where both protect (protection: Both), since on
// provider-kubernetes before v1.0 it is what orders the deletion where the
// finalizer doesn't; 0 where nothing protects the edge.
func (v Verdict) Orders() By {
	if v.By&ByUsage != 0 {
		return ByUsage
	}
	return v.By
}

// Options are what the decision reads besides the graph: plain data.
type Options struct {
	Mode Mode
	// Policy says which edges no finalizer can protect get a Usage.
	Policy Policy
	// API is the apiVersion the Usages are written in.
	API API
	// Owner names the composite resource, so that the Usages of two
	// composites never share a name.
	Owner object.Ref
	// Observed are the Usages this function emitted that exist, as
	// observed, by composition resource name. One is an edge's Usage when
	// it names the edge's ends as they are now, whatever its name.
	Observed map[string]map[string]any
	// Composed are the Usages the composition composes itself, as read
	// (ReadComposed), and Labels the composed resources' labels their
	// selectors select by.
	Composed []Composed
	Labels   Labels
	// LeftToUsages are the dependents, by name, whose edges another
	// decision protects with Usages (an Operation's, of the Objects the
	// Composition step labelled): their finalizers give way.
	LeftToUsages map[string]bool
}

// A Plan is what protects each edge, and what the writers write.
type Plan struct {
	// Edges and External are the verdicts of the graph's edges and
	// external edges, by place.
	Edges, External []Verdict

	// Additions holds, for each desired resource that lacks some, the
	// reference finalizers to declare after those earlier steps declared,
	// sorted.
	Additions map[string][]string
	// Declared counts the reference finalizers the desired resources
	// declare for their dependents, whether earlier steps declared them
	// already or not: finalizers, not edges, since two Objects that claim
	// one UID share one.
	Declared int
	// Added counts those of them the observed resources don't carry yet:
	// what this call adds.
	Added int
	// Stale are the reference finalizers on observed resources that name no
	// Object referencing them, sorted by resource, then finalizer.
	Stale []Stale

	// Usages are the Usages to emit, by composition resource name.
	Usages map[string]map[string]any
	// Unusable are the edges a Usage would protect that none can.
	Unusable []Problem
	// Unprotected are the edges the input declares that no finalizer can
	// protect and the policy (None) leaves without a Usage, in the graph's
	// order; an edge a cycle broke is not one of them.
	Unprotected []Edge
}

// Decide decides what protects each of the graph's edges. It reads the
// facts of each edge once (the finalizer its observed target carries, the
// Usage observed for it, the composition's own Usage of it), and decides,
// edge by edge in the graph's order, which protections apply by the mode.
func Decide(g *composed.Graph, o Options) Plan {
	d := decision{
		g: g, o: o, fin: newFinalizers(g),
		use: newUsages(g, usageOptions{
			policy: o.Policy, api: o.API, owner: o.Owner, observed: o.Observed,
			composed: ComposedEdges(g, o.Composed, o.Labels),
		}),
	}
	p := Plan{Edges: make([]Verdict, len(g.Edges)), External: make([]Verdict, len(g.External))}
	for i := range g.Edges {
		p.Edges[i] = d.edge(i)
	}
	for i := range g.External {
		if s, why, ok := d.use.external(i); ok {
			p.External[i] = Verdict{By: ByUsage, State: s, Why: why}
		} else {
			p.External[i] = Verdict{State: Exposed, Why: why}
		}
	}
	p.Additions, p.Declared, p.Added = d.fin.finish()
	p.Stale = d.fin.stale
	p.Usages, p.Unusable, p.Unprotected = d.use.emitted, d.use.unusable, d.use.unprotected
	return p
}

// A decision is the rules' parts, each with what it read of the graph.
type decision struct {
	g   *composed.Graph
	o   Options
	fin *finalizers
	use *usages
}

// edge decides what protects the edge at i: the one place that says, by
// the mode, how its finalizer and its Usage stand to each other.
func (d *decision) edge(i int) Verdict {
	e := d.g.Edges[i]
	if !finalizerCan(d.g, e) {
		us, why, byUsage := d.use.edge(i, noFinalizer)
		return verdictOf(e, Exposed, false, us, byUsage, why)
	}
	var fs, us State
	var byFinalizer, byUsage bool
	var usageWhy Why
	switch d.o.Mode {
	case Usages:
		us, usageWhy, byUsage = d.use.edge(i, instead)
		fs, byFinalizer = d.fin.edge(i, d.yield(e, us, byUsage))
	case Both:
		fs, byFinalizer = d.fin.edge(i, Keep)
		us, usageWhy, byUsage = d.use.edge(i, too)
	default:
		y := Keep
		if d.o.LeftToUsages[e.Dependent] {
			y = Yielded
		}
		fs, byFinalizer = d.fin.edge(i, y)
		a := finalizerHolds
		if !fs.Holds() {
			a = handingOver
		}
		us, usageWhy, byUsage = d.use.edge(i, a)
	}
	v := verdictOf(e, fs, byFinalizer, us, byUsage, 0)
	v.Why = whyOf(d.o.Mode, v.By, usageWhy)
	return v
}

// yield is how, with protection: Usages, the finalizer of edge e gives way
// to its Usage, in state us when byUsage: once the Usage is in force and
// the target in use, which is what Crossplane's webhook selects; until
// then only a finalizer the target carries stays declared.
func (d *decision) yield(e composed.Edge, us State, byUsage bool) Yield {
	switch {
	case !byUsage:
		return Keep // No Usage can express the edge.
	case us.Holds() && d.g.Resources[e.TargetAt].Observed.InUse:
		return Yielded
	default:
		return HandOver
	}
}

// verdictOf is the verdict of edge e: protected by a finalizer in state fs
// when byFinalizer, by a Usage in state us when byUsage.
func verdictOf(e composed.Edge, fs State, byFinalizer bool, us State, byUsage bool, why Why) Verdict {
	v := Verdict{State: Exposed, Why: why}
	if e.Broken {
		v.State = Cyclic
	}
	if byFinalizer {
		v.By, v.State = ByFinalizer, fs
	}
	if byUsage {
		v.By, v.State = v.By|ByUsage, us
	}
	return v
}

// A Why says why an edge is protected as it is.
type Why uint8

// The reasons.
const (
	// WhyNotAsked: no finalizer can protect the edge, and no Usage is asked
	// for (Policy None).
	WhyNotAsked Why = iota
	// WhyFinalizers: the finalizer protects the Object's edge (protection:
	// Finalizers).
	WhyFinalizers
	// WhyUsages: a Usage protects the Object's edge, and its finalizer has
	// given way (protection: Usages).
	WhyUsages
	// WhyBoth: both protect the Object's edge (protection: Both).
	WhyBoth
	// WhyHandOver: the protection is switching between finalizers and
	// Usages: the one in place stays until the other holds.
	WhyHandOver
	// WhyNoFinalizer: no finalizer can protect the edge (an inferred one, a
	// declared one of a resource that is no Object, one outside the
	// composition): the function's Usage does.
	WhyNoFinalizer
	// WhyComposedUsage: a Usage the composition composes itself protects
	// the edge.
	WhyComposedUsage
	// WhyNoUsage: no Usage can express the edge: its finalizer alone
	// protects it, or nothing.
	WhyNoUsage
	// WhyLeftToUsages: the dependent's edges are left to Usages another
	// decision protects them with (Options.LeftToUsages).
	WhyLeftToUsages
)

// whyOf is why an edge a finalizer can protect is protected by by, in the
// mode; usageWhy is the Usage rule's.
func whyOf(mode Mode, by By, usageWhy Why) Why {
	switch {
	case by&ByUsage != 0 && usageWhy == WhyComposedUsage:
		return WhyComposedUsage
	case by == ByFinalizer|ByUsage && mode == Both:
		return WhyBoth
	case by == ByFinalizer|ByUsage, by == ByUsage && mode == Finalizers:
		return WhyHandOver
	case by == ByUsage:
		return WhyUsages
	case by == ByFinalizer && mode == Finalizers:
		return WhyFinalizers
	case by == ByFinalizer:
		return WhyNoUsage
	default:
		return WhyLeftToUsages
	}
}
