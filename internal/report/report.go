// Package report turns a protection plan into what the user sees: the
// DeletionOrdered condition on the composite and the results of the step.
package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/crossplane-contrib/function-dependencies/internal/explicit"
	"github.com/crossplane-contrib/function-dependencies/internal/objectref"
	"github.com/crossplane-contrib/function-dependencies/internal/protection"
	"github.com/crossplane-contrib/function-dependencies/internal/usage"
)

// ConditionType is the type of the condition the function sets on the
// composite resource.
const ConditionType = "DeletionOrdered"

// Reasons of the condition and of the results.
const (
	ReasonProtected         = "Protected"
	ReasonFinalizersPending = "FinalizersPending"
	ReasonUnprotectedEdges  = "UnprotectedEdges"
	ReasonCycle             = "Cycle"

	ReasonSummary           = "Summary"
	ReasonExternalReference = "ExternalReference"
	ReasonStaleFinalizer    = "StaleFinalizer"
	ReasonInvalidReference  = "InvalidReference"
	ReasonTargetRemoved     = "ReferencedResourceRemoved"
	ReasonTargetDeleting    = "ReferencedResourceDeleting"
	ReasonInvalidResource   = "InvalidResource"
	ReasonHeldBack          = "HeldBack"
	ReasonUnmatched         = "UnmatchedDependency"
	ReasonUsageImpossible   = "UsageImpossible"
)

// maxListed bounds how many items a message names, so that a composition of
// thousands of resources can't produce a condition message of megabytes.
const maxListed = 10

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

// Facts are what the report is made of.
type Facts struct {
	Plan    protection.Plan
	Invalid []InvalidReference
	// Unmatched are the input's dependencies that match no resource.
	Unmatched []explicit.Unmatched
	// Unusable are the edges no Usage can protect.
	Unusable []usage.Problem

	// Enforce is true when the plan's finalizers are written to desired
	// state, false when they are only reported.
	Enforce bool
	// CyclesFatal is true when a cycle fails the step.
	CyclesFatal bool
}

// Make returns the condition and the results, in a fixed order.
func Make(f Facts) (Condition, []Result) {
	var results []Result
	add := func(s Severity, reason, message string) {
		results = append(results, Result{Severity: s, Reason: reason, Message: message})
	}
	p := f.Plan
	if len(p.Cycles) > 0 && f.CyclesFatal {
		add(Fatal, ReasonCycle, "cannot order deletion: references form a cycle: "+cyclePaths(p.Cycles))
	}
	add(Normal, ReasonSummary, summary(f))

	removed := map[string][]string{}
	for _, e := range p.Edges {
		if e.State == protection.TargetRemoved {
			removed[e.Target] = append(removed[e.Target], e.Dependent)
		}
	}
	if len(p.Cycles) > 0 && !f.CyclesFatal {
		add(Warning, ReasonCycle, "references form a cycle, so no finalizer is declared on its edges: "+cyclePaths(p.Cycles))
	}
	if targets := slices.Sorted(maps.Keys(removed)); len(targets) > 0 {
		add(Warning, ReasonTargetRemoved, "the composition no longer includes resources that live Objects still reference, so they may be deleted first: "+
			listOf(targets, func(t string) string { return fmt.Sprintf("%s (referenced by %s)", t, list(removed[t])) }))
	}
	states := statesOf(p.Edges)
	if edges, n := states.list(protection.TargetDeleting); n > 0 {
		add(Warning, ReasonTargetDeleting, "referenced resources are being deleted without their dependents' finalizers, which can no longer be added: "+edges)
	}
	// An external edge a Usage protects needs no warning.
	if external := slices.DeleteFunc(slices.Clone(p.External), func(e protection.External) bool { return e.Protection != protection.Unprotected }); len(external) > 0 {
		add(Warning, ReasonExternalReference, "references to objects outside this composition can't be protected by it: "+
			listOf(external, func(e protection.External) string {
				return fmt.Sprintf("%s %s → %s", e.Dependent, e.Target.Field(), Describe(e.Target))
			}))
	}
	if len(p.Stale) > 0 {
		add(Warning, ReasonStaleFinalizer, "reference finalizers name no Object that references the resource in this composition, so they are not declared: Crossplane drops those only it applied, and any the provider added stay until their Object, if it still exists, releases them or someone removes them (provider-kubernetes #28): "+
			listOf(p.Stale, func(s protection.Stale) string { return s.Resource + " " + s.Finalizer }))
	}
	if len(p.HeldBack) > 0 {
		add(Normal, ReasonHeldBack, "resources are held back from creation until their dependencies allow: "+
			listOf(slices.Sorted(maps.Keys(p.HeldBack)), func(n string) string { return fmt.Sprintf("%s (%s)", n, p.HeldBack[n]) }))
	}
	if len(f.Unmatched) > 0 {
		add(Warning, ReasonUnmatched, "dependencies in the input match no composed resource: "+
			listOf(f.Unmatched, func(u explicit.Unmatched) string { return fmt.Sprintf("%s %q", u.Field, u.Pattern) }))
	}
	if len(f.Unusable) > 0 {
		add(Warning, ReasonUsageImpossible, "no Usage can protect these edges, so none is emitted: "+
			listOf(f.Unusable, func(u usage.Problem) string {
				return fmt.Sprintf("%s → %s (%s)", u.Edge.Dependent, u.Edge.Dependency, u.Reason)
			}))
	}
	if len(f.Invalid) > 0 {
		add(Warning, ReasonInvalidReference, "cannot read references: "+
			listOf(f.Invalid, func(r InvalidReference) string { return r.Resource + ": " + r.Problem }))
	}
	return condition(f, states), results
}

func summary(f Facts) string {
	p := f.Plan
	pending := 0
	for _, e := range p.Edges {
		if e.State == protection.Pending {
			pending++
		}
	}
	verb := "declared"
	switch {
	case !f.Enforce:
		verb = "to declare (Report mode: desired state left unchanged)"
	case f.CyclesFatal && len(p.Cycles) > 0:
		verb = "to declare (the cycle failed the step: desired state left unchanged)"
	}
	return fmt.Sprintf("%d composed resources, %d references between them and %d to external objects; %d reference finalizers %s, %d pending until their Object exists",
		p.Resources, len(p.Edges), len(p.External), p.Declared, verb, pending)
}

// condition is False for the worst problem: a cycle, then edges this function
// can't protect, then edges whose protection is still on its way.
func condition(f Facts, edges edgeStates) Condition {
	if len(f.Plan.Cycles) > 0 {
		return Condition{Reason: ReasonCycle, Message: "references form a cycle: " + cyclePaths(f.Plan.Cycles)}
	}
	unprotected := []protection.EdgeState{protection.TargetRemoved, protection.TargetDeleting, protection.Exposed}
	if !f.Enforce {
		unprotected = append(unprotected, protection.Declared)
	}
	if listed, n := edges.list(unprotected...); n > 0 {
		return Condition{Reason: ReasonUnprotectedEdges, Message: "referenced resources lack their dependents' finalizers: " + listed}
	}
	var pending []protection.EdgeState
	if f.Enforce {
		pending = append(pending, protection.Declared)
	}
	pending = append(pending, protection.Pending)
	if listed, n := edges.list(pending...); n > 0 {
		return Condition{Reason: ReasonFinalizersPending, Message: "finalizers are declared but not yet applied, or wait for their Object to exist: " + listed}
	}
	protected := edges.count[protection.Protected]
	return Condition{Status: true, Reason: ReasonProtected, Message: fmt.Sprintf("every live reference between composed resources is protected by a finalizer (%d)", protected)}
}

// edgeStates counts a plan's edges by state, so that listing the edges of
// some states scans the edges only for states that have any, and only until
// it has named enough: a composition may have thousands.
type edgeStates struct {
	edges []protection.Edge
	count [protection.Exposed + 1]int
}

func statesOf(edges []protection.Edge) edgeStates {
	s := edgeStates{edges: edges}
	for _, e := range edges {
		s.count[e.State]++
	}
	return s
}

// list lists the edges in the states, state after state, as list does, and
// counts them.
func (s edgeStates) list(states ...protection.EdgeState) (string, int) {
	n := 0
	for _, state := range states {
		n += s.count[state]
	}
	var named []string
	for _, state := range states {
		for i := 0; i < len(s.edges) && s.count[state] > 0 && len(named) < maxListed; i++ {
			if e := s.edges[i]; e.State == state {
				named = append(named, e.Dependent+" → "+e.Target)
			}
		}
	}
	return listed(named, n), n
}

func cyclePaths(cycles [][]string) string {
	items := make([]string, len(cycles))
	for i, c := range cycles {
		items[i] = strings.Join(c, " → ")
	}
	return list(items)
}

// Describe names a referenced object the way kubectl does: kind.group,
// then namespace/name.
func Describe(t objectref.Target) string {
	kind := t.Kind
	if t.Group != "" {
		kind += "." + t.Group
	}
	if t.Namespace != "" {
		return kind + " " + t.Namespace + "/" + t.Name
	}
	return kind + " " + t.Name
}

// listOf names the items as list does, calling name only for those it lists.
func listOf[T any](items []T, name func(T) string) string {
	names := make([]string, min(len(items), maxListed))
	for i := range names {
		names[i] = name(items[i])
	}
	return listed(names, len(items))
}

// list joins items with commas, naming at most maxListed of them.
func list(items []string) string {
	return listed(items[:min(len(items), maxListed)], len(items))
}

// listed joins the first items of a list of total items with commas, and
// counts those it leaves out.
func listed(first []string, total int) string {
	if total <= len(first) {
		return strings.Join(first, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(first, ", "), total-len(first))
}
