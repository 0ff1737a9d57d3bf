package composed

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crossplane-contrib/function-dependencies/internal/object"
)

// obj is a live cluster-scoped Object whose object name is its composition
// resource name and whose UID is "uid-" and that name, referencing Objects by
// name.
func obj(name string, references ...string) Resource {
	r := Resource{
		Name:       name,
		APIVersion: "kubernetes.crossplane.io/v1alpha2",
		IsObject:   true,
		Identity:   object.Ref{Group: object.ClusterGroup, Kind: object.Kind, Name: name},
		Observed:   &Observed{UID: "uid-" + name, Finalizers: []string{object.ObjectFinalizer}},
		Desired:    &Desired{},
	}
	for i, ref := range references {
		r.References = append(r.References, objectRef(ref, i))
	}
	return r
}

// objectRef is the reference at index i to the cluster-scoped Object of the
// name.
func objectRef(name string, i int) object.Target {
	return object.Target{Ref: object.Ref{Group: object.ClusterGroup, Kind: object.Kind, Name: name}, Index: i, Via: "dependsOn"}
}

// plain is a live composed resource that is not an Object, in namespace team.
func plain(name string) Resource {
	return Resource{
		Name: name, APIVersion: "v1", Identity: object.Ref{Kind: "ConfigMap", Namespace: "team", Name: name},
		Observed: &Observed{UID: "uid-" + name}, Desired: &Desired{},
	}
}

// with returns the resource changed by the functions.
func with(r Resource, changes ...func(*Resource)) Resource {
	for _, c := range changes {
		c(&r)
	}
	return r
}

func dependingOn(names ...string) func(*Resource) {
	return func(r *Resource) { r.DependsOn = names }
}

func named(name string) func(*Resource) {
	return func(r *Resource) { r.Identity.Name = name }
}

func notObserved(r *Resource) { r.Observed = nil }

// inferring adds the inferred dependencies, each "target via field".
func inferring(deps ...string) func(*Resource) {
	return func(r *Resource) {
		for _, d := range deps {
			target, via, _ := strings.Cut(d, " via ")
			r.Inferred = append(r.Inferred, Inferred{Target: target, Via: via})
		}
	}
}

// shape is what a graph says of its resources' dependencies.
type shape struct {
	Edges    []Edge
	External []External
	Cycles   [][]string
	LeftOut  []leftOut
}

// A leftOut edge, with the cycle it closes.
type leftOut struct {
	Edge  Edge
	Cycle []string
}

func shapeOf(g *Graph) shape {
	var left []leftOut
	for _, l := range g.LeftOut {
		left = append(left, leftOut{Edge: l.Edge, Cycle: g.Closes(l)})
	}
	return shape{Edges: g.Edges, External: g.External, Cycles: g.Cycles, LeftOut: left}
}

type graphCase struct {
	reason    string
	resources []Resource
	o         Options
	want      shape
}

func checkGraphs(t *testing.T, cases map[string]graphCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := New(tc.resources, tc.o)
			for _, e := range g.Edges {
				if g.Resources[e.DependentAt].Name != e.Dependent || g.Resources[e.TargetAt].Name != e.Target {
					t.Errorf("edge %s → %s: DependentAt and TargetAt are %d and %d, the places of %s and %s", e.Dependent, e.Target, e.DependentAt, e.TargetAt, g.Resources[e.DependentAt].Name, g.Resources[e.TargetAt].Name)
				}
			}
			for _, l := range g.LeftOut {
				if g.Resources[l.Edge.DependentAt].Name != l.Edge.Dependent || g.Resources[l.Edge.TargetAt].Name != l.Edge.Target {
					t.Errorf("left-out edge %s → %s: DependentAt and TargetAt are %d and %d", l.Edge.Dependent, l.Edge.Target, l.Edge.DependentAt, l.Edge.TargetAt)
				}
				if _, ok := g.Edge(l.Edge.DependentAt, l.Edge.TargetAt); ok {
					t.Errorf("left-out edge %s → %s is still found by Edge", l.Edge.Dependent, l.Edge.Target)
				}
			}
			got := shapeOf(g)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(Edge{}, "DependentAt", "TargetAt")); diff != "" {
				t.Errorf("%s\nNew(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAReferenceMakesAnEdgeToEachComposedResourceItNames(t *testing.T) {
	checkGraphs(t, map[string]graphCase{
		"NoReferences": {
			reason:    "Without references or dependencies there are no edges.",
			resources: []Resource{obj("alone"), plain("config")},
		},
		"OneEdgePerDependentAndTarget": {
			reason: "Each dependent gets one edge to each target it references, however often it references it; edges are sorted by dependent, then target, whatever order the references come in.",
			resources: []Resource{
				obj("shared"), obj("other"),
				obj("d2", "shared"),
				obj("d1", "shared", "other", "shared"),
			},
			want: shape{Edges: []Edge{
				{Dependent: "d1", Target: "other"},
				{Dependent: "d1", Target: "shared"},
				{Dependent: "d2", Target: "shared"},
			}},
		},
		"MatchesByGroupKindNamespaceAndNameInAnyVersion": {
			reason: "References match by group, kind, namespace and name, whatever their version: a namespaced reference without namespace matches nothing.",
			resources: []Resource{
				{Name: "shared", APIVersion: "kubernetes.m.crossplane.io/v1alpha1", Identity: object.Ref{Group: object.NamespacedGroup, Kind: object.Kind, Namespace: "team", Name: "shared-x"}, Observed: &Observed{UID: "uid-shared"}, Desired: &Desired{}},
				{
					Name: "d1", IsObject: true, Identity: object.Ref{Group: object.NamespacedGroup, Kind: object.Kind, Namespace: "team", Name: "d1-x"}, Observed: &Observed{UID: "uid-d1"}, Desired: &Desired{},
					References: []object.Target{
						{Ref: object.Ref{APIVersion: "kubernetes.m.crossplane.io/v1alpha2", Group: object.NamespacedGroup, Kind: object.Kind, Namespace: "team", Name: "shared-x"}, Index: 0, Via: "dependsOn"},
						{Ref: object.Ref{APIVersion: "kubernetes.m.crossplane.io/v1alpha2", Group: object.NamespacedGroup, Kind: object.Kind, Name: "shared-x"}, Index: 1, Via: "dependsOn"},
					},
				},
			},
			want: shape{
				Edges:    []Edge{{Dependent: "d1", Target: "shared"}},
				External: []External{{Dependent: "d1", Target: object.Target{Ref: object.Ref{APIVersion: "kubernetes.m.crossplane.io/v1alpha2", Group: object.NamespacedGroup, Kind: object.Kind, Name: "shared-x"}, Index: 1, Via: "dependsOn"}}},
			},
		},
		"AnotherGroupOrKindMatchesNothing": {
			reason: "A reference of the right name but another group or kind names another object.",
			resources: []Resource{
				obj("shared"),
				with(obj("d1"), func(r *Resource) {
					r.References = []object.Target{
						{Ref: object.Ref{Group: object.NamespacedGroup, Kind: object.Kind, Name: "shared"}, Index: 0, Via: "dependsOn"},
						{Ref: object.Ref{Group: object.ClusterGroup, Kind: "Other", Name: "shared"}, Index: 1, Via: "dependsOn"},
					}
				}),
			},
			want: shape{External: []External{
				{Dependent: "d1", Target: object.Target{Ref: object.Ref{Group: object.NamespacedGroup, Kind: object.Kind, Name: "shared"}, Index: 0, Via: "dependsOn"}},
				{Dependent: "d1", Target: object.Target{Ref: object.Ref{Group: object.ClusterGroup, Kind: "Other", Name: "shared"}, Index: 1, Via: "dependsOn"}},
			}},
		},
		"AnyKind": {
			reason: "An Object may reference any composed kind, such as a ConfigMap composed directly.",
			resources: []Resource{
				plain("cm"),
				with(obj("d1"), func(r *Resource) {
					r.References = []object.Target{{Ref: object.Ref{Kind: "ConfigMap", Namespace: "team", Name: "cm"}}}
				}),
			},
			want: shape{Edges: []Edge{{Dependent: "d1", Target: "cm"}}},
		},
		"UnnamedMatchesNothing": {
			reason: "A desired resource without a name yet can't be what a reference names, not even one without a name.",
			resources: []Resource{
				with(obj("shared"), notObserved, named("")),
				obj("d1", ""),
			},
			want: shape{External: []External{{Dependent: "d1", Target: objectRef("", 0)}}},
		},
		"SharedIdentity": {
			reason: "Two composed resources for the same object are both targets of a reference to it.",
			resources: []Resource{
				with(obj("shared-a"), named("shared")),
				with(obj("shared-b"), named("shared")),
				obj("d1", "shared"),
			},
			want: shape{Edges: []Edge{
				{Dependent: "d1", Target: "shared-a"},
				{Dependent: "d1", Target: "shared-b"},
			}},
		},
		"SelfReference": {
			reason:    "An Object that references itself has an edge to itself, a cycle of one.",
			resources: []Resource{obj("a", "a")},
			want: shape{
				Edges:  []Edge{{Dependent: "a", Target: "a"}},
				Cycles: [][]string{{"a", "a"}},
			},
		},
	})
}

func TestAReferenceThatNamesNoComposedResourceIsExternalOncePerDependent(t *testing.T) {
	checkGraphs(t, map[string]graphCase{
		"OncePerTarget": {
			reason:    "A reference that matches no composed resource is an external edge, once per target: the first reference to it.",
			resources: []Resource{obj("d1", "elsewhere", "elsewhere")},
			want:      shape{External: []External{{Dependent: "d1", Target: objectRef("elsewhere", 0)}}},
		},
		"OnceWhateverTheVersionOrField": {
			reason: "References to one object in two versions, or through two fields, are one external edge.",
			resources: []Resource{with(obj("d1"), func(r *Resource) {
				r.References = []object.Target{
					{Ref: object.Ref{APIVersion: "kubernetes.crossplane.io/v1alpha1", Group: object.ClusterGroup, Kind: object.Kind, Name: "elsewhere"}, Index: 0, Via: "dependsOn"},
					{Ref: object.Ref{APIVersion: "kubernetes.crossplane.io/v1alpha2", Group: object.ClusterGroup, Kind: object.Kind, Name: "elsewhere"}, Index: 1, Via: "patchesFrom"},
				}
			})},
			want: shape{External: []External{{Dependent: "d1", Target: object.Target{Ref: object.Ref{APIVersion: "kubernetes.crossplane.io/v1alpha1", Group: object.ClusterGroup, Kind: object.Kind, Name: "elsewhere"}, Index: 0, Via: "dependsOn"}}}},
		},
		"EachDependentItsOwn": {
			reason: "Two dependents of one external object each have an external edge, sorted by dependent; a dependent's are in the order of its references.",
			resources: []Resource{
				obj("d2", "elsewhere"),
				obj("d1", "z-elsewhere", "elsewhere"),
			},
			want: shape{External: []External{
				{Dependent: "d1", Target: objectRef("z-elsewhere", 0)},
				{Dependent: "d1", Target: objectRef("elsewhere", 1)},
				{Dependent: "d2", Target: objectRef("elsewhere", 0)},
			}},
		},
		"BesideEdges": {
			reason: "A dependent may have edges and external edges at once, whether the provider manages it or not.",
			resources: []Resource{
				obj("shared"),
				with(obj("d1", "shared", "nowhere"), func(r *Resource) { r.Observed.Finalizers = nil }),
			},
			want: shape{
				Edges:    []Edge{{Dependent: "d1", Target: "shared"}},
				External: []External{{Dependent: "d1", Target: objectRef("nowhere", 1)}},
			},
		},
	})
}

func TestAnInputDependencyMakesAnEdgeUnlessAReferenceDoes(t *testing.T) {
	checkGraphs(t, map[string]graphCase{
		"Object": {
			reason:    "An Object that depends on a resource by the input's word has an edge from the input.",
			resources: []Resource{obj("shared"), with(obj("d1"), dependingOn("shared"))},
			want:      shape{Edges: []Edge{{Dependent: "d1", Target: "shared", Origin: FromInput}}},
		},
		"NotAnObject": {
			reason:    "Any composed resource may depend on another by the input's word.",
			resources: []Resource{plain("db"), with(plain("app"), dependingOn("db"))},
			want:      shape{Edges: []Edge{{Dependent: "app", Target: "db", Origin: FromInput}}},
		},
		"AlreadyReferenced": {
			reason:    "A dependency the Object already references adds no second edge: the reference's edge stands.",
			resources: []Resource{obj("shared"), with(obj("d1", "shared"), dependingOn("shared"))},
			want:      shape{Edges: []Edge{{Dependent: "d1", Target: "shared"}}},
		},
		"IgnoredReferencesStillLeaveInputEdges": {
			reason:    "With references ignored, a dependency the Object also references makes an edge from the input.",
			resources: []Resource{obj("shared"), with(obj("d1", "shared"), dependingOn("shared"))},
			o:         Options{IgnoreReferences: true},
			want:      shape{Edges: []Edge{{Dependent: "d1", Target: "shared", Origin: FromInput}}},
		},
		"IgnoredReferencesMakeNoEdge": {
			reason:    "With references ignored, a reference the input doesn't declare makes no edge, nor an external one.",
			resources: []Resource{obj("shared"), obj("d1", "shared", "elsewhere", "d1")},
			o:         Options{IgnoreReferences: true},
		},
		"TwoVersionsOfAnObject": {
			reason: "Depending on two composed resources for one object makes an edge to each.",
			resources: []Resource{
				with(obj("shared-a"), named("shared")),
				with(obj("shared-b"), named("shared"), func(r *Resource) { r.APIVersion = "kubernetes.crossplane.io/v1alpha1" }),
				with(obj("d1"), dependingOn("shared-b", "shared-a")),
			},
			want: shape{Edges: []Edge{
				{Dependent: "d1", Target: "shared-a", Origin: FromInput},
				{Dependent: "d1", Target: "shared-b", Origin: FromInput},
			}},
		},
		"ItselfUnknownOrRepeated": {
			reason: "A dependency on itself or on no composed resource makes no edge, and one repeated makes one.",
			resources: []Resource{
				plain("db"),
				with(plain("app"), dependingOn("app", "gone", "db", "db")),
			},
			want: shape{Edges: []Edge{{Dependent: "app", Target: "db", Origin: FromInput}}},
		},
		"UnnamedDependency": {
			reason: "The input names dependencies by composition resource name: one that has no object name yet is still a dependency.",
			resources: []Resource{
				with(obj("shared"), notObserved, named("")),
				with(obj("new"), notObserved, dependingOn("shared")),
			},
			want: shape{Edges: []Edge{{Dependent: "new", Target: "shared", Origin: FromInput}}},
		},
		"SortedWithReferences": {
			reason: "A dependent's edges from references and from the input are sorted by target together.",
			resources: []Resource{
				plain("a"), plain("b"), plain("c"),
				with(obj("d1", "b"), func(r *Resource) {
					r.References = []object.Target{{Ref: object.Ref{Kind: "ConfigMap", Namespace: "team", Name: "b"}}}
				}, dependingOn("c", "a")),
			},
			want: shape{Edges: []Edge{
				{Dependent: "d1", Target: "a", Origin: FromInput},
				{Dependent: "d1", Target: "b", Origin: FromReference},
				{Dependent: "d1", Target: "c", Origin: FromInput},
			}},
		},
	})
}

func TestTheEdgesOfACycleAreBrokenOnlyWhenCyclesAreBroken(t *testing.T) {
	checkGraphs(t, map[string]graphCase{
		"Kept": {
			reason:    "Without BreakCycles the cycle is reported and its edges are edges as any other (the caller fails the step).",
			resources: []Resource{obj("a", "b"), obj("b", "a")},
			want: shape{
				Edges:  []Edge{{Dependent: "a", Target: "b"}, {Dependent: "b", Target: "a"}},
				Cycles: [][]string{{"a", "b", "a"}},
			},
		},
		"Broken": {
			reason:    "With BreakCycles every edge inside a cycle is broken; an edge into the cycle is not.",
			resources: []Resource{obj("a", "b"), obj("b", "a"), obj("c", "a")},
			o:         Options{BreakCycles: true},
			want: shape{
				Edges: []Edge{
					{Dependent: "a", Target: "b", Broken: true},
					{Dependent: "b", Target: "a", Broken: true},
					{Dependent: "c", Target: "a"},
				},
				Cycles: [][]string{{"a", "b", "a"}},
			},
		},
		"SelfReference": {
			reason:    "An edge to itself is a cycle, broken too; the dependent's other edges are not.",
			resources: []Resource{obj("a", "a", "b"), obj("b")},
			o:         Options{BreakCycles: true},
			want: shape{
				Edges:  []Edge{{Dependent: "a", Target: "a", Broken: true}, {Dependent: "a", Target: "b"}},
				Cycles: [][]string{{"a", "a"}},
			},
		},
		"InputDependencies": {
			reason: "Edges from the input close cycles as references do, together with them.",
			resources: []Resource{
				with(plain("a"), dependingOn("b")),
				with(obj("b", "c"), dependingOn("c")),
				with(obj("c"), dependingOn("a")),
			},
			o: Options{BreakCycles: true},
			want: shape{
				Edges: []Edge{
					{Dependent: "a", Target: "b", Origin: FromInput, Broken: true},
					{Dependent: "b", Target: "c", Origin: FromReference, Broken: true},
					{Dependent: "c", Target: "a", Origin: FromInput, Broken: true},
				},
				Cycles: [][]string{{"a", "b", "c", "a"}},
			},
		},
		"TwoCycles": {
			reason:    "Each cycle is reported once, in name order, and an edge between them is not broken.",
			resources: []Resource{obj("q", "p"), obj("p", "q"), obj("b", "a", "p"), obj("a", "b")},
			o:         Options{BreakCycles: true},
			want: shape{
				Edges: []Edge{
					{Dependent: "a", Target: "b", Broken: true},
					{Dependent: "b", Target: "a", Broken: true},
					{Dependent: "b", Target: "p"},
					{Dependent: "p", Target: "q", Broken: true},
					{Dependent: "q", Target: "p", Broken: true},
				},
				Cycles: [][]string{{"a", "b", "a"}, {"p", "q", "p"}},
			},
		},
	})
}

func TestAnInferredEdgeThatWouldCloseACycleIsLeftOutBeforeCyclesAreJudged(t *testing.T) {
	inferred := func(dependent, target, via string) Edge {
		return Edge{Dependent: dependent, Target: target, Origin: FromInference, Via: via}
	}
	checkGraphs(t, map[string]graphCase{
		"WithADeclaredEdge": {
			reason: "An inferred edge against a declared one is left out with the cycle it closes: no cycle remains.",
			resources: []Resource{
				with(plain("pc"), dependingOn("maker")),
				with(plain("maker"), inferring("pc via spec.providerConfigRef")),
			},
			want: shape{
				Edges:   []Edge{{Dependent: "pc", Target: "maker", Origin: FromInput}},
				LeftOut: []leftOut{{Edge: inferred("maker", "pc", "spec.providerConfigRef"), Cycle: []string{"maker", "pc", "maker"}}},
			},
		},
		"InferredOnly": {
			reason: "Inferred edges that close a cycle among themselves are all left out, each with its own cycle.",
			resources: []Resource{
				with(plain("maker"), inferring("pc via spec.providerConfigRef")),
				with(plain("pc"), inferring("maker via spec.credentials.secretRef")),
			},
			want: shape{LeftOut: []leftOut{
				{Edge: inferred("maker", "pc", "spec.providerConfigRef"), Cycle: []string{"maker", "pc", "maker"}},
				{Edge: inferred("pc", "maker", "spec.credentials.secretRef"), Cycle: []string{"pc", "maker", "pc"}},
			}},
		},
		"ThroughAnotherInferredEdge": {
			reason: "The whole graph counts: an inferred edge whose cycle goes through another inferred edge is left out too, and the cycle is the shortest way back, the smallest by name.",
			resources: []Resource{
				with(plain("a"), inferring("b via spec.bRef")),
				with(plain("b"), inferring("c via spec.cRef"), dependingOn("d")),
				with(plain("c"), dependingOn("a")),
				with(plain("d"), dependingOn("a")),
			},
			want: shape{
				Edges: []Edge{
					{Dependent: "b", Target: "d", Origin: FromInput},
					{Dependent: "c", Target: "a", Origin: FromInput},
					{Dependent: "d", Target: "a", Origin: FromInput},
				},
				LeftOut: []leftOut{
					{Edge: inferred("a", "b", "spec.bRef"), Cycle: []string{"a", "b", "c", "a"}},
					{Edge: inferred("b", "c", "spec.cRef"), Cycle: []string{"b", "c", "a", "b"}},
				},
			},
		},
		"DeclaredCycleStays": {
			reason: "A cycle of declared edges stays, for onCycle, broken with BreakCycles; an inferred chord inside it is left out, and an inferred edge into it stays.",
			resources: []Resource{
				with(obj("a", "b"), inferring("c via spec.cRef")),
				obj("b", "c"),
				obj("c", "a"),
				with(plain("d"), inferring("a via spec.aRef")),
			},
			o: Options{BreakCycles: true},
			want: shape{
				Edges: []Edge{
					{Dependent: "a", Target: "b", Broken: true},
					{Dependent: "b", Target: "c", Broken: true},
					{Dependent: "c", Target: "a", Broken: true},
					inferred("d", "a", "spec.aRef"),
				},
				Cycles:  [][]string{{"a", "b", "c", "a"}},
				LeftOut: []leftOut{{Edge: inferred("a", "c", "spec.cRef"), Cycle: []string{"a", "c", "a"}}},
			},
		},
		"NotOnACycle": {
			reason: "An inferred edge on no cycle stays, as does an inferred edge parallel to a declared one, which adds nothing.",
			resources: []Resource{
				with(plain("app"), inferring("db via spec.dbRef", "pc via spec.providerConfigRef"), dependingOn("pc")),
				with(plain("db"), inferring("pc via spec.providerConfigRef")),
				plain("pc"),
			},
			want: shape{Edges: []Edge{
				inferred("app", "db", "spec.dbRef"),
				{Dependent: "app", Target: "pc", Origin: FromInput},
				inferred("db", "pc", "spec.providerConfigRef"),
			}},
		},
	})
}

// TestTheGraphDoesNotDependOnTheOrderOfItsInput proves the graph doesn't
// depend on the order of the resources or of an Object's references.
func TestTheGraphDoesNotDependOnTheOrderOfItsInput(t *testing.T) {
	var resources []Resource
	resources = append(resources, obj("shared"))
	for i := range 30 {
		d := obj(fmt.Sprintf("d%02d", i), "shared", fmt.Sprintf("d%02d", (i+1)%30), "external")
		// One inferred edge on the references' cycle, left out, and one
		// parallel to a reference's, which adds nothing.
		d = with(d, inferring(fmt.Sprintf("d%02d via spec.ref", (i+3)%30), "shared via spec.sharedRef"))
		resources = append(resources, d)
	}
	want := New(resources, Options{BreakCycles: true})
	reversed := make([]Resource, len(resources))
	for i, r := range resources {
		r.References = slices.Clone(r.References)
		slices.Reverse(r.References)
		r.Inferred = slices.Clone(r.Inferred)
		slices.Reverse(r.Inferred)
		reversed[len(resources)-1-i] = r
	}
	got := New(reversed, Options{BreakCycles: true})
	if len(want.LeftOut) != 30 {
		t.Errorf("New(...) left out %d inferred edges, want the 30 on the cycle", len(want.LeftOut))
	}
	if diff := cmp.Diff(shapeOf(want), shapeOf(got), cmpopts.IgnoreFields(object.Target{}, "Index")); diff != "" {
		t.Errorf("New(reversed): -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff(want.Resources, got.Resources, cmpopts.IgnoreFields(object.Target{}, "Index"), cmpopts.SortSlices(func(a, b object.Target) bool { return a.Name < b.Name }),
		cmpopts.SortSlices(func(a, b Inferred) bool { return a.Target < b.Target })); diff != "" {
		t.Errorf("New(reversed).Resources: -want, +got:\n%s", diff)
	}
}

func TestAResourceIsFoundByItsNameWithoutReorderingTheCallersResources(t *testing.T) {
	resources := []Resource{plain("c"), plain("a"), plain("b")}
	g := New(resources, Options{})
	if diff := cmp.Diff([]string{"c", "a", "b"}, names(resources)); diff != "" {
		t.Errorf("New(...) reordered its argument: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, names(g.Resources)); diff != "" {
		t.Errorf("New(...).Resources are not in name order: -want, +got:\n%s", diff)
	}
	for _, name := range []string{"a", "b", "c"} {
		if r := g.Resource(name); r == nil || r.Name != name {
			t.Errorf("Resource(%q) = %v, want the resource of that name", name, r)
		}
	}
	if r := g.Resource("gone"); r != nil {
		t.Errorf("Resource(%q) = %v, want nil", "gone", r)
	}
}

func names(rs []Resource) []string {
	var n []string
	for _, r := range rs {
		n = append(n, r.Name)
	}
	return n
}

func TestAResourceIsReadyOnceItExistsAndItOrAnEarlierStepSaysSo(t *testing.T) {
	cases := map[string]struct {
		reason string
		r      Resource
		want   bool
	}{
		"NotCreatedYet": {
			reason: "A resource that doesn't exist isn't ready, whatever an earlier step says.",
			r:      Resource{Desired: &Desired{Ready: true}},
		},
		"Observed": {
			reason: "A resource whose Ready condition is True is ready.",
			r:      Resource{Observed: &Observed{Ready: true}, Desired: &Desired{}},
			want:   true,
		},
		"EarlierStep": {
			reason: "An existing resource an earlier step says is ready is ready.",
			r:      Resource{Observed: &Observed{}, Desired: &Desired{Ready: true}},
			want:   true,
		},
		"NotDesired": {
			reason: "A resource no step desires is ready by its condition alone.",
			r:      Resource{Observed: &Observed{Ready: true}},
			want:   true,
		},
		"NotReady": {
			reason: "An existing resource that neither its condition nor an earlier step says is ready isn't.",
			r:      Resource{Observed: &Observed{}, Desired: &Desired{}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.r.Ready()); diff != "" {
				t.Errorf("%s\nReady(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestTheGraphOwnsItsResourcesSoTheCallersStayAsTheyWere(t *testing.T) {
	resources := []Resource{plain("a"), plain("b")}
	g := New(resources, Options{})
	g.Resources[0].DependsOn = []string{"b"}
	if resources[0].DependsOn != nil {
		t.Errorf("New(sorted) shares its argument's memory: a write to the graph's resource changed the caller's to %v", resources[0].DependsOn)
	}
}

func TestARefIsTheIdentityWithTheAPIVersion(t *testing.T) {
	r := obj("shared")
	want := object.Ref{APIVersion: "kubernetes.crossplane.io/v1alpha2", Group: object.ClusterGroup, Kind: object.Kind, Name: "shared"}
	if got := r.Ref(); got != want {
		t.Errorf("Ref() = %+v, want %+v", got, want)
	}
	if got := r.Ref().ID(); got != r.Identity {
		t.Errorf("Ref().ID() = %+v, want the identity %+v", got, r.Identity)
	}
}

func TestResourcesDesiredAsOneObjectAreSharedAndARenameIsNot(t *testing.T) {
	alias := func(r Resource, name string) Resource {
		r.Name = name
		return r
	}
	renamed := alias(obj("db"), "db-old")
	renamed.Desired = nil // The composition removed it: a rename under way.
	g := New([]Resource{obj("db"), alias(obj("db"), "db-copy"), obj("web", "db"), renamed, obj("cache"), alias(obj("cache"), "a-cache")}, Options{})
	want := []Shared{
		{Identity: obj("cache").Identity, Names: []string{"a-cache", "cache"}},
		{Identity: obj("db").Identity, Names: []string{"db", "db-copy"}},
	}
	if diff := cmp.Diff(want, g.Shared); diff != "" {
		t.Errorf("New(...).Shared: -want, +got:\n%s", diff)
	}
}
