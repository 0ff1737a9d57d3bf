package protection

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/composed/composedtest"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
)

// f is composedtest.Finalizer, short for the tables.
var f = composedtest.Finalizer

func declaring(finalizers ...string) func(*composed.Resource) {
	return func(r *composed.Resource) { r.Desired.Finalizers = finalizers }
}

func named(name string) func(*composed.Resource) {
	return func(r *composed.Resource) { r.Identity.Name = name }
}

func uid(u string) func(*composed.Resource) {
	return func(r *composed.Resource) { r.Observed.UID = u }
}

func going(r *composed.Resource) { r.Observed.Going = true }

// plan is what the finalizer rule's part of a decision declares alone,
// each edge's finalizer giving way to Usages as yield says, by dependent.
type plan struct {
	// Protected says, for each of the graph's edges by its place, whether a
	// finalizer protects it, and States its state when one does.
	Protected []bool
	States    []State
	Additions map[string][]string
	Declared  int
	Added     int
	Stale     []Stale
}

func declare(g *composed.Graph, yield map[string]Yield) plan {
	fs := newFinalizers(g)
	p := plan{Protected: make([]bool, len(g.Edges)), States: make([]State, len(g.Edges))}
	for i, e := range g.Edges {
		if finalizerCan(g, e) {
			p.States[i], p.Protected[i] = fs.edge(i, yield[e.Dependent])
		}
	}
	p.Additions, p.Declared, p.Added = fs.finish()
	p.Stale = fs.stale
	return p
}

// outcome is a plan with its edges' states by dependent → target.
type outcome struct {
	States    map[string]State
	Additions map[string][]string
	Declared  int
	Stale     []Stale
}

type planCase struct {
	reason    string
	resources []composed.Resource
	o         composed.Options
	// yield gives way to Usages, by dependent.
	yield map[string]Yield
	want  outcome
}

func checkPlans(t *testing.T, cases map[string]planCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := composed.New(tc.resources, tc.o)
			p := declare(g, tc.yield)
			got := outcome{States: map[string]State{}, Additions: p.Additions, Declared: p.Declared, Stale: p.Stale}
			if len(p.Protected) != len(g.Edges) || len(p.States) != len(g.Edges) {
				t.Fatalf("%s\ndeclare(...) has %d protected and %d states for %d edges", tc.reason, len(p.Protected), len(p.States), len(g.Edges))
			}
			for i, protected := range p.Protected {
				if protected {
					got.States[g.Edges[i].Dependent+" → "+g.Edges[i].Target] = p.States[i]
				}
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\ndeclare(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAFinalizerGivesWayToAUsageOnlyOnceTheUsageIsInForce(t *testing.T) {
	checkPlans(t, map[string]planCase{
		"HandOver": {
			reason: "While the Usage is not in force, the finalizer the target carries stays declared, and one it doesn't carry is not added; a Usage in force takes the edge, carried or not; a finalizer that keeps its edge is declared.",
			resources: []composed.Resource{
				composedtest.With(composedtest.Object("shared"), composedtest.Carrying(f("d1"), f("d3"))),
				composedtest.Object("d1", "shared"), composedtest.Object("d2", "shared"), composedtest.Object("d3", "shared"), composedtest.Object("d4", "shared"),
			},
			yield: map[string]Yield{"d1": HandOver, "d2": HandOver, "d3": Yielded, "d4": Keep},
			want: outcome{
				States:    map[string]State{"d1 → shared": Protected, "d4 → shared": Declared},
				Additions: map[string][]string{"shared": {f("d1"), f("d4")}},
				Declared:  2,
			},
		},
	})
}

func TestATargetDeclaresTheFinalizerOfEveryObjectThatReferencesIt(t *testing.T) {
	checkPlans(t, map[string]planCase{
		"Issue371": {
			reason: "A shared Object that carries only some of its dependents' finalizers declares all of them, the ones it carries too: those are what keeps them applied.",
			resources: []composed.Resource{
				composedtest.With(composedtest.Object("shared"), composedtest.Carrying(f("d1"), f("d3")), declaring("example.org/keep")),
				composedtest.Object("d1", "shared"), composedtest.Object("d2", "shared"), composedtest.Object("d3", "shared"), composedtest.Object("d4", "shared"),
			},
			want: outcome{
				States: map[string]State{
					"d1 → shared": Protected,
					"d2 → shared": Declared,
					"d3 → shared": Protected,
					"d4 → shared": Declared,
				},
				Additions: map[string][]string{"shared": {f("d1"), f("d2"), f("d3"), f("d4")}},
				Declared:  4,
			},
		},
		"AlreadyDeclared": {
			reason: "Finalizers earlier steps declared already are not added twice, but still counted; a resource that needs nothing new has no additions.",
			resources: []composed.Resource{
				composedtest.With(composedtest.Object("shared"), declaring(f("d1"))),
				composedtest.Object("d1", "shared"),
			},
			want: outcome{
				States:   map[string]State{"d1 → shared": Declared},
				Declared: 1,
			},
		},
		"AdditionsSortedAfterEarlierSteps": {
			reason: "The additions are the finalizers earlier steps didn't declare, sorted by finalizer whatever the dependents' names.",
			resources: []composed.Resource{
				composedtest.With(composedtest.Object("shared"), declaring(f("m"), "example.org/keep")),
				composedtest.With(composedtest.Object("d1", "shared"), uid("uid-z")),
				composedtest.With(composedtest.Object("d2", "shared"), uid("uid-m")),
				composedtest.With(composedtest.Object("d3", "shared"), uid("uid-a")),
			},
			want: outcome{
				States: map[string]State{
					"d1 → shared": Declared,
					"d2 → shared": Declared,
					"d3 → shared": Declared,
				},
				Additions: map[string][]string{"shared": {f("a"), f("z")}},
				Declared:  3,
			},
		},
		"TargetNotCreatedYet": {
			reason: "A desired target that doesn't exist yet declares its dependents' finalizers from the start.",
			resources: []composed.Resource{
				composedtest.With(composedtest.Object("shared"), composedtest.NotObserved),
				composedtest.Object("d1", "shared"),
			},
			want: outcome{
				States:    map[string]State{"d1 → shared": Declared},
				Additions: map[string][]string{"shared": {f("d1")}},
				Declared:  1,
			},
		},
		"AnyKind": {
			reason: "Any composed kind an Object references declares its finalizer, such as a ConfigMap composed directly.",
			resources: []composed.Resource{
				composedtest.ConfigMap("cm"),
				composedtest.With(composedtest.Object("d1"), func(r *composed.Resource) {
					r.References = []object.Target{{Ref: object.Ref{Kind: "ConfigMap", Namespace: "team", Name: "cm"}}}
				}),
			},
			want: outcome{
				States:    map[string]State{"d1 → cm": Declared},
				Additions: map[string][]string{"cm": {f("d1")}},
				Declared:  1,
			},
		},
		"SharedIdentity": {
			reason: "Two composed resources for the same object both declare the finalizer: whichever is applied, it is there.",
			resources: []composed.Resource{
				composedtest.With(composedtest.Object("shared-a"), named("shared")),
				composedtest.With(composedtest.Object("shared-b"), named("shared")),
				composedtest.Object("d1", "shared"),
			},
			want: outcome{
				States:    map[string]State{"d1 → shared-a": Declared, "d1 → shared-b": Declared},
				Additions: map[string][]string{"shared-a": {f("d1")}, "shared-b": {f("d1")}},
				Declared:  2,
			},
		},
		"InputDependency": {
			reason:    "An Object that depends on a resource by the input's word is protected by its finalizer as by a reference's.",
			resources: []composed.Resource{composedtest.Object("shared"), composedtest.With(composedtest.Object("d1"), composedtest.DependingOn("shared"))},
			want: outcome{
				States:    map[string]State{"d1 → shared": Declared},
				Additions: map[string][]string{"shared": {f("d1")}},
				Declared:  1,
			},
		},
		"InputDependencyOnTwoVersionsOfAnObject": {
			reason: "Two composed resources for one object, in two versions, both declare the finalizer of an Object that depends on them.",
			resources: []composed.Resource{
				composedtest.With(composedtest.Object("shared-a"), named("shared")),
				composedtest.With(composedtest.Object("shared-b"), named("shared"), func(r *composed.Resource) { r.APIVersion = "kubernetes.crossplane.io/v1alpha1" }),
				composedtest.With(composedtest.Object("d1"), composedtest.DependingOn("shared-a", "shared-b")),
			},
			want: outcome{
				States:    map[string]State{"d1 → shared-a": Declared, "d1 → shared-b": Declared},
				Additions: map[string][]string{"shared-a": {f("d1")}, "shared-b": {f("d1")}},
				Declared:  2,
			},
		},
		"IgnoredReferences": {
			reason: "With references ignored, only the input's dependencies are protected.",
			resources: []composed.Resource{
				composedtest.Object("shared"), composedtest.Object("other"),
				composedtest.With(composedtest.Object("d1", "shared", "other"), composedtest.DependingOn("shared")),
			},
			o: composed.Options{IgnoreReferences: true},
			want: outcome{
				States:    map[string]State{"d1 → shared": Declared},
				Additions: map[string][]string{"shared": {f("d1")}},
				Declared:  1,
			},
		},
	})
}

func TestAFinalizerIsDeclaredOnlyForAnObjectTheProviderManages(t *testing.T) {
	checkPlans(t, map[string]planCase{
		"DependentNotCreatedYet": {
			reason: "A dependent without a UID has no finalizer yet: the edge is pending.",
			resources: []composed.Resource{
				composedtest.Object("shared"),
				composedtest.With(composedtest.Object("d1", "shared"), composedtest.NotObserved),
			},
			want: outcome{States: map[string]State{"d1 → shared": Pending}},
		},
		"DependentWithoutUID": {
			reason: "A dependent observed without a UID has no finalizer to declare either.",
			resources: []composed.Resource{
				composedtest.Object("shared"),
				composedtest.With(composedtest.Object("d1", "shared"), uid("")),
			},
			want: outcome{States: map[string]State{"d1 → shared": Pending}},
		},
		"UnmanagedDependent": {
			reason: "An Object that lacks the provider's own finalizer has references that don't all resolve: it would not release a finalizer declared for it, so none is declared until the provider manages it.",
			resources: []composed.Resource{
				composedtest.Object("shared"),
				composedtest.With(composedtest.Object("d1", "shared", "nowhere"), composedtest.Carrying("example.org/other")),
			},
			want: outcome{States: map[string]State{"d1 → shared": Pending}},
		},
		"UnmanagedDependentsCarriedFinalizerIsNotStale": {
			reason: "The finalizer an unmanaged Object's target carries for it is not declared, nor stale: the Object still references the target.",
			resources: []composed.Resource{
				composedtest.With(composedtest.Object("shared"), composedtest.Carrying(f("d1"))),
				composedtest.With(composedtest.Object("d1", "shared"), composedtest.Carrying()),
			},
			want: outcome{States: map[string]State{"d1 → shared": Pending}},
		},
		"DependencyNotNamed": {
			reason: "An Object that doesn't exist yet is pending on a dependency that has no name; an existing one is declared by it.",
			resources: []composed.Resource{
				composedtest.With(composedtest.Object("shared"), composedtest.NotObserved, named("")),
				composedtest.With(composedtest.Object("new"), composedtest.NotObserved, composedtest.DependingOn("shared")),
				composedtest.With(composedtest.Object("old"), composedtest.DependingOn("shared")),
			},
			want: outcome{
				States:    map[string]State{"new → shared": Pending, "old → shared": Declared},
				Additions: map[string][]string{"shared": {f("old")}},
				Declared:  1,
			},
		},
	})
}

func TestOnlyAnObjectsEdgesAreProtectedByAFinalizer(t *testing.T) {
	checkPlans(t, map[string]planCase{
		"NotAnObject": {
			reason: "No finalizer protects an edge whose dependent is not an Object, and a reference finalizer for its UID is stale: the provider never releases it.",
			resources: []composed.Resource{
				composedtest.With(composedtest.ConfigMap("db"), composedtest.Carrying(f("app"))),
				composedtest.With(composedtest.ConfigMap("app"), composedtest.DependingOn("db")),
			},
			want: outcome{Stale: []Stale{{Resource: "db", Finalizer: f("app")}}},
		},
		"Inferred": {
			reason: "No finalizer protects an inferred edge, even an Object's: the provider would never release it.",
			resources: []composed.Resource{
				composedtest.ConfigMap("config"),
				composedtest.With(composedtest.Object("app"), composedtest.Inferring("spec.providerConfigRef", "config")),
			},
			want: outcome{},
		},
		"ObjectDependingOnWhatTheProviderCantReach": {
			reason: "An Object's declared dependency on a Release gets no finalizer: no dependsOn is written for it, since provider-kubernetes may not read or update a Release by default.",
			resources: []composed.Resource{
				{Name: "chart", APIVersion: "helm.crossplane.io/v1beta1", Identity: object.Ref{Group: "helm.crossplane.io", Kind: "Release", Name: "chart"}, Observed: &composed.Observed{UID: "uid-chart"}, Desired: &composed.Desired{}},
				composedtest.With(composedtest.Object("d1"), composedtest.DependingOn("chart")),
			},
			want: outcome{},
		},
		"ObjectDependingOnANonObject": {
			reason: "An Object protects a dependency that is not an Object; the dependency's own edges stay unprotected.",
			resources: []composed.Resource{
				composedtest.With(composedtest.ConfigMap("db"), composedtest.DependingOn("ns")),
				composedtest.ConfigMap("ns"),
				composedtest.With(composedtest.Object("d1"), composedtest.DependingOn("db")),
			},
			want: outcome{
				States:    map[string]State{"d1 → db": Declared},
				Additions: map[string][]string{"db": {f("d1")}},
				Declared:  1,
			},
		},
	})
	g := composed.New([]composed.Resource{
		composedtest.Object("o", "t"), composedtest.With(composedtest.Object("t"), composedtest.NotObserved),
		composedtest.ConfigMap("p", "t"),
		composedtest.With(composedtest.Object("i"), composedtest.Inferring("spec.providerConfigRef", "t")),
	}, composed.Options{})
	want := map[string]bool{"o → t": true, "p → t": false, "i → t": false}
	for _, e := range g.Edges {
		if got := finalizerCan(g, e); got != want[e.Dependent+" → "+e.Target] {
			t.Errorf("finalizerCan(%s → %s) = %t, want %t: a finalizer protects the edges an Object's references make, whether its target exists or not, and no inferred edge", e.Dependent, e.Target, got, !got)
		}
	}
}

func TestADependentGoingAwayKeepsItsFinalizerOnlyWhileTheTargetCarriesIt(t *testing.T) {
	checkPlans(t, map[string]planCase{
		"DependentGoing": {
			reason: "A dependent being deleted, or no longer desired, keeps its finalizer declared while the target carries it, and never gets it back once the provider removed it.",
			resources: []composed.Resource{
				composedtest.With(composedtest.Object("shared"), composedtest.Carrying(f("deleting"), f("removed"))),
				composedtest.With(composedtest.Object("deleting", "shared"), composedtest.Deleting),
				composedtest.With(composedtest.Object("deleted", "shared"), composedtest.Deleting),
				composedtest.With(composedtest.Object("removed", "shared"), composedtest.NotDesired),
				composedtest.With(composedtest.Object("released", "shared"), composedtest.NotDesired),
			},
			want: outcome{
				States: map[string]State{
					"deleted → shared":  Releasing,
					"deleting → shared": Releasing,
					"released → shared": Releasing,
					"removed → shared":  Releasing,
				},
				Additions: map[string][]string{"shared": {f("deleting"), f("removed")}},
				Declared:  2,
			},
		},
		"TargetNotDesiredEither": {
			reason: "A target no longer desired declares nothing, even the finalizer of a dependent going away that it carries.",
			resources: []composed.Resource{
				composedtest.With(composedtest.Object("shared"), composedtest.Carrying(f("d1")), composedtest.NotDesired),
				composedtest.With(composedtest.Object("d1", "shared"), composedtest.Deleting),
			},
			want: outcome{States: map[string]State{"d1 → shared": Releasing}},
		},
		"DeclaredByAnEarlierStep": {
			reason: "A finalizer an earlier step declared is not added again for a dependent going away, but counted while the target carries it.",
			resources: []composed.Resource{
				composedtest.With(composedtest.Object("shared"), composedtest.Carrying(f("d1")), declaring(f("d1"))),
				composedtest.With(composedtest.Object("d1", "shared"), composedtest.Deleting),
			},
			want: outcome{
				States:   map[string]State{"d1 → shared": Releasing},
				Declared: 1,
			},
		},
	})
}

func TestATargetThatCanNoLongerTakeAFinalizerGetsNoNewOne(t *testing.T) {
	checkPlans(t, map[string]planCase{
		"TargetDeleting": {
			reason: "A deleting target keeps the finalizers it carries, and gets no new one: the API server would reject it.",
			resources: []composed.Resource{
				composedtest.With(composedtest.Object("shared"), composedtest.Carrying(f("d1")), composedtest.Deleting),
				composedtest.Object("d1", "shared"), composedtest.Object("d2", "shared"),
			},
			want: outcome{
				States:    map[string]State{"d1 → shared": Protected, "d2 → shared": TargetDeleting},
				Additions: map[string][]string{"shared": {f("d1")}},
				Declared:  1,
			},
		},
		"TargetRemovedFromComposition": {
			reason: "A target the composition no longer desires can't declare anything, and is never added back to desired state; the finalizer it carries for a live dependent is not stale.",
			resources: []composed.Resource{
				composedtest.With(composedtest.Object("shared"), composedtest.Carrying(f("d1")), composedtest.NotDesired),
				composedtest.Object("d1", "shared"),
			},
			want: outcome{States: map[string]State{"d1 → shared": TargetRemoved}},
		},
	})
}

func TestAnEdgeOnABrokenCycleDeclaresNoFinalizer(t *testing.T) {
	checkPlans(t, map[string]planCase{
		"CycleKept": {
			reason:    "Without BreakCycles the edges of a cycle are declared as any other (the caller fails the step).",
			resources: []composed.Resource{composedtest.Object("a", "b"), composedtest.Object("b", "a")},
			want: outcome{
				States:    map[string]State{"a → b": Declared, "b → a": Declared},
				Additions: map[string][]string{"a": {f("b")}, "b": {f("a")}},
				Declared:  2,
			},
		},
		"CycleBroken": {
			reason:    "With BreakCycles no edge inside a cycle gets a finalizer; an edge into the cycle still does.",
			resources: []composed.Resource{composedtest.Object("a", "b"), composedtest.Object("b", "a"), composedtest.Object("c", "a")},
			o:         composed.Options{BreakCycles: true},
			want: outcome{
				States:    map[string]State{"a → b": Cyclic, "b → a": Cyclic, "c → a": Declared},
				Additions: map[string][]string{"a": {f("c")}},
				Declared:  1,
			},
		},
		"CarriedOnABrokenCycle": {
			reason:    "A finalizer carried along a broken edge is not declared, and not stale: the dependent still references the target.",
			resources: []composed.Resource{composedtest.With(composedtest.Object("a", "b"), composedtest.Carrying(f("b"), object.ObjectFinalizer)), composedtest.Object("b", "a")},
			o:         composed.Options{BreakCycles: true},
			want:      outcome{States: map[string]State{"a → b": Cyclic, "b → a": Cyclic}},
		},
		"SelfReference": {
			reason:    "An Object that references itself would keep itself forever: with BreakCycles it declares no finalizer for itself.",
			resources: []composed.Resource{composedtest.Object("a", "a")},
			o:         composed.Options{BreakCycles: true},
			want:      outcome{States: map[string]State{"a → a": Cyclic}},
		},
	})
}

func TestTwoObjectsClaimingOneUIDShareOneFinalizer(t *testing.T) {
	checkPlans(t, map[string]planCase{
		"CountedOnce": {
			reason: "Declared counts finalizers, not edges: two Objects that claim one UID share one finalizer, declared and counted once, since server-side apply rejects a duplicate in a set.",
			resources: []composed.Resource{
				composedtest.Object("shared"),
				composedtest.With(composedtest.Object("d1", "shared"), uid("uid-same")),
				composedtest.With(composedtest.Object("d2", "shared"), uid("uid-same")),
			},
			want: outcome{
				States:    map[string]State{"d1 → shared": Declared, "d2 → shared": Declared},
				Additions: map[string][]string{"shared": {f("same")}},
				Declared:  1,
			},
		},
		"UIDsSharingAPrefix": {
			reason: "Finalizers are sorted by the whole UID, not its first bytes, and two Objects that claim one UID get its finalizer declared once and both their edges protected by it.",
			resources: []composed.Resource{
				composedtest.With(composedtest.Object("shared"), composedtest.Carrying(f("same-z"), f("same-b"))),
				composedtest.With(composedtest.Object("d1", "shared"), uid("uid-same-z")),
				composedtest.With(composedtest.Object("d2", "shared"), uid("uid-same-b")),
				composedtest.With(composedtest.Object("d3", "shared"), uid("uid-same-a")),
				composedtest.With(composedtest.Object("d4", "shared"), uid("uid-same-b")),
			},
			want: outcome{
				States: map[string]State{
					"d1 → shared": Protected,
					"d2 → shared": Protected,
					"d3 → shared": Declared,
					"d4 → shared": Protected,
				},
				Additions: map[string][]string{"shared": {f("same-a"), f("same-b"), f("same-z")}},
				Declared:  3,
			},
		},
		"OneLiveOneGoing": {
			reason: "Of two Objects that claim one UID, a live one declares the finalizer the other, going away, would release: once.",
			resources: []composed.Resource{
				composedtest.Object("shared"),
				composedtest.With(composedtest.Object("d1", "shared"), uid("uid-same")),
				composedtest.With(composedtest.Object("d2", "shared"), uid("uid-same"), composedtest.Deleting),
			},
			want: outcome{
				States:    map[string]State{"d1 → shared": Declared, "d2 → shared": Releasing},
				Additions: map[string][]string{"shared": {f("same")}},
				Declared:  1,
			},
		},
		"CountedPerTarget": {
			reason: "A finalizer declared by two targets counts twice: each declares it.",
			resources: []composed.Resource{
				composedtest.Object("a"), composedtest.Object("b"),
				composedtest.Object("d1", "a", "b"),
				composedtest.With(composedtest.Object("d2", "a"), uid("uid-d1")),
			},
			want: outcome{
				States:    map[string]State{"d1 → a": Declared, "d1 → b": Declared, "d2 → a": Declared},
				Additions: map[string][]string{"a": {f("d1")}, "b": {f("d1")}},
				Declared:  2,
			},
		},
	})
}

func TestAReferenceFinalizerOfNoReferencingObjectIsStale(t *testing.T) {
	checkPlans(t, map[string]planCase{
		"NoReferences": {
			reason:    "Without references, a reference finalizer left on a resource names no dependent.",
			resources: []composed.Resource{composedtest.With(composedtest.Object("alone"), composedtest.Carrying(f("gone"), object.ObjectFinalizer)), composedtest.ConfigMap("config")},
			want:      outcome{Stale: []Stale{{Resource: "alone", Finalizer: f("gone"), Unseen: true}}},
		},
		"Stale": {
			reason: "Reference finalizers of no Object that references the resource here are stale: reported, not declared, and unseen when they name no resource at all; other finalizers are not reference finalizers.",
			resources: []composed.Resource{
				composedtest.With(composedtest.Object("shared"), composedtest.Carrying(f("gone"), f("d1"), f("d2"), "example.org/other")),
				composedtest.Object("d1", "shared"),
				composedtest.Object("d2"),
			},
			want: outcome{
				States:    map[string]State{"d1 → shared": Protected},
				Stale:     []Stale{{Resource: "shared", Finalizer: f("d2")}, {Resource: "shared", Finalizer: f("gone"), Unseen: true}},
				Additions: map[string][]string{"shared": {f("d1")}},
				Declared:  1,
			},
		},
		"SortedByResourceThenFinalizer": {
			reason: "Stale finalizers are sorted by resource, then finalizer.",
			resources: []composed.Resource{
				composedtest.With(composedtest.ConfigMap("b"), composedtest.Carrying(f("z"), f("a"))),
				composedtest.With(composedtest.ConfigMap("a"), composedtest.Carrying(f("y"))),
			},
			want: outcome{Stale: []Stale{
				{Resource: "a", Finalizer: f("y"), Unseen: true},
				{Resource: "b", Finalizer: f("a")},
				{Resource: "b", Finalizer: f("z"), Unseen: true},
			}},
		},
		"ReferencingAnotherResource": {
			reason: "The finalizer of an Object that references another resource is stale on this one.",
			resources: []composed.Resource{
				composedtest.With(composedtest.Object("shared"), composedtest.Carrying(f("d1"))),
				composedtest.Object("other"),
				composedtest.Object("d1", "other"),
			},
			want: outcome{
				States:    map[string]State{"d1 → other": Declared},
				Stale:     []Stale{{Resource: "shared", Finalizer: f("d1")}},
				Additions: map[string][]string{"other": {f("d1")}},
				Declared:  1,
			},
		},
		"NotOnAResourceCrossplaneIsDeleting": {
			reason: "A resource read from the required resources, which Crossplane is deleting, has left the composition: its finalizers are not reported.",
			resources: []composed.Resource{
				composedtest.With(composedtest.Object("old"), composedtest.Carrying(f("gone"), object.ObjectFinalizer), going, composedtest.Deleting, composedtest.NotDesired),
				composedtest.With(composedtest.ConfigMap("kept"), composedtest.Carrying(f("gone"))),
			},
			want: outcome{Stale: []Stale{{Resource: "kept", Finalizer: f("gone"), Unseen: true}}},
		},
		"NotOnAResourceThatDoesNotExist": {
			reason:    "A resource that doesn't exist carries nothing.",
			resources: []composed.Resource{composedtest.With(composedtest.Object("new"), composedtest.NotObserved, declaring(f("gone")))},
		},
	})
}

// TestThePlanDoesNotDependOnTheOrderOfTheResources proves the finalizers
// don't depend on the order of the resources or of an Object's references.
func TestThePlanDoesNotDependOnTheOrderOfTheResources(t *testing.T) {
	var resources []composed.Resource
	resources = append(resources, composedtest.With(composedtest.Object("shared"), composedtest.Carrying(f("d00"), f("gone"), f("d01"))))
	for i := range 30 {
		d := composedtest.Object(fmt.Sprintf("d%02d", i), "shared", fmt.Sprintf("d%02d", (i+1)%30), "external")
		resources = append(resources, d)
	}
	want := declare(composed.New(resources, composed.Options{BreakCycles: true}), nil)
	reversed := make([]composed.Resource, len(resources))
	for i, r := range resources {
		r.References = slices.Clone(r.References)
		slices.Reverse(r.References)
		reversed[len(resources)-1-i] = r
	}
	got := declare(composed.New(reversed, composed.Options{BreakCycles: true}), nil)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("declare(reversed): -want, +got:\n%s", diff)
	}
	if len(want.Additions["shared"]) != 30 || want.Declared != 30 || len(want.Stale) != 1 {
		t.Errorf("declare(...) = %d additions to shared, %d declared, %d stale; want 30, 30 and 1", len(want.Additions["shared"]), want.Declared, len(want.Stale))
	}
}
