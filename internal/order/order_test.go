package order

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crossplane-contrib/function-dependencies/internal/graph"
	"github.com/crossplane-contrib/function-dependencies/internal/objectref"
)

// plain is a live composed resource that is not an Object, in namespace team.
func plain(name string) graph.Resource {
	return graph.Resource{
		Name: name, APIVersion: "v1", Identity: graph.Identity{Kind: "ConfigMap", Namespace: "team", Name: name},
		Observed: &graph.Observed{UID: "uid-" + name}, Desired: &graph.Desired{},
	}
}

// object is a live cluster-scoped Object the provider manages, whose object
// name is its composition resource name, referencing Objects by name.
func object(name string, references ...string) graph.Resource {
	r := graph.Resource{
		Name:       name,
		APIVersion: "kubernetes.crossplane.io/v1alpha2",
		IsObject:   true,
		Identity:   graph.Identity{Group: objectref.ClusterGroup, Kind: objectref.Kind, Name: name},
		Observed:   &graph.Observed{UID: "uid-" + name, Finalizers: []string{objectref.ObjectFinalizer}},
		Desired:    &graph.Desired{},
	}
	for i, ref := range references {
		r.References = append(r.References, objectref.Target{Group: objectref.ClusterGroup, Kind: objectref.Kind, Name: ref, Index: i, Via: "dependsOn"})
	}
	return r
}

// with returns the resource changed by the functions.
func with(r graph.Resource, changes ...func(*graph.Resource)) graph.Resource {
	for _, c := range changes {
		c(&r)
	}
	return r
}

func dependingOn(names ...string) func(*graph.Resource) {
	return func(r *graph.Resource) { r.DependsOn = names }
}

func unnamed(r *graph.Resource)              { r.Identity.Name = "" }
func ready(r *graph.Resource)                { r.Observed.Ready = true }
func readyByAnEarlierStep(r *graph.Resource) { r.Desired.Ready = true }
func notObserved(r *graph.Resource)          { r.Observed = nil }
func notDesired(r *graph.Resource)           { r.Desired = nil }

type orderCase struct {
	reason       string
	resources    []graph.Resource
	o            graph.Options
	unnamed      map[string][]string
	waitForReady bool
	want         map[string]string
}

func checkHeldBack(t *testing.T, cases map[string]orderCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := HeldBack(graph.New(tc.resources, tc.o), tc.unnamed, tc.waitForReady)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nHeldBack(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestWaitingForReadyHoldsBackOnlyWhatDoesNotExistYet(t *testing.T) {
	checkHeldBack(t, map[string]orderCase{
		"Chain": {
			reason: "In a chain only the next link is released; one that exists is never held back, ready or not; an earlier step's ready counts.",
			resources: []graph.Resource{
				with(plain("base"), readyByAnEarlierStep),
				with(plain("mid"), notObserved, dependingOn("base")),
				with(plain("top"), notObserved, dependingOn("mid")),
				with(plain("old"), dependingOn("mid")),
			},
			waitForReady: true,
			want:         map[string]string{"top": "waits for mid to be ready"},
		},
		"NotAskedTo": {
			reason: "Without WaitForReady nothing waits for its dependencies to be ready.",
			resources: []graph.Resource{
				plain("base"),
				with(plain("mid"), notObserved, dependingOn("base")),
			},
		},
		"DependencyNotCreatedYet": {
			reason: "A dependency that doesn't exist isn't ready, whatever an earlier step says of it.",
			resources: []graph.Resource{
				with(plain("base"), notObserved, readyByAnEarlierStep),
				with(plain("top"), notObserved, dependingOn("base")),
			},
			waitForReady: true,
			want:         map[string]string{"top": "waits for base to be ready"},
		},
		"NotDesired": {
			reason: "A resource no step desires is not created, so there is nothing to hold back.",
			resources: []graph.Resource{
				plain("base"),
				with(plain("gone"), notObserved, notDesired, dependingOn("base")),
			},
			waitForReady: true,
		},
		"References": {
			reason: "An Object waits for what it references as for what the input says it depends on.",
			resources: []graph.Resource{
				object("shared"),
				with(object("new", "shared"), notObserved),
			},
			waitForReady: true,
			want:         map[string]string{"new": "waits for shared to be ready"},
		},
		"EveryDependencyNotReady": {
			reason: "A resource waits for all its dependencies that aren't ready, named in name order.",
			resources: []graph.Resource{
				plain("x"), with(plain("y"), ready), plain("z"),
				with(plain("new"), notObserved, dependingOn("z", "y", "x")),
			},
			waitForReady: true,
			want:         map[string]string{"new": "waits for x, z to be ready"},
		},
	})
}

func TestWaitingForReadyReleasesAFanOutInOnePass(t *testing.T) {
	checkHeldBack(t, map[string]orderCase{
		"FanOut": {
			reason: "Dependents of a ready resource are all released in one pass; those of one that isn't ready all wait.",
			resources: []graph.Resource{
				with(plain("ready"), ready),
				plain("unready"),
				with(plain("a"), notObserved, dependingOn("ready")),
				with(plain("b"), notObserved, dependingOn("ready")),
				with(plain("c"), notObserved, dependingOn("unready")),
				with(plain("d"), notObserved, dependingOn("unready", "ready")),
			},
			waitForReady: true,
			want:         map[string]string{"c": "waits for unready to be ready", "d": "waits for unready to be ready"},
		},
	})
}

func TestWaitingForReadyDoesNotWaitAlongABrokenEdge(t *testing.T) {
	cycle := []graph.Resource{
		with(plain("a"), notObserved, dependingOn("b")),
		with(plain("b"), notObserved, dependingOn("a")),
		with(plain("c"), notObserved, dependingOn("a")),
	}
	checkHeldBack(t, map[string]orderCase{
		"Broken": {
			reason:       "Resources on a broken cycle don't wait for each other, or none would ever be created; one that depends on the cycle still waits.",
			resources:    cycle,
			o:            graph.Options{BreakCycles: true},
			waitForReady: true,
			want:         map[string]string{"c": "waits for a to be ready"},
		},
		"Kept": {
			reason:       "Without BreakCycles the resources on a cycle wait for each other (the caller fails the step).",
			resources:    cycle,
			waitForReady: true,
			want: map[string]string{
				"a": "waits for b to be ready",
				"b": "waits for a to be ready",
				"c": "waits for a to be ready",
			},
		},
	})
}

func TestAnObjectWaitsForItsDependenciesToBeNamedBeforeItIsCreated(t *testing.T) {
	notNamed := []graph.Resource{
		with(object("shared"), notObserved, unnamed),
		with(object("new"), notObserved, dependingOn("shared")),
		with(object("old"), dependingOn("shared")),
	}
	checkHeldBack(t, map[string]orderCase{
		"NotNamed": {
			reason:    "While its dependency has no name, an Object that doesn't exist yet is held back, with or without WaitForReady: created without the reference, it would not wait for it. An existing one is never held back.",
			resources: notNamed,
			unnamed:   map[string][]string{"new": {"shared"}, "old": {"shared"}},
			want:      map[string]string{"new": "waits for shared to be named, to reference it"},
		},
		"BeforeReady": {
			reason:       "Waiting to be named comes before waiting for readiness: the reason is the name, although the dependency isn't ready either.",
			resources:    notNamed,
			unnamed:      map[string][]string{"new": {"shared"}, "old": {"shared"}},
			waitForReady: true,
			want:         map[string]string{"new": "waits for shared to be named, to reference it"},
		},
		"BeforeAnotherNotReady": {
			reason: "The name comes first even when another dependency, named, isn't ready.",
			resources: []graph.Resource{
				with(object("shared"), notObserved, unnamed),
				object("other"),
				with(object("new"), notObserved, dependingOn("shared", "other")),
			},
			unnamed:      map[string][]string{"new": {"shared"}},
			waitForReady: true,
			want:         map[string]string{"new": "waits for shared to be named, to reference it"},
		},
		"Several": {
			reason: "An Object waits for every dependency it can't reference yet.",
			resources: []graph.Resource{
				with(object("a"), notObserved, unnamed),
				with(object("b"), notObserved, unnamed),
				with(object("new"), notObserved, dependingOn("a", "b")),
			},
			unnamed: map[string][]string{"new": {"a", "b"}},
			want:    map[string]string{"new": "waits for a, b to be named, to reference it"},
		},
	})
}
