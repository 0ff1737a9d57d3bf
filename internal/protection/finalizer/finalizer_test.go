package finalizer

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crossplane-contrib/function-dependencies/internal/graph"
	"github.com/crossplane-contrib/function-dependencies/internal/graph/graphtest"
	"github.com/crossplane-contrib/function-dependencies/internal/objectref"
	"github.com/crossplane-contrib/function-dependencies/internal/protection"
)

// f is graphtest.Finalizer, short for the tables.
var f = graphtest.Finalizer

func declaring(finalizers ...string) func(*graph.Resource) {
	return func(r *graph.Resource) { r.Desired.Finalizers = finalizers }
}

func named(name string) func(*graph.Resource) {
	return func(r *graph.Resource) { r.Identity.Name = name }
}

func uid(u string) func(*graph.Resource) {
	return func(r *graph.Resource) { r.Observed.UID = u }
}

func going(r *graph.Resource) { r.Observed.Going = true }

// outcome is a plan with its edges' states by dependent → target.
type outcome struct {
	States    map[string]protection.State
	Additions map[string][]string
	Declared  int
	Stale     []Stale
}

type planCase struct {
	reason    string
	resources []graph.Resource
	o         graph.Options
	// yield gives way to Usages, by dependent.
	yield map[string]Yield
	want  outcome
}

func checkPlans(t *testing.T, cases map[string]planCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := graph.New(tc.resources, tc.o)
			var yield func(int) Yield
			if tc.yield != nil {
				yield = func(i int) Yield { return tc.yield[g.Edges[i].Dependent] }
			}
			p := Declare(g, yield)
			got := outcome{States: map[string]protection.State{}, Additions: p.Additions, Declared: p.Declared, Stale: p.Stale}
			if len(p.Protected) != len(g.Edges) || len(p.States) != len(g.Edges) {
				t.Fatalf("%s\nDeclare(...) has %d protected and %d states for %d edges", tc.reason, len(p.Protected), len(p.States), len(g.Edges))
			}
			for i, protected := range p.Protected {
				if protected {
					got.States[g.Edges[i].Dependent+" → "+g.Edges[i].Target] = p.States[i]
				}
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nDeclare(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAFinalizerGivesWayToAUsageOnlyOnceTheUsageIsInForce(t *testing.T) {
	checkPlans(t, map[string]planCase{
		"HandOver": {
			reason: "While the Usage is not in force, the finalizer the target carries stays declared, and one it doesn't carry is not added; a Usage in force takes the edge, carried or not; a finalizer that keeps its edge is declared.",
			resources: []graph.Resource{
				graphtest.With(graphtest.Object("shared"), graphtest.Carrying(f("d1"), f("d3"))),
				graphtest.Object("d1", "shared"), graphtest.Object("d2", "shared"), graphtest.Object("d3", "shared"), graphtest.Object("d4", "shared"),
			},
			yield: map[string]Yield{"d1": HandOver, "d2": HandOver, "d3": Yielded, "d4": Keep},
			want: outcome{
				States:    map[string]protection.State{"d1 → shared": protection.Protected, "d4 → shared": protection.Declared},
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
			resources: []graph.Resource{
				graphtest.With(graphtest.Object("shared"), graphtest.Carrying(f("d1"), f("d3")), declaring("example.org/keep")),
				graphtest.Object("d1", "shared"), graphtest.Object("d2", "shared"), graphtest.Object("d3", "shared"), graphtest.Object("d4", "shared"),
			},
			want: outcome{
				States: map[string]protection.State{
					"d1 → shared": protection.Protected,
					"d2 → shared": protection.Declared,
					"d3 → shared": protection.Protected,
					"d4 → shared": protection.Declared,
				},
				Additions: map[string][]string{"shared": {f("d1"), f("d2"), f("d3"), f("d4")}},
				Declared:  4,
			},
		},
		"AlreadyDeclared": {
			reason: "Finalizers earlier steps declared already are not added twice, but still counted; a resource that needs nothing new has no additions.",
			resources: []graph.Resource{
				graphtest.With(graphtest.Object("shared"), declaring(f("d1"))),
				graphtest.Object("d1", "shared"),
			},
			want: outcome{
				States:   map[string]protection.State{"d1 → shared": protection.Declared},
				Declared: 1,
			},
		},
		"AdditionsSortedAfterEarlierSteps": {
			reason: "The additions are the finalizers earlier steps didn't declare, sorted by finalizer whatever the dependents' names.",
			resources: []graph.Resource{
				graphtest.With(graphtest.Object("shared"), declaring(f("m"), "example.org/keep")),
				graphtest.With(graphtest.Object("d1", "shared"), uid("uid-z")),
				graphtest.With(graphtest.Object("d2", "shared"), uid("uid-m")),
				graphtest.With(graphtest.Object("d3", "shared"), uid("uid-a")),
			},
			want: outcome{
				States: map[string]protection.State{
					"d1 → shared": protection.Declared,
					"d2 → shared": protection.Declared,
					"d3 → shared": protection.Declared,
				},
				Additions: map[string][]string{"shared": {f("a"), f("z")}},
				Declared:  3,
			},
		},
		"TargetNotCreatedYet": {
			reason: "A desired target that doesn't exist yet declares its dependents' finalizers from the start.",
			resources: []graph.Resource{
				graphtest.With(graphtest.Object("shared"), graphtest.NotObserved),
				graphtest.Object("d1", "shared"),
			},
			want: outcome{
				States:    map[string]protection.State{"d1 → shared": protection.Declared},
				Additions: map[string][]string{"shared": {f("d1")}},
				Declared:  1,
			},
		},
		"AnyKind": {
			reason: "Any composed kind an Object references declares its finalizer, such as a ConfigMap composed directly.",
			resources: []graph.Resource{
				graphtest.ConfigMap("cm"),
				graphtest.With(graphtest.Object("d1"), func(r *graph.Resource) {
					r.References = []objectref.Target{{Ref: objectref.Ref{Kind: "ConfigMap", Namespace: "team", Name: "cm"}}}
				}),
			},
			want: outcome{
				States:    map[string]protection.State{"d1 → cm": protection.Declared},
				Additions: map[string][]string{"cm": {f("d1")}},
				Declared:  1,
			},
		},
		"SharedIdentity": {
			reason: "Two composed resources for the same object both declare the finalizer: whichever is applied, it is there.",
			resources: []graph.Resource{
				graphtest.With(graphtest.Object("shared-a"), named("shared")),
				graphtest.With(graphtest.Object("shared-b"), named("shared")),
				graphtest.Object("d1", "shared"),
			},
			want: outcome{
				States:    map[string]protection.State{"d1 → shared-a": protection.Declared, "d1 → shared-b": protection.Declared},
				Additions: map[string][]string{"shared-a": {f("d1")}, "shared-b": {f("d1")}},
				Declared:  2,
			},
		},
		"InputDependency": {
			reason:    "An Object that depends on a resource by the input's word is protected by its finalizer as by a reference's.",
			resources: []graph.Resource{graphtest.Object("shared"), graphtest.With(graphtest.Object("d1"), graphtest.DependingOn("shared"))},
			want: outcome{
				States:    map[string]protection.State{"d1 → shared": protection.Declared},
				Additions: map[string][]string{"shared": {f("d1")}},
				Declared:  1,
			},
		},
		"InputDependencyOnTwoVersionsOfAnObject": {
			reason: "Two composed resources for one object, in two versions, both declare the finalizer of an Object that depends on them.",
			resources: []graph.Resource{
				graphtest.With(graphtest.Object("shared-a"), named("shared")),
				graphtest.With(graphtest.Object("shared-b"), named("shared"), func(r *graph.Resource) { r.APIVersion = "kubernetes.crossplane.io/v1alpha1" }),
				graphtest.With(graphtest.Object("d1"), graphtest.DependingOn("shared-a", "shared-b")),
			},
			want: outcome{
				States:    map[string]protection.State{"d1 → shared-a": protection.Declared, "d1 → shared-b": protection.Declared},
				Additions: map[string][]string{"shared-a": {f("d1")}, "shared-b": {f("d1")}},
				Declared:  2,
			},
		},
		"IgnoredReferences": {
			reason: "With references ignored, only the input's dependencies are protected.",
			resources: []graph.Resource{
				graphtest.Object("shared"), graphtest.Object("other"),
				graphtest.With(graphtest.Object("d1", "shared", "other"), graphtest.DependingOn("shared")),
			},
			o: graph.Options{IgnoreReferences: true},
			want: outcome{
				States:    map[string]protection.State{"d1 → shared": protection.Declared},
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
			resources: []graph.Resource{
				graphtest.Object("shared"),
				graphtest.With(graphtest.Object("d1", "shared"), graphtest.NotObserved),
			},
			want: outcome{States: map[string]protection.State{"d1 → shared": protection.Pending}},
		},
		"DependentWithoutUID": {
			reason: "A dependent observed without a UID has no finalizer to declare either.",
			resources: []graph.Resource{
				graphtest.Object("shared"),
				graphtest.With(graphtest.Object("d1", "shared"), uid("")),
			},
			want: outcome{States: map[string]protection.State{"d1 → shared": protection.Pending}},
		},
		"UnmanagedDependent": {
			reason: "An Object that lacks the provider's own finalizer has references that don't all resolve: it would not release a finalizer declared for it, so none is declared until the provider manages it.",
			resources: []graph.Resource{
				graphtest.Object("shared"),
				graphtest.With(graphtest.Object("d1", "shared", "nowhere"), graphtest.Carrying("example.org/other")),
			},
			want: outcome{States: map[string]protection.State{"d1 → shared": protection.Pending}},
		},
		"UnmanagedDependentsCarriedFinalizerIsNotStale": {
			reason: "The finalizer an unmanaged Object's target carries for it is not declared, nor stale: the Object still references the target.",
			resources: []graph.Resource{
				graphtest.With(graphtest.Object("shared"), graphtest.Carrying(f("d1"))),
				graphtest.With(graphtest.Object("d1", "shared"), graphtest.Carrying()),
			},
			want: outcome{States: map[string]protection.State{"d1 → shared": protection.Pending}},
		},
		"DependencyNotNamed": {
			reason: "An Object that doesn't exist yet is pending on a dependency that has no name; an existing one is declared by it.",
			resources: []graph.Resource{
				graphtest.With(graphtest.Object("shared"), graphtest.NotObserved, named("")),
				graphtest.With(graphtest.Object("new"), graphtest.NotObserved, graphtest.DependingOn("shared")),
				graphtest.With(graphtest.Object("old"), graphtest.DependingOn("shared")),
			},
			want: outcome{
				States:    map[string]protection.State{"new → shared": protection.Pending, "old → shared": protection.Declared},
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
			resources: []graph.Resource{
				graphtest.With(graphtest.ConfigMap("db"), graphtest.Carrying(f("app"))),
				graphtest.With(graphtest.ConfigMap("app"), graphtest.DependingOn("db")),
			},
			want: outcome{Stale: []Stale{{Resource: "db", Finalizer: f("app")}}},
		},
		"Inferred": {
			reason: "No finalizer protects an inferred edge, even an Object's: the provider would never release it.",
			resources: []graph.Resource{
				graphtest.ConfigMap("config"),
				graphtest.With(graphtest.Object("app"), graphtest.Inferring("spec.providerConfigRef", "config")),
			},
			want: outcome{},
		},
		"ObjectDependingOnANonObject": {
			reason: "An Object protects a dependency that is not an Object; the dependency's own edges stay unprotected.",
			resources: []graph.Resource{
				graphtest.With(graphtest.ConfigMap("db"), graphtest.DependingOn("ns")),
				graphtest.ConfigMap("ns"),
				graphtest.With(graphtest.Object("d1"), graphtest.DependingOn("db")),
			},
			want: outcome{
				States:    map[string]protection.State{"d1 → db": protection.Declared},
				Additions: map[string][]string{"db": {f("d1")}},
				Declared:  1,
			},
		},
	})
	g := graph.New([]graph.Resource{
		graphtest.Object("o", "t"), graphtest.With(graphtest.Object("t"), graphtest.NotObserved),
		graphtest.ConfigMap("p", "t"),
		graphtest.With(graphtest.Object("i"), graphtest.Inferring("spec.providerConfigRef", "t")),
	}, graph.Options{})
	want := map[string]bool{"o → t": true, "p → t": false, "i → t": false}
	for _, e := range g.Edges {
		if got := Protects(g, e); got != want[e.Dependent+" → "+e.Target] {
			t.Errorf("Protects(%s → %s) = %t, want %t: a finalizer protects the edges an Object's references make, whether its target exists or not, and no inferred edge", e.Dependent, e.Target, got, !got)
		}
	}
}

func TestADependentGoingAwayKeepsItsFinalizerOnlyWhileTheTargetCarriesIt(t *testing.T) {
	checkPlans(t, map[string]planCase{
		"DependentGoing": {
			reason: "A dependent being deleted, or no longer desired, keeps its finalizer declared while the target carries it, and never gets it back once the provider removed it.",
			resources: []graph.Resource{
				graphtest.With(graphtest.Object("shared"), graphtest.Carrying(f("deleting"), f("removed"))),
				graphtest.With(graphtest.Object("deleting", "shared"), graphtest.Deleting),
				graphtest.With(graphtest.Object("deleted", "shared"), graphtest.Deleting),
				graphtest.With(graphtest.Object("removed", "shared"), graphtest.NotDesired),
				graphtest.With(graphtest.Object("released", "shared"), graphtest.NotDesired),
			},
			want: outcome{
				States: map[string]protection.State{
					"deleted → shared":  protection.Releasing,
					"deleting → shared": protection.Releasing,
					"released → shared": protection.Releasing,
					"removed → shared":  protection.Releasing,
				},
				Additions: map[string][]string{"shared": {f("deleting"), f("removed")}},
				Declared:  2,
			},
		},
		"TargetNotDesiredEither": {
			reason: "A target no longer desired declares nothing, even the finalizer of a dependent going away that it carries.",
			resources: []graph.Resource{
				graphtest.With(graphtest.Object("shared"), graphtest.Carrying(f("d1")), graphtest.NotDesired),
				graphtest.With(graphtest.Object("d1", "shared"), graphtest.Deleting),
			},
			want: outcome{States: map[string]protection.State{"d1 → shared": protection.Releasing}},
		},
		"DeclaredByAnEarlierStep": {
			reason: "A finalizer an earlier step declared is not added again for a dependent going away, but counted while the target carries it.",
			resources: []graph.Resource{
				graphtest.With(graphtest.Object("shared"), graphtest.Carrying(f("d1")), declaring(f("d1"))),
				graphtest.With(graphtest.Object("d1", "shared"), graphtest.Deleting),
			},
			want: outcome{
				States:   map[string]protection.State{"d1 → shared": protection.Releasing},
				Declared: 1,
			},
		},
	})
}

func TestATargetThatCanNoLongerTakeAFinalizerGetsNoNewOne(t *testing.T) {
	checkPlans(t, map[string]planCase{
		"TargetDeleting": {
			reason: "A deleting target keeps the finalizers it carries, and gets no new one: the API server would reject it.",
			resources: []graph.Resource{
				graphtest.With(graphtest.Object("shared"), graphtest.Carrying(f("d1")), graphtest.Deleting),
				graphtest.Object("d1", "shared"), graphtest.Object("d2", "shared"),
			},
			want: outcome{
				States:    map[string]protection.State{"d1 → shared": protection.Protected, "d2 → shared": protection.TargetDeleting},
				Additions: map[string][]string{"shared": {f("d1")}},
				Declared:  1,
			},
		},
		"TargetRemovedFromComposition": {
			reason: "A target the composition no longer desires can't declare anything, and is never added back to desired state; the finalizer it carries for a live dependent is not stale.",
			resources: []graph.Resource{
				graphtest.With(graphtest.Object("shared"), graphtest.Carrying(f("d1")), graphtest.NotDesired),
				graphtest.Object("d1", "shared"),
			},
			want: outcome{States: map[string]protection.State{"d1 → shared": protection.TargetRemoved}},
		},
	})
}

func TestAnEdgeOnABrokenCycleDeclaresNoFinalizer(t *testing.T) {
	checkPlans(t, map[string]planCase{
		"CycleKept": {
			reason:    "Without BreakCycles the edges of a cycle are declared as any other (the caller fails the step).",
			resources: []graph.Resource{graphtest.Object("a", "b"), graphtest.Object("b", "a")},
			want: outcome{
				States:    map[string]protection.State{"a → b": protection.Declared, "b → a": protection.Declared},
				Additions: map[string][]string{"a": {f("b")}, "b": {f("a")}},
				Declared:  2,
			},
		},
		"CycleBroken": {
			reason:    "With BreakCycles no edge inside a cycle gets a finalizer; an edge into the cycle still does.",
			resources: []graph.Resource{graphtest.Object("a", "b"), graphtest.Object("b", "a"), graphtest.Object("c", "a")},
			o:         graph.Options{BreakCycles: true},
			want: outcome{
				States:    map[string]protection.State{"a → b": protection.Cyclic, "b → a": protection.Cyclic, "c → a": protection.Declared},
				Additions: map[string][]string{"a": {f("c")}},
				Declared:  1,
			},
		},
		"CarriedOnABrokenCycle": {
			reason:    "A finalizer carried along a broken edge is not declared, and not stale: the dependent still references the target.",
			resources: []graph.Resource{graphtest.With(graphtest.Object("a", "b"), graphtest.Carrying(f("b"), objectref.ObjectFinalizer)), graphtest.Object("b", "a")},
			o:         graph.Options{BreakCycles: true},
			want:      outcome{States: map[string]protection.State{"a → b": protection.Cyclic, "b → a": protection.Cyclic}},
		},
		"SelfReference": {
			reason:    "An Object that references itself would keep itself forever: with BreakCycles it declares no finalizer for itself.",
			resources: []graph.Resource{graphtest.Object("a", "a")},
			o:         graph.Options{BreakCycles: true},
			want:      outcome{States: map[string]protection.State{"a → a": protection.Cyclic}},
		},
	})
}

func TestTwoObjectsClaimingOneUIDShareOneFinalizer(t *testing.T) {
	checkPlans(t, map[string]planCase{
		"CountedOnce": {
			reason: "Declared counts finalizers, not edges: two Objects that claim one UID share one finalizer, declared and counted once, since server-side apply rejects a duplicate in a set.",
			resources: []graph.Resource{
				graphtest.Object("shared"),
				graphtest.With(graphtest.Object("d1", "shared"), uid("uid-same")),
				graphtest.With(graphtest.Object("d2", "shared"), uid("uid-same")),
			},
			want: outcome{
				States:    map[string]protection.State{"d1 → shared": protection.Declared, "d2 → shared": protection.Declared},
				Additions: map[string][]string{"shared": {f("same")}},
				Declared:  1,
			},
		},
		"UIDsSharingAPrefix": {
			reason: "Finalizers are sorted by the whole UID, not its first bytes, and two Objects that claim one UID get its finalizer declared once and both their edges protected by it.",
			resources: []graph.Resource{
				graphtest.With(graphtest.Object("shared"), graphtest.Carrying(f("same-z"), f("same-b"))),
				graphtest.With(graphtest.Object("d1", "shared"), uid("uid-same-z")),
				graphtest.With(graphtest.Object("d2", "shared"), uid("uid-same-b")),
				graphtest.With(graphtest.Object("d3", "shared"), uid("uid-same-a")),
				graphtest.With(graphtest.Object("d4", "shared"), uid("uid-same-b")),
			},
			want: outcome{
				States: map[string]protection.State{
					"d1 → shared": protection.Protected,
					"d2 → shared": protection.Protected,
					"d3 → shared": protection.Declared,
					"d4 → shared": protection.Protected,
				},
				Additions: map[string][]string{"shared": {f("same-a"), f("same-b"), f("same-z")}},
				Declared:  3,
			},
		},
		"OneLiveOneGoing": {
			reason: "Of two Objects that claim one UID, a live one declares the finalizer the other, going away, would release: once.",
			resources: []graph.Resource{
				graphtest.Object("shared"),
				graphtest.With(graphtest.Object("d1", "shared"), uid("uid-same")),
				graphtest.With(graphtest.Object("d2", "shared"), uid("uid-same"), graphtest.Deleting),
			},
			want: outcome{
				States:    map[string]protection.State{"d1 → shared": protection.Declared, "d2 → shared": protection.Releasing},
				Additions: map[string][]string{"shared": {f("same")}},
				Declared:  1,
			},
		},
		"CountedPerTarget": {
			reason: "A finalizer declared by two targets counts twice: each declares it.",
			resources: []graph.Resource{
				graphtest.Object("a"), graphtest.Object("b"),
				graphtest.Object("d1", "a", "b"),
				graphtest.With(graphtest.Object("d2", "a"), uid("uid-d1")),
			},
			want: outcome{
				States:    map[string]protection.State{"d1 → a": protection.Declared, "d1 → b": protection.Declared, "d2 → a": protection.Declared},
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
			resources: []graph.Resource{graphtest.With(graphtest.Object("alone"), graphtest.Carrying(f("gone"), objectref.ObjectFinalizer)), graphtest.ConfigMap("config")},
			want:      outcome{Stale: []Stale{{Resource: "alone", Finalizer: f("gone"), Unseen: true}}},
		},
		"Stale": {
			reason: "Reference finalizers of no Object that references the resource here are stale: reported, not declared, and unseen when they name no resource at all; other finalizers are not reference finalizers.",
			resources: []graph.Resource{
				graphtest.With(graphtest.Object("shared"), graphtest.Carrying(f("gone"), f("d1"), f("d2"), "example.org/other")),
				graphtest.Object("d1", "shared"),
				graphtest.Object("d2"),
			},
			want: outcome{
				States:    map[string]protection.State{"d1 → shared": protection.Protected},
				Stale:     []Stale{{Resource: "shared", Finalizer: f("d2")}, {Resource: "shared", Finalizer: f("gone"), Unseen: true}},
				Additions: map[string][]string{"shared": {f("d1")}},
				Declared:  1,
			},
		},
		"SortedByResourceThenFinalizer": {
			reason: "Stale finalizers are sorted by resource, then finalizer.",
			resources: []graph.Resource{
				graphtest.With(graphtest.ConfigMap("b"), graphtest.Carrying(f("z"), f("a"))),
				graphtest.With(graphtest.ConfigMap("a"), graphtest.Carrying(f("y"))),
			},
			want: outcome{Stale: []Stale{
				{Resource: "a", Finalizer: f("y"), Unseen: true},
				{Resource: "b", Finalizer: f("a")},
				{Resource: "b", Finalizer: f("z"), Unseen: true},
			}},
		},
		"ReferencingAnotherResource": {
			reason: "The finalizer of an Object that references another resource is stale on this one.",
			resources: []graph.Resource{
				graphtest.With(graphtest.Object("shared"), graphtest.Carrying(f("d1"))),
				graphtest.Object("other"),
				graphtest.Object("d1", "other"),
			},
			want: outcome{
				States:    map[string]protection.State{"d1 → other": protection.Declared},
				Stale:     []Stale{{Resource: "shared", Finalizer: f("d1")}},
				Additions: map[string][]string{"other": {f("d1")}},
				Declared:  1,
			},
		},
		"NotOnAResourceCrossplaneIsDeleting": {
			reason: "A resource read from the required resources, which Crossplane is deleting, has left the composition: its finalizers are not reported.",
			resources: []graph.Resource{
				graphtest.With(graphtest.Object("old"), graphtest.Carrying(f("gone"), objectref.ObjectFinalizer), going, graphtest.Deleting, graphtest.NotDesired),
				graphtest.With(graphtest.ConfigMap("kept"), graphtest.Carrying(f("gone"))),
			},
			want: outcome{Stale: []Stale{{Resource: "kept", Finalizer: f("gone"), Unseen: true}}},
		},
		"NotOnAResourceThatDoesNotExist": {
			reason:    "A resource that doesn't exist carries nothing.",
			resources: []graph.Resource{graphtest.With(graphtest.Object("new"), graphtest.NotObserved, declaring(f("gone")))},
		},
	})
}

// TestThePlanDoesNotDependOnTheOrderOfTheResources proves the finalizers
// don't depend on the order of the resources or of an Object's references.
func TestThePlanDoesNotDependOnTheOrderOfTheResources(t *testing.T) {
	var resources []graph.Resource
	resources = append(resources, graphtest.With(graphtest.Object("shared"), graphtest.Carrying(f("d00"), f("gone"), f("d01"))))
	for i := range 30 {
		d := graphtest.Object(fmt.Sprintf("d%02d", i), "shared", fmt.Sprintf("d%02d", (i+1)%30), "external")
		resources = append(resources, d)
	}
	want := Declare(graph.New(resources, graph.Options{BreakCycles: true}), nil)
	reversed := make([]graph.Resource, len(resources))
	for i, r := range resources {
		r.References = slices.Clone(r.References)
		slices.Reverse(r.References)
		reversed[len(resources)-1-i] = r
	}
	got := Declare(graph.New(reversed, graph.Options{BreakCycles: true}), nil)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Declare(reversed): -want, +got:\n%s", diff)
	}
	if len(want.Additions["shared"]) != 30 || want.Declared != 30 || len(want.Stale) != 1 {
		t.Errorf("Declare(...) = %d additions to shared, %d declared, %d stale; want 30, 30 and 1", len(want.Additions["shared"]), want.Declared, len(want.Stale))
	}
}
