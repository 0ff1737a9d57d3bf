package operation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/composed/composedtest"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
	"github.com/crossplane-contrib/function-dependencies/internal/protection"
)

var f = composedtest.Finalizer

// carrying is a resource as an Operation reads it: it desires what it carries.
func carrying(r composed.Resource, finalizers ...string) composed.Resource {
	return composedtest.With(r, func(r *composed.Resource) {
		r.Observed.Finalizers = append(r.Observed.Finalizers, finalizers...)
		r.Desired.Finalizers = r.Observed.Finalizers
	})
}

func deleting(r *composed.Resource) { r.Observed.Deleting = true }

func unmanaged(r *composed.Resource) { r.Observed.Finalizers = nil }

func TestTally(t *testing.T) {
	shared := composedtest.Object("shared")
	cases := map[string]struct {
		resources []composed.Resource
		options   composed.Options
		want      outcome
	}{
		"OnlyTheFinalizersTheTargetLacksAreRepaired": {
			resources: []composed.Resource{
				carrying(shared, f("a")),
				carrying(composedtest.Object("a", "shared")),
				carrying(composedtest.Object("b", "shared")),
				carrying(composedtest.Object("c", "shared")),
			},
			want: outcome{Dependents: 3, References: 3, Protected: 1,
				Repaired: []repair{{Target: "shared", Finalizers: []string{f("b"), f("c")}}}},
		},
		"AProtectedClusterNeedsNoRepair": {
			resources: []composed.Resource{carrying(shared, f("a")), carrying(composedtest.Object("a", "shared"))},
			want:      outcome{Dependents: 1, References: 1, Protected: 1},
		},
		"ADeletingDependentIsSkipped": {
			resources: []composed.Resource{carrying(shared), carrying(composedtest.With(composedtest.Object("a", "shared"), deleting))},
			want:      outcome{Dependents: 1, References: 1, Skipped: []skip{{Dependent: "a", Target: "shared", Reason: "DependentDeleting"}}},
		},
		"ADeletingTargetIsSkipped": {
			resources: []composed.Resource{carrying(composedtest.With(shared, deleting)), carrying(composedtest.Object("a", "shared"))},
			want:      outcome{Dependents: 1, References: 1, Skipped: []skip{{Dependent: "a", Target: "shared", Reason: "TargetDeleting"}}},
		},
		"AnObjectTheProviderDoesNotManageYetIsSkipped": {
			resources: []composed.Resource{carrying(shared), carrying(composedtest.With(composedtest.Object("a", "shared"), unmanaged))},
			want:      outcome{Dependents: 1, References: 1, Skipped: []skip{{Dependent: "a", Target: "shared", Reason: "DependentNotManaged"}}},
		},
		"AMissingTargetIsSkippedNotFatal": {
			resources: []composed.Resource{carrying(composedtest.Object("a", "gone", "shared")), carrying(shared)},
			want: outcome{Dependents: 1, References: 2,
				Repaired: []repair{{Target: "shared", Finalizers: []string{f("a")}}},
				Skipped:  []skip{{Dependent: "a", Target: "Object." + object.ClusterGroup + " gone", Reason: targetNotFound}}},
		},
		"ReferencesOnACycleAreSkipped": {
			resources: []composed.Resource{carrying(composedtest.Object("a", "b")), carrying(composedtest.Object("b", "a"))},
			options:   composed.Options{BreakCycles: true},
			want: outcome{Dependents: 2, References: 2, Skipped: []skip{
				{Dependent: "a", Target: "b", Reason: "Cycle"}, {Dependent: "b", Target: "a", Reason: "Cycle"},
			}},
		},
		"AFinalizerOfNoReferencingObjectIsStale": {
			resources: []composed.Resource{carrying(shared, f("a"), f("gone")), carrying(composedtest.Object("a", "shared"))},
			want: outcome{Dependents: 1, References: 1, Protected: 1,
				Stale: []protection.Stale{{Resource: "shared", Finalizer: f("gone"), Unseen: true}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := composed.New(tc.resources, tc.options)
			got := tally(g, protection.Decide(g, protection.Options{}))
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("tally(...): -want, +got:\n%s", diff)
			}
		})
	}
}
