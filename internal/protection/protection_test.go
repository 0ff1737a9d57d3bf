package protection

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crossplane-contrib/function-dependencies/internal/objectref"
	"github.com/crossplane-contrib/function-dependencies/internal/usage"
)

// object is a live cluster-scoped Object whose object name is its composition
// resource name and whose UID is "uid-" and that name, referencing Objects by
// name.
func object(name string, references ...string) Resource {
	r := Resource{
		Name:       name,
		APIVersion: "kubernetes.crossplane.io/v1alpha2",
		IsObject:   true,
		Identity:   Identity{Group: objectref.ClusterGroup, Kind: objectref.Kind, Name: name},
		Observed:   &Observed{UID: "uid-" + name, Finalizers: []string{objectref.ObjectFinalizer}},
		Desired:    &Desired{},
	}
	for i, ref := range references {
		r.References = append(r.References, objectref.Target{Group: objectref.ClusterGroup, Kind: objectref.Kind, Name: ref, Index: i, Via: "dependsOn"})
	}
	return r
}

func f(name string) string { return objectref.Finalizer("uid-" + name) }

// with returns the resource changed by the functions.
func with(r Resource, changes ...func(*Resource)) Resource {
	for _, c := range changes {
		c(&r)
	}
	return r
}

func carrying(finalizers ...string) func(*Resource) {
	return func(r *Resource) { r.Observed.Finalizers = finalizers }
}

func declaring(finalizers ...string) func(*Resource) {
	return func(r *Resource) { r.Desired.Finalizers = finalizers }
}

func deleting(r *Resource) { r.Observed.Deleting = true }
func ready(r *Resource)    { r.Observed.Ready = true }

func dependingOn(names ...string) func(*Resource) {
	return func(r *Resource) { r.DependsOn = names }
}

// plain is a live composed resource that is not an Object, in namespace team.
func plain(name string) Resource {
	return Resource{
		Name: name, APIVersion: "v1", Identity: Identity{Kind: "ConfigMap", Namespace: "team", Name: name},
		Observed: &Observed{UID: "uid-" + name}, Desired: &Desired{},
	}
}
func notDesired(r *Resource) { r.Desired = nil }
func notObserved(r *Resource) {
	r.Observed = nil
}

func TestMake(t *testing.T) {
	type args struct {
		resources []Resource
		o         Options
	}
	cases := map[string]struct {
		reason string
		args   args
		want   Plan
	}{
		"Issue371": {
			reason: "A shared Object that carries only some of its dependents' finalizers declares all of them, the ones it carries too: those are what keeps them applied.",
			args: args{resources: []Resource{
				with(object("shared"), carrying(f("d1"), f("d3")), declaring("example.org/keep")),
				object("d1", "shared"), object("d2", "shared"), object("d3", "shared"), object("d4", "shared"),
			}},
			want: Plan{
				Resources: 5,
				Edges: []Edge{
					{Dependent: "d1", Target: "shared", State: Protected},
					{Dependent: "d2", Target: "shared", State: Declared},
					{Dependent: "d3", Target: "shared", State: Protected},
					{Dependent: "d4", Target: "shared", State: Declared},
				},
				Additions: map[string][]string{"shared": {f("d1"), f("d2"), f("d3"), f("d4")}},
				Declared:  4,
			},
		},
		"NoReferences": {
			reason: "Without references there are no edges, and a reference finalizer left on a resource names no dependent.",
			args:   args{resources: []Resource{with(object("alone"), carrying(f("gone"))), plain("config")}},
			want: Plan{
				Resources: 2,
				Stale:     []Stale{{Resource: "alone", Finalizer: f("gone")}},
			},
		},
		"AlreadyDeclared": {
			reason: "Finalizers earlier steps declared already are not declared twice, and a resource that needs nothing new is left alone.",
			args: args{resources: []Resource{
				with(object("shared"), declaring(f("d1"))),
				object("d1", "shared"),
			}},
			want: Plan{
				Resources: 2,
				Edges:     []Edge{{Dependent: "d1", Target: "shared", State: Declared}},
				Additions: map[string][]string{},
				Declared:  1,
			},
		},
		"DependentNotCreatedYet": {
			reason: "A dependent without a UID has no finalizer yet: the edge is pending.",
			args: args{resources: []Resource{
				object("shared"),
				with(object("d1", "shared"), notObserved),
			}},
			want: Plan{
				Resources: 2,
				Edges:     []Edge{{Dependent: "d1", Target: "shared", State: Pending}},
				Additions: map[string][]string{},
			},
		},
		"DependentGoing": {
			reason: "A dependent being deleted, or no longer desired, keeps its finalizer declared while the target carries it, and never gets it back once the provider removed it.",
			args: args{resources: []Resource{
				with(object("shared"), carrying(f("deleting"), f("removed"))),
				with(object("deleting", "shared"), deleting),
				with(object("deleted", "shared"), deleting),
				with(object("removed", "shared"), notDesired),
				with(object("released", "shared"), notDesired),
			}},
			want: Plan{
				Resources: 5,
				Edges: []Edge{
					{Dependent: "deleted", Target: "shared", State: Releasing},
					{Dependent: "deleting", Target: "shared", State: Releasing},
					{Dependent: "released", Target: "shared", State: Releasing},
					{Dependent: "removed", Target: "shared", State: Releasing},
				},
				Additions: map[string][]string{"shared": {f("deleting"), f("removed")}},
				Declared:  2,
			},
		},
		"TargetDeleting": {
			reason: "A deleting target keeps the finalizers it carries, and gets no new one: the API server would reject it.",
			args: args{resources: []Resource{
				with(object("shared"), carrying(f("d1")), deleting),
				object("d1", "shared"), object("d2", "shared"),
			}},
			want: Plan{
				Resources: 3,
				Edges: []Edge{
					{Dependent: "d1", Target: "shared", State: Protected},
					{Dependent: "d2", Target: "shared", State: TargetDeleting},
				},
				Additions: map[string][]string{"shared": {f("d1")}},
				Declared:  1,
			},
		},
		"TargetRemovedFromComposition": {
			reason: "A target the composition no longer desires can't declare anything; it is never added back to desired state.",
			args: args{resources: []Resource{
				with(object("shared"), carrying(f("d1")), notDesired),
				object("d1", "shared"),
			}},
			want: Plan{
				Resources: 2,
				Edges:     []Edge{{Dependent: "d1", Target: "shared", State: TargetRemoved}},
				Additions: map[string][]string{},
			},
		},
		"TargetNotCreatedYet": {
			reason: "A desired target that doesn't exist yet declares its dependents' finalizers from the start.",
			args: args{resources: []Resource{
				with(object("shared"), notObserved),
				object("d1", "shared"),
			}},
			want: Plan{
				Resources: 2,
				Edges:     []Edge{{Dependent: "d1", Target: "shared", State: Declared}},
				Additions: map[string][]string{"shared": {f("d1")}},
				Declared:  1,
			},
		},
		"External": {
			reason: "A reference that matches no composed resource is an external edge, once per target.",
			args: args{resources: []Resource{
				object("d1", "elsewhere", "elsewhere"),
			}},
			want: Plan{
				Resources: 1,
				External:  []External{{Dependent: "d1", Target: objectref.Target{Group: objectref.ClusterGroup, Kind: objectref.Kind, Name: "elsewhere", Index: 0, Via: "dependsOn"}, Protection: Unprotected, State: Exposed}},
				Additions: map[string][]string{},
			},
		},
		"Stale": {
			reason: "Reference finalizers of no Object that references the resource here are stale: reported, not declared.",
			args: args{resources: []Resource{
				with(object("shared"), carrying(f("gone"), f("d1"), f("d2"), "example.org/other")),
				object("d1", "shared"),
				object("d2"),
			}},
			want: Plan{
				Resources: 3,
				Edges:     []Edge{{Dependent: "d1", Target: "shared", State: Protected}},
				Stale:     []Stale{{Resource: "shared", Finalizer: f("d2")}, {Resource: "shared", Finalizer: f("gone")}},
				Additions: map[string][]string{"shared": {f("d1")}},
				Declared:  1,
			},
		},
		"CycleKept": {
			reason: "Without BreakCycles the edges of a cycle are planned as any other (the caller fails the step).",
			args:   args{resources: []Resource{object("a", "b"), object("b", "a")}},
			want: Plan{
				Resources: 2,
				Edges: []Edge{
					{Dependent: "a", Target: "b", State: Declared},
					{Dependent: "b", Target: "a", State: Declared},
				},
				Cycles:    [][]string{{"a", "b", "a"}},
				Additions: map[string][]string{"a": {f("b")}, "b": {f("a")}},
				Declared:  2,
			},
		},
		"CycleBroken": {
			reason: "With BreakCycles no edge inside a cycle gets a finalizer; an edge into the cycle still does.",
			args: args{
				resources: []Resource{object("a", "b"), object("b", "a"), object("c", "a")},
				o:         Options{BreakCycles: true},
			},
			want: Plan{
				Resources: 3,
				Edges: []Edge{
					{Dependent: "a", Target: "b", State: Cyclic},
					{Dependent: "b", Target: "a", State: Cyclic},
					{Dependent: "c", Target: "a", State: Declared},
				},
				Cycles:    [][]string{{"a", "b", "a"}},
				Additions: map[string][]string{"a": {f("c")}},
				Declared:  1,
			},
		},
		"MatchIgnoresVersionNotNamespace": {
			reason: "References match by group, kind, namespace and name: a namespaced reference without namespace matches nothing.",
			args: args{resources: []Resource{
				{Name: "shared", Identity: Identity{Group: objectref.NamespacedGroup, Kind: "Object", Namespace: "team", Name: "shared-x"}, Observed: &Observed{UID: "uid-shared"}, Desired: &Desired{}},
				{
					Name: "d1", Identity: Identity{Group: objectref.NamespacedGroup, Kind: "Object", Namespace: "team", Name: "d1-x"}, Observed: &Observed{UID: "uid-d1", Finalizers: []string{objectref.ObjectFinalizer}}, Desired: &Desired{},
					References: []objectref.Target{
						{Group: objectref.NamespacedGroup, Kind: "Object", Namespace: "team", Name: "shared-x", Index: 0, Via: "dependsOn"},
						{Group: objectref.NamespacedGroup, Kind: "Object", Name: "shared-x", Index: 1, Via: "dependsOn"},
					},
				},
			}},
			want: Plan{
				Resources: 2,
				Edges:     []Edge{{Dependent: "d1", Target: "shared", State: Declared}},
				External:  []External{{Dependent: "d1", Target: objectref.Target{Group: objectref.NamespacedGroup, Kind: "Object", Name: "shared-x", Index: 1, Via: "dependsOn"}, Protection: Unprotected, State: Exposed}},
				Additions: map[string][]string{"shared": {f("d1")}},
				Declared:  1,
			},
		},
		"AnyKind": {
			reason: "An Object may reference any composed kind, such as a ConfigMap composed directly.",
			args: args{resources: []Resource{
				{Name: "cm", Identity: Identity{Kind: "ConfigMap", Namespace: "team", Name: "cm"}, Observed: &Observed{UID: "uid-cm"}, Desired: &Desired{}},
				with(object("d1"), func(r *Resource) {
					r.References = []objectref.Target{{Kind: "ConfigMap", Namespace: "team", Name: "cm"}}
				}),
			}},
			want: Plan{
				Resources: 2,
				Edges:     []Edge{{Dependent: "d1", Target: "cm", State: Declared}},
				Additions: map[string][]string{"cm": {f("d1")}},
				Declared:  1,
			},
		},
		"UnnamedMatchesNothing": {
			reason: "A desired resource without a name yet can't be what a reference names.",
			args: args{resources: []Resource{
				with(object("shared"), notObserved, func(r *Resource) { r.Identity.Name = "" }),
				object("d1", ""),
			}},
			want: Plan{
				Resources: 2,
				External:  []External{{Dependent: "d1", Target: objectref.Target{Group: objectref.ClusterGroup, Kind: objectref.Kind, Index: 0, Via: "dependsOn"}, Protection: Unprotected, State: Exposed}},
				Additions: map[string][]string{},
			},
		},
		"SharedIdentity": {
			reason: "Two composed resources for the same object both declare the finalizer: whichever is applied, it is there.",
			args: args{resources: []Resource{
				with(object("shared-a"), func(r *Resource) { r.Identity.Name = "shared" }),
				with(object("shared-b"), func(r *Resource) { r.Identity.Name = "shared" }),
				object("d1", "shared"),
			}},
			want: Plan{
				Resources: 3,
				Edges: []Edge{
					{Dependent: "d1", Target: "shared-a", State: Declared},
					{Dependent: "d1", Target: "shared-b", State: Declared},
				},
				Additions: map[string][]string{"shared-a": {f("d1")}, "shared-b": {f("d1")}},
				Declared:  2,
			},
		},
		"UIDsSharingAPrefix": {
			reason: "Finalizers are sorted by the whole UID, not its first bytes, and two Objects that claim one UID get its finalizer declared once and both their edges protected by it.",
			args: args{resources: []Resource{
				with(object("shared"), carrying(objectref.Finalizer("uid-same-z"), objectref.Finalizer("uid-same-b"))),
				with(object("d1", "shared"), func(r *Resource) { r.Observed.UID = "uid-same-z" }),
				with(object("d2", "shared"), func(r *Resource) { r.Observed.UID = "uid-same-b" }),
				with(object("d3", "shared"), func(r *Resource) { r.Observed.UID = "uid-same-a" }),
				with(object("d4", "shared"), func(r *Resource) { r.Observed.UID = "uid-same-b" }),
			}},
			want: Plan{
				Resources: 5,
				Edges: []Edge{
					{Dependent: "d1", Target: "shared", State: Protected},
					{Dependent: "d2", Target: "shared", State: Protected},
					{Dependent: "d3", Target: "shared", State: Declared},
					{Dependent: "d4", Target: "shared", State: Protected},
				},
				Additions: map[string][]string{"shared": {
					objectref.Finalizer("uid-same-a"), objectref.Finalizer("uid-same-b"), objectref.Finalizer("uid-same-z"),
				}},
				Declared: 3,
			},
		},
		"TwoObjectsClaimingOneUIDCountOneFinalizer": {
			reason: "Declared counts finalizers, not edges: two Objects that claim one UID share one finalizer, declared and counted once.",
			args: args{resources: []Resource{
				object("shared"),
				with(object("d1", "shared"), func(r *Resource) { r.Observed.UID = "uid-same" }),
				with(object("d2", "shared"), func(r *Resource) { r.Observed.UID = "uid-same" }),
			}},
			want: Plan{
				Resources: 3,
				Edges: []Edge{
					{Dependent: "d1", Target: "shared", State: Declared},
					{Dependent: "d2", Target: "shared", State: Declared},
				},
				Additions: map[string][]string{"shared": {objectref.Finalizer("uid-same")}},
				Declared:  1,
			},
		},
		"ExplicitObject": {
			reason: "An Object that depends on a resource by the input's word gets a dependsOn for it, and the resource declares its finalizer.",
			args:   args{resources: []Resource{object("shared"), with(object("d1"), dependingOn("shared"))}},
			want: Plan{
				Resources:  2,
				Edges:      []Edge{{Dependent: "d1", Target: "shared", Origin: FromInput, State: Declared}},
				Additions:  map[string][]string{"shared": {f("d1")}},
				Declared:   1,
				References: map[string][]Reference{"d1": {{APIVersion: "kubernetes.crossplane.io/v1alpha2", Kind: "Object", Name: "shared"}}},
			},
		},
		"ExplicitAlreadyReferenced": {
			reason: "A dependency the Object already references adds no edge or reference.",
			args:   args{resources: []Resource{object("shared"), with(object("d1", "shared"), dependingOn("shared"))}},
			want: Plan{
				Resources: 2,
				Edges:     []Edge{{Dependent: "d1", Target: "shared", State: Declared}},
				Additions: map[string][]string{"shared": {f("d1")}},
				Declared:  1,
			},
		},
		"IgnoredReferencesStillStopADuplicate": {
			reason: "With references ignored, a dependency the Object already references makes an edge but no second reference.",
			args: args{
				resources: []Resource{object("shared"), with(object("d1", "shared"), dependingOn("shared"))},
				o:         Options{IgnoreReferences: true},
			},
			want: Plan{
				Resources: 2,
				Edges:     []Edge{{Dependent: "d1", Target: "shared", Origin: FromInput, State: Declared}},
				Additions: map[string][]string{"shared": {f("d1")}},
				Declared:  1,
			},
		},
		"OneReferenceForTwoVersionsOfAnObject": {
			reason: "Two composed resources for one object, in two versions, get one dependsOn: the provider finds the object whatever the version.",
			args: args{resources: []Resource{
				with(object("shared-a"), func(r *Resource) { r.Identity.Name = "shared" }),
				with(object("shared-b"), func(r *Resource) { r.Identity.Name = "shared"; r.APIVersion = "kubernetes.crossplane.io/v1alpha1" }),
				with(object("d1"), dependingOn("shared-a", "shared-b")),
			}},
			want: Plan{
				Resources: 3,
				Edges: []Edge{
					{Dependent: "d1", Target: "shared-a", Origin: FromInput, State: Declared},
					{Dependent: "d1", Target: "shared-b", Origin: FromInput, State: Declared},
				},
				Additions:  map[string][]string{"shared-a": {f("d1")}, "shared-b": {f("d1")}},
				Declared:   2,
				References: map[string][]Reference{"d1": {{APIVersion: "kubernetes.crossplane.io/v1alpha2", Kind: "Object", Name: "shared"}}},
			},
		},
		"IgnoredReferencesMakeNoEdge": {
			reason: "With references ignored, a reference the input doesn't declare makes no edge.",
			args: args{
				resources: []Resource{object("shared"), object("d1", "shared")},
				o:         Options{IgnoreReferences: true},
			},
			want: Plan{Resources: 2},
		},
		"UnmanagedDependentIsPending": {
			reason: "An Object that lacks the provider's own finalizer has references that don't all resolve: it would not release a finalizer declared for it, so none is declared until the provider manages it.",
			args: args{resources: []Resource{
				object("shared"),
				with(object("d1", "shared", "nowhere"), func(r *Resource) { r.Observed.Finalizers = nil }),
			}},
			want: Plan{
				Resources: 2,
				Edges:     []Edge{{Dependent: "d1", Target: "shared", State: Pending}},
				External:  []External{{Dependent: "d1", Target: objectref.Target{Group: objectref.ClusterGroup, Kind: objectref.Kind, Name: "nowhere", Index: 1, Via: "dependsOn"}, Protection: Unprotected, State: Exposed}},
			},
		},
		"ExplicitDependencyNotNamed": {
			reason: "While the dependency has no name, an Object that doesn't exist yet is held back; an existing one is never held back.",
			args: args{resources: []Resource{
				with(object("shared"), notObserved, func(r *Resource) { r.Identity.Name = "" }),
				with(object("new"), notObserved, dependingOn("shared")),
				with(object("old"), dependingOn("shared")),
			}},
			want: Plan{
				Resources: 3,
				Edges: []Edge{
					{Dependent: "new", Target: "shared", Origin: FromInput, State: Pending},
					{Dependent: "old", Target: "shared", Origin: FromInput, State: Declared},
				},
				Additions: map[string][]string{"shared": {f("old")}},
				Declared:  1,
				HeldBack:  map[string]string{"new": "waits for shared to be named, to reference it"},
			},
		},
		"ExplicitNotAnObject": {
			reason: "Without Usages, nothing protects an edge whose dependent is not an Object.",
			args:   args{resources: []Resource{plain("db"), with(plain("app"), dependingOn("db"))}},
			want: Plan{
				Resources: 2,
				Edges:     []Edge{{Dependent: "app", Target: "db", Origin: FromInput, Protection: Unprotected, State: Exposed}},
			},
		},
		"UsageForNonObject": {
			reason: "With AllUsages a Usage protects it: declared once both ends exist, protected once the Usage is observed, pending before.",
			args: args{
				resources: []Resource{
					plain("db"),
					with(plain("app"), dependingOn("db")),
					with(plain("cache"), dependingOn("db")),
					with(plain("new"), notObserved, dependingOn("db")),
				},
				o: Options{Usages: AllUsages, ObservedUsages: map[string]bool{usage.Key("cache", "db"): true}},
			},
			want: Plan{
				Resources: 4,
				Edges: []Edge{
					{Dependent: "app", Target: "db", Origin: FromInput, Protection: ByUsage, Usage: usage.Key("app", "db"), State: Declared},
					{Dependent: "cache", Target: "db", Origin: FromInput, Protection: ByUsage, Usage: usage.Key("cache", "db"), State: Protected},
					{Dependent: "new", Target: "db", Origin: FromInput, Protection: ByUsage, Usage: usage.Key("new", "db"), State: Pending},
				},
			},
		},
		"UsageOfADeletingTargetIsTooLate": {
			reason: "A Usage can't undo a deletion the API server accepted: an edge whose target is being deleted without its Usage is unprotected, and none is emitted.",
			args: args{
				resources: []Resource{with(plain("db"), deleting), with(plain("app"), dependingOn("db"))},
				o:         Options{Usages: AllUsages},
			},
			want: Plan{
				Resources: 2,
				Edges:     []Edge{{Dependent: "app", Target: "db", Origin: FromInput, Protection: ByUsage, Usage: usage.Key("app", "db"), State: TargetDeleting}},
			},
		},
		"UsagesOfDashedNamesDiffer": {
			reason: "Each edge has a Usage of its own: a → b-c and a-b → c once shared one, and one Usage silently replaced the other.",
			args: args{
				resources: []Resource{
					plain("b-c"), plain("c"),
					with(plain("a"), dependingOn("b-c")),
					with(plain("a-b"), dependingOn("c")),
				},
				o: Options{Usages: AllUsages},
			},
			want: Plan{
				Resources: 4,
				Edges: []Edge{
					{Dependent: "a", Target: "b-c", Origin: FromInput, Protection: ByUsage, Usage: usage.Key("a", "b-c"), State: Declared},
					{Dependent: "a-b", Target: "c", Origin: FromInput, Protection: ByUsage, Usage: usage.Key("a-b", "c"), State: Declared},
				},
			},
		},
		"UsageForExternal": {
			reason: "With ExternalUsages an external reference gets a Usage; edges between composed resources keep their finalizers.",
			args: args{
				resources: []Resource{object("shared"), object("d1", "shared", "elsewhere")},
				o:         Options{Usages: ExternalUsages},
			},
			want: Plan{
				Resources: 2,
				Edges:     []Edge{{Dependent: "d1", Target: "shared", State: Declared}},
				External: []External{{
					Dependent: "d1", Target: objectref.Target{Group: objectref.ClusterGroup, Kind: objectref.Kind, Name: "elsewhere", Index: 1, Via: "dependsOn"},
					Protection: ByUsage, Usage: usage.ExternalKey("d1", objectref.ClusterGroup, objectref.Kind, "", "elsewhere"), State: Declared,
				}},
				Additions: map[string][]string{"shared": {f("d1")}},
				Declared:  1,
			},
		},
		"WaitForReadyFanOut": {
			reason: "Dependents of a ready resource are all released in one pass; those of one that isn't ready all wait.",
			args: args{
				resources: []Resource{
					with(plain("ready"), ready),
					plain("unready"),
					with(plain("a"), notObserved, dependingOn("ready")),
					with(plain("b"), notObserved, dependingOn("ready")),
					with(plain("c"), notObserved, dependingOn("unready")),
					with(plain("d"), notObserved, dependingOn("unready", "ready")),
				},
				o: Options{WaitForReady: true},
			},
			want: Plan{
				Resources: 6,
				Edges: []Edge{
					{Dependent: "a", Target: "ready", Origin: FromInput, Protection: Unprotected, State: Exposed},
					{Dependent: "b", Target: "ready", Origin: FromInput, Protection: Unprotected, State: Exposed},
					{Dependent: "c", Target: "unready", Origin: FromInput, Protection: Unprotected, State: Exposed},
					{Dependent: "d", Target: "ready", Origin: FromInput, Protection: Unprotected, State: Exposed},
					{Dependent: "d", Target: "unready", Origin: FromInput, Protection: Unprotected, State: Exposed},
				},
				HeldBack: map[string]string{"c": "waits for unready to be ready", "d": "waits for unready to be ready"},
			},
		},
		"WaitForReadyChain": {
			reason: "In a chain only the next link is released; one that exists is never held back, ready or not; an earlier step's ready counts.",
			args: args{
				resources: []Resource{
					with(plain("base"), func(r *Resource) { r.Desired.Ready = true }),
					with(plain("mid"), notObserved, dependingOn("base")),
					with(plain("top"), notObserved, dependingOn("mid")),
					with(plain("old"), dependingOn("mid")),
				},
				o: Options{WaitForReady: true},
			},
			want: Plan{
				Resources: 4,
				Edges: []Edge{
					{Dependent: "mid", Target: "base", Origin: FromInput, Protection: Unprotected, State: Exposed},
					{Dependent: "old", Target: "mid", Origin: FromInput, Protection: Unprotected, State: Exposed},
					{Dependent: "top", Target: "mid", Origin: FromInput, Protection: Unprotected, State: Exposed},
				},
				HeldBack: map[string]string{"top": "waits for mid to be ready"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Make(tc.args.resources, tc.args.o)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nMake(...): -want, +got:\n%s", tc.reason, diff)
			}
			// Planners reuse each other's working memory: no plan may
			// depend on the one made before it.
			for before, b := range cases {
				Make(b.args.resources, b.args.o)
				got := Make(tc.args.resources, tc.args.o)
				if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s\nMake(...) after the plan of %s: -want, +got:\n%s", tc.reason, before, diff)
				}
			}
		})
	}
}

// TestMakeOrderIndependent proves the plan doesn't depend on the order of the
// resources or of an Object's references.
func TestMakeOrderIndependent(t *testing.T) {
	var resources []Resource
	resources = append(resources, with(object("shared"), carrying(f("d00"))))
	for i := range 30 {
		d := object(fmt.Sprintf("d%02d", i), "shared", fmt.Sprintf("d%02d", (i+1)%30), "external")
		resources = append(resources, d)
	}
	want := Make(resources, Options{BreakCycles: true})
	reversed := make([]Resource, len(resources))
	for i, r := range resources {
		r.References = append([]objectref.Target(nil), r.References...)
		for a, b := 0, len(r.References)-1; a < b; a, b = a+1, b-1 {
			r.References[a], r.References[b] = r.References[b], r.References[a]
		}
		reversed[len(resources)-1-i] = r
	}
	got := Make(reversed, Options{BreakCycles: true})
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(objectref.Target{}, "Index")); diff != "" {
		t.Errorf("Make(reversed): -want, +got:\n%s", diff)
	}
}
