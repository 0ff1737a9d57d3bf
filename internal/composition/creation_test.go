package composition

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crossplane-contrib/function-dependencies/internal/composed"
	"github.com/crossplane-contrib/function-dependencies/internal/composed/composedtest"
	"github.com/crossplane-contrib/function-dependencies/internal/report"
)

// deployment is a live Deployment, a kind that reports Ready, named as
// its composition resource.
func deployment(name string) composed.Resource {
	return composedtest.With(composedtest.ConfigMap(name), func(r *composed.Resource) {
		r.APIVersion, r.Identity.Group, r.Identity.Kind = "apps/v1", "apps", "Deployment"
	})
}

// now is when the tests' requests are read.
var now = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

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
			got, _ := heldBack(composed.New(tc.resources, tc.o), tc.unnamed, tc.waitForReady, now)
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
				composedtest.With(deployment("base"), readyByAnEarlierStep),
				composedtest.With(deployment("mid"), composedtest.NotObserved, composedtest.DependingOn("base")),
				composedtest.With(deployment("top"), composedtest.NotObserved, composedtest.DependingOn("mid")),
				composedtest.With(deployment("old"), composedtest.DependingOn("mid")),
			},
			waitForReady: true,
			want:         map[string]string{"top": "waits for mid to be ready"},
		},
		"NotAskedTo": {
			reason: "Without WaitForReady nothing waits for its dependencies to be ready.",
			resources: []composed.Resource{
				deployment("base"),
				composedtest.With(deployment("mid"), composedtest.NotObserved, composedtest.DependingOn("base")),
			},
		},
		"DependencyNotCreatedYet": {
			reason: "A dependency that doesn't exist isn't ready, whatever an earlier step says of it.",
			resources: []composed.Resource{
				composedtest.With(deployment("base"), composedtest.NotObserved, readyByAnEarlierStep),
				composedtest.With(deployment("top"), composedtest.NotObserved, composedtest.DependingOn("base")),
			},
			waitForReady: true,
			want:         map[string]string{"top": "waits for base to be ready"},
		},
		"NotDesired": {
			reason: "A resource no step desires is not created, so there is nothing to hold back.",
			resources: []composed.Resource{
				deployment("base"),
				composedtest.With(deployment("gone"), composedtest.NotObserved, composedtest.NotDesired, composedtest.DependingOn("base")),
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
				deployment("x"), composedtest.With(deployment("y"), ready), deployment("z"),
				composedtest.With(deployment("new"), composedtest.NotObserved, composedtest.DependingOn("z", "y", "x")),
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
				composedtest.With(deployment("ready"), ready),
				deployment("unready"),
				composedtest.With(deployment("a"), composedtest.NotObserved, composedtest.DependingOn("ready")),
				composedtest.With(deployment("b"), composedtest.NotObserved, composedtest.DependingOn("ready")),
				composedtest.With(deployment("c"), composedtest.NotObserved, composedtest.DependingOn("unready")),
				composedtest.With(deployment("d"), composedtest.NotObserved, composedtest.DependingOn("unready", "ready")),
			},
			waitForReady: true,
			want:         map[string]string{"c": "waits for unready to be ready", "d": "waits for unready to be ready"},
		},
	})
}

func TestWaitingForReadyDoesNotWaitAlongABrokenEdge(t *testing.T) {
	cycle := []composed.Resource{
		composedtest.With(deployment("a"), composedtest.NotObserved, composedtest.DependingOn("b")),
		composedtest.With(deployment("b"), composedtest.NotObserved, composedtest.DependingOn("a")),
		composedtest.With(deployment("c"), composedtest.NotObserved, composedtest.DependingOn("a")),
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
				deployment("config"),
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

func TestWaitingForReadyDoesNotWaitForWhatCantSayItIsReady(t *testing.T) {
	kind := func(group, k string) func(*composed.Resource) {
		return func(r *composed.Resource) { r.Identity.Group, r.Identity.Kind = group, k }
	}
	checkHeldBack(t, map[string]orderCase{
		"ProviderConfig": {
			reason: "A ProviderConfig of any provider has no Ready condition: what depends on it is created once it exists, and waits while it doesn't.",
			resources: []composed.Resource{
				composedtest.With(deployment("helm-config"), kind("helm.m.crossplane.io", "ProviderConfig")),
				composedtest.With(deployment("aws-config"), kind("aws.upbound.io", "ClusterProviderConfig"), composedtest.NotObserved),
				composedtest.With(deployment("chart"), composedtest.NotObserved, composedtest.DependingOn("helm-config")),
				composedtest.With(deployment("bucket"), composedtest.NotObserved, composedtest.DependingOn("aws-config")),
			},
			waitForReady: true,
			want:         map[string]string{"bucket": "waits for aws-config to be ready"},
		},
		"WhatAutoReadyMarksReadyOnceItExists": {
			reason: "A core ConfigMap, Secret, Namespace or ServiceAccount is ready once it exists, as function-auto-ready says after this step; another core kind is not.",
			resources: []composed.Resource{
				composedtest.ConfigMap("config"),
				composedtest.With(deployment("ns"), kind("", "Namespace")),
				composedtest.With(deployment("pvc"), kind("", "PersistentVolumeClaim")),
				composedtest.With(deployment("app"), composedtest.NotObserved, composedtest.DependingOn("config", "ns")),
				composedtest.With(deployment("db"), composedtest.NotObserved, composedtest.DependingOn("pvc")),
			},
			waitForReady: true,
			want:         map[string]string{"db": "waits for pvc to be ready"},
		},
	})
}

func TestAResourceHeldBackTooLongIsNamed(t *testing.T) {
	notReadyFor := func(d time.Duration) func(*composed.Resource) {
		return func(r *composed.Resource) { r.Observed.NotReadySince = now.Add(-d) }
	}
	cases := map[string]struct {
		reason    string
		resources []composed.Resource
		want      []report.Waiting
	}{
		"PastMaxWait": {
			reason: "A dependency that exists and hasn't been ready for longer than MaxWait names what waits for it, and its kind.",
			resources: []composed.Resource{
				composedtest.With(deployment("chart"), notReadyFor(MaxWait+time.Minute)),
				composedtest.With(deployment("app"), composedtest.NotObserved, composedtest.DependingOn("chart")),
			},
			want: []report.Waiting{{Resource: "app", Target: "chart", Kind: "Deployment"}},
		},
		"WithinMaxWait": {
			reason: "Within MaxWait a dependency may still become ready: no one is named.",
			resources: []composed.Resource{
				composedtest.With(deployment("chart"), notReadyFor(MaxWait)),
				composedtest.With(deployment("app"), composedtest.NotObserved, composedtest.DependingOn("chart")),
			},
		},
		"SinceUnknown": {
			reason: "A dependency that says neither when it was created nor when it stopped being ready (a render's observed state) is never named.",
			resources: []composed.Resource{
				deployment("chart"),
				composedtest.With(deployment("app"), composedtest.NotObserved, composedtest.DependingOn("chart")),
			},
		},
		"NotCreatedYet": {
			reason: "A dependency that doesn't exist is waited on by its own dependencies' order, not named here.",
			resources: []composed.Resource{
				composedtest.With(deployment("chart"), composedtest.NotObserved),
				composedtest.With(deployment("app"), composedtest.NotObserved, composedtest.DependingOn("chart")),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, got := heldBack(composed.New(tc.resources, composed.Options{}), nil, true, now)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nheldBack(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
