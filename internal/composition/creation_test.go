package composition

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crossplane-contrib/function-dependencies/internal/graph"
	"github.com/crossplane-contrib/function-dependencies/internal/graph/graphtest"
)

func ready(r *graph.Resource)                { r.Observed.Ready = true }
func readyByAnEarlierStep(r *graph.Resource) { r.Desired.Ready = true }

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
			got := heldBack(graph.New(tc.resources, tc.o), tc.unnamed, tc.waitForReady)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nheldBack(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestWaitingForReadyHoldsBackOnlyWhatDoesNotExistYet(t *testing.T) {
	checkHeldBack(t, map[string]orderCase{
		"Chain": {
			reason: "In a chain only the next link is released; one that exists is never held back, ready or not; an earlier step's ready counts.",
			resources: []graph.Resource{
				graphtest.With(graphtest.ConfigMap("base"), readyByAnEarlierStep),
				graphtest.With(graphtest.ConfigMap("mid"), graphtest.NotObserved, graphtest.DependingOn("base")),
				graphtest.With(graphtest.ConfigMap("top"), graphtest.NotObserved, graphtest.DependingOn("mid")),
				graphtest.With(graphtest.ConfigMap("old"), graphtest.DependingOn("mid")),
			},
			waitForReady: true,
			want:         map[string]string{"top": "waits for mid to be ready"},
		},
		"NotAskedTo": {
			reason: "Without WaitForReady nothing waits for its dependencies to be ready.",
			resources: []graph.Resource{
				graphtest.ConfigMap("base"),
				graphtest.With(graphtest.ConfigMap("mid"), graphtest.NotObserved, graphtest.DependingOn("base")),
			},
		},
		"DependencyNotCreatedYet": {
			reason: "A dependency that doesn't exist isn't ready, whatever an earlier step says of it.",
			resources: []graph.Resource{
				graphtest.With(graphtest.ConfigMap("base"), graphtest.NotObserved, readyByAnEarlierStep),
				graphtest.With(graphtest.ConfigMap("top"), graphtest.NotObserved, graphtest.DependingOn("base")),
			},
			waitForReady: true,
			want:         map[string]string{"top": "waits for base to be ready"},
		},
		"NotDesired": {
			reason: "A resource no step desires is not created, so there is nothing to hold back.",
			resources: []graph.Resource{
				graphtest.ConfigMap("base"),
				graphtest.With(graphtest.ConfigMap("gone"), graphtest.NotObserved, graphtest.NotDesired, graphtest.DependingOn("base")),
			},
			waitForReady: true,
		},
		"References": {
			reason: "An Object waits for what it references as for what the input says it depends on.",
			resources: []graph.Resource{
				graphtest.Object("shared"),
				graphtest.With(graphtest.Object("new", "shared"), graphtest.NotObserved),
			},
			waitForReady: true,
			want:         map[string]string{"new": "waits for shared to be ready"},
		},
		"EveryDependencyNotReady": {
			reason: "A resource waits for all its dependencies that aren't ready, named in name order.",
			resources: []graph.Resource{
				graphtest.ConfigMap("x"), graphtest.With(graphtest.ConfigMap("y"), ready), graphtest.ConfigMap("z"),
				graphtest.With(graphtest.ConfigMap("new"), graphtest.NotObserved, graphtest.DependingOn("z", "y", "x")),
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
				graphtest.With(graphtest.ConfigMap("ready"), ready),
				graphtest.ConfigMap("unready"),
				graphtest.With(graphtest.ConfigMap("a"), graphtest.NotObserved, graphtest.DependingOn("ready")),
				graphtest.With(graphtest.ConfigMap("b"), graphtest.NotObserved, graphtest.DependingOn("ready")),
				graphtest.With(graphtest.ConfigMap("c"), graphtest.NotObserved, graphtest.DependingOn("unready")),
				graphtest.With(graphtest.ConfigMap("d"), graphtest.NotObserved, graphtest.DependingOn("unready", "ready")),
			},
			waitForReady: true,
			want:         map[string]string{"c": "waits for unready to be ready", "d": "waits for unready to be ready"},
		},
	})
}

func TestWaitingForReadyDoesNotWaitAlongABrokenEdge(t *testing.T) {
	cycle := []graph.Resource{
		graphtest.With(graphtest.ConfigMap("a"), graphtest.NotObserved, graphtest.DependingOn("b")),
		graphtest.With(graphtest.ConfigMap("b"), graphtest.NotObserved, graphtest.DependingOn("a")),
		graphtest.With(graphtest.ConfigMap("c"), graphtest.NotObserved, graphtest.DependingOn("a")),
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

func TestWaitingForReadyDoesNotWaitAlongAnInferredEdge(t *testing.T) {
	checkHeldBack(t, map[string]orderCase{
		"ProviderConfig": {
			reason: "An inferred edge orders deletion only: an Object is created at once, its ProviderConfig ready or not.",
			resources: []graph.Resource{
				graphtest.ConfigMap("config"),
				graphtest.With(graphtest.Object("app"), graphtest.NotObserved, graphtest.Inferring("spec.providerConfigRef", "config")),
			},
			waitForReady: true,
		},
	})
}

func TestAnObjectWaitsForItsDependenciesToBeNamedBeforeItIsCreated(t *testing.T) {
	notNamed := []graph.Resource{
		graphtest.With(graphtest.Object("shared"), graphtest.NotObserved, graphtest.Unnamed),
		graphtest.With(graphtest.Object("new"), graphtest.NotObserved, graphtest.DependingOn("shared")),
		graphtest.With(graphtest.Object("old"), graphtest.DependingOn("shared")),
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
				graphtest.With(graphtest.Object("shared"), graphtest.NotObserved, graphtest.Unnamed),
				graphtest.Object("other"),
				graphtest.With(graphtest.Object("new"), graphtest.NotObserved, graphtest.DependingOn("shared", "other")),
			},
			unnamed:      map[string][]string{"new": {"shared"}},
			waitForReady: true,
			want:         map[string]string{"new": "waits for shared to be named, to reference it"},
		},
		"Several": {
			reason: "An Object waits for every dependency it can't reference yet.",
			resources: []graph.Resource{
				graphtest.With(graphtest.Object("a"), graphtest.NotObserved, graphtest.Unnamed),
				graphtest.With(graphtest.Object("b"), graphtest.NotObserved, graphtest.Unnamed),
				graphtest.With(graphtest.Object("new"), graphtest.NotObserved, graphtest.DependingOn("a", "b")),
			},
			unnamed: map[string][]string{"new": {"a", "b"}},
			want:    map[string]string{"new": "waits for a, b to be named, to reference it"},
		},
	})
}
