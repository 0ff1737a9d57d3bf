// Package repair says what a Crossplane Operation repairs among the live
// provider-kubernetes Objects of a cluster, and what it leaves and why.
//
// The rules themselves are the composition's: the graph finds each
// reference's target and the finalizer package decides which reference
// finalizers each target must carry. An Operation reads every object as it
// is in the cluster, and declares only the finalizers a live target lacks:
// each Operation applies as a new field owner, so declaring one that is
// present again would only add another managedFields entry.
package repair

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/crossplane-contrib/function-dependencies/internal/finalizer"
	"github.com/crossplane-contrib/function-dependencies/internal/graph"
)

// TargetNotFound is the reason a reference is left as it is when no object
// of its kind has its name. The reasons for references to objects found are
// their states' (graph.State's Why).
const TargetNotFound = "TargetNotFound"

// A Repair is the reference finalizers one target lacks.
type Repair struct {
	Target     string   `json:"target"`
	Finalizers []string `json:"finalizers"`
}

// A Skip is a reference whose finalizer is not declared.
type Skip struct {
	Dependent string `json:"dependent"`
	Target    string `json:"target"`
	Reason    string `json:"reason"`
}

// An Outcome is what an Operation found.
type Outcome struct {
	// Dependents counts the Objects that reference anything, References
	// their references, and Protected those whose target carries the
	// finalizer already.
	Dependents int
	References int
	Protected  int
	// Repaired are sorted by target.
	Repaired []Repair
	// Skipped are sorted by dependent, then target.
	Skipped []Skip
	// Stale are sorted by resource, then finalizer.
	Stale []finalizer.Stale
}

// Of reads the outcome off the graph of the Objects whose references were
// read and the objects they reference, and the finalizers decided for it.
func Of(g *graph.Graph, fin finalizer.Plan) Outcome {
	o := Outcome{Stale: fin.Stale, References: len(g.Edges) + len(g.External)}
	for _, r := range g.Resources {
		if len(r.References) > 0 {
			o.Dependents++
		}
	}
	for _, name := range slices.Sorted(maps.Keys(fin.Additions)) {
		o.Repaired = append(o.Repaired, Repair{Target: name, Finalizers: fin.Additions[name]})
	}
	for i, e := range g.Edges {
		if !fin.Protected[i] {
			continue // No finalizer can protect it: the dependent is no Object.
		}
		s := fin.States[i]
		if s.Holds() {
			o.Protected++
		}
		if reason := s.Why(); reason != "" {
			o.Skipped = append(o.Skipped, Skip{Dependent: e.Dependent, Target: e.Target, Reason: reason})
		}
	}
	for _, e := range g.External {
		o.Skipped = append(o.Skipped, Skip{Dependent: e.Dependent, Target: e.Target.String(), Reason: TargetNotFound})
	}
	slices.SortFunc(o.Skipped, func(a, b Skip) int {
		return cmp.Or(strings.Compare(a.Dependent, b.Dependent), strings.Compare(a.Target, b.Target))
	})
	return o
}
