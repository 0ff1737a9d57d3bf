package protection

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/composed/composedtest"
)

func inUse(r *composed.Resource) { r.Observed.InUse = true }

// TestTheModeSaysHowAFinalizerAndAUsageStandToEachOther proves the one
// decision by mode: switching a live composite from finalizers to Usages or
// back leaves no edge unprotected, Both keeps both, and an Operation leaves
// the edges of a dependent the Composition step protects with Usages alone.
// shared carries d1's finalizer, not d2's.
func TestTheModeSaysHowAFinalizerAndAUsageStandToEachOther(t *testing.T) {
	shared := composedtest.With(composedtest.Object("shared"), composedtest.Carrying(f("d1")))
	d1, d2 := composedtest.Object("d1", "shared"), composedtest.Object("d2", "shared")
	type want struct {
		// edges are the verdicts of d1 → shared and d2 → shared.
		edges [2]Verdict
		// usages are the dependents whose Usage is emitted.
		usages    []string
		additions []string
	}
	cases := map[string]struct {
		reason string
		o      Options
		// observed says whether the Usages of both edges are observed.
		observed bool
		inUse    bool
		want     want
	}{
		"Finalizers": {
			reason: "With finalizers, each edge's finalizer protects it.",
			o:      Options{Mode: Finalizers},
			want: want{
				edges:     [2]Verdict{{By: ByFinalizer, State: Protected, Why: WhyFinalizers}, {By: ByFinalizer, State: Declared, Why: WhyFinalizers}},
				additions: []string{f("d1"), f("d2")},
			},
		},
		"FinalizersAfterUsages": {
			reason: "Switching to finalizers, the Usage of an edge whose finalizer doesn't hold yet stays; one whose finalizer holds goes.",
			o:      Options{Mode: Finalizers}, observed: true,
			want: want{
				edges:     [2]Verdict{{By: ByFinalizer, State: Protected, Why: WhyFinalizers}, {By: ByFinalizer | ByUsage, State: Protected, Why: WhyHandOver}},
				usages:    []string{"d2"},
				additions: []string{f("d1"), f("d2")},
			},
		},
		"UsagesNotInForce": {
			reason: "Switching to Usages, the finalizer the target carries stays until the Usage is in force; one it doesn't carry is not added.",
			o:      Options{Mode: Usages},
			want: want{
				edges:     [2]Verdict{{By: ByFinalizer | ByUsage, State: Declared, Why: WhyHandOver}, {By: ByUsage, State: Declared, Why: WhyUsages}},
				usages:    []string{"d1", "d2"},
				additions: []string{f("d1")},
			},
		},
		"UsagesObservedTargetNotInUse": {
			reason: "A Usage observed is not in force until the target carries the in-use label the webhook selects.",
			o:      Options{Mode: Usages}, observed: true,
			want: want{
				edges:     [2]Verdict{{By: ByFinalizer | ByUsage, State: Protected, Why: WhyHandOver}, {By: ByUsage, State: Protected, Why: WhyUsages}},
				usages:    []string{"d1", "d2"},
				additions: []string{f("d1")},
			},
		},
		"UsagesInForce": {
			reason: "Once the Usage is in force, the finalizer gives way.",
			o:      Options{Mode: Usages}, observed: true, inUse: true,
			want: want{
				edges:  [2]Verdict{{By: ByUsage, State: Protected, Why: WhyUsages}, {By: ByUsage, State: Protected, Why: WhyUsages}},
				usages: []string{"d1", "d2"},
			},
		},
		"Both": {
			reason: "With both, the finalizer and the Usage protect each edge, and the Usage's state is the edge's.",
			o:      Options{Mode: Both},
			want: want{
				edges:     [2]Verdict{{By: ByFinalizer | ByUsage, State: Declared, Why: WhyBoth}, {By: ByFinalizer | ByUsage, State: Declared, Why: WhyBoth}},
				usages:    []string{"d1", "d2"},
				additions: []string{f("d1"), f("d2")},
			},
		},
		"LeftToUsages": {
			reason: "An Operation declares no finalizer for a dependent the Composition step protects with Usages.",
			o:      Options{Mode: Finalizers, LeftToUsages: map[string]bool{"d2": true}},
			want: want{
				edges:     [2]Verdict{{By: ByFinalizer, State: Protected, Why: WhyFinalizers}, {State: Exposed, Why: WhyLeftToUsages}},
				additions: []string{f("d1")},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			target := shared
			if tc.inUse {
				target = composedtest.With(shared, inUse)
			}
			g := composed.New([]composed.Resource{target, d1, d2}, composed.Options{})
			o := tc.o
			o.API, o.Owner = Protection, xr
			if tc.observed {
				o.Observed = map[string]map[string]any{}
				for _, d := range []composed.Resource{d1, d2} {
					e := between(d, target)
					o.Observed[e.Key], _ = write(Protection, xr, e)
				}
			}
			p := Decide(g, o)
			got := want{edges: [2]Verdict(p.Edges), additions: p.Additions["shared"]}
			for _, key := range slices.Sorted(maps.Keys(p.Usages)) {
				got.usages = append(got.usages, map[string]string{Key("d1", "shared"): "d1", Key("d2", "shared"): "d2"}[key])
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nDecide(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestAnEdgeNoFinalizerCanProtectIsTheUsagesOrNothings proves the verdicts
// of an edge the input declares between two resources that are no Objects:
// a Usage where the step writes Usages and one can express it, else
// nothing, and why.
func TestAnEdgeNoFinalizerCanProtectIsTheUsagesOrNothings(t *testing.T) {
	resources := []composed.Resource{composedtest.ConfigMap("db"), composedtest.ConfigMap("app", "db")}
	cases := map[string]struct {
		reason string
		o      Options
		want   Verdict
	}{
		"NotAsked": {
			reason: "Without Usages nothing protects it.",
			o:      Options{Policy: None, API: Protection},
			want:   Verdict{State: Exposed, Why: WhyNotAsked},
		},
		"Usage": {
			reason: "With Usages, the function's Usage does.",
			o:      Options{Policy: Every, API: Protection},
			want:   Verdict{By: ByUsage, State: Declared, Why: WhyNoFinalizer},
		},
		"NoUsageCan": {
			reason: "Crossplane v1's Usage can't express an edge between namespaced resources.",
			o:      Options{Policy: Every, API: Apiextensions},
			want:   Verdict{State: Exposed, Why: WhyNoUsage},
		},
		"ComposedUsage": {
			reason: "The composition's own Usage protects it, whatever the policy.",
			o: Options{Policy: None, API: Protection, Composed: []Composed{{
				Target: End{Kind: "ConfigMap", Namespace: "team", Name: "db"}, Dependent: End{Kind: "ConfigMap", Namespace: "team", Name: "app"}, Observed: true,
			}}},
			want: Verdict{By: ByUsage, State: Protected, Why: WhyComposedUsage},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.o.Owner = xr
			p := Decide(composed.New(resources, composed.Options{}), tc.o)
			if diff := cmp.Diff([]Verdict{tc.want}, p.Edges); diff != "" {
				t.Errorf("%s\nDecide(...).Edges: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestAVerdictSaysWhatOrdersTheEdge proves that where both protect an edge
// (protection: Both) the Usage's state is the edge's, since it orders the
// deletion where the finalizer doesn't, and that an edge neither protects
// is exposed, or cyclic when broken.
func TestAVerdictSaysWhatOrdersTheEdge(t *testing.T) {
	plain, broken := composed.Edge{}, composed.Edge{Broken: true}
	cases := map[string]struct {
		edge                 composed.Edge
		fs                   State
		byFinalizer, byUsage bool
		us                   State
		want                 Verdict
		orders               By
	}{
		"Finalizer":       {edge: plain, fs: Protected, byFinalizer: true, want: Verdict{By: ByFinalizer, State: Protected}, orders: ByFinalizer},
		"Usage":           {edge: plain, byUsage: true, us: Declared, want: Verdict{By: ByUsage, State: Declared}, orders: ByUsage},
		"Neither":         {edge: plain, want: Verdict{State: Exposed}},
		"NeitherBroken":   {edge: broken, want: Verdict{State: Cyclic}},
		"FinalizerCyclic": {edge: broken, fs: Cyclic, byFinalizer: true, want: Verdict{By: ByFinalizer, State: Cyclic}, orders: ByFinalizer},
		"Both":            {edge: plain, fs: Protected, byFinalizer: true, byUsage: true, us: Declared, want: Verdict{By: ByFinalizer | ByUsage, State: Declared}, orders: ByUsage},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := verdictOf(tc.edge, tc.fs, tc.byFinalizer, tc.us, tc.byUsage, 0)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("verdictOf(...): -want, +got:\n%s", diff)
			}
			if got.Orders() != tc.orders {
				t.Errorf("Orders() = %d, want %d", got.Orders(), tc.orders)
			}
		})
	}
}
