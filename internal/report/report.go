// Package report turns what the rules decided into what the user sees: the
// DeletionOrdered condition on the composite and the results of the step.
package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/explicit"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
	"github.com/crossplane-contrib/function-dependencies/internal/protection"
	"github.com/crossplane-contrib/function-dependencies/internal/report/message"
	"github.com/crossplane-contrib/function-dependencies/internal/suspect"
)

// ConditionType is the type of the condition the function sets on the
// composite resource.
const ConditionType = "DeletionOrdered"

// Reasons of the condition and of the results.
const (
	ReasonProtected         = "Protected"
	ReasonFinalizersPending = "FinalizersPending"
	ReasonUsagesPending     = "UsagesPending"
	ReasonProtectionPending = "ProtectionPending"
	ReasonUnprotectedEdges  = "UnprotectedEdges"
	ReasonCycle             = "Cycle"

	ReasonSummary          = "Summary"
	ReasonStaleFinalizer   = "StaleFinalizer"
	ReasonInvalidReference = "InvalidReference"
	ReasonTargetRemoved    = "ReferencedResourceRemoved"
	ReasonTargetDeleting   = "ReferencedResourceDeleting"
	ReasonInvalidResource  = "InvalidResource"
	ReasonHeldBack         = "HeldBack"
	ReasonUnmatched        = "UnmatchedDependency"
	ReasonUsageImpossible  = "UsageImpossible"
	ReasonInferredCycle    = "InferredCycle"
	ReasonUnprotectedDeps  = "UnprotectedDependencies"
	ReasonShared           = "SharedObject"
	ReasonWaitingTooLong   = "WaitingTooLong"
	ReasonSuspect          = "SuspectReference"
)

// Severity of a result.
type Severity int

// The severities of results.
const (
	Normal Severity = iota
	Warning
	Fatal
)

// A Result is one result of the step.
type Result struct {
	Severity Severity
	Reason   string
	Message  string
}

// A Condition is the DeletionOrdered condition.
type Condition struct {
	Status  bool
	Reason  string
	Message string
}

// An InvalidReference is a reference of a composed resource that can't be
// resolved, or that resolves differently than it seems to.
type InvalidReference struct {
	Resource string
	Problem  string
}

// A Waiting resource is held back behind a dependency that exists and has
// not been ready for longer than the step waits in silence.
type Waiting struct {
	Resource, Target string
	// Kind is the target's, which may be one that never reports Ready.
	Kind string
}

// Protection says what keeps an edge's target from being deleted first.
type Protection uint8

// The protections of edges.
const (
	// ByFinalizer: the target declares the dependent's reference finalizer.
	ByFinalizer Protection = iota
	// ByUsage: a Crossplane Usage of the target by the dependent.
	ByUsage
	// Unprotected: nothing; the function can't, or wasn't asked to.
	Unprotected
)

// An Edge is an edge of the graph, with what protects it.
type Edge struct {
	composed.Edge
	Protection Protection
	State      protection.State
}

// An External edge is an external edge of the graph, with what protects it.
type External struct {
	composed.External
	Protection Protection
	State      protection.State
}

// EdgesOf returns the graph's edges and external edges, in its order, each
// with what orders its deletion as the protection rules decided (p).
func EdgesOf(g *composed.Graph, p protection.Plan) ([]Edge, []External) {
	v := verdictsOf(p)
	edges := make([]Edge, len(g.Edges))
	for i, e := range g.Edges {
		edges[i] = Edge{Edge: e, Protection: v.edges[i].protection, State: v.edges[i].state}
	}
	external := make([]External, len(g.External))
	for i, e := range g.External {
		external[i] = External{External: e, Protection: v.external[i].protection, State: v.external[i].state}
	}
	return edges, external
}

// A verdict is what orders an edge's deletion, in words, and its state.
type verdict struct {
	protection Protection
	state      protection.State
}

// verdicts are those of the graph's edges and external edges, by place.
type verdicts struct{ edges, external []verdict }

// verdictsOf words the protection rules' verdicts.
func verdictsOf(p protection.Plan) verdicts {
	word := func(vs []protection.Verdict) []verdict {
		out := make([]verdict, len(vs))
		for i, v := range vs {
			out[i] = verdict{wordOf(v.Orders()), v.State}
		}
		return out
	}
	return verdicts{edges: word(p.Edges), external: word(p.External)}
}

// wordOf is the word for what orders an edge's deletion.
func wordOf(by protection.By) Protection {
	switch by {
	case protection.ByFinalizer:
		return ByFinalizer
	case protection.ByUsage:
		return ByUsage
	default:
		return Unprotected
	}
}

// Facts are what the report is made of.
type Facts struct {
	Graph *composed.Graph
	// Protection is what the protection rules decided.
	Protection protection.Plan
	References explicit.References
	HeldBack   map[string]string
	// Waiting are the held back resources that have waited too long.
	Waiting []Waiting
	Invalid []InvalidReference
	// Suspect are the references that can't be what their author meant.
	Suspect []suspect.Reference
	// Unmatched are the input's dependencies that match no resource.
	Unmatched []explicit.Unmatched
	// NotInferred counts the reference fields inference found several
	// candidates for and nothing that singles out one: it infers no edge
	// for them rather than guess.
	NotInferred int

	// Enforce is true when the plan's finalizers are written to desired
	// state, false when they are only reported.
	Enforce bool
	// CyclesFatal is true when a cycle fails the step.
	CyclesFatal bool
}

// A Report is what the step tells the user.
type Report struct {
	// Condition's message ends with the Summary.
	Condition Condition
	// Results need attention: a Normal one when the function changes what
	// is observed (or, in Report mode, would), Warnings for problems.
	Results []Result
	// Summary counts what the function found and declared.
	Summary string
}

// Of returns the report, its results in a fixed order.
func Of(f Facts) Report {
	var results []Result
	add := func(s Severity, reason, message string) {
		results = append(results, Result{Severity: s, Reason: reason, Message: message})
	}
	g := f.Graph
	v := verdictsOf(f.Protection)
	states := statesOf(g.Edges, v.edges)
	summary := summaryOf(f, states, v)
	// An inferred dependency outside the composite is ordered as an inferred
	// edge is: the condition says what of it is pending, as of the others.
	edges, edgeVerdicts := g.Edges, v.edges
	for i, e := range g.External {
		if e.Origin == composed.FromInference {
			edges = append(slices.Clip(edges), composed.Edge{Dependent: e.Dependent, Target: e.Target.String(), Origin: e.Origin, Via: e.Via})
			edgeVerdicts = append(slices.Clip(edgeVerdicts), v.external[i])
		}
	}
	ordered := statesOf(edges, edgeVerdicts)
	if len(g.Cycles) > 0 && f.CyclesFatal {
		add(Fatal, ReasonCycle, "cannot order deletion: references form a cycle: "+CyclePaths(g.Cycles))
	}
	if changes(f, v) {
		add(Normal, ReasonSummary, summary)
	}

	removed := map[string][]string{}
	for i, e := range g.Edges {
		if v.edges[i].state == protection.TargetRemoved {
			removed[e.Target] = append(removed[e.Target], e.Dependent)
		}
	}
	if len(g.Cycles) > 0 && !f.CyclesFatal {
		add(Warning, ReasonCycle, "references form a cycle, so nothing protects its edges and no dependsOn is written on them: "+CyclePaths(g.Cycles))
	}
	if left := g.LeftOut; len(left) > 0 {
		// Whatever onCycle says: it governs the declared edges. An inferred
		// edge is a guess, and one that would close a cycle never fails the
		// step.
		add(Warning, ReasonInferredCycle, "inferred references would close a cycle, so they are left out and nothing orders their deletion: "+
			message.ListOf(left, func(l composed.LeftOut) string {
				return fmt.Sprintf("%s → %s (via %s; cycle %s)", l.Edge.Dependent, l.Edge.Target, l.Edge.Via, composed.Path(g.Closes(l)))
			}))
	}
	if targets := slices.Sorted(maps.Keys(removed)); len(targets) > 0 {
		add(Warning, ReasonTargetRemoved, "the composition no longer includes resources that live Objects still reference, so they may be deleted first: "+
			message.ListOf(targets, func(t string) string { return fmt.Sprintf("%s (referenced by %s)", t, message.List(removed[t])) }))
	}
	if edges, n := states.list(false, protection.TargetDeleting); n > 0 {
		add(Warning, ReasonTargetDeleting, "referenced resources are being deleted without their dependents' finalizers, which can no longer be added: "+edges)
	}
	if stale := staleOf(f); len(stale) > 0 {
		add(Warning, ReasonStaleFinalizer, "reference finalizers name no Object that references the resource in this composition, so they are not declared: Crossplane drops those only it applied, and any the provider added stay until their Object, if it still exists, releases them or someone removes them (provider-kubernetes #28): "+
			message.ListOf(stale, func(s protection.Stale) string { return s.Resource + " " + s.Finalizer + " (" + staleWhose(g, s) + ")" }))
	}
	if len(f.HeldBack) > 0 {
		add(Normal, ReasonHeldBack, "resources are held back from creation until their dependencies allow: "+
			message.ListOf(slices.Sorted(maps.Keys(f.HeldBack)), func(n string) string { return fmt.Sprintf("%s (%s)", n, f.HeldBack[n]) }))
	}
	if len(f.Waiting) > 0 {
		add(Warning, ReasonWaitingTooLong, "resources held back by creation: WaitForReady have waited long for dependencies that exist and are not ready, which may never come if the kind reports no Ready condition: "+
			message.ListOf(f.Waiting, func(w Waiting) string {
				return fmt.Sprintf("%s waits for %s (%s, not ready for over 10 minutes)", w.Resource, w.Target, w.Kind)
			})+"; mark the dependency ready in an earlier step (patch-and-transform's readinessChecks: [{type: None}], or function-auto-ready before this step), or use creation: Immediate")
	}
	if len(f.Unmatched) > 0 {
		add(Warning, ReasonUnmatched, "dependencies in the input match no composed resource: "+
			message.ListOf(f.Unmatched, func(u explicit.Unmatched) string { return fmt.Sprintf("%s %q", u.Field, u.Pattern) }))
	}
	if unusable := f.Protection.Unusable; len(unusable) > 0 {
		add(Warning, ReasonUsageImpossible, "no Usage can protect these edges, so none is emitted: "+
			message.ListOf(unusable, func(u protection.Problem) string {
				return fmt.Sprintf("%s → %s (%s)", u.Edge.Dependent, u.Edge.Target, u.Reason)
			}))
	}
	if unprotected := f.Protection.Unprotected; len(unprotected) > 0 {
		add(Warning, ReasonUnprotectedDeps, "no reference finalizer can protect these dependencies, and this step writes no Usage, so nothing keeps a dependency from being deleted before its dependent; protection: Usages protects them with Usages: "+
			message.ListOf(unprotected, func(e protection.Edge) string { return e.Dependent + " → " + e.Target }))
	}
	if len(g.Shared) > 0 {
		add(Warning, ReasonShared, "composed resources are one object, to which Crossplane applies the desired state of each in turn, and each is protected as its dependents need: "+
			message.ListOf(g.Shared, func(s composed.Shared) string { return fmt.Sprintf("%s (%s)", message.List(s.Names), s.Identity) }))
	}
	if len(f.Suspect) > 0 {
		add(Warning, ReasonSuspect, "references match no composed resource, and can't be what was meant: nothing protects them, and provider-kubernetes can't create an Object whose reference doesn't resolve: "+
			message.ListOf(f.Suspect, func(r suspect.Reference) string {
				return fmt.Sprintf("%s %s names %s: %s", r.Dependent, r.Target.Field(), r.Target, r.Problem)
			}))
	}
	if len(f.Invalid) > 0 {
		add(Warning, ReasonInvalidReference, "cannot read references: "+
			message.ListOf(f.Invalid, func(r InvalidReference) string { return r.Resource + ": " + r.Problem }))
	}
	c := condition(f, ordered)
	c.Message += ". " + summary
	return Report{Condition: c, Results: results, Summary: summary}
}

// staleOf returns the stale finalizers to warn about. Report mode labels no
// dependent, so the function can't find a dependent the composition removed
// while Crossplane deletes it: one that names no resource it sees may be
// such a dependent's, and is no sure problem.
func staleOf(f Facts) []protection.Stale {
	if f.Enforce {
		return f.Protection.Stale
	}
	var stale []protection.Stale
	for _, s := range f.Protection.Stale {
		if !s.Unseen {
			stale = append(stale, s)
		}
	}
	return stale
}

// staleWhose says whose a stale finalizer is: the composed Object of its
// UID, which doesn't reference the resource, or no Object the function sees.
func staleWhose(g *composed.Graph, s protection.Stale) string {
	uid, _ := object.UIDOf(s.Finalizer)
	for _, r := range g.Resources {
		if r.IsObject && r.UID() == uid {
			return "of Object " + r.Name + ", which doesn't reference it"
		}
	}
	return "of no Object of this composite"
}

// changes is true when the function changes what is observed, or in Report
// mode would: it declares a finalizer the observed target lacks, emits a
// Usage not observed yet, or writes a reference the observed Object lacks.
// Holding a resource back has a result of its own.
func changes(f Facts, v verdicts) bool {
	for name := range f.References.New {
		if f.HeldBack[name] == "" {
			return true
		}
	}
	lacking := func(v verdict) bool { return v.state.Lacking() }
	return slices.ContainsFunc(v.edges, lacking) || slices.ContainsFunc(v.external, lacking)
}

// summaryOf counts what the function found, and what this call adds to what
// is observed: the reference finalizers and Usages the observed state lacks.
// A reference to an object outside the composition is no problem by itself
// (a user's Secret, a ProviderConfig, the composite): it is counted, with
// how many of them nothing protects, and raises no result.
func summaryOf(f Facts, states edgeStates, v verdicts) string {
	g, external := f.Graph, v.external
	// How many of the references between composed resources are inferred,
	// and how many Usages protect, is said where some are: "(12 of them
	// inferred, 30 by Usages)".
	var of []string
	count := func(n int, what string) {
		if n > 0 {
			if len(of) == 0 {
				what = "of them " + what
			}
			of = append(of, fmt.Sprintf("%d %s", n, what))
		}
	}
	count(len(slices.DeleteFunc(slices.Clone(g.Edges), func(e composed.Edge) bool { return e.Origin != composed.FromInference })), "inferred")
	count(len(slices.DeleteFunc(slices.Clone(v.edges), func(e verdict) bool { return e.protection != ByUsage })), "by Usages")
	byUsages := ""
	if len(of) > 0 {
		byUsages = " (" + strings.Join(of, ", ") + ")"
	}
	// A Usage this step declares protects once applied; one it doesn't
	// write (Report mode, a fatal cycle) protects nothing.
	writes := f.Enforce && (!f.CyclesFatal || len(g.Cycles) == 0)
	unprotected, usagesAdded := 0, states.count[stateBy{protection.Declared, ByUsage}]
	for _, v := range external {
		if v.protection == Unprotected || (!writes && v.state.Lacking()) {
			unprotected++
		}
		if v.protection == ByUsage && v.state == protection.Declared {
			usagesAdded++
		}
	}
	externals := "none to external objects"
	if len(external) > 0 {
		externals = fmt.Sprintf("%s, %d of them unprotected", externalCount(len(external)), unprotected)
	}
	return fmt.Sprintf("%s, %s between them%s and %s; %s",
		message.Count(len(g.Resources), "composed resource"), message.Count(len(g.Edges), "reference"), byUsages, externals,
		changesOf(f, f.Protection.Added, usagesAdded, states.count[stateBy{protection.Pending, ByFinalizer}]))
}

// externalCount says how many references are to external objects.
func externalCount(n int) string {
	if n == 1 {
		return "1 to an external object"
	}
	return fmt.Sprintf("%d to external objects", n)
}

// changesOf says what the call adds: finalizers and Usages the observed
// state lacks, and the finalizers that wait for their Object; then the
// references inference leaves out, which the user may declare.
func changesOf(f Facts, finalizers, usages, pending int) string {
	var added []string
	if finalizers > 0 {
		added = append(added, message.Count(finalizers, "reference finalizer"))
	}
	if usages > 0 {
		added = append(added, message.Count(usages, "Usage"))
	}
	verb := "added"
	switch {
	case !f.Enforce:
		verb = "to add (Report mode: desired state left unchanged)"
	case f.CyclesFatal && len(f.Graph.Cycles) > 0:
		verb = "to add (the cycle failed the step: desired state left unchanged)"
	}
	out := "nothing " + verb
	if len(added) > 0 {
		out = strings.Join(added, " and ") + " " + verb
	}
	switch {
	case pending == 1:
		out += ", 1 finalizer pending until its Object exists"
	case pending > 1:
		out += fmt.Sprintf(", %d finalizers pending until their Objects exist", pending)
	}
	if f.NotInferred > 0 {
		out += "; " + message.Count(f.NotInferred, "reference") + " not inferred: nothing singles out their target"
	}
	return out
}

// condition is False for the worst problem: a cycle, then edges this function
// can't protect, then edges whose protection is still on its way. What it
// says of the edges is the words of their standing and of what protects
// them.
func condition(f Facts, edges edgeStates) Condition {
	if cycles := f.Graph.Cycles; len(cycles) > 0 {
		return Condition{Reason: ReasonCycle, Message: "references form a cycle: " + CyclePaths(cycles)}
	}
	for _, standing := range []protection.Standing{protection.StandingMissing, protection.StandingPending} {
		states := protection.StatesOf(standing, f.Enforce)
		by := edges.protections(states...)
		if len(by) == 0 {
			continue
		}
		w, label := conditionWords[standing].mixed, true
		if len(by) == 1 && conditionWords[standing].by[by[0]].reason != "" {
			w, label = conditionWords[standing].by[by[0]], false
		}
		listed, _ := edges.list(label, states...)
		return Condition{Reason: w.reason, Message: w.message + ": " + listed}
	}
	return Condition{Status: true, Reason: ReasonProtected, Message: "every live reference between composed resources is protected"}
}

// A wording is what the condition says of the edges it lists.
type wording struct{ reason, message string }

// conditionWords are, for each standing the condition lists edges of, its
// words for edges all protected one way, by that protection, and its words
// for edges protected in several ways, each then labelled with its own.
var conditionWords = map[protection.Standing]struct {
	by    [len(protectionLabels)]wording
	mixed wording
}{
	protection.StandingMissing: {
		by: [len(protectionLabels)]wording{
			ByFinalizer: {ReasonUnprotectedEdges, "referenced resources lack their dependents' finalizers"},
			ByUsage:     {ReasonUnprotectedEdges, "referenced resources lack their dependents' Usages"},
			Unprotected: {ReasonUnprotectedEdges, "nothing keeps referenced resources from being deleted before their dependents"},
		},
		mixed: wording{ReasonUnprotectedEdges, "referenced resources lack what keeps them from being deleted before their dependents"},
	},
	protection.StandingPending: {
		by: [len(protectionLabels)]wording{
			ByFinalizer: {ReasonFinalizersPending, "finalizers are declared but not yet applied, or wait for their Object to exist"},
			ByUsage:     {ReasonUsagesPending, "Usages are declared but not yet in force, or wait for both their ends to exist"},
		},
		mixed: wording{ReasonProtectionPending, "finalizers and Usages are declared but not yet in force, or wait for what they protect to exist"},
	},
}

// protectionLabels label each edge a mixed list names.
var protectionLabels = [...]string{ByFinalizer: "finalizer", ByUsage: "Usage", Unprotected: "unprotected"}

// stateBy is a state of edges a protection protects.
type stateBy struct {
	state      protection.State
	protection Protection
}

// edgeStates counts the edges by state and protection.
type edgeStates struct {
	edges    []composed.Edge
	verdicts []verdict
	count    map[stateBy]int
}

func statesOf(edges []composed.Edge, verdicts []verdict) edgeStates {
	s := edgeStates{edges: edges, verdicts: verdicts, count: map[stateBy]int{}}
	for _, v := range verdicts {
		s.count[stateBy{v.state, v.protection}]++
	}
	return s
}

// protections are the protections of the edges in the states, in order.
func (s edgeStates) protections(states ...protection.State) []Protection {
	var out []Protection
	for p := range Protection(len(protectionLabels)) {
		for _, state := range states {
			if s.count[stateBy{state, p}] > 0 {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// list lists the edges in the states, state after state, as message.List
// does, each labelled with its protection when label is true, and counts
// them.
func (s edgeStates) list(label bool, states ...protection.State) (string, int) {
	n := 0
	var named []string
	for _, state := range states {
		inState := 0
		for p := range Protection(len(protectionLabels)) {
			inState += s.count[stateBy{state, p}]
		}
		n += inState
		if inState == 0 {
			continue // Nothing to name: don't scan the edges.
		}
		for i, e := range s.edges {
			if len(named) == message.MaxItems {
				break
			}
			if v := s.verdicts[i]; v.state == state {
				name := e.Dependent + " → " + e.Target
				if label {
					name += " (" + protectionLabels[v.protection] + ")"
				}
				named = append(named, name)
			}
		}
	}
	return message.Listed(named, n), n
}

// CyclePaths lists the cycles, each as its path.
func CyclePaths(cycles [][]string) string {
	items := make([]string, len(cycles))
	for i, c := range cycles {
		items[i] = composed.Path(c)
	}
	return message.List(items)
}
