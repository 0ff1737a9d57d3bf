package composition

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/composed/composedtest"
)

func ready(r *composed.Resource)                { r.Observed.Ready = true }
func readyByAnEarlierStep(r *composed.Resource) { r.Desired.Ready = true }

type orderCase struct {
	reason       string
	resources    []composed.Resource
	o            composed.Options
	unnamed      map[string][]string
	waitForReady bool
	want         map[string]string
}

func checkHeldBack(t *testing.T, cases map[string]orderCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := heldBack(composed.New(tc.resources, tc.o), tc.unnamed, tc.waitForReady)
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
			resources: []composed.Resource{
				composedtest.With(composedtest.ConfigMap("base"), readyByAnEarlierStep),
				composedtest.With(composedtest.ConfigMap("mid"), composedtest.NotObserved, composedtest.DependingOn("base")),
				composedtest.With(composedtest.ConfigMap("top"), composedtest.NotObserved, composedtest.DependingOn("mid")),
				composedtest.With(composedtest.ConfigMap("old"), composedtest.DependingOn("mid")),
			},
			waitForReady: true,
			want:         map[string]string{"top": "waits for mid to be ready"},
		},
		"NotAskedTo": {
			reason: "Without WaitForReady nothing waits for its dependencies to be ready.",
			resources: []composed.Resource{
				composedtest.ConfigMap("base"),
				composedtest.With(composedtest.ConfigMap("mid"), composedtest.NotObserved, composedtest.DependingOn("base")),
			},
		},
		"DependencyNotCreatedYet": {
			reason: "A dependency that doesn't exist isn't ready, whatever an earlier step says of it.",
			resources: []composed.Resource{
				composedtest.With(composedtest.ConfigMap("base"), composedtest.NotObserved, readyByAnEarlierStep),
				composedtest.With(composedtest.ConfigMap("top"), composedtest.NotObserved, composedtest.DependingOn("base")),
			},
			waitForReady: true,
			want:         map[string]string{"top": "waits for base to be ready"},
		},
		"NotDesired": {
			reason: "A resource no step desires is not created, so there is nothing to hold back.",
			resources: []composed.Resource{
				composedtest.ConfigMap("base"),
				composedtest.With(composedtest.ConfigMap("gone"), composedtest.NotObserved, composedtest.NotDesired, composedtest.DependingOn("base")),
			},
			waitForReady: true,
		},
		"References": {
			reason: "An Object waits for what it references as for what the input says it depends on.",
			resources: []composed.Resource{
				composedtest.Object("shared"),
				composedtest.With(composedtest.Object("new", "shared"), composedtest.NotObserved),
			},
			waitForReady: true,
			want:         map[string]string{"new": "waits for shared to be ready"},
		},
		"EveryDependencyNotReady": {
			reason: "A resource waits for all its dependencies that aren't ready, named in name order.",
			resources: []composed.Resource{
				composedtest.ConfigMap("x"), composedtest.With(composedtest.ConfigMap("y"), ready), composedtest.ConfigMap("z"),
				composedtest.With(composedtest.ConfigMap("new"), composedtest.NotObserved, composedtest.DependingOn("z", "y", "x")),
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
			resources: []composed.Resource{
				composedtest.With(composedtest.ConfigMap("ready"), ready),
				composedtest.ConfigMap("unready"),
				composedtest.With(composedtest.ConfigMap("a"), composedtest.NotObserved, composedtest.DependingOn("ready")),
				composedtest.With(composedtest.ConfigMap("b"), composedtest.NotObserved, composedtest.DependingOn("ready")),
				composedtest.With(composedtest.ConfigMap("c"), composedtest.NotObserved, composedtest.DependingOn("unready")),
				composedtest.With(composedtest.ConfigMap("d"), composedtest.NotObserved, composedtest.DependingOn("unready", "ready")),
			},
			waitForReady: true,
			want:         map[string]string{"c": "waits for unready to be ready", "d": "waits for unready to be ready"},
		},
	})
}

func TestWaitingForReadyDoesNotWaitAlongABrokenEdge(t *testing.T) {
	cycle := []composed.Resource{
		composedtest.With(composedtest.ConfigMap("a"), composedtest.NotObserved, composedtest.DependingOn("b")),
		composedtest.With(composedtest.ConfigMap("b"), composedtest.NotObserved, composedtest.DependingOn("a")),
		composedtest.With(composedtest.ConfigMap("c"), composedtest.NotObserved, composedtest.DependingOn("a")),
	}
	checkHeldBack(t, map[string]orderCase{
		"Broken": {
			reason:       "Resources on a broken cycle don't wait for each other, or none would ever be created; one that depends on the cycle still waits.",
			resources:    cycle,
			o:            composed.Options{BreakCycles: true},
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
			resources: []composed.Resource{
				composedtest.ConfigMap("config"),
				composedtest.With(composedtest.Object("app"), composedtest.NotObserved, composedtest.Inferring("spec.providerConfigRef", "config")),
			},
			waitForReady: true,
		},
	})
}

func TestAnObjectWaitsForItsDependenciesToBeNamedBeforeItIsCreated(t *testing.T) {
	notNamed := []composed.Resource{
		composedtest.With(composedtest.Object("shared"), composedtest.NotObserved, composedtest.Unnamed),
		composedtest.With(composedtest.Object("new"), composedtest.NotObserved, composedtest.DependingOn("shared")),
		composedtest.With(composedtest.Object("old"), composedtest.DependingOn("shared")),
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
			resources: []composed.Resource{
				composedtest.With(composedtest.Object("shared"), composedtest.NotObserved, composedtest.Unnamed),
				composedtest.Object("other"),
				composedtest.With(composedtest.Object("new"), composedtest.NotObserved, composedtest.DependingOn("shared", "other")),
			},
			unnamed:      map[string][]string{"new": {"shared"}},
			waitForReady: true,
			want:         map[string]string{"new": "waits for shared to be named, to reference it"},
		},
		"Several": {
			reason: "An Object waits for every dependency it can't reference yet.",
			resources: []composed.Resource{
				composedtest.With(composedtest.Object("a"), composedtest.NotObserved, composedtest.Unnamed),
				composedtest.With(composedtest.Object("b"), composedtest.NotObserved, composedtest.Unnamed),
				composedtest.With(composedtest.Object("new"), composedtest.NotObserved, composedtest.DependingOn("a", "b")),
			},
			unnamed: map[string][]string{"new": {"a", "b"}},
			want:    map[string]string{"new": "waits for a, b to be named, to reference it"},
		},
	})
}
