package operation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crossplane-contrib/function-dependencies/internal/graph"
	"github.com/crossplane-contrib/function-dependencies/internal/graph/graphtest"
	"github.com/crossplane-contrib/function-dependencies/internal/objectref"
	"github.com/crossplane-contrib/function-dependencies/internal/protection/finalizer"
)

var f = graphtest.Finalizer

// carrying is a resource as an Operation reads it: it desires what it carries.
func carrying(r graph.Resource, finalizers ...string) graph.Resource {
	return graphtest.With(r, func(r *graph.Resource) {
		r.Observed.Finalizers = append(r.Observed.Finalizers, finalizers...)
		r.Desired.Finalizers = r.Observed.Finalizers
	})
}

func deleting(r *graph.Resource) { r.Observed.Deleting = true }

func unmanaged(r *graph.Resource) { r.Observed.Finalizers = nil }

func TestTally(t *testing.T) {
	shared := graphtest.Object("shared")
	cases := map[string]struct {
		resources []graph.Resource
		options   graph.Options
		want      outcome
	}{
		"OnlyTheFinalizersTheTargetLacksAreRepaired": {
			resources: []graph.Resource{
				carrying(shared, f("a")),
				carrying(graphtest.Object("a", "shared")),
				carrying(graphtest.Object("b", "shared")),
				carrying(graphtest.Object("c", "shared")),
			},
			want: outcome{Dependents: 3, References: 3, Protected: 1,
				Repaired: []repair{{Target: "shared", Finalizers: []string{f("b"), f("c")}}}},
		},
		"AProtectedClusterNeedsNoRepair": {
			resources: []graph.Resource{carrying(shared, f("a")), carrying(graphtest.Object("a", "shared"))},
			want:      outcome{Dependents: 1, References: 1, Protected: 1},
		},
		"ADeletingDependentIsSkipped": {
			resources: []graph.Resource{carrying(shared), carrying(graphtest.With(graphtest.Object("a", "shared"), deleting))},
			want:      outcome{Dependents: 1, References: 1, Skipped: []skip{{Dependent: "a", Target: "shared", Reason: "DependentDeleting"}}},
		},
		"ADeletingTargetIsSkipped": {
			resources: []graph.Resource{carrying(graphtest.With(shared, deleting)), carrying(graphtest.Object("a", "shared"))},
			want:      outcome{Dependents: 1, References: 1, Skipped: []skip{{Dependent: "a", Target: "shared", Reason: "TargetDeleting"}}},
		},
		"AnObjectTheProviderDoesNotManageYetIsSkipped": {
			resources: []graph.Resource{carrying(shared), carrying(graphtest.With(graphtest.Object("a", "shared"), unmanaged))},
			want:      outcome{Dependents: 1, References: 1, Skipped: []skip{{Dependent: "a", Target: "shared", Reason: "DependentNotManaged"}}},
		},
		"AMissingTargetIsSkippedNotFatal": {
			resources: []graph.Resource{carrying(graphtest.Object("a", "gone", "shared")), carrying(shared)},
			want: outcome{Dependents: 1, References: 2,
				Repaired: []repair{{Target: "shared", Finalizers: []string{f("a")}}},
				Skipped:  []skip{{Dependent: "a", Target: "Object." + objectref.ClusterGroup + " gone", Reason: targetNotFound}}},
		},
		"ReferencesOnACycleAreSkipped": {
			resources: []graph.Resource{carrying(graphtest.Object("a", "b")), carrying(graphtest.Object("b", "a"))},
			options:   graph.Options{BreakCycles: true},
			want: outcome{Dependents: 2, References: 2, Skipped: []skip{
				{Dependent: "a", Target: "b", Reason: "Cycle"}, {Dependent: "b", Target: "a", Reason: "Cycle"},
			}},
		},
		"AFinalizerOfNoReferencingObjectIsStale": {
			resources: []graph.Resource{carrying(shared, f("a"), f("gone")), carrying(graphtest.Object("a", "shared"))},
			want: outcome{Dependents: 1, References: 1, Protected: 1,
				Stale: []finalizer.Stale{{Resource: "shared", Finalizer: f("gone"), Unseen: true}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := graph.New(tc.resources, tc.options)
			got := tally(g, finalizer.Declare(g, nil))
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("tally(...): -want, +got:\n%s", diff)
			}
		})
	}
}
