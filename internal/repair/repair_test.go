package repair

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crossplane-contrib/function-dependencies/internal/finalizer"
	"github.com/crossplane-contrib/function-dependencies/internal/graph"
	"github.com/crossplane-contrib/function-dependencies/internal/graph/graphtest"
	"github.com/crossplane-contrib/function-dependencies/internal/objectref"
)

var f = graphtest.Finalizer

// live is a resource as an Operation reads it: it desires what it carries.
func live(r graph.Resource, finalizers ...string) graph.Resource {
	return graphtest.With(r, func(r *graph.Resource) {
		r.Observed.Finalizers = append(r.Observed.Finalizers, finalizers...)
		r.Desired.Finalizers = r.Observed.Finalizers
	})
}

func deleting(r *graph.Resource) { r.Observed.Deleting = true }

func unmanaged(r *graph.Resource) { r.Observed.Finalizers = nil }

func TestOf(t *testing.T) {
	shared := graphtest.Object("shared")
	cases := map[string]struct {
		resources []graph.Resource
		options   graph.Options
		want      Outcome
	}{
		"OnlyTheFinalizersTheTargetLacksAreRepaired": {
			resources: []graph.Resource{
				live(shared, f("a")),
				live(graphtest.Object("a", "shared")),
				live(graphtest.Object("b", "shared")),
				live(graphtest.Object("c", "shared")),
			},
			want: Outcome{Dependents: 3, References: 3, Protected: 1,
				Repaired: []Repair{{Target: "shared", Finalizers: []string{f("b"), f("c")}}}},
		},
		"AProtectedClusterNeedsNoRepair": {
			resources: []graph.Resource{live(shared, f("a")), live(graphtest.Object("a", "shared"))},
			want:      Outcome{Dependents: 1, References: 1, Protected: 1},
		},
		"ADeletingDependentIsSkipped": {
			resources: []graph.Resource{live(shared), live(graphtest.With(graphtest.Object("a", "shared"), deleting))},
			want:      Outcome{Dependents: 1, References: 1, Skipped: []Skip{{Dependent: "a", Target: "shared", Reason: "DependentDeleting"}}},
		},
		"ADeletingTargetIsSkipped": {
			resources: []graph.Resource{live(graphtest.With(shared, deleting)), live(graphtest.Object("a", "shared"))},
			want:      Outcome{Dependents: 1, References: 1, Skipped: []Skip{{Dependent: "a", Target: "shared", Reason: "TargetDeleting"}}},
		},
		"AnObjectTheProviderDoesNotManageYetIsSkipped": {
			resources: []graph.Resource{live(shared), live(graphtest.With(graphtest.Object("a", "shared"), unmanaged))},
			want:      Outcome{Dependents: 1, References: 1, Skipped: []Skip{{Dependent: "a", Target: "shared", Reason: "DependentNotManaged"}}},
		},
		"AMissingTargetIsSkippedNotFatal": {
			resources: []graph.Resource{live(graphtest.Object("a", "gone", "shared")), live(shared)},
			want: Outcome{Dependents: 1, References: 2,
				Repaired: []Repair{{Target: "shared", Finalizers: []string{f("a")}}},
				Skipped:  []Skip{{Dependent: "a", Target: "Object." + objectref.ClusterGroup + " gone", Reason: TargetNotFound}}},
		},
		"ReferencesOnACycleAreSkipped": {
			resources: []graph.Resource{live(graphtest.Object("a", "b")), live(graphtest.Object("b", "a"))},
			options:   graph.Options{BreakCycles: true},
			want: Outcome{Dependents: 2, References: 2, Skipped: []Skip{
				{Dependent: "a", Target: "b", Reason: "Cycle"}, {Dependent: "b", Target: "a", Reason: "Cycle"},
			}},
		},
		"AFinalizerOfNoReferencingObjectIsStale": {
			resources: []graph.Resource{live(shared, f("a"), f("gone")), live(graphtest.Object("a", "shared"))},
			want: Outcome{Dependents: 1, References: 1, Protected: 1,
				Stale: []finalizer.Stale{{Resource: "shared", Finalizer: f("gone"), Unseen: true}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := graph.New(tc.resources, tc.options)
			got := Of(g, finalizer.Declare(g, nil))
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Of(...): -want, +got:\n%s", diff)
			}
		})
	}
}
