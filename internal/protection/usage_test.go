package protection

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/composed/composedtest"
	"github.com/crossplane-contrib/function-dependencies/internal/object"
	"github.com/crossplane-contrib/function-dependencies/internal/protocol"
)

var xr = object.Ref{APIVersion: "example.org/v1", Kind: "App", Namespace: "team", Name: "shop"}

func TestUsageKindAndScopeFollowTheEnds(t *testing.T) {
	cm := object.Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team", Name: "settings"}
	other := object.Ref{APIVersion: "v1", Kind: "Secret", Namespace: "vault", Name: "token"}
	deploy := object.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "web"}
	bucket := object.Ref{APIVersion: "s3.aws.upbound.io/v1beta1", Kind: "Bucket", Name: "assets"}
	role := object.Ref{APIVersion: "iam.aws.upbound.io/v1beta1", Kind: "Role", Name: "writer"}
	edge := func(by, of object.Ref) Edge {
		return Edge{Key: "usage-a-b", Dependent: "a", Target: "b", DependentRef: by, TargetRef: of}
	}
	// The label tells the function its own Usages when it observes them.
	labels := map[string]any{protocol.UsageLabel: "true"}
	spec := func(of map[string]any, by object.Ref) map[string]any {
		return map[string]any{"of": of, "by": ref(by, false), "reason": "a depends on b (function-dependencies)", "replayDeletion": true}
	}
	cases := map[string]struct {
		reason  string
		api     API
		edge    Edge
		want    map[string]any
		problem string
	}{
		"SameNamespace": {
			reason: "Two resources in one namespace get a namespaced Usage there, with references in its namespace.",
			api:    Protection, edge: edge(deploy, cm),
			want: map[string]any{"apiVersion": string(Protection), "kind": "Usage", "metadata": map[string]any{"name": name(xr, "usage-a-b"), "namespace": "team", "labels": labels}, "spec": spec(ref(cm, false), deploy)},
		},
		"OtherNamespace": {
			reason: "A dependency in another namespace is named with its namespace, which a Usage with a by allows.",
			api:    Protection, edge: edge(deploy, other),
			want: map[string]any{"apiVersion": string(Protection), "kind": "Usage", "metadata": map[string]any{"name": name(xr, "usage-a-b"), "namespace": "team", "labels": labels}, "spec": spec(ref(other, true), deploy)},
		},
		"ClusterScoped": {
			reason: "Two cluster-scoped resources get a ClusterUsage.",
			api:    Protection, edge: edge(role, bucket),
			want: map[string]any{"apiVersion": string(Protection), "kind": "ClusterUsage", "metadata": map[string]any{"name": name(xr, "usage-a-b"), "labels": labels}, "spec": spec(ref(bucket, false), role)},
		},
		"CrossplaneV1": {
			reason: "Crossplane v1's Usage is cluster-scoped.",
			api:    Apiextensions, edge: edge(role, bucket),
			want: map[string]any{"apiVersion": string(Apiextensions), "kind": "Usage", "metadata": map[string]any{"name": name(xr, "usage-a-b"), "labels": labels}, "spec": spec(ref(bucket, false), role)},
		},
		"NamespacedOfCluster": {
			reason: "No Usage lets a namespaced resource use a cluster-scoped one: say so rather than emit one that protects nothing.",
			api:    Protection, edge: edge(deploy, bucket),
			problem: "the dependent is namespaced and the dependency is cluster-scoped: a namespaced Usage can't refer to a cluster-scoped Bucket, and a ClusterUsage can't refer to a namespaced Deployment",
		},
		"ClusterOfNamespaced": {
			reason: "Nor a cluster-scoped resource use a namespaced one.",
			api:    Protection, edge: edge(role, cm),
			problem: "the dependent is cluster-scoped and the dependency is namespaced: a ClusterUsage can't refer to a namespaced ConfigMap, and a namespaced Usage can't be used by a cluster-scoped Role",
		},
		"CrossplaneV1Namespaced": {
			reason: "Crossplane v1's Usage can't protect namespaced resources.",
			api:    Apiextensions, edge: edge(deploy, cm),
			problem: "apiextensions.crossplane.io/v1beta1 Usages protect cluster-scoped resources only",
		},
	}
	for n, tc := range cases {
		t.Run(n, func(t *testing.T) {
			u, problem := write(tc.api, xr, tc.edge)
			if diff := cmp.Diff(tc.want, u, cmpEmpty); diff != "" {
				t.Errorf("%s\nwrite(...): -want, +got:\n%s", tc.reason, diff)
			}
			if problem != tc.problem {
				t.Errorf("%s\nwrite(...) problem = %q, want %q", tc.reason, problem, tc.problem)
			}
		})
	}
}

var cmpEmpty = cmp.FilterValues(func(a, b map[string]any) bool { return len(a) == 0 && len(b) == 0 }, cmp.Ignore())

func TestNamesAreShortUniquePerCompositeAndReadable(t *testing.T) {
	long := "usage-" + strings.Repeat("very-long-dependent-name-", 5) + "shared"
	n := name(xr, long)
	if len(n) > maxName {
		t.Errorf("name(...) is %d characters, more than %d: %q", len(n), maxName, n)
	}
	if n != name(xr, long) {
		t.Error("name(...) differs for the same key")
	}
	if n == name(object.Ref{APIVersion: xr.APIVersion, Kind: xr.Kind, Namespace: xr.Namespace, Name: "other"}, long) {
		t.Error("two composites' Usages of the same edge share a name")
	}
	if got := name(xr, "usage-Web_1-db"); !strings.HasPrefix(got, "usage-web-1-db-") || len(got) != len("usage-web-1-db-")+8 {
		t.Errorf("name(...) = %q, want usage-web-1-db- and 8 hex digits", got)
	}
}

// TestKeysAreUniquePerEdge proves that no two edges share a Usage's
// composition resource name, whatever dashes their names hold: the edges
// a → b-c and a-b → c once both got usage-a-b-c, and one Usage replaced the
// other.
func TestKeysAreUniquePerEdge(t *testing.T) {
	keys := map[string]string{}
	add := func(edge, key string) {
		t.Helper()
		if other, taken := keys[key]; taken {
			t.Errorf("edges %s and %s share the key %q", other, edge, key)
		}
		keys[key] = edge
	}
	for _, e := range [][2]string{{"a", "b-c"}, {"a-b", "c"}, {"a-b-c", ""}, {"", "a-b-c"}, {"a", "b"}, {"1-a", "b"}, {"1", "a-b"}} {
		add(e[0]+" → "+e[1], Key(e[0], e[1]))
	}
	for _, x := range [][5]string{
		{"a", "", "Secret", "b", "c"}, {"a", "", "Secret", "b-c", ""}, {"a-b", "", "Secret", "", "c"},
		{"a", "x.io", "Secret", "b", "c"}, {"a", "", "Secret.x", "io", "c"}, {"a", "", "Secret", "", "b-c"},
	} {
		add(x[0]+" → external "+strings.Join(x[1:], "/"), ExternalKey(x[0], x[1], x[2], x[3], x[4]))
	}
	// A composed dependency named like an external object's key part.
	add("a → secret./b/c", Key("a", "secret./b/c"))
}

// TestKeysFollowTheirRule pins the keys by their rule, so that a change to
// it, which renames every Usage a composite has, is a visible decision.
func TestKeysFollowTheirRule(t *testing.T) {
	if got, want := Key("app", "db"), "usage-3-app-db"; got != want {
		t.Errorf("Key(app, db) = %q, want %q: usage-, the dependent's length, then both names", got, want)
	}
	if got, want := ExternalKey("app", "", "Secret", "vault", "token"), "usage-3x-app-secret./vault/token"; got != want {
		t.Errorf("ExternalKey(...) = %q, want %q: usage-, the dependent's length and x, then kind.group/namespace/name", got, want)
	}
}

// bucket is a live cluster-scoped resource that is not an Object.
func bucket(name string) composed.Resource {
	return composed.Resource{
		Name: name, APIVersion: "s3.aws.upbound.io/v1beta1", Identity: object.Ref{Group: "s3.aws.upbound.io", Kind: "Bucket", Name: name},
		Observed: &composed.Observed{UID: "uid-" + name}, Desired: &composed.Desired{},
	}
}

// secret is a reference to a Secret, which no composed resource is here.
func secret(namespace, name string) object.Target {
	return object.Target{Ref: object.Ref{APIVersion: "v1", Kind: "Secret", Namespace: namespace, Name: name}}
}

// end is how a Usage names the resource.
func end(r composed.Resource) object.Ref {
	return object.Ref{APIVersion: r.APIVersion, Group: r.Identity.Group, Kind: r.Identity.Kind, Namespace: r.Identity.Namespace, Name: r.Identity.Name}
}

// between is the edge from one composed resource to another.
func between(d, t composed.Resource) Edge {
	return Edge{Key: Key(d.Name, t.Name), Dependent: d.Name, Target: t.Name, DependentRef: end(d), TargetRef: end(t)}
}

// outside is the edge from a composed resource to an object outside the
// composition.
func outside(d composed.Resource, t object.Target) Edge {
	return Edge{
		Key: ExternalKey(d.Name, t.Group, t.Kind, t.Namespace, t.Name), Dependent: d.Name, Target: t.String(),
		DependentRef: end(d), TargetRef: object.Ref{APIVersion: t.APIVersion, Group: t.Group, Kind: t.Kind, Namespace: t.Namespace, Name: t.Name},
	}
}

// usagePlan is what the Usage rule's part of a decision decides alone:
// the states of the edges and external edges a Usage protects, by place.
type usagePlan struct {
	States, External map[int]State
	Usages           map[string]map[string]any
	Unusable         []Problem
	Unprotected      []Edge
}

// decideUsages runs the Usage rule alone over the graph: with the mode, on
// the edges a finalizer can protect, and with finalizers, handing over the
// edges at handOver, whose finalizers don't hold yet.
func decideUsages(g *composed.Graph, o usageOptions, mode Mode, handOver []int) usagePlan {
	u := newUsages(g, o)
	p := usagePlan{States: map[int]State{}, External: map[int]State{}}
	for i, e := range g.Edges {
		a := noFinalizer
		switch {
		case !finalizerCan(g, e):
		case mode == Usages:
			a = instead
		case mode == Both:
			a = too
		case slices.Contains(handOver, i):
			a = handingOver
		default:
			a = finalizerHolds
		}
		if s, _, ok := u.edge(i, a); ok {
			p.States[i] = s
		}
	}
	for i := range g.External {
		if s, _, ok := u.external(i); ok {
			p.External[i] = s
		}
	}
	p.Usages, p.Unusable, p.Unprotected = u.emitted, u.unusable, u.unprotected
	return p
}

func TestDecideProtectsWhatTheFinalizersCannotAsThePolicySays(t *testing.T) {
	db, app, cache := composedtest.ConfigMap("db"), composedtest.ConfigMap("app", "db"), composedtest.ConfigMap("cache", "db")
	shared := composedtest.Object("shared")
	d1 := composedtest.Object("d1", "shared", "elsewhere")
	// generated gives a dependent the object name Crossplane generated for
	// it: one deleted and created again gets a new one.
	generated := func(name string) func(*composed.Resource) {
		return func(r *composed.Resource) { r.Identity.Name = name }
	}
	type args struct {
		resources []composed.Resource
		graph     composed.Options
		policy    Policy
		mode      Mode
		handOver  []int
		api       API
		// observed are the function's Usages that exist: each as written
		// for its edge, under the edge's key.
		observed []Edge
		composed map[Ends]bool
	}
	type want struct {
		states, external map[int]State
		// usages are the edges whose Usage is emitted, as write writes it.
		usages      []Edge
		unusable    []Problem
		unprotected []Edge
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"NoneProtectsNothing": {
			reason: "Without Usages, nothing protects an edge the input declares whose dependent is not an Object, nor one to an object outside the composition; the declared edge is listed, so that the report can say so.",
			args:   args{resources: []composed.Resource{db, app, d1, shared}, policy: None},
			want:   want{unprotected: []Edge{between(app, db)}},
		},
		"NoneListsNoEdgeACycleBroke": {
			reason: "A declared edge a cycle broke is the cycle's to report: nothing may protect it.",
			args: args{
				resources: []composed.Resource{composedtest.ConfigMap("a", "b"), composedtest.ConfigMap("b", "a"), composedtest.ConfigMap("c", "a")},
				graph:     composed.Options{BreakCycles: true},
			},
			want: want{unprotected: []Edge{between(composedtest.ConfigMap("c"), composedtest.ConfigMap("a"))}},
		},
		"AllProtectsInputDependenciesOfNonObjects": {
			reason: "With Every a Usage protects an input dependency of a resource that is not an Object: declared once both ends exist, protected once the Usage is observed (and still emitted), pending before.",
			args: args{
				resources: []composed.Resource{db, app, cache, composedtest.With(composedtest.ConfigMap("new", "db"), composedtest.NotObserved)},
				policy:    Every, observed: []Edge{between(cache, db)},
			},
			want: want{
				states: map[int]State{0: Declared, 1: Protected, 2: Pending},
				usages: []Edge{between(app, db), between(cache, db)},
			},
		},
		"PendingUntilTheDependencyExists": {
			reason: "A Usage is emitted only once both its ends exist.",
			args:   args{resources: []composed.Resource{composedtest.With(db, composedtest.NotObserved), app}, policy: Every},
			want:   want{states: map[int]State{0: Pending}},
		},
		"UsageOfADeletingTargetIsTooLate": {
			reason: "A Usage can't undo a deletion the API server accepted, observed or not: an edge whose target is being deleted gets no new one. One already observed stays: dropped, it would be emitted again as the Usage of an object outside the composition once Crossplane stops observing the target.",
			args: args{
				resources: []composed.Resource{composedtest.With(db, composedtest.Deleting), app, cache},
				policy:    Every, observed: []Edge{between(cache, db)},
			},
			want: want{states: map[int]State{0: TargetDeleting, 1: TargetDeleting}, usages: []Edge{between(cache, db)}},
		},
		"UsagesOfDashedNamesDiffer": {
			reason: "Each edge has a Usage of its own: a → b-c and a-b → c once shared one, and one Usage silently replaced the other.",
			args: args{
				resources: []composed.Resource{composedtest.ConfigMap("b-c"), composedtest.ConfigMap("c"), composedtest.ConfigMap("a", "b-c"), composedtest.ConfigMap("a-b", "c")},
				policy:    Every,
			},
			want: want{
				states: map[int]State{0: Declared, 1: Declared},
				usages: []Edge{between(composedtest.ConfigMap("a", "b-c"), composedtest.ConfigMap("b-c")), between(composedtest.ConfigMap("a-b", "c"), composedtest.ConfigMap("c"))},
			},
		},
		"ExternalProtectsEdgesOutOfTheCompositionAndDeclaredOnes": {
			reason: "With Every an external reference gets a Usage, and so does an edge the input declares that no finalizer can protect; an edge a finalizer protects gets none.",
			args:   args{resources: []composed.Resource{shared, d1, db, app}, policy: Every},
			want: want{
				states:   map[int]State{0: Declared},
				external: map[int]State{0: Declared},
				usages:   []Edge{between(app, db), outside(d1, composedtest.ClusterObject("elsewhere"))},
			},
		},
		"AllNeverUsesAnEdgeAFinalizerProtects": {
			reason: "With Every the edges of an Object, referenced or declared in the input, keep their finalizers and get no Usage; its external edges still get one.",
			args: args{
				resources: []composed.Resource{shared, composedtest.With(d1, composedtest.DependingOn("db")), db, app},
				policy:    Every,
			},
			want: want{
				states:   map[int]State{0: Declared},
				external: map[int]State{0: Declared},
				usages:   []Edge{between(app, db), outside(d1, composedtest.ClusterObject("elsewhere"))},
			},
		},
		"TooUsesTheEdgesAFinalizerProtectsToo": {
			reason: "With Too the edges of an Object get a Usage as well as their finalizer, referenced or declared in the input: provider-kubernetes v0 deletes a referenced Object's remote object whatever its finalizers.",
			args: args{
				resources: []composed.Resource{shared, d1, composedtest.With(composedtest.Object("d2"), composedtest.DependingOn("shared")), db, app},
				policy:    Every, mode: Both, api: Apiextensions,
			},
			want: want{
				states:   map[int]State{1: Declared, 2: Declared},
				external: map[int]State{0: Declared},
				usages:   []Edge{between(d1, shared), between(composedtest.Object("d2"), shared), outside(d1, composedtest.ClusterObject("elsewhere"))},
				unusable: []Problem{{Edge: between(app, db), Reason: "apiextensions.crossplane.io/v1beta1 Usages protect cluster-scoped resources only"}},
			},
		},
		"InsteadUsesTheEdgesAFinalizerProtectsOnly": {
			reason: "With Usages instead of finalizers the edges of an Object get a Usage, as do the declared ones no finalizer can protect and the external ones; one no Usage can express is left to its finalizer, which protects it: nothing to report.",
			args: args{
				resources: []composed.Resource{shared, d1, db, app, composedtest.With(composedtest.Object("web"), composedtest.Referencing(object.Target{Ref: object.Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team", Name: "db"}}))},
				policy:    Every, mode: Usages,
			},
			want: want{
				states:   map[int]State{0: Declared, 1: Declared}, // Edge 2 is web → db.
				external: map[int]State{0: Declared},
				usages:   []Edge{between(app, db), between(d1, shared), outside(d1, composedtest.ClusterObject("elsewhere"))},
			},
		},
		"AUsageStaysUntilTheFinalizerHolds": {
			reason: "With finalizers, the Usage observed of an edge whose finalizer doesn't hold yet stays, so that switching from Usages leaves no gap; one whose finalizer holds goes, and none is made for an edge that has none.",
			args: args{
				resources: []composed.Resource{shared, d1, composedtest.Object("d2", "shared"), composedtest.Object("d3", "shared")},
				handOver:  []int{0, 1},
				observed:  []Edge{between(d1, shared), between(composedtest.Object("d3"), shared)},
			},
			want: want{
				states: map[int]State{0: Protected},
				usages: []Edge{between(d1, shared)},
			},
		},
		"AUsageByADependentThatIsGoneHandsNothingOver": {
			reason: "With finalizers, the Usage observed under an edge's key by the object its dependent was before a user deleted it protects nothing of the edge: the dependent, of a generated name, is created again under a new one. The edge stays its finalizer's, pending, and the Usage goes.",
			args: args{
				resources: []composed.Resource{shared, composedtest.With(composedtest.Object("d1", "shared"), composedtest.Unnamed, composedtest.NotObserved)},
				handOver:  []int{0},
				observed:  []Edge{between(composedtest.With(d1, generated("d1-7xk2p")), shared)},
			},
			want: want{},
		},
		"AUsageByADependentThatIsGoneIsNotItsSuccessors": {
			reason: "The Usage observed under an edge's key by the object its dependent was before it was created again under a new generated name is not the edge's: the edge is declared, not protected, and its Usage names the new dependent.",
			args: args{
				resources: []composed.Resource{db, composedtest.With(app, generated("app-q9z4m"))},
				policy:    Every, observed: []Edge{between(composedtest.With(app, generated("app-7xk2p")), db)},
			},
			want: want{
				states: map[int]State{0: Declared},
				usages: []Edge{between(composedtest.With(app, generated("app-q9z4m")), db)},
			},
		},
		"ExternalStates": {
			reason: "An external edge's Usage is protected once observed, and pending while its dependent doesn't exist: the function can't see the object outside.",
			args: args{
				resources: []composed.Resource{
					composedtest.Object("d1", "elsewhere"),
					composedtest.With(composedtest.Object("d2", "elsewhere"), composedtest.NotObserved),
				},
				policy:   Every,
				observed: []Edge{outside(composedtest.Object("d1"), composedtest.ClusterObject("elsewhere"))},
			},
			want: want{
				external: map[int]State{0: Protected, 1: Pending},
				usages:   []Edge{outside(composedtest.Object("d1"), composedtest.ClusterObject("elsewhere"))},
			},
		},
		"CyclicEdgesGetNone": {
			reason: "An edge on a cycle the input breaks is cyclic: no Usage, which would keep both ends for ever.",
			args: args{
				resources: []composed.Resource{composedtest.ConfigMap("a", "b"), composedtest.ConfigMap("b", "a"), composedtest.ConfigMap("c", "a")},
				graph:     composed.Options{BreakCycles: true},
				policy:    Every,
			},
			want: want{
				states: map[int]State{0: Cyclic, 1: Cyclic, 2: Declared},
				usages: []Edge{between(composedtest.ConfigMap("c"), composedtest.ConfigMap("a"))},
			},
		},
		"CyclesKeptGetUsages": {
			reason: "Without BreakCycles the edges of a cycle get Usages as any other (the caller fails the step).",
			args: args{
				resources: []composed.Resource{composedtest.ConfigMap("a", "b"), composedtest.ConfigMap("b", "a")},
				policy:    Every,
			},
			want: want{
				states: map[int]State{0: Declared, 1: Declared},
				usages: []Edge{between(composedtest.ConfigMap("a"), composedtest.ConfigMap("b")), between(composedtest.ConfigMap("b"), composedtest.ConfigMap("a"))},
			},
		},
		"UnusableEdgesAreProblems": {
			reason: "An edge no Usage can express is reported, left out of the states and emits nothing, even when its target is being deleted; usable ones still get theirs. One to an object outside the composite is left out in silence: such a reference is no problem by itself.",
			args: args{
				resources: []composed.Resource{
					db, app, bucket("assets"), composedtest.ConfigMap("web", "assets"), composedtest.ConfigMap("worker", "gone"), composedtest.With(bucket("gone"), composedtest.Deleting),
					composedtest.With(composedtest.Object("d1"), composedtest.Referencing(secret("vault", "token"))),
				},
				policy: Every,
			},
			want: want{
				states: map[int]State{0: Declared},
				usages: []Edge{between(app, db)},
				unusable: []Problem{
					{Edge: between(composedtest.ConfigMap("web"), bucket("assets")), Reason: "the dependent is namespaced and the dependency is cluster-scoped: a namespaced Usage can't refer to a cluster-scoped Bucket, and a ClusterUsage can't refer to a namespaced ConfigMap"},
					{Edge: between(composedtest.ConfigMap("worker"), bucket("gone")), Reason: "the dependent is namespaced and the dependency is cluster-scoped: a namespaced Usage can't refer to a cluster-scoped Bucket, and a ClusterUsage can't refer to a namespaced ConfigMap"},
				},
			},
		},
		"UnusableWhilePendingIsPending": {
			reason: "Whether a Usage can express an edge is decided when it is due: until both ends exist the edge is pending, and no problem yet.",
			args:   args{resources: []composed.Resource{bucket("assets"), composedtest.With(composedtest.ConfigMap("web", "assets"), composedtest.NotObserved)}, policy: Every},
			want:   want{states: map[int]State{0: Pending}},
		},
		"AComposedUsageTakesTheEdge": {
			reason: "An edge a Usage of the composition's own protects gets none of the function's: protected once that one exists, declared before. Resources: app 0, cache 1, db 2.",
			args: args{
				resources: []composed.Resource{db, app, cache},
				policy:    Every, composed: map[Ends]bool{{Dependent: 0, Target: 2}: true, {Dependent: 1, Target: 2}: false},
			},
			want: want{states: map[int]State{0: Protected, 1: Declared}},
		},
		"AComposedUsageProtectsWhatTheFunctionWouldNot": {
			reason: "A step that writes no Usage leaves unprotected only the declared edges nothing else protects.",
			args: args{
				resources: []composed.Resource{db, app, cache},
				composed:  map[Ends]bool{{Dependent: 0, Target: 2}: true},
			},
			want: want{states: map[int]State{0: Protected}, unprotected: []Edge{between(cache, db)}},
		},
		"TheFunctionsUsageStaysUntilTheComposedOneExists": {
			reason: "The function's observed Usage of an edge stays until the composition's own exists, so that no edge is unprotected in between.",
			args: args{
				resources: []composed.Resource{db, app},
				policy:    Every, observed: []Edge{between(app, db)}, composed: map[Ends]bool{{Dependent: 0, Target: 1}: false},
			},
			want: want{states: map[int]State{0: Protected}, usages: []Edge{between(app, db)}},
		},
		"AComposedUsageNeedsNoUsageOfTheAPI": {
			reason: "An edge no Usage of the API can express is no problem when the composition's own Usage protects it.",
			args: args{
				resources: []composed.Resource{db, app},
				policy:    Every, api: Apiextensions, composed: map[Ends]bool{{Dependent: 0, Target: 1}: true},
			},
			want: want{states: map[int]State{0: Protected}},
		},
		"AComposedUsageOfAnObjectsEdgeInsteadOfTheFunctions": {
			reason: "With Usages instead of finalizers, an Object's edge a composed Usage protects gets none of the function's. Resources: d1 0, shared 1.",
			args: args{
				resources: []composed.Resource{shared, composedtest.Object("d1", "shared")},
				mode:      Usages, composed: map[Ends]bool{{Dependent: 0, Target: 1}: true},
			},
			want: want{states: map[int]State{0: Protected}},
		},
		"CrossplaneV1": {
			reason: "Crossplane v1's Usages protect cluster-scoped resources only: namespaced ends are problems.",
			args:   args{resources: []composed.Resource{db, app}, policy: Every, api: Apiextensions},
			want: want{unusable: []Problem{
				{Edge: between(app, db), Reason: "apiextensions.crossplane.io/v1beta1 Usages protect cluster-scoped resources only"},
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			api := tc.args.api
			if api == "" {
				api = Protection
			}
			g := composed.New(tc.args.resources, tc.args.graph)
			var observed map[string]map[string]any
			for _, e := range tc.args.observed {
				u, problem := write(api, xr, e)
				if problem != "" {
					t.Fatalf("the observed Usage of %s can't be written: %s", e.Key, problem)
				}
				if observed == nil {
					observed = map[string]map[string]any{}
				}
				observed[e.Key] = u
			}
			got := decideUsages(g, usageOptions{policy: tc.args.policy, api: api, owner: xr, observed: observed, composed: tc.args.composed}, tc.args.mode, tc.args.handOver)
			usages := map[string]map[string]any{}
			for _, e := range tc.want.usages {
				u, problem := write(api, xr, e)
				if problem != "" {
					t.Fatalf("the wanted Usage of %s can't be written: %s", e.Key, problem)
				}
				usages[e.Key] = u
			}
			want := usagePlan{States: tc.want.states, External: tc.want.external, Usages: usages, Unusable: tc.want.unusable, Unprotected: tc.want.unprotected}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\ndecideUsages(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestAUsageKeepsItsNameWhenItsDependencyLeavesTheComposition proves that an
// edge whose Usage is observed keeps the Usage's name when the edge's key
// changes: once its dependency leaves the composition and Crossplane stops
// observing it, the dependency is an object outside the composition.
func TestAUsageKeepsItsNameWhenItsDependencyLeavesTheComposition(t *testing.T) {
	app, db := composedtest.Object("app", "db"), composedtest.Object("db")
	edge := between(app, db)
	observed, problem := write(Protection, xr, edge)
	if problem != "" {
		t.Fatal(problem)
	}
	gone := outside(app, app.References[0])
	cases := map[string]struct {
		reason    string
		manifests map[string]map[string]any
		want      string
	}{
		"Observed": {
			reason:    "The Usage the edge had while db was composed is still the edge's Usage: it keeps its name.",
			manifests: map[string]map[string]any{edge.Key: observed},
			want:      edge.Key,
		},
		"NoneObserved": {
			reason: "No Usage of the edge is observed: the edge's own key.",
			want:   gone.Key,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := composed.New([]composed.Resource{app}, composed.Options{})
			got := decideUsages(g, usageOptions{policy: Every, api: Protection, owner: xr, observed: tc.manifests}, Both, nil)
			var keys []string
			for k := range got.Usages {
				keys = append(keys, k)
			}
			if diff := cmp.Diff([]string{tc.want}, keys); diff != "" {
				t.Errorf("%s\nthe Usages' names: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
