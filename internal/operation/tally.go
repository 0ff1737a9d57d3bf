package operation

// The tally of an Operation's outcome: what it repairs among the live
// provider-kubernetes Objects of a cluster, and what it leaves and why.
//
// The rules themselves are the composition's: the graph finds each
// reference's target and the protection package decides which reference
// finalizers each target must carry. An Operation reads every object as it
// is in the cluster, and declares only the finalizers a live target lacks:
// each Operation applies as a new field owner, so declaring one that is
// present again would only add another managedFields entry.

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/protection"
)

// targetNotFound is the reason a reference is left as it is when no object
// of its kind has its name. The reasons for references to objects found are
// their states' (protection.State's Why).
const targetNotFound = "TargetNotFound"

// A repair is the reference finalizers one target lacks.
type repair struct {
	Target     string   `json:"target"`
	Finalizers []string `json:"finalizers"`
}

// A skip is a reference whose finalizer is not declared.
type skip struct {
	Dependent string `json:"dependent"`
	Target    string `json:"target"`
	Reason    string `json:"reason"`
}

// An outcome is what an Operation found.
type outcome struct {
	// Dependents counts the Objects that reference anything, References
	// their references, and Protected those whose target carries the
	// finalizer already.
	Dependents int
	References int
	Protected  int
	// Repaired are sorted by target.
	Repaired []repair
	// Skipped are sorted by dependent, then target.
	Skipped []skip
	// Stale are sorted by resource, then finalizer.
	Stale []protection.Stale
}

// tally reads the outcome off the graph of the Objects whose references were
// read and the objects they reference, and the finalizers decided for it.
func tally(g *composed.Graph, fin protection.Plan) outcome {
	o := outcome{Stale: fin.Stale, References: len(g.Edges) + len(g.External)}
	for _, r := range g.Resources {
		if len(r.References) > 0 {
			o.Dependents++
		}
	}
	for _, name := range slices.Sorted(maps.Keys(fin.Additions)) {
		o.Repaired = append(o.Repaired, repair{Target: name, Finalizers: fin.Additions[name]})
	}
	for i, e := range g.Edges {
		v := fin.Edges[i]
		if v.By&protection.ByFinalizer == 0 {
			// No finalizer can protect it (the dependent is no Object), or
			// the Composition step's Usages do.
			continue
		}
		s := v.State
		if s.Holds() {
			o.Protected++
		}
		if reason := s.Why(); reason != "" {
			o.Skipped = append(o.Skipped, skip{Dependent: e.Dependent, Target: e.Target, Reason: reason})
		}
	}
	for _, e := range g.External {
		o.Skipped = append(o.Skipped, skip{Dependent: e.Dependent, Target: e.Target.String(), Reason: targetNotFound})
	}
	slices.SortFunc(o.Skipped, func(a, b skip) int {
		return cmp.Or(strings.Compare(a.Dependent, b.Dependent), strings.Compare(a.Target, b.Target))
	})
	return o
}
